"""DigitalOcean GPU Droplets over API v2, normalised into `Instance`.

Built from DigitalOcean's published OpenAPI (`digitalocean/openapi`, `specification/`):

- `GET /droplets` lists only NON-GPU droplets unless `type=gpus` is given ("By default, only
  non-GPU Droplets are returned"): a listing that forgot it is an empty fleet, the worst silent
  failure a reaper can have. Every listing request is built by `droplet_listing` and nowhere
  else, so no code path can send a plain `/droplets`. Pages: `page` and `per_page` (at most
  200), `links.pages.next` while there is more, `meta.total` (required by the spec) the count;
- `status` is one of `new` (starting), `active` (running), `off` (stopped) and `archive`
  (destroyed, while the record lingers); anything else is unknown and never reaped;
- `locked` (boolean) protects; so do a tag or the name that carries the protect marker;
- `size.price_hourly` is what a droplet bills in every state but `archive`: DigitalOcean bills
  a powered-off droplet its whole price ("You are still billed for Droplets that are powered
  off because the compute resources for the Droplet stay reserved on the hypervisor" —
  DigitalOcean's Droplet pricing docs), so its warning says so;
- `created_at` is the only time: no field moves when a droplet starts or stops;
- `DELETE /droplets/{id}` answers 204; `GET /droplets/{id}` answers `{"droplet": {...}}` or
  404 `{"id": "not_found", ...}`; errors are `{"id", "message", "request_id"}`; 429 carries
  `ratelimit-limit/-remaining/-reset` (5,000 requests an hour, 250 a minute), which the request
  layer paces by (`reaper.providers.pacing`);
- `GET /customers/my/balance` and `GET /volumes` for the money guards.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Collection, Sequence
from datetime import datetime
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
from pydantic import StrictBool, StrictInt, StrictStr

from reaper.core.models import Balance, BilledDay, Instance, ProviderName, State, Volume
from reaper.core.units import parse_time
from reaper.providers.base import (
    UNREADABLE_ID_PREFIX,
    HttpOptions,
    ProviderError,
    StaleReading,
    TerminateOutcome,
    merge_duplicates,
)
from reaper.providers.digitalocean import (
    KEY_VARIABLE,
    LABEL,
    NAME,
    DigitalOceanSettings,
    canonical_id,
)
from reaper.providers.http import (
    Reply,
    Requester,
    json_object,
    read_each,
    summarise_error,
)
from reaper.providers.parsing import (
    CleanStr,
    RawModel,
    clean_text,
    finite,
    not_an_object,
    note_unreadable,
    raw_status,
    read_tolerantly,
)
from reaper.settings.parse import Account, ProviderSettings

# The spec's maximum page size: the fewest requests against a quota counted in requests.
PER_PAGE = 200
# 100,000 droplets: far past any real account; a guard against a server that never ends.
MAX_PAGES = 500
# The server's own count of a listing, which the distinct entries listed must match.
TOTAL_FIELD = "meta.total"

# The status enum of the spec. Exact matches only: anything else is "unknown", never reaped.
STATUS_STATES: dict[str, State] = {
    "new": "starting",
    "active": "running",
    "off": "stopped",
    "archive": "terminated",
}
POWERED_OFF_NOTE = "A powered-off droplet still bills its full price; only destroying it stops that"
# DigitalOcean's Volumes pricing (outside the spec): $0.10 per GiB a month, attached or not.
VOLUME_USD_PER_GIB_MONTH = 0.10
CONSOLE_URL = "https://cloud.digitalocean.com/droplets/{id}"
# The message of the 422 DigitalOcean answers a DELETE while an earlier one is under way (read by
# SkyPilot's DigitalOcean provisioner as done): a repeat of a delete that did go through.
_DESTROY_UNDER_WAY = "a destroy is already in progress"
_SUMMARY_LIMIT = 200


def droplet_listing(base_url: str, page: int) -> tuple[str, dict[str, str]]:
    """The URL and query of page `page` of the droplet listing: the one place they are built.

    `type=gpus` is never optional: without it DigitalOcean answers the account's non-GPU
    droplets only, and a reaper that read that would see an empty GPU fleet.
    """
    return f"{base_url}/droplets", {"type": "gpus", "per_page": str(PER_PAGE), "page": str(page)}


def _volume_listing(base_url: str, page: int) -> tuple[str, dict[str, str]]:
    return f"{base_url}/volumes", {"per_page": str(PER_PAGE), "page": str(page)}


class _Size(RawModel):
    price_hourly: float | None = None


class RawDroplet(RawModel):
    """The fields of the spec's droplet that reaper reads; the rest (networks, image, kernel,
    backups) is dropped at the first step.

    `id` is strict: a lax int would turn JSON `true` into 1 or "12" into 12, and a malformed
    entry would become another, real droplet. `locked` is strict too: "false" is not false.
    """

    id: StrictInt | None = None
    name: CleanStr | None = None
    status: StrictStr | None = None
    locked: StrictBool | None = None
    tags: list[CleanStr] | None = None
    size: _Size | None = None
    disk: float | None = None
    created_at: StrictStr | None = None


class _RawVolume(RawModel):
    id: CleanStr | None = None
    name: CleanStr | None = None
    size_gigabytes: float | None = None
    droplet_ids: list[StrictInt] | None = None
    created_at: StrictStr | None = None


# The fields that decide whether a droplet is protected: each must be present and readable.
_PROTECTION_FIELDS = ("locked", "tags", "name")


def _protection_unreadable(raw: dict[str, Any], unreadable: list[str]) -> str | None:
    """`locked`, `tags` and `name` decide protection: missing, null or malformed, they cannot
    be read, and a droplet whose protection cannot be read counts as protected."""
    problems = []
    for field in _PROTECTION_FIELDS:
        if field not in raw:
            problems.append(f"`{field}` is missing")
        elif raw[field] is None:
            problems.append(f"`{field}` is null")
        elif field in unreadable:
            problems.append(f"`{field}` is unreadable")
    return ", ".join(problems) or None


def parse_droplet(raw: object, account: str, position: int = 0) -> Instance:
    """One droplet of a listing as an `Instance`; never raises.

    A droplet that is not an object, or has fields that fail validation, is still returned (so
    the fleet stays whole) with what could be read and state "unknown" (so it is never reaped).
    """
    if not isinstance(raw, dict):
        return not_an_object(NAME, account, position)
    droplet, unreadable = read_tolerantly(RawDroplet, raw)
    droplet_id = canonical_id(droplet.id) if droplet.id is not None else None
    instance_id = droplet_id or f"{UNREADABLE_ID_PREFIX}{position}"
    state: State = STATUS_STATES.get(droplet.status or "", "unknown")
    if unreadable or droplet_id is None:
        state = "unknown"
        note_unreadable(NAME, account, instance_id, unreadable or ["id"])
    return Instance(
        provider=NAME,
        provider_label=LABEL,
        name_field="name or tags",
        termination_loses=what_is_lost(droplet.disk),
        account=account,
        id=instance_id,
        name=droplet.name or "",
        tags=tuple(droplet.tags or ()),
        state=state,
        raw_status=raw_status(raw.get("status"), "status" in raw),
        cost_per_hour=finite(_cost_per_hour(droplet, state)),
        locked=droplet.locked is True,
        created_at=parse_time(droplet.created_at),
        container_disk_gb=droplet.disk,
        console_url=CONSOLE_URL.format(id=droplet_id) if droplet_id else None,
        protection_unreadable=_protection_unreadable(raw, unreadable),
        # Only `created_at`: a start and stop between two checks cannot be seen.
        restart_visible=False,
        state_note=POWERED_OFF_NOTE if state == "stopped" else "",
        stopped_bills_storage=False,
        stalled=_stalled(droplet.status, state),
    )


def _cost_per_hour(droplet: RawDroplet, state: State) -> float | None:
    """`size.price_hourly` in every state but `archive` (destroyed): powered off included."""
    if state == "terminated":
        return 0.0
    return droplet.size.price_hourly if droplet.size is not None else None


def _stalled(status: str | None, state: State) -> str | None:
    """What bills and may not end by itself, named once it lasts REAPER_STUCK_AFTER: a droplet
    that never left `new`, and a powered-off one, which bills its full price for every hour it
    waits for its TTL."""
    if state == "starting":
        return f"{status}, never became active"
    if state == "stopped":
        return "powered off, and billing its full price all the same"
    return None


def what_is_lost(disk: float | None) -> str:
    """What a destroy loses and leaves, in DigitalOcean's words: backups go with the droplet
    ("Destroying a Droplet destroys the backups along with it"); snapshots and volumes stay."""
    size = f" ({disk:g} GB)" if disk else ""
    return f"Lost: its disk{size}, scratch disk and backups; snapshots and volumes survive."


def make(account: Account, settings: ProviderSettings, options: HttpOptions) -> DigitalOceanClient:
    """The client of one account, as the registry makes it."""
    assert isinstance(settings, DigitalOceanSettings)
    return DigitalOceanClient(account, settings.api_url, options)


class DigitalOceanClient:
    """One DigitalOcean account (`ProviderClient`)."""

    provider: ProviderName = NAME

    def __init__(
        self,
        account: Account,
        base_url: str,
        options: HttpOptions | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.account = account.name
        self.base_url = base_url.rstrip("/")
        self.http = Requester(NAME, account, options or HttpOptions(), transport)
        self.read_batch: int | None = None
        # How many pages the latest complete listing took: what a fresh read by listing costs.
        self.pages_listed = 1

    async def aclose(self) -> None:
        await self.http.aclose()

    # --- listing ---------------------------------------------------------------------------

    async def list_instances(self, only_ids: Collection[str] | None = None) -> list[Instance]:
        """Every GPU droplet, complete, or ProviderError. `only_ids` is ignored: the listing
        filters by tag or name, not by id, and one page holds 200 droplets anyway."""
        what = "listing GPU droplets"
        raws, total, pages = await self._pages(what, droplet_listing, "droplets")
        listed = [parse_droplet(raw, self.account, n) for n, raw in enumerate(raws)]
        self.http.check_count(what, len({i.id for i in listed}), total, "droplets", TOTAL_FIELD)
        self.pages_listed = pages
        return merge_duplicates(listed)

    async def _pages(
        self,
        what: str,
        listing: Callable[[str, int], tuple[str, dict[str, str]]],
        key: str,
    ) -> tuple[list[Any], int, int]:
        """Every item of a paged listing, the largest `meta.total` any page reported, and the
        number of pages. The largest count: DigitalOcean pages by offset, so a droplet destroyed
        while the pages are read shifts a later one onto a page already read; that one is then
        never listed, and the count shows it. A page that fails fails the whole listing (a
        shorter one would make the missing droplets look gone), and so does an answer that
        cannot show it is whole (see `_total` and `_next_page`)."""
        items: list[Any] = []
        totals: list[int] = []
        for page in range(1, MAX_PAGES + 1):
            step = f"{what} (page {page})"
            url, query = listing(self.base_url, page)
            reply = await self._send(step, "GET", url, params=query)
            if reply.status != 200:
                raise self._failure(reply, step)
            body = json_object(self.http, reply, step)
            found = body.get(key)
            if not isinstance(found, list):
                raise self.http.error(f"{step}: the answer has no `{key}` list")
            items += found
            totals.append(self._total(body, step))
            if not self._more(body, page, step):
                return items, max(totals), page
            if not found:
                raise self.http.error(f"{step}: an empty page announces another one")
        raise self.http.error(f"{what}: more than {MAX_PAGES} pages")

    def _total(self, body: dict[str, Any], step: str) -> int:
        """`meta.total`, which the spec requires: without it, a page whose `links` say nothing
        (the spec's own last page answers `links: {}`) cannot be told from a cut answer."""
        meta = body.get("meta")
        total = meta.get("total") if isinstance(meta, dict) else None
        if isinstance(total, bool) or not isinstance(total, int) or total < 0:
            raise self.http.error(
                f"{step}: the answer has no readable `meta.total`, so it may not be complete"
            )
        return total

    def _more(self, body: dict[str, Any], page: int, step: str) -> bool:
        """Whether `links.pages.next` announces another page. It is read for its page number
        only, which must be the next one: the request for it is built by the listing function
        like the first, so a link can neither send the token to another host nor drop
        `type=gpus`. No `links`, no `pages` or no `next` is the last page (the spec's answers
        carry `links: {}` or `pages: {}` there); a `next` of another shape, or one that does
        not lead to the next page (a repeat, a skip), is a listing that cannot be followed."""
        links = body.get("links")
        if links is None:
            return False
        if not isinstance(links, dict):
            raise self.http.error(f"{step}: `links` is not an object, so it may not be whole")
        pages = links.get("pages")
        if pages is None:
            return False
        if not isinstance(pages, dict):
            raise self.http.error(f"{step}: `links.pages` is not an object, so it may not be whole")
        following = pages.get("next")
        if following is None or following == "":
            return False
        if _page_of(following) != page + 1:
            raise self.http.error(
                f"{step}: `links.pages.next` does not lead to page {page + 1}, so the listing"
                " cannot be followed to its end"
            )
        return True

    # --- one droplet -----------------------------------------------------------------------

    def _droplet_url(self, instance_id: str, what: str) -> str:
        """The URL of exactly one droplet: canonical ASCII digits only."""
        if canonical_id(instance_id) != instance_id:
            raise self.http.error(f"refusing to {what} droplet {instance_id!r}: not a droplet id")
        return f"{self.base_url}/droplets/{instance_id}"

    async def terminate(
        self,
        instance_id: str,
        *,
        not_after: float | None = None,
        before_send: Callable[[], None] | None = None,
    ) -> TerminateOutcome:
        """`DELETE /droplets/{id}`: 204 is "deleted".

        A 404 is read by its JSON `id`: only `not_found` means the droplet is gone; any other
        404 is an error, never "already gone". A 422 that says a destroy is already under way
        is a repeat of a delete that went through (the request layer retries a delete whose
        answer was lost). The pass confirms every one by re-listing anyway.
        """
        what = f"destroying droplet {instance_id}"
        url = self._droplet_url(instance_id, "destroy")
        reply = await self._send(what, "DELETE", url, not_after=not_after, before_send=before_send)
        if reply.status in (200, 202, 204):
            return "deleted"
        if reply.status == 404 and _error_id(reply.body) == "not_found":
            return "not_found"
        if reply.status == 404:
            raise self._failure(
                reply, f"{what}: a 404 that is not `not_found` (not proof the droplet is gone)"
            )
        if reply.status == 422 and _DESTROY_UNDER_WAY in _error_message(reply.body).lower():
            return "deleted"
        raise self._failure(reply, what)

    def server_time(self) -> datetime | None:
        return self.http.server_date

    async def read_instances(self, instance_ids: Collection[str]) -> dict[str, Instance | None]:
        """These droplets as DigitalOcean shows them now, by whichever takes fewer requests
        (the quota counts requests, 250 a minute): one `GET /droplets/{id}` each, or the
        listing when the droplets about to go are more than the pages it took last time (one
        page holds 200). Both are equally fresh; an id the listing does not show, or whose own
        endpoint answers 404 `not_found`, is None (not deleted)."""
        ids = sorted({i for i in instance_ids if canonical_id(i) == i})
        if ids and self.pages_listed < len(ids):
            listed = {i.id: i for i in await self.list_instances()}
            return {i: listed.get(i) for i in ids}
        return await read_each(self.http, self.lookup, ids)

    async def lookup(self, instance_id: str) -> Instance | None:
        """`GET /droplets/{id}`: `{"droplet": {...}}` is that droplet; 404 `not_found` is "not
        there". Anything else (another droplet, no `droplet` object, any other 404) is an error,
        never "gone"."""
        what = f"reading droplet {instance_id}"
        reply = await self._send(what, "GET", self._droplet_url(instance_id, "read"))
        if reply.status == 404 and _error_id(reply.body) == "not_found":
            return None
        if reply.status != 200:
            raise self._failure(reply, what)
        raw = json_object(self.http, reply, what).get("droplet")
        if not isinstance(raw, dict):
            raise self.http.error(f"{what}: the answer has no `droplet` object")
        found = parse_droplet(raw, self.account)
        if found.id != instance_id:
            raise self.http.error(f"{what}: the answer shows another droplet ({found.id})")
        return found

    # --- money -----------------------------------------------------------------------------

    async def balance(self) -> Balance:
        """`GET /customers/my/balance`. DigitalOcean bills a card after the month; what can run
        out is prepaid credit, which `month_to_date_balance` shows as a negative amount (it is
        `account_balance` plus this month's usage; `account_balance` alone leaves the month's
        usage out and would overstate the credit). So the balance is that credit; at zero or
        above the account draws on no credit, nothing runs out, and the balance is None (the
        low-balance and runway guards decide nothing). An unreadable amount is an error."""
        what = "reading the balance"
        reply = await self._send(what, "GET", f"{self.base_url}/customers/my/balance")
        if reply.status != 200:
            raise self._failure(reply, what)
        owed = _amount(json_object(self.http, reply, what).get("month_to_date_balance"))
        if owed is None:
            raise self.http.error(f"{what}: the answer has no readable `month_to_date_balance`")
        credit = -owed if owed < 0 else None
        return Balance(provider=NAME, account=self.account, balance=credit)

    async def billing(self, days: int) -> list[BilledDay] | None:
        """None: the balance endpoint holds this month's usage, not one total per day."""
        return None

    async def instance_billing(self, days: int) -> dict[str, float] | None:
        """None: DigitalOcean's API has no per-droplet billing history."""
        return None

    async def volumes(self, instances: Sequence[Instance] | None = None) -> list[Volume]:
        """Every block storage volume (`GET /volumes`, paged like the droplets, complete or an
        error). `attached` is whether `droplet_ids` names a droplet (None when the field is
        null or missing: cannot tell); a volume bills $0.10 per GiB a month either way."""
        what = "listing volumes"
        raws, total, _pages = await self._pages(what, _volume_listing, "volumes")
        volumes = [v for v in (_volume(raw, self.account) for raw in raws) if v is not None]
        distinct = {_volume_key(raw, n) for n, raw in enumerate(raws)}
        self.http.check_count(what, len(distinct), total, "volumes", TOTAL_FIELD)
        return volumes

    # --- errors ----------------------------------------------------------------------------

    async def _send(self, what: str, method: str, url: str, **kwargs: Any) -> Reply:
        """The request layer's answer; a rate limit that outlasted its retries says so first."""
        try:
            return await self.http.request(method, url, **kwargs)
        except StaleReading:
            raise
        except ProviderError as exc:
            if "HTTP 429" not in exc.message:
                raise
            raise self.http.error(
                f"rate limited by {LABEL} (reaper backed off; the next pass tries again): "
                f"{what}: {exc.message}"
            ) from None

    def _failure(self, reply: Reply, what: str) -> ProviderError:
        """The error for an answer the caller did not expect, in one line: DigitalOcean's
        `id: message (request_id ...)`, led by the cause when it is the token."""
        reason = self.http.scrub(clean_text(_summary(reply.body)))[:_SUMMARY_LIMIT]
        detail = f" ({reason})" if reason else ""
        message = f"{what}: {reply.method} {reply.path} answered HTTP {reply.status}{detail}"
        if reply.status == 401:
            message = f"{LABEL} refused the token: check {KEY_VARIABLE}: {message}"
        elif reply.status == 403:
            message = f"{LABEL} refused this to the token (a scope it lacks?): {message}"
        refused = reply.status if 400 <= reply.status < 500 else None
        return self.http.error(message, status=refused)


def _page_of(link: object) -> int | None:
    """The `page` number of a `links.pages` URL (godo reads it the same way), or None."""
    if not isinstance(link, str):
        return None
    try:
        values = parse_qs(urlsplit(link).query).get("page", [])
    except ValueError:
        return None
    if len(values) != 1 or not (values[0].isascii() and values[0].isdigit()):
        return None
    return int(values[0]) if len(values[0]) <= 9 else None


def _error_body(body: bytes) -> dict[str, Any]:
    try:
        data = json.loads(body)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _error_id(body: bytes) -> str | None:
    value = _error_body(body).get("id")
    return value if isinstance(value, str) else None


def _error_message(body: bytes) -> str:
    value = _error_body(body).get("message")
    return value if isinstance(value, str) else ""


def _summary(body: bytes) -> str:
    """DigitalOcean's error `{"id", "message", "request_id"}` as `id: message (request_id
    ...)`; any other body as the request layer reads it."""
    data = _error_body(body)
    code, message, request = data.get("id"), data.get("message"), data.get("request_id")
    if not isinstance(code, str) or not isinstance(message, str):
        return summarise_error(body)
    line = f"{code}: {message}" if message.strip() else code
    if isinstance(request, str) and request.strip():
        line += f" (request_id {request.strip()})"
    return " ".join(line.split())


def _amount(value: object) -> float | None:
    """A money amount as DigitalOcean writes it ("-12.23", a string) or a number; None when it
    is neither, or not finite."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        number = float(value)
    except (ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None


def _volume_key(raw: object, position: int) -> str:
    """A volume's id for counting; an entry without one counts once, by its position."""
    found = raw.get("id") if isinstance(raw, dict) else None
    return f"id:{found}" if isinstance(found, str) else f"entry:{position}"


def _volume(raw: object, account: str) -> Volume | None:
    """One volume of the listing; one without a readable id is left out (it names nothing a
    person could delete)."""
    if not isinstance(raw, dict):
        return None
    volume, unreadable = read_tolerantly(_RawVolume, raw)
    if not volume.id:
        return None
    ids = None if "droplet_ids" in unreadable else volume.droplet_ids
    size = volume.size_gigabytes
    return Volume(
        provider=NAME,
        account=account,
        id=volume.id,
        name=volume.name or "",
        size_gb=size,
        attached=None if ids is None else bool(ids),
        cost_per_month=finite(None if size is None else round(size * VOLUME_USD_PER_GIB_MONTH, 4)),
        created_at=parse_time(volume.created_at),
    )
