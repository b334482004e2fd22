"""A RunPod REST v2 emulator that answers as `openapi-v2.json` says — and, where the live API
is known to differ, as the live API does — plus the one GraphQL query reaper still makes.

Where it follows real answers rather than the copied spec (each named at its place):
- `GET /pods` pages with a cursor: `{"pods": [...], "pagination": {"nextCursor": ...,
  "hasNextPage": ...}}`, the cursor sent back as `?cursor=`, the size as `?limit=` (five
  independent v2 clients page this way; the spec shows no paging);
- an EXITED pod keeps its `cost` (the GPU price, not what it bills; client fixtures of v2);
- RUNNING comes before the container is up: `runtime` stays null until then (runpodctl's
  pod-state code, dstack's RunPod backend); a PROVISIONING pod answers `runtime: {}`
  (issue 26's study of 2026 answers; the spec's `PodRuntime` has no required field);
- a pod that stops keeps its last `runtime` telemetry for a while (runpod/runpodctl PR #315:
  "an EXITED pod kept reporting stale runtime ports"; `stale_runtime`);
- a key that resolves to no account answers GraphQL 200 `{"data": {"myself": null}}`
  (runpod/runpodctl issue #46, runpod/runpod-mcp's credential check; `graphql_myself_null`);
- problem bodies come without `title`, or with `detail` alone (runpod/runpod-mcp's HTTP client
  tests), or with the spec's `errors[]` (`problem_shape`).

Routes (under `/v2`, so `rest_url` is what `RUNPOD_API_URL` points at): `GET /pods`
(`includeClusterPods`), `GET|DELETE /pods/{id}`, `GET /network-volumes`, `GET /serverless`;
and `POST /graphql` for `myself { clientBalance currentSpendPerHr spendLimit }`. Errors are
RFC 9457 problems (`application/problem+json`); 429 carries `Retry-After`, `RateLimit` and
`RateLimit-Policy` as the spec shows; authenticated answers carry the rate-limit headers too.
"""

from __future__ import annotations

import base64
import itertools
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Literal

from emulators.fleet import (
    FleetError,
    ProviderFleet,
    checked_bool,
    checked_choice,
    checked_number,
    checked_object,
    checked_owner,
    checked_string,
)
from emulators.server import (
    EmulatorServer,
    FleetEntry,
    Request,
    Response,
    iso,
    status_title,
)

_POD_PATH = re.compile(r"^/v2/pods/([^/]+)$")
# "spec": `{title, status, detail}`; "no_title": `{status, detail}`; "detail_only": `{detail}`
# (both in runpod/runpod-mcp's HTTP client tests); "errors": the spec's `errors[]` beside them.
ProblemShape = Literal["spec", "no_title", "detail_only", "errors"]


def _encode_cursor(account: str, offset: int) -> str:
    """An opaque cursor, as the live API's are (base64 of where the next page starts)."""
    return base64.urlsafe_b64encode(json.dumps([account, offset]).encode()).decode()


def _decode_cursor(cursor: str) -> tuple[str, int] | None:
    try:
        account, offset = json.loads(base64.urlsafe_b64decode(cursor.encode()))
    except (ValueError, TypeError):
        return None
    if not isinstance(account, str) or not isinstance(offset, int) or offset < 0:
        return None
    return account, offset


_ACTIONS = {
    "RUNNING": ["stop", "restart", "terminate"],
    "PROVISIONING": ["stop", "terminate"],
    "STARTING": ["stop", "terminate"],
    "EXITED": ["start", "terminate"],
    "ERROR": ["terminate"],
    "TERMINATED": [],
}


# --- its section of a fleet file (`emulators.fleet`) -------------------------------------------

FLEET_STATUSES = ("PROVISIONING", "STARTING", "RUNNING", "EXITED", "ERROR", "TERMINATED")
_POD_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_POD_FIELDS = ("id", "account", "name", "status", "cost", "locked", "gpu_util", "disk", "volume_gb")


