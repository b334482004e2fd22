"""The fleet file of `reaper emulate`: the example is valid and documented field by field; any
mistake is one line naming where it is, so a typo never serves another fleet than the one
written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from emulators import DigitalOceanEmulator, RunPodEmulator, VastEmulator
from emulators.fleet import EXAMPLE, STOPPED_FOR, FleetError, load_fleet, parse_fleet
from reaper.app.wiring import emulator
from reaper.providers.plugins import plugins

ROOT = Path(__file__).resolve().parents[1]
# The emulators whose sections a fleet file holds, by provider name: each provider's plugin
# names its own.
EMULATORS = {provider.name: emulator(provider) for provider in plugins()}


def test_every_provider_has_its_section_in_registry_order() -> None:
    assert list(EMULATORS.items()) == [
        ("runpod", RunPodEmulator),
        ("vast", VastEmulator),
        ("digitalocean", DigitalOceanEmulator),
    ]


def test_the_example_loads_and_populates_every_emulator() -> None:
    fleet = load_fleet(EXAMPLE, EMULATORS)
    assert fleet.size == (4, 3, 3)
    with (
        RunPodEmulator(fleet.sections["runpod"].accounts) as runpod,
        VastEmulator(fleet.sections["vast"].accounts) as vast,
        DigitalOceanEmulator(fleet.sections["digitalocean"].accounts) as docean,
    ):
        runpod.populate(fleet.sections["runpod"])
        vast.populate(fleet.sections["vast"])
        docean.populate(fleet.sections["digitalocean"])
        assert docean.droplet_ids() == [448543583, 448543584, 448543585]
        off = docean.droplet(448543584)
        assert off is not None and off["status"] == "off"
        assert off["size"]["price_hourly"] == pytest.approx(1.57)
        assert "gpu_info" in off
        kept = docean.droplet(448543585)
        assert kept is not None and kept["tags"] == ["reaper:keep"]
        assert sorted(runpod.pod_ids()) == [
            "dataset-cache-c3",
            "llm-finetune-a1",
            "prod-serve-d4",
            "sweep-lr-3e4-b2",
        ]
        assert vast.instance_ids() == [4242001, 4242002, 4242003]
        pod = runpod.pod("prod-serve-d4")
        assert pod is not None and pod["locked"] is True
        inst = vast.instance(4242001)
        assert inst is not None and inst["gpu_util"] == pytest.approx(0.88)


def test_every_field_the_loader_takes_is_documented() -> None:
    page = (ROOT / "docs" / "demo.md").read_text(encoding="utf-8")
    section = page[page.index("### `reaper emulate`") :]
    fields = [field for found in EMULATORS.values() for field in found.FLEET_FIELDS]
    lists = [f"{found.FLEET_LIST}[]" for found in EMULATORS.values()]
    for name in (*fields, *lists, STOPPED_FOR, "accounts", "balances"):
        assert f"`{name}`" in section, name


def test_an_empty_file_is_a_fleet_of_nothing_with_one_account_each() -> None:
    fleet = parse_fleet({}, EMULATORS)
    assert fleet.size == (0, 0, 0)
    assert [list(s.accounts) for s in fleet.sections.values()] == [["emulated"]] * 3


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "the fleet: expected an object, got a list"),
        ({"runpd": {}}, "the fleet: unknown field 'runpd'"),
        ({"runpod": {"pods": {}}}, "runpod.pods: expected a list, got an object"),
        (
            {"runpod": {"pods": [{"name": "a"}, {"stauts": "EXITED"}]}},
            "runpod.pods[1]: unknown field 'stauts' (expected id, account, name, status",
        ),
        (
            {"runpod": {"pods": [{"status": "RUNNIN"}]}},
            "runpod.pods[0].status: expected one of PROVISIONING, STARTING, RUNNING, EXITED",
        ),
        ({"runpod": {"pods": [{"cost": "1.5"}]}}, "runpod.pods[0].cost: expected a number"),
        ({"runpod": {"pods": [{"cost": -1}]}}, "runpod.pods[0].cost: expected a number 0-1000"),
        ({"runpod": {"pods": [{"locked": "yes"}]}}, "runpod.pods[0].locked: expected true or"),
        ({"runpod": {"pods": [{"gpu_util": [120]}]}}, "runpod.pods[0].gpu_util[0]: expected"),
        ({"runpod": {"pods": [{"id": "a/b"}]}}, "runpod.pods[0].id: 'a/b' is not valid here"),
        (
            {"runpod": {"pods": [{"id": "x"}, {"id": "x"}]}},
            "runpod.pods: the id 'x' is used twice",
        ),
        (
            {"runpod": {"pods": [{"account": "work"}]}},
            "runpod.pods[0].account: no account named 'work'",
        ),
        ({"runpod": {"accounts": {"main": "short"}}}, "runpod.accounts.main: 'short' is not"),
        ({"runpod": {"accounts": {}}}, "runpod.accounts: expected an object of account name"),
        (
            {"runpod": {"balances": {"work": 5}}},
            "runpod.balances: no account named 'work'",
        ),
        ({"vast": {"instances": [{"id": "42"}]}}, "vast.instances[0].id: expected a whole number"),
        (
            {"vast": {"instances": [{"actual_status": "Running"}]}},
            "vast.instances[0].actual_status: expected one of created, loading, running",
        ),
        (
            {"vast": {"instances": [{"intended_status": "paused"}]}},
            "vast.instances[0].intended_status: expected one of running, stopped",
        ),
        (
            {"vast": {"instances": [{"id": 1}, {"id": 1}]}},
            "vast.instances: the id 1 is used twice",
        ),
        (
            {"digitalocean": {"droplets": [{"status": "powered_off"}]}},
            "digitalocean.droplets[0].status: expected one of new, active, off, archive",
        ),
        (
            {"digitalocean": {"droplets": [{"gpu": "h100"}]}},
            "digitalocean.droplets[0].gpu: expected false or one of gpu-h100x1-80gb",
        ),
        (
            {"digitalocean": {"droplets": [{"tags": "reaper:keep"}]}},
            "digitalocean.droplets[0].tags: expected a list of strings",
        ),
        (
            {"digitalocean": {"droplets": [{"locked": 1}]}},
            "digitalocean.droplets[0].locked: expected true or false",
        ),
        (
            {"digitalocean": {"droplets": [{"id": "448543583"}]}},
            "digitalocean.droplets[0].id: expected a whole number",
        ),
        (
            {"digitalocean": {"droplets": [{"id": 7}, {"id": 7}]}},
            "digitalocean.droplets: the id 7 is used twice",
        ),
    ],
)
def test_each_mistake_is_one_line_naming_its_place(data: Any, message: str) -> None:
    with pytest.raises(FleetError) as err:
        parse_fleet(data, EMULATORS)
    assert str(err.value).startswith(message), str(err.value)
    assert "\n" not in str(err.value)


def test_a_file_that_is_not_json_says_where(tmp_path: Path) -> None:
    path = tmp_path / "fleet.json"
    path.write_text('{"runpod": {"pods": [}\n')
    with pytest.raises(FleetError, match=r"^not JSON: .* \(line 1, column \d+\)$"):
        load_fleet(path, EMULATORS)
    with pytest.raises(FleetError, match=r"^no such file$"):
        load_fleet(tmp_path / "missing.json", EMULATORS)


def test_a_null_vast_label_and_status_are_what_vast_answers() -> None:
    fleet = parse_fleet(
        {"vast": {"instances": [{"label": None, "actual_status": None}]}}, EMULATORS
    )
    vast = fleet.sections["vast"]
    assert vast.entries[0]["label"] is None and vast.entries[0]["actual_status"] is None
    json.dumps(vast.entries)


def test_a_plain_droplet_is_one_a_gpu_listing_never_shows() -> None:
    fleet = parse_fleet(
        {"digitalocean": {"droplets": [{"gpu": False, "status": "off"}]}}, EMULATORS
    )
    with DigitalOceanEmulator(fleet.sections["digitalocean"].accounts) as docean:
        docean.populate(fleet.sections["digitalocean"])
        [droplet_id] = docean.droplet_ids()
        droplet = docean.droplet(droplet_id)
        assert droplet is not None and "gpu_info" not in droplet


@pytest.mark.parametrize("provider", list(EMULATORS))
def test_an_unknown_field_is_answered_with_every_field_an_entry_takes(provider: str) -> None:
    found = EMULATORS[provider]
    example = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    used = {name for entry in example[provider][found.FLEET_LIST] for name in entry}
    data = {provider: {found.FLEET_LIST: [{"stauts": "stopped"}]}}
    with pytest.raises(FleetError) as err:
        parse_fleet(data, EMULATORS)
    where = f"{provider}.{found.FLEET_LIST}[0]: unknown field 'stauts' (expected "
    assert str(err.value).startswith(where), str(err.value)
    named = str(err.value).removeprefix(where).removesuffix(")").split(", ")
    assert STOPPED_FOR in named and used <= set(named), named
    for name in named:  # every field it names is one an entry may have
        assert f"unknown field {name!r}" not in _mistake(
            {provider: {found.FLEET_LIST: [{name: 0}]}}
        )


def _mistake(data: Any) -> str:
    try:
        parse_fleet(data, EMULATORS)
    except FleetError as exc:
        return str(exc)
    return ""
