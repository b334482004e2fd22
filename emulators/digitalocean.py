"""A DigitalOcean API v2 emulator that answers as DigitalOcean's published OpenAPI says
(`digitalocean/openapi`, `specification/`), for the droplet, balance and volume routes reaper
reads.

What matters most, and what it keeps exactly: `GET /droplets` answers only NON-GPU droplets
unless `type=gpus` is asked ("By default, only non-GPU Droplets are returned"), so a client that
forgot the parameter sees an empty GPU fleet here as it would there; `type=droplets` asks for
the non-GPU ones explicitly.

Routes (under `/v2`, so `api_url` is what `DIGITALOCEAN_API_URL` points at): `GET /droplets`
(`type`, `page`, `per_page` — at most 200, 20 by default — with `links.pages` first/prev/next/
last as full URLs and `meta.total`), `GET|DELETE /droplets/{id}` (204; 404 `not_found`),
`GET /customers/my/balance`, `GET /volumes` (paged alike). Errors are `{"id", "message",
"request_id"}`; every answer carries `ratelimit-limit`, `ratelimit-remaining` and
`ratelimit-reset` (a Unix time, by the emulator's clock); a 429 carries them spent, and
`Retry-After` when a test gives one.
"""

from __future__ import annotations

import itertools
import math
import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any, Literal
from urllib.parse import urlencode

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
from emulators.server import EmulatorServer, FleetEntry, Request, Response, iso

_DROPLET_PATH = re.compile(r"^/v2/droplets/([^/]+)$")
PER_PAGE_DEFAULT = 20
PER_PAGE_MAX = 200
# The spec's rate limit: 5,000 requests an hour (and 250 a minute).
HOURLY_LIMIT = 5000
# GPU sizes as DigitalOcean's sizes answer them (the spec's GPU droplet example; godo's sizes
# tests): slug -> (GPUs, model, VRAM GiB, memory MB, vCPUs, disk GB, scratch GiB, $/h, words).
GPU_SIZES: dict[str, tuple[int, str, int, int, int, int, int, float, str]] = {
    "gpu-h100x1-80gb": (1, "nvidia_h100", 80, 245760, 20, 720, 5120, 3.39, "H100 GPU - 1X"),
    "gpu-h100x8-640gb": (8, "nvidia_h100", 640, 1966080, 160, 2046, 40960, 23.92, "H100 GPU - 8X"),
    "gpu-l40sx1-48gb": (1, "nvidia_l40s", 48, 65536, 8, 500, 0, 1.57, "L40S GPU - 1X"),
    "gpu-mi300x1-192gb": (1, "amd_mi300x", 192, 245760, 20, 720, 5120, 1.99, "MI300X GPU - 1X"),
}
DEFAULT_GPU = "gpu-h100x1-80gb"
# A paging answer a client must refuse: "no_next" (more droplets, no `next`), "repeat" (`next`
# names the same page), "skip" (`next` jumps a page), "not_object" (`links.pages` is a string),
# "no_total" (`meta` without `total`).
PagingFault = Literal["no_next", "repeat", "skip", "not_object", "no_total"]


# --- its section of a fleet file (`emulators.fleet`) -------------------------------------------

FLEET_STATUSES = ("new", "active", "off", "archive")
_DROPLET_FIELDS = ("id", "account", "name", "status", "locked", "tags", "price_hourly", "gpu")


def _droplet(value: Any, where: str, accounts: Mapping[str, str]) -> dict[str, Any]:
    """One `droplets[]` entry as `add_droplet`'s arguments. `gpu`: a GPU size slug of
    `GPU_SIZES` (an H100 when left out), or false for a plain droplet, which a GPU listing
    never shows."""
    raw = checked_object(value, where, _DROPLET_FIELDS)
    droplet: dict[str, Any] = {}
    if "id" in raw:
        if isinstance(raw["id"], bool) or not isinstance(raw["id"], int) or raw["id"] <= 0:
            raise FleetError(f"{where}.id: expected a whole number above 0, got {raw['id']!r}")
        droplet["droplet_id"] = raw["id"]
    droplet["account"] = checked_owner(raw.get("account"), f"{where}.account", accounts)
    if "name" in raw:
        droplet["name"] = checked_string(raw["name"], f"{where}.name")
    if "status" in raw:
        droplet["status"] = checked_choice(raw["status"], f"{where}.status", FLEET_STATUSES)
    if "locked" in raw:
        droplet["locked"] = checked_bool(raw["locked"], f"{where}.locked")
    if "tags" in raw:
        tags = raw["tags"]
        if not isinstance(tags, list):
            raise FleetError(f"{where}.tags: expected a list of strings")
        droplet["tags"] = [checked_string(t, f"{where}.tags[{i}]") for i, t in enumerate(tags)]
    if "price_hourly" in raw:
        droplet["price_hourly"] = checked_number(
            raw["price_hourly"], f"{where}.price_hourly", high=1000
        )
    if "gpu" in raw:
        gpu = raw["gpu"]
        if gpu is not False and gpu not in GPU_SIZES:
            choices = ", ".join(GPU_SIZES)
            raise FleetError(f"{where}.gpu: expected false or one of {choices}, got {gpu!r}")
        droplet["gpu"] = gpu
    return droplet


