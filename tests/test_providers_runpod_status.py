"""RunPod pods are read into `Instance` as docs/safety.md says, over real HTTP to the emulator:
every status (spec enum, unknown strings, null, missing) maps to the right state, and cost,
GPU utilisation, cluster membership, disks and times are read from the spec's fields."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from emulators import RunPodEmulator
from reaper.core.models import Instance
from reaper.providers.base import HttpOptions
from tests.provider_support import on_runpod

FAST = HttpOptions(timeout=2, max_attempts=2, backoff_base=0.001, backoff_cap=0.005)
KEY = "rp-test-key-0001"


@pytest.fixture(scope="module")
def emulator() -> Iterator[RunPodEmulator]:
    with RunPodEmulator({"main": KEY}) as server:
        yield server


def listing(server: RunPodEmulator) -> dict[str, Instance]:
    return {i.id: i for i in on_runpod(server, KEY, lambda c: c.list_instances(), FAST)}


@pytest.mark.parametrize(
    ("status", "state"),
    [
        ("RUNNING", "running"),
        ("PROVISIONING", "starting"),
        ("STARTING", "starting"),
        ("EXITED", "stopped"),
        ("TERMINATED", "terminated"),
        ("ERROR", "unknown"),
        ("PAUSED", "unknown"),
        ("exited", "unknown"),
        ("", "unknown"),
    ],
)
def test_each_status_maps_to_its_state(emulator: RunPodEmulator, status: str, state: str) -> None:
    pod_id = emulator.add_pod(status=status)
    try:
        pod = listing(emulator)[pod_id]
    finally:
        emulator.remove_pod(pod_id)
    assert pod.state == state
    assert pod.raw_status == status


def test_null_status_is_unknown_and_reported_as_null(emulator: RunPodEmulator) -> None:
    pod_id = emulator.add_pod()
    emulator.modify_pod(pod_id, status=None)
    try:
        pod = listing(emulator)[pod_id]
    finally:
        emulator.remove_pod(pod_id)
    assert (pod.state, pod.raw_status) == ("unknown", "null")


def test_missing_status_is_unknown_with_empty_raw_status(emulator: RunPodEmulator) -> None:
    pod_id = emulator.add_pod(status="EXITED")
    emulator.drop_field(pod_id, "status")
    try:
        pod = listing(emulator)[pod_id]
    finally:
        emulator.remove_pod(pod_id)
    assert (pod.state, pod.raw_status) == ("unknown", "")


def test_running_pod_bills_its_cost_and_reports_mean_gpu_percent(
    emulator: RunPodEmulator,
) -> None:
    created = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
    pod_id = emulator.add_pod(
        name="llm-train", cost=1.19, gpu_utils=[90, 60], created_at=created, disk=40, volume_gb=30
    )
    try:
        pod = listing(emulator)[pod_id]
    finally:
        emulator.remove_pod(pod_id)
    assert pod.name == "llm-train"
    assert pod.cost_per_hour == pytest.approx(1.19)
    assert pod.gpu_util == pytest.approx(75.0)
    assert pod.created_at == created
    assert pod.started_at == created
    assert (pod.container_disk_gb, pod.volume_disk_gb) == (40, 30)
    assert pod.console_url == f"https://console.runpod.io/pods?id={pod_id}"


def test_stopped_pod_bills_its_volume_disk_not_its_cost(emulator: RunPodEmulator) -> None:
    pod_id = emulator.add_pod(status="EXITED", cost=2.5, volume_gb=100, disk=80)
    try:
        pod = listing(emulator)[pod_id]
    finally:
        emulator.remove_pod(pod_id)
    # $0.20/GB/month for the volume disk; the container disk is not charged when stopped.
    assert pod.cost_per_hour == pytest.approx(100 * 0.20 / 730, rel=1e-4)
    assert pod.gpu_util is None


def test_stopped_pod_on_a_network_volume_bills_nothing_itself(emulator: RunPodEmulator) -> None:
    pod_id = emulator.add_pod(status="EXITED", network_volume_id="vol-1")
    try:
        pod = listing(emulator)[pod_id]
    finally:
        emulator.remove_pod(pod_id)
    assert pod.cost_per_hour == 0.0
    assert pod.network_volume_id == "vol-1"
    assert pod.volume_disk_gb is None


def test_terminated_bills_nothing_and_unknown_cost_is_none(emulator: RunPodEmulator) -> None:
    gone = emulator.add_pod(status="TERMINATED")
    broken = emulator.add_pod(status="ERROR", cost=0.9)
    try:
        pods = listing(emulator)
    finally:
        emulator.remove_pod(gone)
        emulator.remove_pod(broken)
    assert pods[gone].cost_per_hour == 0.0
    assert pods[broken].cost_per_hour is None


def test_cluster_pods_are_listed_with_their_cluster_id(emulator: RunPodEmulator) -> None:
    member = emulator.add_pod(cluster_id="cluster_abc123")
    alone = emulator.add_pod()
    try:
        pods = listing(emulator)
    finally:
        emulator.remove_pod(member)
        emulator.remove_pod(alone)
    assert pods[member].cluster_id == "cluster_abc123"
    assert pods[alone].cluster_id is None
    assert any(
        r.path == "/v2/pods" and "includeClusterPods=true" in r.query for r in emulator.requests
    )


def test_locked_pod_is_read_as_locked(emulator: RunPodEmulator) -> None:
    pod_id = emulator.add_pod(status="EXITED", locked=True)
    try:
        pod = listing(emulator)[pod_id]
    finally:
        emulator.remove_pod(pod_id)
    assert pod.locked is True
    assert pod.state == "stopped"


def test_a_malformed_pod_is_unknown_and_the_rest_still_listed(emulator: RunPodEmulator) -> None:
    good = emulator.add_pod(status="EXITED")
    bad = emulator.add_pod(status="EXITED")
    emulator.modify_pod(bad, cost="a lot", mounts=["not", "an", "object"])
    emulator.add_raw_pod(["not a pod at all"])
    try:
        pods = listing(emulator)
    finally:
        emulator.remove_pod(good)
        emulator.remove_pod(bad)
        emulator.clear_raw_pods()
    assert pods[good].state == "stopped"
    # Readable fields are kept; the pod is never reapable.
    assert pods[bad].state == "unknown"
    assert pods[bad].raw_status == "EXITED"
    assert pods[bad].name == "training-pod"
    unreadable = [p for p in pods.values() if p.id.startswith("unreadable-")]
    assert [p.state for p in unreadable] == ["unknown"]


def test_a_listing_that_is_not_the_envelope_is_an_error() -> None:
    from emulators.server import Request, Response
    from reaper.providers.base import ProviderError

    class Broken(RunPodEmulator):
        def dispatch(self, request: Request) -> Response:
            return Response.json(200, [{"id": "x"}])

    with Broken({"main": KEY}) as server, pytest.raises(ProviderError, match="pods"):
        listing(server)
