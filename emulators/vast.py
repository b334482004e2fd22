"""A Vast.ai emulator that answers as Vast's published API specs say — and, where the live API
is known to answer otherwise, as it does: abandoned starts (`loading` while intended
`stopped`, vast-cli's self-test), `scheduling` with its message (clients' fixtures), a destroyed
instance lingering as `cur_state: unloaded` (Vast's docs), image-pull failures in `status_msg`,
and the answers of 2026 named at their place: an instance that is gone read by its own endpoint,
a wrong key answering 404, the retired v0 list.

Routes: `GET /api/v1/instances/` (keyset pages of at most 25, opaque `next_token`, an invalid
`after_token` answers 400 `invalid_token`), `GET /api/v0/instances/` (410 `deprecated_endpoint`:
the v0 list is retired, outside the specs), `GET|PUT|DELETE /api/v0/instances/{id}/`,
`GET /api/v0/users/current/`, `GET /api/v0/volumes/`. Errors are `{success, error, msg}`;
429 has no `Retry-After` and, as Vast's rate-limit docs say, a plain-text body by default
("API requests too frequent"), or the endpoint spec's JSON when `rate_limit_body="json"`.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import re
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Literal

from emulators.fleet import (
    FleetError,
    ProviderFleet,
    checked_choice,
    checked_number,
    checked_object,
    checked_owner,
    checked_string,
)
from emulators.server import EmulatorServer, FleetEntry, Request, Response

_INSTANCE_PATH = re.compile(r"^/api/v0/instances/([^/]+)/?$")
_THRESHOLDS = {"list": 1.0, "show": 2.0, "delete": 3.0, "volumes": 5.5}
PAGE_MAX = 25
# What `GET /api/v0/instances/{id}/` answers for an instance that is not there (destroyed,
# another account's, never made): 200 `{"instances": null}` (vast-ai/vast-cli PR #405: `vastai
# --raw show instance <destroyed id>` printed it), 200 `{"instances": []}` (Max19970/easy-server
# issue #125 reads both as gone), or the 404 `not_found` of the older answers.
GoneAnswer = Literal["null", "[]", "404"]
# The error answers Vast has been seen giving, which `misbehave` makes an account get.
Misbehaviour = Literal["rate_limited", "refused", "retired", "success_false"]


# --- its section of a fleet file (`emulators.fleet`) -------------------------------------------

FLEET_STATUSES = (
    "created",
    "loading",
    "running",
    "stopped",
    "exited",
    "frozen",
    "rebooting",
    "scheduling",
    "error",
    "unknown",
    "offline",
)
FLEET_INTENTS = ("running", "stopped")
_INSTANCE_FIELDS = (
    "id",
    "account",
    "label",
    "actual_status",
    "intended_status",
    "dph_total",
    "disk_space",
    "gpu_util",
)


def _instance(value: Any, where: str, accounts: Mapping[str, str]) -> dict[str, Any]:
    raw = checked_object(value, where, _INSTANCE_FIELDS)
    inst: dict[str, Any] = {}
    if "id" in raw:
        if isinstance(raw["id"], bool) or not isinstance(raw["id"], int) or raw["id"] <= 0:
            raise FleetError(f"{where}.id: expected a whole number above 0, got {raw['id']!r}")
        inst["instance_id"] = raw["id"]
    inst["account"] = checked_owner(raw.get("account"), f"{where}.account", accounts)
    if "label" in raw:
        inst["label"] = (
            None if raw["label"] is None else checked_string(raw["label"], f"{where}.label")
        )
    if "actual_status" in raw:
        status = raw["actual_status"]
        inst["actual_status"] = (
            None
            if status is None
            else checked_choice(status, f"{where}.actual_status", FLEET_STATUSES)
        )
    if "intended_status" in raw:
        inst["intended_status"] = checked_choice(
            raw["intended_status"], f"{where}.intended_status", FLEET_INTENTS
        )
    if "dph_total" in raw:
        inst["dph_total"] = checked_number(raw["dph_total"], f"{where}.dph_total", high=1000)
    if "disk_space" in raw:
        inst["disk_space"] = checked_number(raw["disk_space"], f"{where}.disk_space", high=100_000)
    if "gpu_util" in raw:
        # Percent in the file, as for RunPod; Vast's API answers a fraction.
        inst["gpu_util"] = checked_number(raw["gpu_util"], f"{where}.gpu_util", high=100) / 100
    return inst


class VastEmulator(EmulatorServer[int, FleetEntry]):
    """Control API: `add_instance`, `set_status`, `modify_instance`, `add_raw_instance`,
    `remove_instance`, `fail_page`, `add_volume`, `set_user`, plus the shared knobs.

    `bad_key_mode="404"`: a wrong key answers 404 `auth_error`, not `not_found`
    (jhammant/AIonDemandCluster PR #1: "a wrong key currently comes back as HTTP 404 with this
    body"). `gone_answer`: what the one-instance endpoint answers for an instance that is not
    there (see `GoneAnswer`). `show_as_list`: it shows a live instance as a one-element list,
    as some live answers do (a Vast template test launcher, code index id 55051829602).
    `misbehave`: an account's calls get one of Vast's error answers. `delete_linger_reads`: a
    destroyed instance stays listed (`cur_state` unloaded, `actual_status` null) for that
    many reads, then disappears. `delete_never_confirms`: DELETE answers success, the instance
    stays listed as stopped. `ignore_filters`: the listing answers every instance whatever
    `select_filters` asks (a server that drops a parameter it does not know), so a client
    that relies on the filter must notice.
    """

    provider = "vast"
    # Its section of a fleet file (`emulators.fleet.Emulated`).
    FLEET_LIST = "instances"
    FLEET_FIELDS = _INSTANCE_FIELDS
    FLEET_ID = "instance_id"
    DEFAULT_KEY = "vast-emulated-key-not-secret"
    FLEET_STATUS = "actual_status"
    FLEET_STOPPED = ("stopped", "exited")
    fleet_entry = staticmethod(_instance)

    def __init__(
        self,
        keys: Mapping[str, str] | None = None,
        *,
        bad_key_mode: Literal["401", "404"] = "401",
        rate_limit_body: Literal["text", "json"] = "text",
        gone_answer: GoneAnswer = "null",
        show_as_list: bool = False,
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
        self.bad_key_mode = bad_key_mode
        self.rate_limit_body = rate_limit_body
        self.gone_answer: GoneAnswer = gone_answer
        self.show_as_list = show_as_list
        self._volumes: dict[str, list[dict[str, Any]]] = {}
        self._users: dict[str, dict[str, Any]] = {}
        self._ids = itertools.count(1000)
        self.ignore_filters = False

    def environment(self, keys: str) -> dict[str, str]:
        """The variables that point reaper at this emulator, `keys` its accounts' keys."""
        return {"VAST_API_URL": self.url, "VAST_API_KEY": keys}

    def populate(self, section: ProviderFleet) -> list[str]:
        """Its section of a fleet file, into this (started) emulator; the instances' ids, in
        order."""
        ids = []
        for i, inst in enumerate(section.entries):
            born = section.born(i, self._now())
            start = None if born is None else born.timestamp()
            ids.append(str(self.add_instance(**inst, start_date=start)))
        for name, amount in section.balances.items():
            self.set_user(name, balance=amount, credit=amount)
        return ids

    # ---- fleet control ---------------------------------------------------------------------

    def add_instance(
        self,
        instance_id: int | None = None,
        *,
        account: str | None = None,
        label: str | None = "training-job",
        actual_status: str | None = "running",
        intended_status: str = "running",
        dph_total: float = 0.8021,
        storage_cost: float = 0.15,
        disk_space: float = 10.08,
        gpu_util: float | None = 0.0,
        num_gpus: int = 1,
        start_date: float | None = None,
        extra_env: list[list[str]] | None = None,
        onstart: str = "echo 'hello'",
        jupyter_token: str | None = None,
        **overrides: Any,
    ) -> int:
        """Add an instance shaped like Vast's show-instances spec example; returns its id."""
        with self.lock:
            if instance_id is None:
                instance_id = next(self._ids)
                while instance_id in self._entries:
                    instance_id = next(self._ids)
        storage_per_hour = round(storage_cost * disk_space / 720.0, 6)
        started = start_date if start_date is not None else self._now().timestamp()
        data: dict[str, Any] = {
            "id": instance_id,
            "actual_status": actual_status,
            "cur_state": "running",
            "next_state": "running",
            "intended_status": intended_status,
            "label": label,
            "template_id": None,
            "template_hash_id": None,
            "template_name": None,
            "image_uuid": "nvidia/cuda:12.4.1-devel-ubuntu22.04",
            "image_args": [],
            "image_runtype": "ssh ssh_direc ssh_proxy",
            "extra_env": [list(p) for p in (extra_env or [["DOG", "CAT"]])],
            "onstart": onstart,
            "jupyter_token": jupyter_token
            or hashlib.sha256(f"jt{instance_id}".encode()).hexdigest(),
            "status_msg": "success, running",
            "public_ipaddr": "192.0.2.45",
            "ssh_host": "ssh4.vast.ai",
            "ssh_idx": "4",
            "ssh_port": 10600 + instance_id % 1000,
            "machine_id": 12,
            "start_date": started,
            "uptime_mins": None,
            "cpu_cores": 4,
            "cpu_ram": 15989,
            "cpu_util": 0.0,
            "gpu_name": "RTX 4090",
            "gpu_ram": 24576,
            "gpu_totalram": 24576,
            "gpu_util": gpu_util,
            "gpu_temp": 38.0,
            "gpu_frac": 1.0,
            "num_gpus": num_gpus,
            "disk_space": disk_space,
            "disk_name": "Samsung SSD 870",
            "ports": None,
            "geolocation": "California, United States",
            "verification": "verified",
            "host_id": 7,
            "is_bid": False,
            "min_bid": 0.296,
            "dph_base": round(dph_total - storage_per_hour, 6),
            "dph_total": dph_total,
            "storage_cost": storage_cost,
            "storage_total_cost": storage_per_hour,
            "search": {
                "gpuCostPerHour": round(dph_total - storage_per_hour, 6),
                "diskHour": storage_per_hour,
                "totalHour": dph_total,
                "discountTotalHour": 0,
                "discountedTotalPerHour": dph_total,
            },
            "instance": {},
            "credit_balance": None,
            "volume_info": [],
        }
        data.update(overrides)
        with self.lock:
            self._entries[instance_id] = FleetEntry(account or self.default_account(), data)
            self._shape(self._entries[instance_id])
        return instance_id

    def set_status(
        self,
        instance_id: int,
        actual_status: str | None,
        intended_status: str | None = None,
    ) -> None:
        """Set `actual_status` (any value, None included); `intended_status` only if given."""
        with self.lock:
            inst = self._entries[instance_id]
            inst.data["actual_status"] = actual_status
            if intended_status is not None:
                inst.data["intended_status"] = intended_status
            self._shape(inst)

    def add_instance_json(self, data: dict[str, Any], *, account: str | None = None) -> int:
        """List `data` exactly as given (an instance object as the live API answered it) as an
        instance of this emulator: it pages, filters and is destroyed like any other."""
        instance_id = int(data["id"])
        with self.lock:
            self._entries[instance_id] = FleetEntry(account or self.default_account(), dict(data))
        return instance_id

    def abandon_start(self, instance_id: int, status_msg: str = "") -> None:
        """A start Vast gave up on: `actual_status` stays loading (as in vast-cli's own
        self-test) while `intended_status` is stopped. It bills storage and never runs."""
        with self.lock:
            inst = self._entries[instance_id]
            inst.data.update(actual_status="loading", intended_status="stopped")
            self._shape(inst)
            inst.data.update(cur_state="stopped", next_state="stopped", status_msg=status_msg)

    def set_scheduling(self, instance_id: int) -> None:
        """A stopped instance asked to start, waiting for its GPU (possibly for ever): Vast's
        docs call it SCHEDULING; clients' fixtures show this message with it."""
        with self.lock:
            inst = self._entries[instance_id]
            inst.data.update(actual_status="scheduling", intended_status="running")
            self._shape(inst)
            inst.data.update(
                cur_state="stopped",
                next_state="running",
                status_msg="Attempting to schedule your instance. Your GPU is currently in use.",
            )

    def fail_start(self, instance_id: int, status_msg: str) -> None:
        """A start that cannot succeed (an image that cannot be pulled): `created`, with the
        daemon's error in `status_msg`, as vast-cli's self-test shows."""
        with self.lock:
            inst = self._entries[instance_id]
            inst.data.update(actual_status="created", intended_status="running")
            self._shape(inst)
            inst.data["status_msg"] = status_msg

    modify_instance = EmulatorServer.modify_entry
    add_raw_instance = EmulatorServer.add_raw_entry
    clear_raw_instances = EmulatorServer.clear_raw_entries
    remove_instance = EmulatorServer.remove_entry
    instance = EmulatorServer.entry

    def instance_ids(self, account: str | None = None) -> list[int]:
        return sorted(self.entry_ids(account))

    def misbehave(
        self, answer: Misbehaviour | None, *, account: str | None = None, kind: str = "*"
    ) -> None:
        """From now on every call of `kind` ("*": all) by `account` (None: any) gets one of the
        error answers Vast has been seen giving, until set to None:
        "rate_limited": 429 with the plain text "API requests too frequent" and no
        `Retry-After` (Vast's rate-limit docs); "refused": 404 `auth_error` (a wrong or revoked
        key, jhammant/AIonDemandCluster PR #1); "retired": 410 `deprecated_endpoint`, as the v0
        list answers (skypilot-org/skypilot issue #10517); "success_false": 200 with Vast's
        error shape `{success: false, error, msg}` (its rate-limits-and-errors docs)."""
        response = None if answer is None else _misbehaviour(answer, kind)
        self.answer_as(kind, response, account=account)

    def fail_page(self, page: int, status: int = 500, count: int = 1) -> None:
        """Page `page` (1 = the first, without `after_token`) of a listing answers `status`."""
        self.fail_next("list", status, count, page=page)

    def add_volume(
        self,
        volume_id: int,
        *,
        size: float = 50.0,
        instances: list[int] | None = None,
        storage_total_cost: float = 0.0104,
        account: str | None = None,
        status: str = "active",
    ) -> None:
        volume = {
            "id": volume_id,
            # The spec types these as objects without saying what they hold: the id is given.
            "instances": [{"id": i} for i in instances or []],
            "driver_version": "550.54.14",
            "cuda_max_good": 12.4,
            "machine_id": 12,
            "public_ipaddr": "192.0.2.45",
            "reliability2": 0.99,
            "host_id": 7,
            "cpu_name": "AMD EPYC 7543",
            "mobo_name": "H12SSL-i",
            "disk_space": size,
            "disk_name": "Samsung SSD 870",
            "inet_up": 900.0,
            "inet_down": 900.0,
            "storage_total_cost": storage_total_cost,
            "os_version": "22.04",
            "verification": "verified",
            "static_ip": False,
            "cpu_arch": "amd64",
            "start_date": self._now().timestamp(),
            "status": status,
        }
        with self.lock:
            self._volumes.setdefault(account or self.default_account(), []).append(volume)

    def set_user(
        self,
        account: str | None = None,
        *,
        balance: float | None = 25.0,
        credit: float | None = 25.0,
    ) -> None:
        """`None` leaves the field out of the answer (to test the credit/balance fallback)."""
        with self.lock:
            self._users[account or self.default_account()] = {
                "balance": balance,
                "credit": credit,
            }

    # ---- status shaping --------------------------------------------------------------------

    def _shape(self, inst: FleetEntry) -> None:
        """Keep `cur_state`, `ports` and the `instance` price breakdown consistent with the
        status, as a real instance shows them (the GPU price stays in `dph_total`)."""
        data = inst.data
        status = data.get("actual_status")
        running = status == "running"
        data["cur_state"] = "running" if running or status in (None, "loading") else "stopped"
        data["next_state"] = data["cur_state"]
        data["ports"] = (
            # The port map as Vast reports it (data, not a socket this code binds).
            {"22/tcp": [{"HostIp": "0.0.0.0", "HostPort": "20000"}]}  # noqa: S104
            if running
            else None
        )
        disk_hour = data.get("storage_total_cost") or 0.0
        gpu_hour = round(float(data.get("dph_total") or 0.0) - float(disk_hour), 6)
        total = float(data.get("dph_total") or 0.0) if running else disk_hour
        data["instance"] = {
            "gpuCostPerHour": gpu_hour if running else 0,
            "diskHour": disk_hour,
            "totalHour": total,
            "discountTotalHour": 0,
            "discountedTotalPerHour": total,
        }

    # ---- HTTP ------------------------------------------------------------------------------

    def classify(self, method: str, path: str) -> str:
        normal = path.rstrip("/")
        if normal == "/api/v1/instances":
            return "list"
        if normal == "/api/v0/instances":
            return "list_v0"
        if _INSTANCE_PATH.match(path):
            return {"GET": "show", "DELETE": "delete", "PUT": "stop"}.get(method, "other")
        if normal == "/api/v0/users/current":
            return "balance"
        if normal == "/api/v0/volumes":
            return "volumes"
        return "other"

    def annotate(self, request: Request) -> Request:
        if request.kind != "list":
            return request
        token = request.query.get("after_token")
        cursor = _decode_token(token) if token else {"page": 1}
        page = cursor.get("page") if cursor else None
        return Request(
            request.method,
            request.path,
            request.query,
            request.raw_query,
            request.headers,
            request.body,
            request.kind,
            request.account,
            page if isinstance(page, int) else None,
        )

    def dispatch(self, request: Request) -> Response:
        assert request.account is not None
        account, kind, method = request.account, request.kind, request.method
        if kind == "list" and method == "GET":
            return self._list(request, account)
        if kind == "list_v0":
            return _retired("/api/v0/instances/", "/api/v1/instances/")
        if kind in ("show", "delete", "stop"):
            return self._one(request, account)
        if kind == "balance" and method == "GET":
            user = self._users.get(account, {"balance": 25.0, "credit": 25.0})
            body: dict[str, Any] = {
                "id": 4242,
                "key_id": 77,
                "email": f"{account}@example.com",
                "ssh_key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEmulatedKeyOnly user@host",
                "sid": "emulated-session-id",
            }
            body.update({k: v for k, v in user.items() if v is not None})
            return Response.json(200, body)
        if kind == "volumes" and method == "GET":
            return Response.json(200, {"volumes": list(self._volumes.get(account, []))})
        return self.error(request, 404, "no such route")

    def _list(self, request: Request, account: str) -> Response:
        try:
            limit = int(request.query.get("limit", str(PAGE_MAX)))
        except ValueError:
            return Response.json(400, {"error": "invalid_request", "msg": "limit: not a number"})
        limit = PAGE_MAX if limit > PAGE_MAX else (5 if limit <= 0 else limit)
        after = 0
        page = 1
        token = request.query.get("after_token")
        if token is not None:
            cursor = _decode_token(token)
            if cursor is None or cursor.get("acct") != account:
                return Response.json(400, {"error": "invalid_token", "msg": "invalid after_token"})
            after, page = int(cursor["after"]), int(cursor["page"])
        mine = sorted((i, inst) for i, inst in self._entries.items() if inst.account == account)
        if request.empty:
            mine = []
        matches = _parse_filters(
            None if self.ignore_filters else request.query.get("select_filters")
        )
        if isinstance(matches, str):
            return Response.json(400, {"success": False, "error": "invalid_args", "msg": matches})
        remaining = [(i, inst) for i, inst in mine if i > after and matches(inst.data)]
        chunk = remaining[:limit]
        items: list[Any] = []
        for instance_id, inst in chunk:
            items.append(self._list_entry(instance_id, inst))
        more = len(remaining) > limit
        raw_entries = [] if request.empty else self._raw_listed(account)
        if not more:
            items += raw_entries
        next_token = (
            _encode_token({"after": chunk[-1][0], "page": page + 1, "acct": account})
            if more
            else None
        )
        # "Total number of instances matching the filters" (Vast's show-instances spec): the
        # filtered set, plus the raw entries, which every listing ends with whatever the
        # filter; a raw copy of a listed instance (a duplicate) counts once, as the server
        # counts records.
        ids = {i for i, inst in mine if matches(inst.data)}
        total = len(ids) + sum(
            1 for raw in raw_entries if not (isinstance(raw, dict) and raw.get("id") in ids)
        )
        labels: dict[str, int] = {}
        for _, inst in mine:
            label = inst.data.get("label") or ""
            labels[str(label)] = labels.get(str(label), 0) + 1
        return Response.json(
            200,
            {
                "success": True,
                "instances_found": len(items),
                "total_instances": total,
                "label_counts": labels,
                "next_token": next_token,
                "instances": items,
            },
        )

    def _one(self, request: Request, account: str) -> Response:
        match = _INSTANCE_PATH.match(request.path)
        raw_id = match.group(1) if match else ""
        if not raw_id.isdigit():
            return Response.json(
                400, {"success": False, "error": "invalid_args", "msg": "invalid instance_id"}
            )
        inst = self._owned(account, int(raw_id))
        if inst is None and request.kind == "show" and self.gone_answer != "404":
            return Response.json(200, {"instances": None if self.gone_answer == "null" else []})
        if inst is None:
            return Response.json(
                404, {"success": False, "error": "not_found", "msg": "Instance not found"}
            )
        if request.kind == "show":
            shown = dict(inst.data)
            return Response.json(200, {"instances": [shown] if self.show_as_list else shown})
        if request.kind == "stop":
            self._stopped(inst)
            return Response.json(200, {"success": True})
        self._delete_entry(int(raw_id), inst, stays=self._stopped, lingers=self._unloaded)
        return Response.json(200, {"success": True, "msg": "Instance destroyed successfully"})

    def _stopped(self, inst: FleetEntry) -> None:
        inst.data["actual_status"] = "stopped"
        inst.data["intended_status"] = "stopped"
        self._shape(inst)

    def _unloaded(self, inst: FleetEntry) -> None:
        """Destroyed but still listed: the hardware is released (`cur_state: unloaded`, Vast's
        docs) and the record lingers with `actual_status` null and `intended_status` stopped —
        the very shape of an abandoned start, but for `cur_state`."""
        inst.data["actual_status"] = None
        inst.data["intended_status"] = "stopped"
        self._shape(inst)
        inst.data["cur_state"] = inst.data["next_state"] = "unloaded"
        inst.data["status_msg"] = ""

    # ---- shapes ----------------------------------------------------------------------------

    def error(self, request: Request, status: int, detail: str) -> Response:
        if request.kind == "volumes":
            return Response.json(status, {"detail": detail})
        return Response.json(
            status, {"success": False, "error": _error_code(status), "msg": detail}
        )

    def unauthorized(self, request: Request) -> Response:
        if self.bad_key_mode == "404":
            # Not `not_found`: the client must not read this as "the instance is gone".
            return _refused()
        if request.kind == "volumes":
            return Response.json(401, {"detail": "Authentication credentials were not provided."})
        return Response.json(
            401, {"success": False, "error": "auth_error", "msg": "Invalid user key"}
        )

    def rate_limited(self, request: Request, retry_after: float | None) -> Response:
        """Never a `Retry-After`: Vast does not send one."""
        threshold = _THRESHOLDS.get(request.kind)
        message = "API requests too frequent" + (
            f" endpoint threshold={threshold}" if threshold is not None else ""
        )
        if self.rate_limit_body == "text":
            return Response.text(429, message)
        if request.kind == "delete":
            return Response.json(
                429, {"success": False, "error": "rate_limit_exceeded", "msg": message}
            )
        return Response.json(429, {"detail": message})


def _refused() -> Response:
    """A wrong or revoked key as Vast has been seen answering it: 404 with `auth_error`
    (jhammant/AIonDemandCluster PR #1; the body is the spec's 401 example)."""
    return Response.json(404, {"success": False, "error": "auth_error", "msg": "Invalid user key"})


def _retired(path: str, instead: str = "") -> Response:
    """An endpoint Vast has retired, as its v0 instance list answers since 2026
    (skypilot-org/skypilot issue #10517, swm-gpu/swm issue #13)."""
    message = f"{path} is deprecated." + (f" Use {instead} instead." if instead else "")
    return Response.json(410, {"success": False, "error": "deprecated_endpoint", "msg": message})


def _misbehaviour(answer: Misbehaviour, kind: str) -> Response:
    """The answer `VastEmulator.misbehave` gives (see there for the sources)."""
    if answer == "rate_limited":
        threshold = _THRESHOLDS.get(kind)
        suffix = f": endpoint threshold={threshold}" if threshold is not None else ""
        return Response.text(429, f"API requests too frequent{suffix}")
    if answer == "refused":
        return _refused()
    if answer == "retired":
        return _retired("/api/v1/instances/" if kind == "list" else "this endpoint")
    return Response.json(200, {"success": False, "error": "invalid_args", "msg": "invalid request"})


# Computed columns the spec says cannot be filtered (400).
_COMPUTED = frozenset({"dph_total", "num_gpus", "dph_base", "storage_total_cost"})
_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "eq": lambda v, x: v == x,
    "neq": lambda v, x: v != x,
    "gt": lambda v, x: v is not None and v > x,
    "gte": lambda v, x: v is not None and v >= x,
    "lt": lambda v, x: v is not None and v < x,
    "lte": lambda v, x: v is not None and v <= x,
    "in": lambda v, x: isinstance(x, list) and v in x,
    "notin": lambda v, x: isinstance(x, list) and v not in x,
}


