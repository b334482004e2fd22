"""Vast.ai over its v1 list and v0 instance endpoints, normalised into `Instance`.

Built from Vast's published API specs: `GET /api/v1/instances/` pages by keyset (`limit` at
most 25, `after_token` = the previous page's opaque `next_token`, null at the end);
`DELETE /api/v0/instances/{id}/` answers `{"success": true}` or 404 `{"error": "not_found"}`.
Vast sends no `Retry-After` on 429, and its body is often plain text (its rate-limit docs): the
request layer's backoff and adaptive concurrency do the pacing.

What the live API answers beyond the specs (public clients and their issue threads): the
one-instance endpoint answers 200 `{"instances": null}` or `[]` once an instance is gone (see
`lookup`); a wrong key has been seen answering 404 `auth_error`; the v0 list answers 410
`deprecated_endpoint`; `{success: false, error, msg}` may come with a 200. Each error names its
cause first (`_cause`): a refused key, a retired endpoint, a rate limit.

How a state is read (`read_state`), from the specs and from what Vast's own CLI tests and
public clients (vast-cli, SkyPilot, dstack) show the live API answering:
- `destroyed` (actual or intended) and `cur_state: unloaded` (the hardware released on destroy)
  are terminated — checked first, because a destroyed instance that lingers in the listing
  reads `actual_status: null, intended_status: stopped`, the very shape of an abandoned start;
- `stopped`/`exited` are stopped whatever `intended_status` says (an outbid instance that Vast
  still means to run sits stopped and bills storage);
- a start Vast abandoned (`actual_status` null/`created`/`loading` while `intended_status` is
  `stopped`, the shape of vast-cli's own self-test) is stopped: it bills storage and will
  never run;
- null/`created`/`loading`/`rebooting` otherwise are starting; `scheduling` (a stopped
  instance waiting for its GPU, possibly for ever), `error`, `frozen`, `offline`, `unknown` and
  anything else are unknown — never reaped. Starts that never finish, `scheduling`, `error` and
  abandoned starts are `stalled`: named in an alert once they last REAPER_STUCK_AFTER.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import httpx
from pydantic import StrictInt, StrictStr

from reaper import log
from reaper.core.models import Balance, BilledDay, Instance, ProviderName, State, Volume
from reaper.providers.base import (
    UNREADABLE_ID_PREFIX,
    HttpOptions,
    ProviderError,
    StaleReading,
    TerminateOutcome,
    merge_duplicates,
)
from reaper.providers.http import Reply, Requester, json_object, read_each
from reaper.providers.parsing import (
    CleanStr,
    RawModel,
    as_number,
    epoch_to_datetime,
    finite,
    not_an_object,
    note_unreadable,
    raw_status,
    read_tolerantly,
)
from reaper.providers.vast import KEY_VARIABLE, LABEL, NAME, VastSettings, canonical_id
from reaper.settings.parse import Account, ProviderSettings

PAGE_SIZE = 25
# 25 000 instances: far past any real account; a guard against a server that never ends.
MAX_PAGES = 1000

# `actual_status` values from Vast's SDK docs (the spec types it as a nullable string without an
# enum), read by `read_state`. Exact matches only: anything else is "unknown", never reaped.
STARTING_STATUSES = frozenset({None, "created", "loading"})
# What each bills. Vast's billing docs: the rental is charged while active, storage in every
# state but offline, "Loading" is not charged for rental, frozen keeps the GPU billed.
# Rebooting is counted at the full rate (the rental is held): an upper bound, not verified.
FULL_RATE_STATUSES = frozenset({"running", "rebooting", "frozen"})
NOTHING_BILLED_STATUSES = frozenset({"offline"})
# States whose bill cannot be told (no host heartbeat): the cost is unknown.
UNKNOWN_BILL_STATUSES = frozenset({"unknown"})
# A `status_msg` that says a start cannot succeed (vast-cli's self-test classifies these).
_START_FAILURE = re.compile(
    r"error|pull access denied|manifest .*not found|unauthorized|failed", re.IGNORECASE
)

# Vast's show-instance spec example: storage_cost 0.14933 ($/GB/month, though described "per hour")
# × disk_space 10 / 720 = storage_total_cost 0.0020741 = instance.diskHour. So
# `storage_total_cost` is the storage bill in $/h, and Vast divides by a 720-hour month.
VAST_HOURS_PER_MONTH = 720.0

CONSOLE_URL = "https://cloud.vast.ai/instances/"


class RawVastInstance(RawModel):
    """The fields of a Vast instance reaper reads. `extra_env`, `jupyter_token`, `onstart`,
    ssh keys and every other secret-bearing field are deliberately absent.

    `id` is strict: a lax int would turn JSON `true` into 1 (or "12" into 12) before
    `_id_text` could refuse it, and a malformed entry would become a different, real instance.
    """

    id: StrictInt | StrictStr | None = None
    actual_status: StrictStr | None = None
    intended_status: StrictStr | None = None
    cur_state: StrictStr | None = None
    next_state: StrictStr | None = None
    status_msg: CleanStr | None = None
    is_bid: bool | None = None
    label: CleanStr | None = None
    dph_total: float | None = None
    storage_total_cost: float | None = None
    storage_cost: float | None = None
    disk_space: float | None = None
    gpu_util: float | None = None
    start_date: float | None = None


class _RawVolume(RawModel):
    id: StrictInt | StrictStr | None = None
    disk_space: float | None = None
    storage_total_cost: float | None = None
    start_date: float | None = None
    instances: list[Any] | None = None
    status: str | None = None


def parse_instance(raw: object, account: str, position: int = 0) -> Instance:
    """One instance of a listing as an `Instance`; never raises (as every provider's parser)."""
    if not isinstance(raw, dict):
        return not_an_object(NAME, account, position)
    inst, unreadable = read_tolerantly(RawVastInstance, raw)
    instance_id = canonical_id(inst.id) or f"{UNREADABLE_ID_PREFIX}{position}"
    present = "actual_status" in raw
    # A missing `actual_status` (a select_cols answer, a changed API) says nothing; only an
    # explicit null means "not yet started" in Vast's docs.
    reading = read_state(inst) if present else Reading("unknown")
    state = reading.state
    if unreadable or instance_id.startswith(UNREADABLE_ID_PREFIX):
        state = "unknown"
        reading = Reading("unknown")
        note_unreadable("vast", account, instance_id, unreadable or ["id"])
    return Instance(
        provider=NAME,
        provider_label=LABEL,
        name_field="label",
        termination_loses=what_is_lost(inst.disk_space),
        frozen=state == "unknown" and inst.actual_status == "frozen",
        account=account,
        id=instance_id,
        name=inst.label or "",
        state=state,
        raw_status=raw_status(raw.get("actual_status"), present),
        cost_per_hour=None if unreadable else finite(_cost_per_hour(inst, state)),
        gpu_util=finite(gpu_percent(inst.gpu_util)),
        # `start_date` is when the instance was created, not when it last started or stopped;
        # Vast reports no start time, so `started_at` stays None.
        created_at=epoch_to_datetime(inst.start_date),
        container_disk_gb=inst.disk_space,
        console_url=CONSOLE_URL,
        protection_unreadable=_label_unreadable(raw, unreadable),
        # No field of a Vast instance moves at every start: `start_date` is its creation,
        # `duration` the contract's time left, `uptime_mins` undocumented and null in every
        # example. A start and stop between two checks cannot be seen.
        restart_visible=False,
        state_note=reading.note,
        stalled=reading.stalled,
    )


@dataclass(frozen=True)
class Reading:
    """What one answer's status fields say: the state, the provider's own words about it, and
    the stuck condition, if any (see the module docstring)."""

    state: State
    note: str = ""
    stalled: str | None = None


def read_state(inst: RawVastInstance) -> Reading:
    actual, intended = inst.actual_status, inst.intended_status
    if "destroyed" in (actual, intended) or inst.cur_state == "unloaded":
        return Reading("terminated")
    if actual in ("stopped", "exited"):
        if intended == "running":
            resumes = ": it resumes if your bid wins" if inst.is_bid else ""
            return Reading("stopped", f"Vast still means to run it{resumes}")
        return Reading("stopped")
    if actual in STARTING_STATUSES and intended == "stopped":
        return Reading(
            "stopped",
            "Vast abandoned its start: it will never run, and bills its storage",
            stalled="start abandoned by Vast",
        )
    if actual in STARTING_STATUSES or actual == "rebooting":
        message = (inst.status_msg or "").strip()
        if actual == "created" and message and _START_FAILURE.search(message):
            return Reading("starting", stalled=f"cannot start: {message[:120]}")
        return Reading("starting", stalled=f"{actual or 'being created'}, never became running")
    if actual == "running":
        return Reading("running")
    if actual == "scheduling":
        return Reading("unknown", stalled="scheduling: waiting for its GPU, possibly for ever")
    if actual == "error":
        message = (inst.status_msg or "").strip()
        return Reading("unknown", stalled=f"in error{': ' + message[:120] if message else ''}")
    return Reading("unknown")


def what_is_lost(disk: float | None) -> str:
    """What a destroy loses and leaves, in Vast's own words."""
    size = f" {disk:g} GB" if disk else ""
    return f"Lost: instance disk{size}; Vast volumes survive."


def _label_unreadable(raw: dict[str, Any], unreadable: list[str]) -> str | None:
    """The label carries the protect marker. `null` is the spec's "no label" (show_instances
    counts unlabelled instances under ""), so it is read as empty; a missing key (a changed API,
    a narrowed answer) or a label that is not text cannot be read: protected."""
    if "label" not in raw:
        return "`label` is missing"
    if "label" in unreadable:
        return "`label` is unreadable"
    return None


def storage_per_hour(inst: RawVastInstance) -> float | None:
    """The storage bill in $/h: `storage_total_cost`, else storage_cost × disk_space / 720."""
    if inst.storage_total_cost is not None:
        return inst.storage_total_cost
    if inst.storage_cost is not None and inst.disk_space is not None:
        return inst.storage_cost * inst.disk_space / VAST_HOURS_PER_MONTH
    return None


def _cost_per_hour(inst: RawVastInstance, state: State) -> float | None:
    """What the instance bills now. `dph_total` keeps the GPU price even when stopped, so it
    is used only while the rental is active (frozen included); every other state bills its
    storage but offline, which bills nothing; a destroyed one nothing."""
    if state == "terminated":
        return 0.0
    status = inst.actual_status
    if status in UNKNOWN_BILL_STATUSES:
        return None
    if status in FULL_RATE_STATUSES and state != "stopped":
        return inst.dph_total
    if status in NOTHING_BILLED_STATUSES:
        return 0.0
    return storage_per_hour(inst)


def gpu_percent(value: float | None) -> float | None:
    """Vast's `gpu_util` is a fraction (0.0-1.0): ×100. A value above 1.0 cannot be a
    fraction, so it is taken as already in percent (defensive; not seen in the spec)."""
    if value is None or value != value or value < 0:
        return None
    percent = value if value > 1.0 else value * 100.0
    return min(100.0, percent)


def make(account: Account, settings: ProviderSettings, options: HttpOptions) -> VastClient:
    """The client of one account, as the registry makes it."""
    assert isinstance(settings, VastSettings)
    return VastClient(account, settings.api_url, options)


class VastClient:
    """One Vast account (`ProviderClient`)."""

    provider: ProviderName = "vast"

    def __init__(
        self,
        account: Account,
        base_url: str,
        options: HttpOptions | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.account = account.name
        self.base_url = base_url.rstrip("/")
        self.http = Requester("vast", account, options or HttpOptions(), transport)
        self.read_batch: int | None = PAGE_SIZE
        # Set once a filtered listing answered ids it was not asked for: later fresh reads of
        # this client go straight to each instance's endpoint.
        self.filter_ignored = False

    async def aclose(self) -> None:
        await self.http.aclose()

    async def list_instances(self, only_ids: Collection[str] | None = None) -> list[Instance]:
        """Every instance, following `next_token` to the end (see `_list`)."""
        listed = await self._list(only_ids)
        assert listed is not None
        return listed

    async def _list(
        self, only_ids: Collection[str] | None, *, unless_unfiltered: bool = False
    ) -> list[Instance] | None:
        """Every instance, following `next_token` to the end.

        With `only_ids`, the listing asks for those ids alone (`select_filters` with `in`, as
        Vast's show-instances spec documents): a confirmation re-list of 100 deleted instances
        is then 4 pages, not 40. Ids that are not Vast's integers are left out of the filter.

        A page that fails (after retries) fails the whole listing: a shorter fleet would make
        the missing instances look gone. So does an answer that cannot show it is complete: a
        missing `next_token` key (the spec ends with an explicit null), or an instance count
        that is not the `total_instances` the server reported ("matching the filters", so the
        filtered count for `only_ids`). A token seen twice, or a token with an empty page, is
        a server that would loop: also an error, not a truncated list.

        `unless_unfiltered`: None as soon as a page shows an id that was not asked for — a
        server that ignores the filter — so the caller reads another way instead of paging
        through the whole account.
        """
        listed: list[Instance] = []
        found: set[str] = set()
        token: str | None = None
        seen: set[str] = set()
        totals: list[int] = []
        for page in range(1, MAX_PAGES + 1):
            params = {"limit": str(PAGE_SIZE)}
            if only_ids is not None:
                wanted = sorted({n for n in (canonical_id(i) for i in only_ids) if n is not None})
                params["select_filters"] = json.dumps({"id": {"in": [int(n) for n in wanted]}})
            if token is not None:
                params["after_token"] = token
            what = f"listing instances (page {page})"
            reply = await self._send(
                what, "GET", f"{self.base_url}/api/v1/instances/", params=params
            )
            if reply.status != 200:
                raise self._failure(reply, what)
            body = self._succeeded(reply, what)
            items = body.get("instances")
            if not isinstance(items, list):
                raise self.http.error(f"{what}: the answer has no `instances` list")
            for raw in items:
                instance = parse_instance(raw, self.account, len(listed))
                listed.append(instance)
                found.add(instance.id)
            if unless_unfiltered and only_ids is not None and not found <= set(only_ids):
                return None
            if "next_token" not in body:
                raise self.http.error(
                    f"{what}: the answer has no `next_token`, so it may not be complete"
                )
            total = body.get("total_instances")
            if isinstance(total, int) and not isinstance(total, bool):
                totals.append(total)
            next_token = body["next_token"]
            if next_token is None or next_token == "":
                # The largest count any page reported: an instance destroyed while the pages
                # are read has been listed already but drops out of later pages' counts. A
                # lower count is a listing that lost instances; a higher one, a server that
                # contradicts itself.
                if totals:
                    self.http.check_count(
                        "listing instances", len(found), max(totals), "instances", "total_instances"
                    )
                return merge_duplicates(listed)
            if not isinstance(next_token, str):
                raise self.http.error(f"{what}: `next_token` is not a string")
            if next_token in seen or not items:
                raise self.http.error(f"{what}: paging made no progress (the token repeats)")
            seen.add(next_token)
            token = next_token
        raise self.http.error(f"listing instances: more than {MAX_PAGES} pages")

    def _instance_url(self, instance_id: str, what: str) -> str:
        """The URL of exactly one instance: canonical ASCII digits only."""
        if canonical_id(instance_id) != instance_id:
            raise self.http.error(f"refusing to {what} instance {instance_id!r}: not a Vast id")
        return f"{self.base_url}/api/v0/instances/{instance_id}/"

    async def terminate(
        self,
        instance_id: str,
        *,
        not_after: float | None = None,
        before_send: Callable[[], None] | None = None,
    ) -> TerminateOutcome:
        """`DELETE /api/v0/instances/{id}/` (Vast calls it destroy).

        A 404 is read by its JSON `error` field: only `not_found` means the instance is gone.
        A bad key or an expired session has been seen answering 404 too (outside the specs),
        so any other 404 is an error, never "already gone".
        """
        what = f"destroying instance {instance_id}"
        url = self._instance_url(instance_id, "destroy")
        reply = await self._send(what, "DELETE", url, not_after=not_after, before_send=before_send)
        if reply.status == 200:
            if self._succeeded(reply, what).get("success") is True:
                return "deleted"
            raise self.http.failure(reply, f"{what} (no `success: true`)")
        if reply.status == 404 and _error_field(reply.body) == "not_found":
            return "not_found"
        if reply.status == 404 and _cause(reply) is None:
            raise self.http.failure(
                reply,
                f"{what}: a 404 that is not `not_found` "
                "(an auth or session error, not proof the instance is gone)",
            )
        raise self._failure(reply, what)

    def server_time(self) -> datetime | None:
        return self.http.server_date

    async def read_instances(self, instance_ids: Collection[str]) -> dict[str, Instance | None]:
        """A listing filtered to these ids (a page per 25): an id it does not return is None.
        A filter that silently matched nothing only makes the pass delete nothing. A server
        that ignores the filter is noticed on the first page, and the ids are then read one by
        one by their own endpoint (concurrently) rather than through the whole account."""
        wanted = {i for i in instance_ids if canonical_id(i) == i}
        filtered = None if self.filter_ignored else await self._list(wanted, unless_unfiltered=True)
        if filtered is None:
            if not self.filter_ignored:
                self.filter_ignored = True
                log.event(
                    "provider_warning",
                    provider=NAME,
                    account=self.account,
                    message="the instance listing ignored its id filter; reading each instance",
                )
            return await read_each(self.http, self.lookup, wanted)
        listed = {i.id: i for i in filtered}
        return {i: listed.get(i) for i in wanted}

    async def lookup(self, instance_id: str) -> Instance | None:
        """`GET /api/v0/instances/{id}/`: `{"instances": {...}}` (the spec) or a one-element
        list of it (seen live) is that instance. Once the instance is gone Vast answers 200
        `{"instances": null}` (vast-ai/vast-cli PR #405) or `[]` (Max19970/easy-server issue
        #125), not 404: that is "not there", like a 404 whose `error` is `not_found`. Anything
        else (two instances, another instance, no `instances` key, `success: false`, any other
        404) is an error, never "gone"."""
        what = f"reading instance {instance_id}"
        reply = await self._send(what, "GET", self._instance_url(instance_id, "read"))
        if reply.status == 404 and _error_field(reply.body) == "not_found":
            return None
        if reply.status != 200:
            raise self._failure(reply, what)
        body = self._succeeded(reply, what)
        if "instances" not in body:
            raise self.http.error(f"{what}: the answer has no `instances`")
        raw = body["instances"]
        if raw is None or raw == []:
            return None
        if isinstance(raw, list) and len(raw) == 1:
            raw = raw[0]
        if not isinstance(raw, dict):
            raise self.http.error(f"{what}: the answer holds no single instance object")
        found = parse_instance(raw, self.account)
        if found.id != instance_id:
            raise self.http.error(f"{what}: the answer shows another instance ({found.id})")
        return found

    async def balance(self) -> Balance:
        """`credit` (the docs' "available balance") when present, else the spec's `balance`."""
        what = "reading the balance"
        reply = await self._send(what, "GET", f"{self.base_url}/api/v0/users/current/")
        if reply.status != 200:
            raise self._failure(reply, what)
        body = self._succeeded(reply, what)
        amount = as_number(body.get("credit"))
        if amount is None:
            amount = as_number(body.get("balance"))
        return Balance(provider=NAME, account=self.account, balance=amount)

    async def billing(self, days: int) -> list[BilledDay] | None:
        """None: the API reference reaper follows documents no per-day billing history (Vast's
        invoices are per charge, not per day), so the status page shows its spend from the
        snapshots alone."""
        return None

    async def instance_billing(self, days: int) -> dict[str, float] | None:
        """None, for the same reason as `billing`."""
        return None

    async def volumes(self, instances: Sequence[Instance] | None = None) -> list[Volume]:
        """`GET /api/v0/volumes/?owner=me` (`owner=me` comes from Vast's SDK, not the spec).

        `attached` is whether the volume's `instances` list is non-empty (None when the field
        is missing). `storage_total_cost` is read as $/h like the instance field of that name
        (the volume spec only says "total cost for storage"), × 720 for a month.
        """
        what = "listing volumes"
        reply = await self._send(
            what, "GET", f"{self.base_url}/api/v0/volumes/", params={"owner": "me"}
        )
        if reply.status != 200:
            raise self._failure(reply, what)
        items = self._succeeded(reply, what).get("volumes")
        if not isinstance(items, list):
            raise self.http.error("listing volumes: the answer has no `volumes` list")
        volumes = []
        for raw in items:
            if not isinstance(raw, dict):
                continue
            volume, _ = read_tolerantly(_RawVolume, raw)
            volume_id = canonical_id(volume.id)
            if volume_id is None:
                continue
            monthly = volume.storage_total_cost
            volumes.append(
                Volume(
                    provider=NAME,
                    account=self.account,
                    id=volume_id,
                    size_gb=volume.disk_space,
                    attached=None if volume.instances is None else bool(volume.instances),
                    cost_per_month=finite(
                        None if monthly is None else round(monthly * VAST_HOURS_PER_MONTH, 4)
                    ),
                    created_at=epoch_to_datetime(volume.start_date),
                )
            )
        return volumes

    async def _send(self, what: str, method: str, url: str, **kwargs: Any) -> Reply:
        """The request layer's answer; a rate limit that outlasted its retries says so first.

        Vast's 429 is plain text without `Retry-After` (its rate-limit docs): the layer backs
        off and lowers its concurrency; past its attempts the account is an error for this pass
        and the next pass starts afresh.
        """
        try:
            return await self.http.request(method, url, **kwargs)
        except StaleReading:
            raise
        except ProviderError as exc:
            if "HTTP 429" not in exc.message:
                raise
            raise self.http.error(
                f"rate limited by Vast (reaper backed off; the next pass tries again): {what}: "
                f"{exc.message}"
            ) from None

    def _failure(self, reply: Reply, what: str) -> ProviderError:
        """The error for an answer the caller did not expect, led by its cause where Vast's
        answer names one (see `_cause`)."""
        failure = self.http.failure(reply, what)
        cause = _cause(reply)
        if cause is None:
            return failure
        return self.http.error(f"{cause}: {failure.message}", status=failure.status)

    def _succeeded(self, reply: Reply, what: str) -> dict[str, Any]:
        """A 200 answer's JSON object; `success: false` in it is an error with Vast's reason
        (Vast's error shape `{success, error, msg}` can come with a 200)."""
        body = json_object(self.http, reply, what)
        if body.get("success") is False:
            raise self._failure(reply, f"{what}: Vast answered `success: false`")
        return body


def _cause(reply: Reply) -> str | None:
    """What an error answer says went wrong, in a user's words, when Vast's answer says it: a
    key Vast refuses (401/403, or `auth_error` whatever the status: a wrong key has been seen
    answering 404, jhammant/AIonDemandCluster PR #1), or an endpoint Vast has retired (410
    `deprecated_endpoint`, as its v0 instance list answers: skypilot-org/skypilot issue
    #10517)."""
    code = _error_field(reply.body)
    if reply.status in (401, 403) or code == "auth_error":
        return f"Vast refused the key: check {KEY_VARIABLE}"
    if reply.status == 410 or code == "deprecated_endpoint":
        return "Vast has retired this endpoint: this reaper needs an update"
    return None


def _error_field(body: bytes) -> str | None:
    try:
        data = json.loads(body)
    except ValueError:
        return None
    value = data.get("error") if isinstance(data, dict) else None
    return value if isinstance(value, str) else None