class DigitalOceanEmulator(EmulatorServer[int, FleetEntry]):
    """Control API: `add_droplet`, `add_droplet_json`, `set_status`, `modify_droplet`,
    `add_raw_droplet`, `remove_droplet`, `add_volume`, `set_balance`, plus the shared knobs of
    `EmulatorServer` (fail, drop, slow, empty, rate-limit storms, a quota).

    `delete_linger_reads`: a destroyed droplet stays listed as `archive` for that many
    listings, then disappears (its own endpoint answers 404 `not_found` at once).
    `delete_never_confirms`: DELETE answers 204 but the droplet stays, `off`.
    `paging_fault` (see `PagingFault`) and `wrong_total` (added to `meta.total`): listings
    that cannot show they are whole.
    """

    provider = "digitalocean"
    # Its section of a fleet file (`emulators.fleet.Emulated`).
    FLEET_LIST = "droplets"
    FLEET_FIELDS = _DROPLET_FIELDS
    FLEET_ID = "droplet_id"
    DEFAULT_KEY = "do-emulated-token-not-secret"
    FLEET_STATUS = "status"
    FLEET_STOPPED = ("off",)
    fleet_entry = staticmethod(_droplet)

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
        self.paging_fault: PagingFault | None = None
        self.wrong_total = 0
        self._volumes: dict[str, list[dict[str, Any]]] = {}
        self._balances: dict[str, dict[str, str]] = {}
        self._ids = itertools.count(448543583)

    @property
    def api_url(self) -> str:
        """What `DIGITALOCEAN_API_URL` is set to."""
        return f"{self.url}/v2"

    def environment(self, keys: str) -> dict[str, str]:
        """The variables that point reaper at this emulator, `keys` its accounts' tokens."""
        return {"DIGITALOCEAN_API_URL": self.api_url, "DIGITALOCEAN_TOKEN": keys}

    def populate(self, section: ProviderFleet) -> list[str]:
        """Its section of a fleet file, into this (started) emulator; the droplets' ids, in
        order. A balance is the credit left, which DigitalOcean answers as a negative
        month-to-date balance."""
        now = self._now()
        ids = [
            str(self.add_droplet(**droplet, created_at=section.born(i, now)))
            for i, droplet in enumerate(section.entries)
        ]
        for name, amount in section.balances.items():
            owed = f"{-amount:.2f}"
            self.set_balance(name, month_to_date_balance=owed, account_balance=owed)
        return ids

    # ---- fleet control ---------------------------------------------------------------------

    def add_droplet(
        self,
        droplet_id: int | None = None,
        *,
        account: str | None = None,
        name: str = "ml-ai-ubuntu-gpu-h100x1-80gb-tor1",
        status: str = "active",
        locked: bool = False,
        tags: list[str] | None = None,
        gpu: bool | str = True,
        price_hourly: float | None = None,
        created_at: datetime | None = None,
        **overrides: Any,
    ) -> int:
        """Add a droplet shaped like the spec's GPU droplet example; returns its id. `gpu`:
        True (an H100), a GPU size slug of `GPU_SIZES`, or False (a plain, non-GPU droplet,
        which only a listing without `type=gpus` shows)."""
        with self.lock:
            if droplet_id is None:
                droplet_id = next(self._ids)
                while droplet_id in self._entries:
                    droplet_id = next(self._ids)
        created = created_at or self._now()
        data: dict[str, Any] = {
            "id": droplet_id,
            "name": name,
            **_hardware(gpu, price_hourly),
            "locked": locked,
            "status": status,
            "kernel": None,
            "created_at": iso(created),
            "features": ["droplet_agent", "private_networking"],
            "backup_ids": [],
            "next_backup_window": None,
            "snapshot_ids": [],
            "volume_ids": [],
            "networks": {
                "v4": [
                    {
                        "ip_address": "10.128.192.124",
                        "netmask": "255.255.0.0",
                        "gateway": "10.128.0.1",
                        "type": "private",
                    },
                    {
                        "ip_address": "192.0.2.154",
                        "netmask": "255.255.255.0",
                        "gateway": "192.0.2.1",
                        "type": "public",
                    },
                ],
                "v6": [],
            },
            "region": _region(),
            "tags": list(tags or []),
            "vpc_uuid": "e2fdd15c-6ae6-4c11-8c5d-72dae2ba1ad1",
        }
        data.update(overrides)
        with self.lock:
            self._entries[droplet_id] = FleetEntry(account or self.default_account(), data)
        return droplet_id

    def add_droplet_json(self, data: dict[str, Any], *, account: str | None = None) -> int:
        """List `data` exactly as given (a droplet object as the live API answered it): it is
        listed with `type=gpus` when it carries `gpu_info`, pages, answers GET and DELETE."""
        droplet_id = int(data["id"])
        with self.lock:
            self._entries[droplet_id] = FleetEntry(account or self.default_account(), dict(data))
        return droplet_id

    def set_status(self, droplet_id: int, status: str | None) -> None:
        """Set `status` to any value (None included), so that unknown values can be tested."""
        self.modify_entry(droplet_id, status=status)

    modify_droplet = EmulatorServer.modify_entry
    add_raw_droplet = EmulatorServer.add_raw_entry
    clear_raw_droplets = EmulatorServer.clear_raw_entries
    remove_droplet = EmulatorServer.remove_entry
    droplet = EmulatorServer.entry

    def droplet_ids(self, account: str | None = None) -> list[int]:
        return sorted(self.entry_ids(account))

    def add_volume(
        self,
        volume_id: str | None = None,
        *,
        size: int = 100,
        droplet_ids: list[int] | None = None,
        name: str = "training-data",
        account: str | None = None,
    ) -> str:
        """A block storage volume shaped like the spec's; attached to `droplet_ids`."""
        volume_id = volume_id or str(uuid.uuid5(uuid.NAMESPACE_URL, f"do-volume-{name}-{size}"))
        volume = {
            "id": volume_id,
            "region": _region(),
            "droplet_ids": list(droplet_ids or []),
            "name": name,
            "description": "",
            "size_gigabytes": size,
            "created_at": iso(self._now()),
            "filesystem_type": "ext4",
            "filesystem_label": "",
            "tags": [],
        }
        with self.lock:
            self._volumes.setdefault(account or self.default_account(), []).append(volume)
        return volume_id

    def set_balance(
        self,
        account: str | None = None,
        *,
        month_to_date_balance: str | None = "-42.50",
        account_balance: str | None = "-50.00",
        month_to_date_usage: str | None = "7.50",
    ) -> None:
        """What `GET /customers/my/balance` answers (strings, as DigitalOcean writes amounts;
        a negative balance is credit left). None leaves the field out."""
        values = {
            "month_to_date_balance": month_to_date_balance,
            "account_balance": account_balance,
            "month_to_date_usage": month_to_date_usage,
        }
        with self.lock:
            self._balances[account or self.default_account()] = {
                k: v for k, v in values.items() if v is not None
            }

    # ---- HTTP ------------------------------------------------------------------------------

    def classify(self, method: str, path: str) -> str:
        path = path.rstrip("/") or "/"
        if path == "/v2/droplets":
            return "list" if method == "GET" else "create"
        if _DROPLET_PATH.match(path):
            return {"GET": "get", "DELETE": "delete"}.get(method, "action")
        if path == "/v2/customers/my/balance":
            return "balance"
        if path == "/v2/volumes":
            return "volumes"
        return "other"

    def annotate(self, request: Request) -> Request:
        """The page number of a listing (1 for the first), for `fail_next`'s and `slow_next`'s
        `page`."""
        if request.kind not in ("list", "volumes"):
            return request
        page = _positive(request.query.get("page"), 1)
        return replace(request, page=page)

    def dispatch(self, request: Request) -> Response:
        assert request.account is not None
        account, kind, method = request.account, request.kind, request.method
        if kind == "list":
            return self._list(request, account)
        if kind in ("get", "delete"):
            return self._one(request, account)
        if kind == "balance" and method == "GET":
            return Response.json(200, self._balance(account))
        if kind == "volumes" and method == "GET":
            volumes = [] if request.empty else list(self._volumes.get(account, []))
            return self._page(request, "volumes", volumes)
        if kind in ("create", "action"):
            return self.error(request, 405, "The emulator answers reads and deletes only.")
        return self.error(request, 404, "The resource you were accessing could not be found.")

    def _list(self, request: Request, account: str) -> Response:
        kind = request.query.get("type", "droplets")
        if kind not in ("droplets", "gpus"):
            return self.error(request, 400, "type must be one of droplets, gpus")
        gpus = kind == "gpus"
        listed: list[Any] = []
        if not request.empty:
            for droplet_id, entry in list(self._entries.items()):
                if entry.account == account and ("gpu_info" in entry.data) == gpus:
                    listed.append(self._list_entry(droplet_id, entry))
            if gpus:
                listed += self._raw_listed(account)
        return self._page(request, "droplets", listed)

    def _page(self, request: Request, key: str, items: list[Any]) -> Response:
        """One page of `items` as the spec pages a listing: `links.pages` with full URLs that
        keep the request's other parameters, and `meta.total`."""
        per_page = min(_positive(request.query.get("per_page"), PER_PAGE_DEFAULT), PER_PAGE_MAX)
        page = _positive(request.query.get("page"), 1)
        last = max(1, math.ceil(len(items) / per_page))
        chunk = items[(page - 1) * per_page : page * per_page]
        pages: dict[str, str] = {}
        if page > 1:
            pages["first"] = self._link(request, 1, per_page)
            pages["prev"] = self._link(request, page - 1, per_page)
        if page < last:
            pages["last"] = self._link(request, last, per_page)
            pages["next"] = self._link(request, page + 1, per_page)
        links: dict[str, Any] = {"pages": pages} if pages else {}
        fault = self.paging_fault
        if page < last and fault == "no_next":
            del pages["next"]
        elif page < last and fault == "repeat":
            pages["next"] = self._link(request, page, per_page)
        elif page < last and fault == "skip":
            pages["next"] = self._link(request, page + 2, per_page)
        elif fault == "not_object":
            links = {"pages": "more"}
        meta: dict[str, Any] = {"total": len(items) + self.wrong_total}
        if fault == "no_total":
            meta = {}
        return Response.json(200, {key: chunk, "links": links, "meta": meta})

    def _link(self, request: Request, page: int, per_page: int) -> str:
        query = {k: v for k, v in request.query.items() if k not in ("page", "per_page")}
        query.update(page=str(page), per_page=str(per_page))
        return f"{self.url}{request.path}?{urlencode(sorted(query.items()))}"

    def _one(self, request: Request, account: str) -> Response:
        match = _DROPLET_PATH.match(request.path.rstrip("/"))
        raw_id = match.group(1) if match else ""
        if not (raw_id.isascii() and raw_id.isdigit()):
            return self.error(request, 404, "The resource you were accessing could not be found.")
        droplet_id = int(raw_id)
        entry = self._owned(account, droplet_id)
        if entry is None:
            return self.error(request, 404, "The resource you were accessing could not be found.")
        if request.kind == "get":
            return Response.json(200, {"droplet": dict(entry.data)})
        self._delete_entry(
            droplet_id,
            entry,
            stays=lambda e: e.data.update(status="off"),
            lingers=lambda e: e.data.update(status="archive"),
        )
        return Response(204, b"", "application/json; charset=utf-8", {})

    def _balance(self, account: str) -> dict[str, str]:
        values = dict(
            self._balances.get(
                account,
                {
                    "month_to_date_balance": "-42.50",
                    "account_balance": "-50.00",
                    "month_to_date_usage": "7.50",
                },
            )
        )
        values["generated_at"] = iso(self._now()) or ""
        return values

    # ---- shapes ----------------------------------------------------------------------------

    def error(self, request: Request, status: int, detail: str) -> Response:
        return Response.json(
            status,
            {"id": _ERROR_IDS.get(status, "server_error"), "message": detail, **_request_id()},
            headers=self._rate_headers(request),
        )

    def unauthorized(self, request: Request) -> Response:
        return Response.json(
            401,
            {"id": "unauthorized", "message": "Unable to authenticate you.", **_request_id()},
        )

    def rate_limited(self, request: Request, retry_after: float | None) -> Response:
        """The spec's 429 with its headers spent: nothing remaining, and the reset a Unix time
        (`Retry-After` too when a test gives one)."""
        limit, _, reset = (
            self.quota_state(request.account) if self._quota else (HOURLY_LIMIT, 0, 1.0)
        )
        wait = retry_after if retry_after is not None else reset
        headers = {
            "ratelimit-limit": str(limit),
            "ratelimit-remaining": "0",
            "ratelimit-reset": str(math.ceil(self.clock_now().timestamp() + wait)),
        }
        if retry_after is not None:
            headers["Retry-After"] = str(math.ceil(retry_after))
        body = {"id": "too_many_requests", "message": "API rate limit exceeded.", **_request_id()}
        return Response.json(429, body, headers=headers)

    def extra_headers(self, request: Request) -> dict[str, str]:
        return self._rate_headers(request)

    def _rate_headers(self, request: Request) -> dict[str, str]:
        """Quota left: the test's quota when one is set, else the spec's hourly one, never
        spent (a spent window would make the client pause)."""
        if self._quota is None:
            limit, remaining, reset = HOURLY_LIMIT, HOURLY_LIMIT - 1, 3600.0
        else:
            limit, remaining, reset = self.quota_state(request.account)
        return {
            "ratelimit-limit": str(limit),
            "ratelimit-remaining": str(remaining),
            "ratelimit-reset": str(math.ceil(self.clock_now().timestamp() + reset)),
        }


