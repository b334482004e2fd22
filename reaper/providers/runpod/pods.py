"""A RunPod pod as reaper reads it: the fields of the spec's `Pod` read tolerantly, its status
mapped to a state, what it bills (the pricing docs' disk and network-volume rates) and what a
termination loses. Pure parsing: the client (`client.py`) fetches, this reads.

Beyond the spec, as public clients show: `cost` stays the GPU price on an EXITED pod (what it
bills is its volume disk); RUNNING arrives before the container is up (`runtime: null` or
`{}`) and an EXITED pod keeps stale telemetry (runpodctl PR #315), so the status decides the
state and telemetry is read only from a RUNNING pod; a terminate can leave a pod EXITED with
v1's marker before it disappears: such a pod is terminated, not stopped.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

from reaper.core.models import Instance, State
from reaper.core.units import HOURS_PER_MONTH, parse_time
from reaper.providers.base import UNREADABLE_ID_PREFIX
from reaper.providers.parsing import (
    CleanStr,
    ExactStr,
    RawModel,
    finite,
    not_an_object,
    note_unreadable,
    raw_status,
    read_tolerantly,
)
from reaper.providers.runpod import LABEL, NAME, valid_pod_id

# PodStatus enum of the spec. Exact, case-sensitive matches only: anything else (ERROR, a new
# value, null, a missing field) is "unknown" and never reaped.
STATUS_STATES: dict[str, State] = {
    "RUNNING": "running",
    "PROVISIONING": "starting",
    "STARTING": "starting",
    "EXITED": "stopped",
    "TERMINATED": "terminated",
}

# RunPod's pricing and billing docs: a stopped pod's volume disk bills $0.20/GB/month; its container
# disk is "not charged" when stopped; a network volume bills on its own whether or not a pod
# uses it, so it is not part of the pod's cost. A month is taken as 730 hours (the docs do not
# say which month length RunPod divides by).
STOPPED_VOLUME_USD_PER_GB_MONTH = 0.20
# Network volumes: $0.07/GB/month under 1 TB, $0.05 over. Whether the lower rate is tiered
# (only the part above 1 TB) or applies to the whole volume is not stated; the whole-volume
# reading is used, with 1 TB = 1000 GB.
NETWORK_VOLUME_USD_PER_GB_MONTH = 0.07
NETWORK_VOLUME_LARGE_USD_PER_GB_MONTH = 0.05
NETWORK_VOLUME_LARGE_GB = 1000

CONSOLE_URL = "https://console.runpod.io/pods?id={id}"
# v1's terminate marker, spelt "RunPod" and "Runpod" by the backend (runpodctl's tests).
_TERMINATED_MARKER = re.compile(r"terminated by (user|runpod)", re.IGNORECASE)
# The cluster id of a member pod whose `cluster` object carries no readable id: it is still a
# member (held, never deleted through the pod endpoints).
UNKNOWN_CLUSTER = "unknown"


class _GpuUtil(RawModel):
    util: float | None = None


class _Runtime(RawModel):
    """`runtime`: only `gpus` is read; the other telemetry fields are taken as they come, to
    tell a runtime that carries telemetry from an empty one (`_telemetry`)."""

    gpus: list[_GpuUtil] | None = None
    uptime: Any = None
    cpu: Any = None
    memory: Any = None
    ports: Any = None


class _Persistent(RawModel):
    size: float | None = None


class _NetworkMount(RawModel):
    volumeId: CleanStr | None = None


class _Mounts(RawModel):
    persistent: _Persistent | None = None
    network: list[_NetworkMount] | None = None


class _Cluster(RawModel):
    id: CleanStr | None = None


class RawPod(RawModel):
    """The fields of the spec's `Pod` that reaper reads. `env` is deliberately absent.

    `id` is what a DELETE targets, so one that is not valid text is unreadable (the pod is
    then unknown), never cleaned into another id. Volume and cluster ids only label things
    in reports and are cleaned like names.
    """

    id: ExactStr | None = None
    name: CleanStr | None = None
    status: str | None = None
    cost: float | None = None
    locked: bool | None = None
    disk: float | None = None
    mounts: _Mounts | None = None
    runtime: _Runtime | None = None
    cluster: _Cluster | None = None
    createdAt: str | None = None
    startedAt: str | None = None
    # Outside the v2 spec (v1 and GraphQL fields): read only as a terminate marker.
    desiredStatus: str | None = None
    lastStatusChange: CleanStr | None = None


def _protection_unreadable(raw: dict[str, Any], pod: RawPod, unreadable: list[str]) -> str | None:
    """`locked` and `name` decide protection: missing, null or malformed, they cannot be read,
    and a pod whose protection cannot be read counts as protected."""
    problems = []
    for field, value in (("locked", pod.locked), ("name", pod.name)):
        if field not in raw:
            problems.append(f"`{field}` is missing")
        elif raw[field] is None:
            problems.append(f"`{field}` is null")
        elif value is None or field in unreadable:
            problems.append(f"`{field}` is unreadable")
    return ", ".join(problems) or None


def parse_pod(raw: object, account: str, position: int = 0) -> Instance:
    """One pod of a listing as an `Instance`; never raises.

    A pod that is not an object, or has fields that fail validation, is still returned (so the
    fleet stays whole) with what could be read and state "unknown" (so it is never reaped).
    """
    if not isinstance(raw, dict):
        return not_an_object(NAME, account, position)
    pod, unreadable = read_tolerantly(RawPod, raw)
    readable_id = pod.id is not None and valid_pod_id(pod.id)
    pod_id = pod.id if pod.id is not None and readable_id else f"{UNREADABLE_ID_PREFIX}{position}"
    status = raw_status(raw.get("status"), "status" in raw)
    state: State = STATUS_STATES.get(pod.status or "", "unknown")
    if state == "stopped" and _terminate_marked(pod):
        state = "terminated"
    if unreadable or not readable_id:
        state = "unknown"
        note_unreadable("runpod", account, pod_id, unreadable or ["id"])
    volume_gb = pod.mounts.persistent.size if pod.mounts and pod.mounts.persistent else None
    network_volume = _network_volume_id(pod.mounts)
    return Instance(
        provider=NAME,
        provider_label=LABEL,
        termination_loses=what_is_lost(pod.disk, volume_gb, network_volume),
        account=account,
        id=pod_id,
        name=pod.name or "",
        state=state,
        raw_status=status,
        cost_per_hour=finite(_cost_per_hour(pod, state)),
        locked=bool(pod.locked),
        cluster_id=_cluster_id(pod.cluster, raw.get("cluster")),
        gpu_util=finite(_gpu_util(pod.runtime)) if state == "running" else None,
        created_at=parse_time(pod.createdAt),
        started_at=parse_time(pod.startedAt),
        container_disk_gb=pod.disk,
        volume_disk_gb=volume_gb,
        network_volume_id=network_volume,
        console_url=CONSOLE_URL.format(id=quote(pod_id, safe="")) if readable_id else None,
        protection_unreadable=_protection_unreadable(raw, pod, unreadable),
        # `startedAt` moves at every start; without it a start between two passes is invisible.
        restart_visible=pod.startedAt is not None and "startedAt" not in unreadable,
        stalled=_stalled(pod, state),
    )


def _gb(size: float | None) -> str:
    return f" {size:g} GB" if size else ""


def what_is_lost(disk: float | None, volume: float | None, network_volume: str | None) -> str:
    """What a termination destroys and what it leaves, in RunPod's own words."""
    kept = (
        f"network volume {network_volume} survives" if network_volume else "network volumes survive"
    )
    return f"Lost: container disk{_gb(disk)} and volume disk{_gb(volume)}; {kept}."