def _pod(value: Any, where: str, accounts: Mapping[str, str]) -> dict[str, Any]:
    raw = checked_object(value, where, _POD_FIELDS)
    pod: dict[str, Any] = {}
    if "id" in raw:
        pod["pod_id"] = checked_string(raw["id"], f"{where}.id", _POD_ID)
    pod["account"] = checked_owner(raw.get("account"), f"{where}.account", accounts)
    if "name" in raw:
        pod["name"] = checked_string(raw["name"], f"{where}.name")
    if "status" in raw:
        pod["status"] = checked_choice(raw["status"], f"{where}.status", FLEET_STATUSES)
    if "cost" in raw:
        pod["cost"] = checked_number(raw["cost"], f"{where}.cost", high=1000)
    if "locked" in raw:
        pod["locked"] = checked_bool(raw["locked"], f"{where}.locked")
    if "gpu_util" in raw:
        utils = raw["gpu_util"]
        if not isinstance(utils, list) or not utils:
            raise FleetError(f"{where}.gpu_util: expected a list of percents, one per GPU")
        pod["gpu_utils"] = [
            int(checked_number(u, f"{where}.gpu_util[{i}]", high=100)) for i, u in enumerate(utils)
        ]
    if "disk" in raw:
        pod["disk"] = int(checked_number(raw["disk"], f"{where}.disk", high=100_000))
    if "volume_gb" in raw:
        size = raw["volume_gb"]
        pod["volume_gb"] = None if size is None else int(checked_number(size, f"{where}.volume_gb"))
    return pod


@dataclass
class _Pod(FleetEntry):
    running_cost: float
    gpu_utils: list[int]
    # False: RUNNING, but the container is not up yet (image pull, boot): `runtime` is null.
    container_up: bool = True