_ERROR_IDS = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    422: "unprocessable_entity",
    429: "too_many_requests",
    500: "server_error",
    503: "service_unavailable",
}


def _request_id() -> dict[str, str]:
    return {"request_id": str(uuid.uuid4())}


def _positive(value: str | None, default: int) -> int:
    """A page or page size as the API reads it: a positive whole number, else the default."""
    if value is None or not (value.isascii() and value.isdigit()) or len(value) > 9:
        return default
    return int(value) or default


def _hardware(gpu: bool | str, price_hourly: float | None) -> dict[str, Any]:
    """The size-dependent fields of a droplet: a GPU size of `GPU_SIZES`, or a plain one."""
    if gpu is False:
        price = 0.03571 if price_hourly is None else price_hourly
        size = {
            "slug": "s-2vcpu-4gb",
            "memory": 4096,
            "vcpus": 2,
            "disk": 80,
            "transfer": 4.0,
            "price_monthly": round(price * 672, 2),
            "price_hourly": price,
            "regions": ["tor1"],
            "available": True,
            "description": "Basic",
            "disk_info": [{"type": "local", "size": {"amount": 80, "unit": "gib"}}],
        }
        return {
            "memory": 4096,
            "vcpus": 2,
            "disk": 80,
            "disk_info": size["disk_info"],
            "image": _image("ubuntu-24-04-x64", "24.04 (LTS) x64"),
            "size": size,
            "size_slug": "s-2vcpu-4gb",
        }
    slug = DEFAULT_GPU if gpu is True else gpu
    count, model, vram, memory, vcpus, disk, scratch, list_price, words = GPU_SIZES[slug]
    price = list_price if price_hourly is None else price_hourly
    disk_info = [{"type": "local", "size": {"amount": disk, "unit": "gib"}}]
    if scratch:
        disk_info.append({"type": "scratch", "size": {"amount": scratch, "unit": "gib"}})
    gpu_info = {"count": count, "vram": {"amount": vram, "unit": "gib"}, "model": model}
    size = {
        "slug": slug,
        "memory": memory,
        "vcpus": vcpus,
        "disk": disk,
        "transfer": 15.0,
        "price_monthly": round(price * 672, 2),
        "price_hourly": price,
        "regions": ["nyc2", "tor1"],
        "available": True,
        "description": words,
        "gpu_info": gpu_info,
        "disk_info": disk_info,
    }
    return {
        "memory": memory,
        "vcpus": vcpus,
        "disk": disk,
        "disk_info": disk_info,
        "image": _image(slug.split("-")[0] + "-" + slug.split("-")[1] + "-base", "AI/ML Ready"),
        "size": size,
        "size_slug": slug,
        "gpu_info": gpu_info,
    }


def _region() -> dict[str, Any]:
    return {
        "name": "Toronto 1",
        "slug": "tor1",
        "features": ["backups", "ipv6", "metadata", "install_agent", "storage"],
        "available": True,
        "sizes": ["s-2vcpu-4gb", *GPU_SIZES],
    }


def _image(slug: str, name: str) -> dict[str, Any]:
    return {
        "id": 166407044,
        "name": name,
        "distribution": "Ubuntu",
        "slug": slug,
        "public": True,
        "regions": ["nyc2", "tor1"],
        "created_at": "2024-09-27T15:35:19Z",
        "min_disk_size": 25,
        "type": "base",
        "size_gigabytes": 18.47,
        "description": name,
        "tags": [],
        "status": "available",
    }