def _terminate_marked(pod: RawPod) -> bool:
    """An EXITED pod that a terminate has already hit (v1's marker, if the answer carries it)."""
    return pod.desiredStatus == "TERMINATED" or bool(
        pod.lastStatusChange and _TERMINATED_MARKER.search(pod.lastStatusChange)
    )


def _stalled(pod: RawPod, state: State) -> str | None:
    """A state that bills and may never become usable: named in an alert once it lasts
    REAPER_STUCK_AFTER (users have paid for hours of pods that never started)."""
    if pod.status in ("PROVISIONING", "STARTING"):
        return f"{pod.status.lower()}, never became RUNNING"
    if pod.status == "RUNNING" and not _telemetry(pod.runtime) and state == "running":
        return "RUNNING, but its container never came up (no runtime)"
    if pod.status == "ERROR":
        return "in ERROR"
    return None


def _cluster_id(cluster: _Cluster | None, raw: object) -> str | None:
    """The pod's cluster id when it is a member, else None.

    Membership is the presence of a `cluster` value (the spec omits it from a standalone pod),
    not the readability of its id: `{"id": null}`, `{"rank": 1}` or a `cluster` that failed
    validation still mark a member, whose pod endpoints cannot delete it. Only an absent or
    null `cluster` is a standalone pod.
    """
    if raw is None:
        return None
    if cluster is not None and cluster.id:
        return cluster.id
    return UNKNOWN_CLUSTER


def _cost_per_hour(pod: RawPod, state: State) -> float | None:
    """What the pod bills now. Running/starting: the spec's `cost` ($/h). EXITED: `cost` is
    0.0 by the spec, but the volume disk still bills (RunPod's pricing docs), so that is computed.
    TERMINATED: nothing. Unknown: None."""
    if state in ("running", "starting"):
        return pod.cost
    if state == "terminated":
        return 0.0
    if state == "stopped":
        if pod.mounts is None:
            return None
        size = pod.mounts.persistent.size if pod.mounts.persistent else 0.0
        if size is None:
            return None
        return size * STOPPED_VOLUME_USD_PER_GB_MONTH / HOURS_PER_MONTH
    return None


def _telemetry(runtime: _Runtime | None) -> bool:
    """Whether `runtime` carries any telemetry: null and `{}` (what a pod answers before its
    container is up) carry none."""
    return runtime is not None and bool(runtime.model_dump(exclude_none=True))


def _gpu_util(runtime: _Runtime | None) -> float | None:
    """Mean of `runtime.gpus[].util`, already in percent (the spec's integers 0-100)."""
    if runtime is None or not runtime.gpus:
        return None
    values = [g.util for g in runtime.gpus if g.util is not None]
    if not values:
        return None
    return max(0.0, min(100.0, sum(values) / len(values)))


def _network_volume_id(mounts: _Mounts | None) -> str | None:
    if mounts is None or not mounts.network:
        return None
    return next((m.volumeId for m in mounts.network if m.volumeId), None)


def network_volume_cost_per_month(size_gb: float | None) -> float | None:
    if size_gb is None:
        return None
    rate = (
        NETWORK_VOLUME_LARGE_USD_PER_GB_MONTH
        if size_gb > NETWORK_VOLUME_LARGE_GB
        else NETWORK_VOLUME_USD_PER_GB_MONTH
    )
    return round(size_gb * rate, 4)
