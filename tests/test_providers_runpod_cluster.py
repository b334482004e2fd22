"""Any `cluster` object marks a RunPod pod as a cluster member, whether or not its id can be
read: the spec omits `cluster` from a standalone pod, and a member cannot be deleted through
the pod endpoints, so a member whose cluster id is null or missing must still be held."""

from __future__ import annotations

from typing import Any

import pytest

from emulators import RunPodEmulator
from reaper.providers.base import HttpOptions
from reaper.providers.runpod.pods import UNKNOWN_CLUSTER, parse_pod
from tests.provider_support import on_runpod

FAST = HttpOptions(timeout=2, max_attempts=2, backoff_base=0.001, backoff_cap=0.004)
KEY = "rp-test-key-0012"


def pod_with(**fields: Any) -> dict[str, Any]:
    return {"id": "p1", "status": "EXITED", "mounts": {}, **fields}


@pytest.mark.parametrize(
    "cluster", [{"id": None, "rank": 0}, {"rank": 1}, {}, {"id": ""}, "c1", 7, [1]]
)
def test_a_cluster_value_without_a_readable_id_still_marks_a_member(cluster: Any) -> None:
    assert parse_pod(pod_with(cluster=cluster), "main").cluster_id == UNKNOWN_CLUSTER


def test_a_readable_cluster_id_is_kept() -> None:
    pod = parse_pod(pod_with(cluster={"id": "cl_9", "rank": 2}), "main")
    assert pod.cluster_id == "cl_9"
    assert pod.state == "stopped"


@pytest.mark.parametrize("fields", [{}, {"cluster": None}])
def test_a_pod_without_a_cluster_is_standalone(fields: dict[str, Any]) -> None:
    pod = parse_pod(pod_with(**fields), "main")
    assert pod.cluster_id is None
    assert pod.state == "stopped"


def test_a_listed_member_with_a_null_cluster_id_carries_the_marker() -> None:
    with RunPodEmulator({"main": KEY}) as server:
        member = server.add_pod(status="EXITED", cluster_id="cl_1")
        server.modify_pod(member, cluster={"id": None, "rank": 1})
        alone = server.add_pod(status="EXITED")

        pods = {i.id: i for i in on_runpod(server, KEY, lambda c: c.list_instances(), FAST)}
    assert pods[member].cluster_id == UNKNOWN_CLUSTER
    assert pods[alone].cluster_id is None
