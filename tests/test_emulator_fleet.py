"""The fleet file of `reaper emulate`: the example is valid and documented field by field; any
mistake is one line naming where it is, so a typo never serves another fleet than the one
written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from emulators import RunPodEmulator, VastEmulator
from emulators.fleet import EXAMPLE, FleetError, load_fleet, parse_fleet, populate

ROOT = Path(__file__).resolve().parents[1]


def test_the_example_loads_and_populates_both_emulators() -> None:
    fleet = load_fleet(EXAMPLE)
    assert fleet.size == (4, 3)
    with (
        RunPodEmulator(fleet.runpod.accounts) as runpod,
        VastEmulator(fleet.vast.accounts) as vast,
    ):
        populate(fleet, runpod, vast)
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
    from emulators import fleet

    page = (ROOT / "docs" / "demo.md").read_text(encoding="utf-8")
    section = page[page.index("### `reaper emulate`") :]
    for name in (*fleet._POD_FIELDS, *fleet._INSTANCE_FIELDS, "accounts", "balances"):
        assert f"`{name}`" in section, name


def test_an_empty_file_is_a_fleet_of_nothing_with_one_account_each() -> None:
    fleet = parse_fleet({})
    assert fleet.size == (0, 0)
    assert list(fleet.runpod.accounts) == ["emulated"] and list(fleet.vast.accounts) == ["emulated"]


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
    ],
)
def test_each_mistake_is_one_line_naming_its_place(data: Any, message: str) -> None:
    with pytest.raises(FleetError) as err:
        parse_fleet(data)
    assert str(err.value).startswith(message), str(err.value)
    assert "\n" not in str(err.value)


def test_a_file_that_is_not_json_says_where(tmp_path: Path) -> None:
    path = tmp_path / "fleet.json"
    path.write_text('{"runpod": {"pods": [}\n')
    with pytest.raises(FleetError, match=r"^not JSON: .* \(line 1, column \d+\)$"):
        load_fleet(path)
    with pytest.raises(FleetError, match=r"^no such file$"):
        load_fleet(tmp_path / "missing.json")


def test_a_null_vast_label_and_status_are_what_vast_answers() -> None:
    fleet = parse_fleet({"vast": {"instances": [{"label": None, "actual_status": None}]}})
    assert fleet.vast.entries[0]["label"] is None
    assert fleet.vast.entries[0]["actual_status"] is None
    json.dumps(fleet.vast.entries)
