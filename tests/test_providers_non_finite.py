"""NaN and infinity from a provider never reach an `Instance`, `Balance` or `Volume`: Python's
json reads `NaN` and `Infinity`, and kept they would make `--json` output that strict parsers
reject. Such a field is unreadable (its instance "unknown", never reaped), a balance or cost
made of it is None, and arithmetic that overflows on finite input gives None too."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from pydantic import BaseModel

from emulators import RunPodEmulator, VastEmulator
from tests.provider_support import on_runpod, on_vast

RP_KEY = "rp-test-key-0013"
VAST_KEY = "vast-test-key-0013"
NON_FINITE = [math.nan, math.inf, -math.inf]


def strict_json(models: list[Any]) -> str:
    """The models as JSON with NaN and infinity refused (what a strict parser would accept)."""
    return json.dumps([m.model_dump(mode="json") for m in models], allow_nan=False)


def floats(model: BaseModel) -> list[float]:
    return [v for v in model.model_dump().values() if isinstance(v, float)]


@pytest.mark.parametrize("bad", NON_FINITE)
def test_runpod_pods_with_non_finite_numbers_are_unknown_and_print_as_json(bad: float) -> None:
    with RunPodEmulator({"main": RP_KEY}) as server:
        costly = server.add_pod(status="RUNNING", cost=bad)
        disk = server.add_pod(status="EXITED", volume_gb=bad)
        busy = server.add_pod(status="RUNNING")
        server.modify_pod(busy, runtime={"gpus": [{"id": "g", "util": bad}]})
        fine = server.add_pod(status="RUNNING", cost=0.5)
        pods = {p.id: p for p in on_runpod(server, RP_KEY, lambda c: c.list_instances())}
    strict_json(list(pods.values()))
    assert pods[costly].cost_per_hour is None
    assert pods[disk].volume_disk_gb is None and pods[disk].cost_per_hour is None
    assert pods[busy].gpu_util is None
    assert {pods[i].state for i in (costly, disk, busy)} == {"unknown"}
    assert pods[fine].state == "running" and pods[fine].cost_per_hour == 0.5


@pytest.mark.parametrize("bad", NON_FINITE)
def test_vast_instances_with_non_finite_numbers_are_unknown_and_print_as_json(bad: float) -> None:
    with VastEmulator({"main": VAST_KEY}) as server:
        costly = server.add_instance(actual_status="running", dph_total=bad)
        busy = server.add_instance(actual_status="running", gpu_util=bad)
        stored = server.add_instance(actual_status="stopped")
        server.modify_instance(stored, storage_total_cost=bad)
        fine = server.add_instance(actual_status="running", dph_total=0.5)
        found = {i.id: i for i in on_vast(server, VAST_KEY, lambda c: c.list_instances())}
    strict_json(list(found.values()))
    assert found[str(costly)].cost_per_hour is None
    assert found[str(busy)].gpu_util is None
    assert found[str(stored)].cost_per_hour is None
    assert {found[str(i)].state for i in (costly, busy, stored)} == {"unknown"}
    assert found[str(fine)].state == "running" and found[str(fine)].cost_per_hour == 0.5


def test_a_storage_bill_that_overflows_is_none_not_infinity() -> None:
    with VastEmulator({"main": VAST_KEY}) as server:
        huge = server.add_instance(actual_status="stopped", storage_cost=1e308, disk_space=1e308)
        server.drop_field(huge, "storage_total_cost")
        server.add_volume(7001, storage_total_cost=1e307)
        [instance] = on_vast(server, VAST_KEY, lambda c: c.list_instances())
        [volume] = on_vast(server, VAST_KEY, lambda c: c.volumes())
    assert instance.state == "stopped"
    assert instance.cost_per_hour is None
    assert volume.cost_per_month is None
    assert all(math.isfinite(v) for v in floats(instance) + floats(volume))


@pytest.mark.parametrize("bad", NON_FINITE)
def test_balances_with_non_finite_numbers_are_none(bad: float) -> None:
    with RunPodEmulator({"main": RP_KEY}) as runpod, VastEmulator({"main": VAST_KEY}) as vast:
        runpod.set_balance(client_balance=bad, current_spend_per_hr=bad, spend_limit=80.0)
        vast.set_user(credit=bad, balance=bad)
        runpod_balance = on_runpod(runpod, RP_KEY, lambda c: c.balance())
        vast_balance = on_vast(vast, VAST_KEY, lambda c: c.balance())
    strict_json([runpod_balance, vast_balance])
    assert (runpod_balance.balance, runpod_balance.spend_per_hour) == (None, None)
    assert runpod_balance.spend_limit == 80.0
    assert vast_balance.balance is None


def test_vast_balance_falls_back_past_a_non_finite_credit() -> None:
    with VastEmulator({"main": VAST_KEY}) as server:
        server.set_user(credit=math.nan, balance=12.5)
        assert on_vast(server, VAST_KEY, lambda c: c.balance()).balance == 12.5


@pytest.mark.parametrize("bad", NON_FINITE)
def test_volumes_with_non_finite_sizes_print_as_json(bad: float) -> None:
    with RunPodEmulator({"main": RP_KEY}) as runpod, VastEmulator({"main": VAST_KEY}) as vast:
        runpod.add_network_volume("nv1", size=bad)  # type: ignore[arg-type]
        vast.add_volume(7001, size=bad, storage_total_cost=bad)
        volumes = on_runpod(runpod, RP_KEY, lambda c: c.volumes()) + on_vast(
            vast, VAST_KEY, lambda c: c.volumes()
        )
    strict_json(volumes)
    assert [(v.id, v.size_gb, v.cost_per_month) for v in volumes] == [
        ("nv1", None, None),
        ("7001", None, None),
    ]