class RunPodEmulator(EmulatorServer[str, _Pod]):
    """Control API: `add_pod`, `set_status`, `modify_pod`, `add_raw_pod`, `remove_pod`,
    `add_network_volume`, `add_endpoint`, `set_balance`, `graphql_retired`, plus the shared
    knobs of `EmulatorServer`.

    `delete_linger_reads`: a deleted pod stays listed as TERMINATED for that many listings,
    then disappears. `delete_never_confirms`: DELETE answers 204 but the pod stays, EXITED.
    """

    provider = "runpod"
    # Its section of a fleet file (`emulators.fleet.Emulated`).
    FLEET_LIST = "pods"
    FLEET_FIELDS = _POD_FIELDS
    FLEET_ID = "pod_id"
    DEFAULT_KEY = "rp-emulated-key-not-secret"
    FLEET_STATUS = "status"
    FLEET_STOPPED = ("EXITED",)
    fleet_entry = staticmethod(_pod)

    def __init__(
        self,
        keys: Mapping[str, str] | None = None,
        *,
        delete_linger_reads: int = 0,
        delete_never_confirms: bool = False,
        now: Callable[[], datetime] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        super().__init__(
            keys,
            host=host,
            port=port,
            delete_linger_reads=delete_linger_reads,
            delete_never_confirms=delete_never_confirms,
            now=now,
        )
        # A status code (404, 410) makes the GraphQL endpoint answer as retired.
        self.graphql_retired: int | None = None
        # True: GraphQL answers every key `{"data": {"myself": null}}` (a key of no account).
        self.graphql_myself_null = False
        # The shape of problem bodies (see `_problem`): the spec's, or one seen live.
        self.problem_shape: ProblemShape = "spec"
        # True: a pod that stops keeps the `runtime` it had while RUNNING.
        self.stale_runtime = True
        # Pods per page of `GET /pods` (the live API's maximum is said to be 1000); tests make
        # it small to list several pages. None answers the spec's unpaged shape.
        self.page_size: int | None = 1000
        # A paging answer the client must refuse: "no_cursor" (more, without a cursor),
        # "repeat" (the same cursor again), "not_object" (`pagination` is a string).
        self.pagination_fault: str | None = None
        self._volumes: dict[str, list[dict[str, Any]]] = {}
        self._endpoints: dict[str, list[dict[str, Any]]] = {}
        self._balances: dict[str, dict[str, float | None]] = {}
        # `GET /v2/billing`: the amount billed per UTC day (its midnight), per account.
        self._billing: dict[str, dict[datetime, float]] = {}
        # `GET /v2/billing/pods`: per pod id, the amount billed per UTC day.
        self._pod_billing: dict[str, dict[datetime, float]] = {}
        self._ids = itertools.count(1)

    @property
    def rest_url(self) -> str:
        """What `RUNPOD_API_URL` is set to."""
        return f"{self.url}/v2"

    @property
    def graphql_url(self) -> str:
        """What `RUNPOD_GRAPHQL_URL` is set to."""
        return f"{self.url}/graphql"

    def environment(self, keys: str) -> dict[str, str]:
        """The variables that point reaper at this emulator, `keys` its accounts' keys."""
        return {
            "RUNPOD_API_URL": self.rest_url,
            "RUNPOD_GRAPHQL_URL": self.graphql_url,
            "RUNPOD_API_KEY": keys,
        }

    def populate(self, section: ProviderFleet) -> list[str]:
        """Its section of a fleet file, into this (started) emulator; the pods' ids, in order."""
        now = self._now()
        ids = [
            self.add_pod(**pod, created_at=section.born(i, now))
            for i, pod in enumerate(section.entries)
        ]
        for name, amount in section.balances.items():
            self.set_balance(name, client_balance=amount)
        return ids

    # ---- fleet control ---------------------------------------------------------------------

    def add_pod(
        self,
        pod_id: str | None = None,
        *,
        account: str | None = None,
        name: str = "training-pod",
        status: str = "RUNNING",
        cost: float = 0.44,
        locked: bool = False,
        cluster_id: str | None = None,
        gpu_utils: list[int] | None = None,
        disk: int = 50,
        volume_gb: int | None = 20,
        network_volume_id: str | None = None,
        env: dict[str, str] | None = None,
        created_at: datetime | None = None,
        **overrides: Any,
    ) -> str:
        """Add a pod shaped like the spec's `Pod` example; returns its id."""
        pod_id = pod_id or f"rp{next(self._ids):08d}emu"
        created = created_at or self._now()
        mounts: dict[str, Any] = {}
        if network_volume_id is not None:
            mounts["network"] = [{"volumeId": network_volume_id, "path": "/runpod-volume"}]
        elif volume_gb is not None:
            mounts["persistent"] = {"size": volume_gb, "path": "/workspace"}
        data: dict[str, Any] = {
            "id": pod_id,
            "name": name,
            "image": "runpod/pytorch:1.0.2-cu1281-torch280-ubuntu2404",
            "args": "",
            "disk": disk,
            "ports": ["8888/http", "22/tcp"],
            "env": dict(env or {"MODEL_NAME": "llama-3"}),
            "registry": None,
            "status": status,
            "actions": [],
            "mounts": mounts,
            "gpu": {"id": "NVIDIA GeForce RTX 4090", "count": max(1, len(gpu_utils or [0]))},
            "cloud": "SECURE",
            "dataCenterId": "US-KS-2",
            "cudaVersion": "12.8",
            "ssh": {"proxy": None, "direct": None},
            "template": None,
            "cost": cost,
            "locked": locked,
            "globalNetworking": {"enabled": False},
            "runtime": None,
            "createdAt": iso(created),
            "startedAt": iso(created),
        }
        if cluster_id is not None:
            data["cluster"] = {"id": cluster_id, "rank": 0}
        with self.lock:
            self._entries[pod_id] = _Pod(
                account or self.default_account(), data, cost, list(gpu_utils or [0])
            )
            self._apply_status(self._entries[pod_id], status)
            data.update(overrides)
        return pod_id

    def add_pod_json(self, data: dict[str, Any], *, account: str | None = None) -> str:
        """List `data` exactly as given (a pod object as the live API answered it) as a pod of
        this emulator: it pages, answers GET and DELETE like any other."""
        pod_id = str(data["id"])
        cost = data.get("cost")
        with self.lock:
            self._entries[pod_id] = _Pod(
                account or self.default_account(),
                dict(data),
                float(cost) if isinstance(cost, int | float) else 0.0,
                [],
            )
        return pod_id

    def set_status(self, pod_id: str, status: str, *, cost: float | None = None) -> None:
        """Move a pod to `status` (any string, so unknown values can be tested); `cost`,
        `runtime`, `actions` and `ssh` follow as the spec describes for that status."""
        with self.lock:
            pod = self._entries[pod_id]
            if cost is not None:
                pod.running_cost = cost
            self._apply_status(pod, status)

    def set_container_up(self, pod_id: str, up: bool) -> None:
        """`False`: the pod is RUNNING (and bills) but its container is not up: `runtime`
        stays null, as the live API answers while an image is pulled."""
        with self.lock:
            pod = self._entries[pod_id]
            pod.container_up = up
            self._apply_status(pod, pod.data["status"])

    def set_gpu_utils(self, pod_id: str, utils: list[int]) -> None:
        with self.lock:
            pod = self._entries[pod_id]
            pod.gpu_utils = list(utils)
            self._apply_status(pod, pod.data["status"])

    modify_pod = EmulatorServer.modify_entry
    add_raw_pod = EmulatorServer.add_raw_entry
    clear_raw_pods = EmulatorServer.clear_raw_entries
    remove_pod = EmulatorServer.remove_entry
    pod = EmulatorServer.entry
    pod_ids = EmulatorServer.entry_ids

    def add_network_volume(
        self,
        volume_id: str,
        *,
        size: int = 100,
        name: str = "training-dataset",
        account: str | None = None,
        volume_type: str = "STANDARD",
    ) -> None:
        volume = {
            "id": volume_id,
            "name": name,
            "size": size,
            "dataCenter": "US-KS-2",
            "type": volume_type,
        }
        with self.lock:
            self._volumes.setdefault(account or self.default_account(), []).append(volume)

    def add_endpoint(
        self,
        endpoint_id: str,
        *,
        network_volumes: list[str] | None = None,
        account: str | None = None,
    ) -> None:
        """A serverless endpoint shaped like the spec's example (it may reference volumes)."""
        endpoint = {
            "id": endpoint_id,
            "name": "image-generator",
            "type": "QUEUE",
            "image": "runpod/pytorch:1.0.2-cu1281-torch280-ubuntu2404",
            "args": "",
            "disk": 20,
            "ports": ["8000/http"],
            "env": {"MODEL_NAME": "sdxl"},
            "registry": None,
            "gpu": {
                "pools": ["ADA_24"],
                "count": 1,
                "allowedCudaVersions": [],
                "minCudaVersion": None,
            },
            "workers": {"min": 0, "max": 5, "idleTimeout": 5},
            "scaling": {"type": "QUEUE_DELAY", "queueDelay": 4},
            "dataCenterIds": ["US-KS-2"],
            "networkVolumes": list(network_volumes or []),
            "timeout": 300000,
            "flashboot": "OFF",
            "createdAt": iso(self._now()),
        }
        with self.lock:
            self._endpoints.setdefault(account or self.default_account(), []).append(endpoint)

    def set_balance(
        self,
        account: str | None = None,
        *,
        client_balance: float | None = 100.0,
        current_spend_per_hr: float | None = None,
        spend_limit: float | None = 80.0,
    ) -> None:
        """`current_spend_per_hr=None` means: the sum of the account's pods' `cost`."""
        with self.lock:
            self._balances[account or self.default_account()] = {
                "clientBalance": client_balance,
                "currentSpendPerHr": current_spend_per_hr,
                "spendLimit": spend_limit,
            }

    def set_billing(self, amounts: Mapping[datetime, float], account: str | None = None) -> None:
        """What `GET /v2/billing?bucketSize=day` answers per day (a datetime's UTC day)."""
        days = {
            moment.replace(hour=0, minute=0, second=0, microsecond=0): amount
            for moment, amount in amounts.items()
        }
        with self.lock:
            self._billing.setdefault(account or self.default_account(), {}).update(days)

    def set_pod_billing(self, pod_id: str, amounts: Mapping[datetime, float]) -> None:
        """What `GET /v2/billing/pods` answers for this pod per day (a datetime's UTC day);
        the pod's account is the one that sees it. Kept after the pod is deleted, as
        billing is."""
        days = {
            moment.replace(hour=0, minute=0, second=0, microsecond=0): amount
            for moment, amount in amounts.items()
        }
        with self.lock:
            self._pod_billing.setdefault(pod_id, {}).update(days)

    # ---- status shaping --------------------------------------------------------------------

    def _apply_status(self, pod: _Pod, status: str) -> None:
        data = pod.data
        data["status"] = status
        data["actions"] = list(_ACTIONS.get(status, []))
        running = status == "RUNNING"
        # The spec says 0.0 when EXITED; v2 client fixtures show the GPU price kept there (not
        # what a stopped pod bills). TERMINATED is 0.0 in both.
        data["cost"] = 0.0 if status == "TERMINATED" else pod.running_cost
        stale = data.get("runtime") if status == "EXITED" and self.stale_runtime else None
        data["runtime"] = {} if status == "PROVISIONING" else stale
        if running and pod.container_up:
            data["runtime"] = {
                "uptime": 3600,
                "gpus": [{"util": u, "memoryUtil": min(100, u + 10)} for u in pod.gpu_utils],
                "cpu": {"util": 12},
                "memory": {"util": 40},
                "ports": [{"private": 22, "public": 34446, "type": "tcp", "ip": "195.26.233.3"}],
            }
        proxy = {
            "host": "ssh.runpod.io",
            "port": 22,
            "username": f"{data['id']}-64411eb2",
            "command": f"ssh {data['id']}-64411eb2@ssh.runpod.io",
        }
        direct = {
            "host": "195.26.233.3",
            "port": 34446,
            "username": "root",
            "command": "ssh root@195.26.233.3 -p 34446",
        }
        data["ssh"] = {"proxy": proxy, "direct": direct if running else None}
        if status == "TERMINATED":
            data["ssh"] = {"proxy": None, "direct": None}

    # ---- HTTP ------------------------------------------------------------------------------

    def classify(self, method: str, path: str) -> str:
        path = path.rstrip("/") or "/"
        if path == "/graphql":
            return "balance"
        if path == "/v2/pods":
            return "list" if method == "GET" else "create"
        if _POD_PATH.match(path):
            return {"GET": "get", "DELETE": "delete"}.get(method, "update")
        if path == "/v2/network-volumes":
            return "volumes"
        if path == "/v2/serverless":
            return "serverless"
        if path == "/v2/billing":
            return "billing"
        if path == "/v2/billing/pods":
            return "pod_billing"
        return "other"

    def annotate(self, request: Request) -> Request:
        """The page number of a listing (1 for the first), from its cursor, for `fail_next`'s
        and `slow_next`'s `page`."""
        if request.kind != "list" or not self.page_size:
            return request
        cursor = request.query.get("cursor")
        decoded = _decode_cursor(cursor) if cursor else ("", 0)
        if decoded is None:
            return request
        try:
            limit = max(1, min(int(request.query.get("limit", "1000")), self.page_size))
        except ValueError:
            return request
        return replace(request, page=decoded[1] // limit + 1)

    def is_mutating(self, request: Request) -> bool:
        if request.kind == "balance":
            try:
                query = str((request.json() or {}).get("query", ""))
            except (ValueError, AttributeError):
                return True
            return query.lstrip().startswith("mutation")
        return super().is_mutating(request)

    def dispatch(self, request: Request) -> Response:
        assert request.account is not None
        account = request.account
        method, kind = request.method, request.kind
        if kind == "balance":
            return self._graphql(request, account)
        allowed = {
            "list": "GET",
            "get": "GET",
            "delete": "DELETE",
            "volumes": "GET",
            "serverless": "GET",
            "billing": "GET",
            "pod_billing": "GET",
        }
        if kind in ("other",):
            return self.error(request, 404, "no such route")
        if kind in ("create", "update") or allowed.get(kind) != method:
            return self._method_not_allowed(request)
        if kind == "list":
            include = request.query.get("includeClusterPods", "false").lower() == "true"
            pods = [] if request.empty else self._listing(account, include)
            return self._page(request, account, pods)
        if kind == "get":
            pod = self._owned(account, self._pod_id(request))
            if pod is None:
                return self.error(request, 404, "pod not found")
            return self._json(200, pod.data, request)
        if kind == "delete":
            return self._delete(request, account)
        if kind == "volumes":
            return self._json(
                200, {"networkVolumes": list(self._volumes.get(account, []))}, request
            )
        if kind == "billing":
            return self._billing_answer(request, account)
        if kind == "pod_billing":
            return self._pod_billing_answer(request, account)
        return self._json(200, {"endpoints": list(self._endpoints.get(account, []))}, request)

    def _billing_window(self, request: Request) -> tuple[datetime, datetime] | Response:
        """The spec's `bucketSize=day` + `lastN` window: the last N days, today's last."""
        if request.query.get("bucketSize", "day") != "day":
            return self.error(request, 400, "the emulator answers bucketSize=day only")
        try:
            last = int(request.query.get("lastN", "30"))
        except ValueError:
            return self.error(request, 400, "lastN: expected a whole number")
        if last < 1:
            return self.error(request, 400, "lastN: at least 1")
        today = self._now().replace(hour=0, minute=0, second=0, microsecond=0)
        return today - timedelta(days=last - 1), today + timedelta(days=1)

    def _pod_billing_answer(self, request: Request, account: str) -> Response:
        """`GET /v2/billing/pods`: a record per pod per day that has an amount, for the pods
        this account owns or owned (`podId` narrows it to one)."""
        window = self._billing_window(request)
        if isinstance(window, Response):
            return window
        start, end = window
        wanted = request.query.get("podId")
        owned = {pod_id for pod_id, e in self._entries.items() if e.account == account}
        records = [
            {
                "startTime": iso(day),
                "endTime": iso(day + timedelta(days=1)),
                "podId": pod_id,
                "totalAmount": amount,
                "gpuAmount": amount,
                "cpuAmount": 0,
                "diskAmount": 0,
            }
            for pod_id, days in sorted(self._pod_billing.items())
            if pod_id in owned and (wanted is None or pod_id == wanted)
            for day, amount in sorted(days.items())
            if start <= day < end
        ]
        total = round(
            sum(
                amount
                for pod_id, days in self._pod_billing.items()
                if pod_id in owned and (wanted is None or pod_id == wanted)
                for day, amount in days.items()
                if start <= day < end
            ),
            6,
        )
        metadata = {
            "query": {"startTime": iso(start), "endTime": iso(end), "bucketSize": "day"},
            "recordCount": len(records),
            "uniquePodCount": len({r["podId"] for r in records}),
            "totals": {"totalAmount": total, "gpuAmount": total, "cpuAmount": 0, "diskAmount": 0},
        }
        return self._json(200, {"records": records, "metadata": metadata}, request)

    def _billing_answer(self, request: Request, account: str) -> Response:
        """`GET /v2/billing` with `bucketSize=day` and `lastN` (the spec's form: the last N
        buckets, today's in progress last, the window aligned to midnights). A record per day
        that has an amount; a day of the window without one billed nothing. Whether the live
        API leaves such days out or answers them as zero is not documented: the client reads
        both the same way (the answer's `metadata.query` window says which days it covers)."""
        window = self._billing_window(request)
        if isinstance(window, Response):
            return window
        start, end = window
        amounts = self._billing.get(account, {})
        zero = {
            "podGpuAmount": 0,
            "podCpuAmount": 0,
            "podDiskAmount": 0,
            "serverlessGpuAmount": 0,
            "serverlessCpuAmount": 0,
            "serverlessDiskAmount": 0,
            "serverlessFeeAmount": 0,
            "storageStandardAmount": 0,
            "storageHighPerformanceAmount": 0,
            "endpointAmount": 0,
            "clusterGpuAmount": 0,
            "clusterDiskAmount": 0,
            "clusterNetworkingAmount": 0,
        }
        records = [
            {
                "startTime": iso(day),
                "endTime": iso(day + timedelta(days=1)),
                "totalAmount": amount,
                **zero,
                "podGpuAmount": amount,
            }
            for day, amount in sorted(amounts.items())
            if start <= day < end
        ]
        total = round(sum(a for d, a in amounts.items() if start <= d < end), 6)
        metadata = {
            "query": {"startTime": iso(start), "endTime": iso(end), "bucketSize": "day"},
            "recordCount": len(records),
            "totals": {"totalAmount": total, **zero, "podGpuAmount": total},
        }
        return self._json(200, {"records": records, "metadata": metadata}, request)

    def _page(self, request: Request, account: str, pods: list[Any]) -> Response:
        """One page of the listing, as the live v2 API pages it (see the module docstring)."""
        if self.page_size is None:
            return self._json(200, {"pods": pods}, request)
        try:
            limit = max(1, min(int(request.query.get("limit", "1000")), self.page_size))
        except ValueError:
            return self.error(request, 400, "limit: not a number")
        start = 0
        cursor = request.query.get("cursor")
        if cursor is not None:
            decoded = _decode_cursor(cursor)
            if decoded is None or decoded[0] != account:
                return self.error(request, 400, "invalid cursor")
            start = decoded[1]
        chunk = pods[start : start + limit]
        more = start + limit < len(pods)
        next_cursor = _encode_cursor(account, start + limit) if more else None
        pagination: Any = {"nextCursor": next_cursor, "hasNextPage": more}
        if more and self.pagination_fault == "no_cursor":
            pagination["nextCursor"] = None
        elif more and self.pagination_fault == "repeat":
            pagination["nextCursor"] = cursor or _encode_cursor(account, 0)
        elif self.pagination_fault == "not_object":
            pagination = "more"
        return self._json(200, {"pods": chunk, "pagination": pagination}, request)

    def _pod_id(self, request: Request) -> str:
        match = _POD_PATH.match(request.path.rstrip("/"))
        return match.group(1) if match else ""

    def _listing(self, account: str, include_cluster: bool) -> list[Any]:
        listed: list[Any] = []
        for pod_id, pod in list(self._entries.items()):
            if pod.account != account:
                continue
            if "cluster" in pod.data and not include_cluster:
                continue
            listed.append(self._list_entry(pod_id, pod))
        listed += self._raw_listed(account)
        return listed

    def _delete(self, request: Request, account: str) -> Response:
        pod_id = self._pod_id(request)
        pod = self._owned(account, pod_id)
        if pod is None:
            return self.error(request, 404, "pod not found")
        if "cluster" in pod.data:
            return self.error(
                request,
                409,
                "pod belongs to a cluster and cannot be terminated via the pod endpoints",
            )
        self._delete_entry(
            pod_id,
            pod,
            stays=lambda p: self._apply_status(p, "EXITED"),
            lingers=lambda p: self._apply_status(p, "TERMINATED"),
        )
        return Response(204, b"", "application/json", {})

    def _graphql(self, request: Request, account: str) -> Response:
        if self.graphql_retired is not None:
            return Response.json(
                self.graphql_retired,
                {"errors": [{"message": "the GraphQL API has been retired; use REST v2"}]},
            )
        if request.method != "POST":
            return Response.json(405, {"errors": [{"message": "POST a query"}]})
        if self.graphql_myself_null:
            return Response.json(200, {"data": {"myself": None}})
        try:
            query = str((request.json() or {}).get("query", ""))
        except (ValueError, AttributeError):
            return Response.json(400, {"errors": [{"message": "body is not JSON"}]})
        if "myself" not in query:
            return Response.json(400, {"errors": [{"message": "unsupported query"}]})
        values = dict(
            self._balances.get(
                account, {"clientBalance": 100.0, "currentSpendPerHr": None, "spendLimit": 80.0}
            )
        )
        if values["currentSpendPerHr"] is None:
            values["currentSpendPerHr"] = round(
                sum(
                    p.running_cost
                    for p in self._entries.values()
                    if p.account == account
                    and p.data.get("status") in ("RUNNING", "PROVISIONING", "STARTING")
                ),
                4,
            )
        wanted = {k: v for k, v in values.items() if k in query}
        return Response.json(200, {"data": {"myself": wanted}})

    # ---- shapes ----------------------------------------------------------------------------

    def _json(self, status: int, payload: Any, request: Request) -> Response:
        return Response.json(status, payload)

    def _method_not_allowed(self, request: Request) -> Response:
        response = self.error(request, 405, "The requested method is not allowed for this path.")
        response.headers["Allow"] = "GET, DELETE" if request.kind in ("get", "update") else "GET"
        return response

    def error(self, request: Request, status: int, detail: str) -> Response:
        if request.kind == "balance":
            return Response.json(status, {"errors": [{"message": detail}]})
        return Response.json(
            status, self._problem(status, detail), content_type="application/problem+json"
        )

    def _problem(self, status: int, detail: str) -> dict[str, Any]:
        if self.problem_shape == "detail_only":
            return {"detail": detail}
        problem: dict[str, Any] = {
            "title": status_title(status),
            "status": status,
            "detail": detail,
        }
        if self.problem_shape == "no_title":
            del problem["title"]
        elif self.problem_shape == "errors":
            problem["errors"] = [f"$: {detail}"]
        return problem

    def unauthorized(self, request: Request) -> Response:
        has_token = request.headers.get("authorization", "").lower().startswith("bearer ")
        detail = "invalid bearer token" if has_token else "missing bearer token"
        return self.error(request, 401, detail)

    def rate_limited(self, request: Request, retry_after: float | None) -> Response:
        response = self.error(request, 429, "rate limit exceeded for the minute window")
        quota, _, reset = self.quota_state(request.account)
        wait = math.ceil(retry_after) if retry_after is not None else math.ceil(reset)
        response.headers["RateLimit"] = f'"minute";r=0;t={wait}'
        response.headers["RateLimit-Policy"] = f'"minute";q={quota};w=60'
        if retry_after is not None:
            response.headers["Retry-After"] = str(math.ceil(retry_after))
        return response

    def extra_headers(self, request: Request) -> dict[str, str]:
        if request.kind == "balance":
            return {}
        quota, remaining, reset = self.quota_state(request.account)
        return {
            "RateLimit": f'"minute";r={remaining};t={math.ceil(reset)}',
            "RateLimit-Policy": f'"minute";q={quota};w=60',
        }