def _parse_filters(text: str | None) -> Callable[[dict[str, Any]], bool] | str:
    """`select_filters` as Vast's show-instances spec describes it: a JSON object of column ->
    {operator: value}. Returns a predicate, or the 400 message for a bad filter."""
    if not text:
        return lambda data: True
    try:
        spec = json.loads(text)
    except ValueError:
        return "select_filters: not JSON"
    if not isinstance(spec, dict):
        return "select_filters: expected a JSON object"
    checks: list[tuple[str, Callable[[Any, Any], bool], Any]] = []
    for column, condition in spec.items():
        if column in _COMPUTED:
            return f"select_filters: {column} is computed and cannot be filtered"
        if not isinstance(condition, dict):
            return f"select_filters: {column}: expected {{operator: value}}"
        for op, value in condition.items():
            if op not in _OPS:
                return f"select_filters: unknown operator {op}"
            checks.append((column, _OPS[op], value))
    return lambda data: all(test(data.get(column), value) for column, test, value in checks)


def _error_code(status: int) -> str:
    return {
        400: "invalid_args",
        401: "auth_error",
        404: "not_found",
        429: "rate_limit_exceeded",
    }.get(status, "server_error")


def _encode_token(cursor: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(cursor).encode()).decode()


def _decode_token(token: str) -> dict[str, Any] | None:
    try:
        cursor = json.loads(base64.urlsafe_b64decode(token.encode()))
    except (ValueError, TypeError):
        return None
    if not isinstance(cursor, dict) or not isinstance(cursor.get("after"), int):
        return None
    if not isinstance(cursor.get("page"), int):
        return None
    return cursor
