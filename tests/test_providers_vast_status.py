"""Vast instances are read into `Instance` as docs/safety.md says, over real HTTP to the emulator:
`actual_status` (documented values, unknown strings, null, missing) maps to the right state
whatever `intended_status` says; cost is `dph_total` only while the rental is active and the
storage bill otherwise; `gpu_util` becomes a percentage."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from emulators import VastEmulator
from reaper.core.models import Instance
from reaper.providers.base import HttpOptions
from tests.provider_support import on_vast

FAST = HttpOptions(timeout=2, max_attempts=2, backoff_base=0.001, backoff_cap=0.005)
KEY = "vast-test-key-0001"


@pytest.fixture(scope="module")
def emulator() -> Iterator[VastEmulator]:
    with VastEmulator({"main": KEY}) as server:
        yield server


def listing(server: VastEmulator) -> dict[str, Instance]:
    return {i.id: i for i in on_vast(server, KEY, lambda c: c.list_instances(), FAST)}


def read_one(server: VastEmulator, instance_id: int) -> Instance:
    try:
        return listing(server)[str(instance_id)]
    finally:
        server.remove_instance(instance_id)


@pytest.mark.parametrize(
    ("actual", "state"),
    [
        (None, "starting"),
        ("created", "starting"),
        ("loading", "starting"),
        ("rebooting", "starting"),
        ("running", "running"),
        ("stopped", "stopped"),
        ("exited", "stopped"),
        ("frozen", "unknown"),
        ("offline", "unknown"),
        ("unknown", "unknown"),
        ("scheduling", "unknown"),
        ("Running", "unknown"),
    ],
)
def test_each_actual_status_maps_to_its_state(
    emulator: VastEmulator, actual: str | None, state: str
) -> None:
    instance = read_one(emulator, emulator.add_instance(actual_status=actual))
    assert instance.state == state
    assert instance.raw_status == ("null" if actual is None else actual)


def test_missing_actual_status_is_unknown(emulator: VastEmulator) -> None:
    instance_id = emulator.add_instance(actual_status="stopped")
    emulator.drop_field(instance_id, "actual_status")
    instance = read_one(emulator, instance_id)
    assert (instance.state, instance.raw_status) == ("unknown", "")


@pytest.mark.parametrize("intended", ["running", "stopped", "unknown"])
def test_stopped_is_stopped_whatever_intended_status_says(
    emulator: VastEmulator, intended: str
) -> None:
    instance_id = emulator.add_instance(actual_status="stopped", intended_status=intended)
    assert read_one(emulator, instance_id).state == "stopped"


def test_exited_with_intended_running_is_stopped(emulator: VastEmulator) -> None:
    instance_id = emulator.add_instance(actual_status="exited", intended_status="running")
    assert read_one(emulator, instance_id).state == "stopped"


def test_running_bills_dph_total(emulator: VastEmulator) -> None:
    instance_id = emulator.add_instance(actual_status="running", dph_total=1.25)
    assert read_one(emulator, instance_id).cost_per_hour == pytest.approx(1.25)


def test_stopped_bills_storage_not_dph_total(emulator: VastEmulator) -> None:
    instance_id = emulator.add_instance(
        actual_status="stopped",
        intended_status="running",
        dph_total=1.25,
        storage_cost=0.15,
        disk_space=100.0,
    )
    instance = read_one(emulator, instance_id)
    assert instance.cost_per_hour == pytest.approx(0.15 * 100 / 720, rel=1e-3)
    assert instance.cost_per_hour < 1.25


def test_stopped_without_storage_total_falls_back_to_storage_cost(
    emulator: VastEmulator,
) -> None:
    instance_id = emulator.add_instance(actual_status="exited", storage_cost=0.3, disk_space=50.0)
    emulator.drop_field(instance_id, "storage_total_cost")
    assert read_one(emulator, instance_id).cost_per_hour == pytest.approx(0.3 * 50 / 720)


def test_stopped_without_any_storage_field_has_unknown_cost(emulator: VastEmulator) -> None:
    instance_id = emulator.add_instance(actual_status="stopped")
    emulator.drop_field(instance_id, "storage_total_cost", "storage_cost")
    assert read_one(emulator, instance_id).cost_per_hour is None


def test_unknown_state_has_unknown_cost(emulator: VastEmulator) -> None:
    instance_id = emulator.add_instance(actual_status="unknown", dph_total=2.0)
    assert read_one(emulator, instance_id).cost_per_hour is None


def test_frozen_bills_the_gpu_rate_and_offline_nothing(emulator: VastEmulator) -> None:
    """Vast's billing docs: a frozen instance keeps its GPU billed; nothing bills offline."""
    frozen = read_one(emulator, emulator.add_instance(actual_status="frozen", dph_total=2.0))
    assert frozen.state == "unknown" and frozen.cost_per_hour == 2.0
    offline = read_one(emulator, emulator.add_instance(actual_status="offline", dph_total=2.0))
    assert offline.state == "unknown" and offline.cost_per_hour == 0.0


@pytest.mark.parametrize(
    ("raw", "percent"), [(0.0, 0.0), (0.42, 42.0), (1.0, 100.0), (73.0, 73.0), (None, None)]
)
def test_gpu_util_fraction_becomes_percent(
    emulator: VastEmulator, raw: float | None, percent: float | None
) -> None:
    instance = read_one(emulator, emulator.add_instance(gpu_util=raw))
    if percent is None:
        assert instance.gpu_util is None
    else:
        assert instance.gpu_util == pytest.approx(percent)


def test_label_start_date_disk_and_console(emulator: VastEmulator) -> None:
    created = datetime(2025, 11, 18, 20, 52, 25, tzinfo=UTC)
    instance_id = emulator.add_instance(
        label="sweep reaper:keep", start_date=created.timestamp(), disk_space=64.0
    )
    instance = read_one(emulator, instance_id)
    assert instance.id == str(instance_id)
    assert instance.name == "sweep reaper:keep"
    assert instance.created_at == created
    assert instance.started_at is None
    assert instance.container_disk_gb == 64.0
    assert instance.console_url == "https://cloud.vast.ai/instances/"


def test_null_label_is_an_empty_name(emulator: VastEmulator) -> None:
    assert read_one(emulator, emulator.add_instance(label=None)).name == ""


def test_malformed_instances_are_unknown_and_the_rest_still_listed(
    emulator: VastEmulator,
) -> None:
    good = emulator.add_instance(actual_status="stopped")
    bad = emulator.add_instance(actual_status="stopped")
    emulator.modify_instance(bad, dph_total={"nested": True}, start_date="yesterday")
    emulator.add_raw_instance("garbage")
    emulator.add_raw_instance({"id": "not-a-number", "actual_status": "stopped"})
    try:
        instances = listing(emulator)
    finally:
        emulator.remove_instance(good)
        emulator.remove_instance(bad)
        emulator.clear_raw_instances()
    assert instances[str(good)].state == "stopped"
    assert instances[str(bad)].state == "unknown"
    assert instances[str(bad)].raw_status == "stopped"
    unreadable = [i for i in instances.values() if i.id.startswith("unreadable-")]
    assert len(unreadable) == 2
    assert {i.state for i in unreadable} == {"unknown"}
