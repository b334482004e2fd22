"""RunPod over REST v2 (and GraphQL for the balance only), normalised into `Instance`.

Built from RunPod's published REST v2 spec (`GET /pods?includeClusterPods=true` answers
`{"pods": [...]}`; `DELETE /pods/{id}` answers 204; errors are RFC 9457 `{title, status,
detail}`) and from what the live API answers beyond it, as public clients show:

- the list pages: `{"pods": [...], "pagination": {"nextCursor": "...", "hasNextPage": true}}`,
  the cursor sent back as `?cursor=` with `?limit=` (five independent v2 clients agree; the
  spec shows no paging). An answer without `pagination` is the spec's whole list; one that
  says there is more without a way to get it is an incomplete listing, never page one taken
  as the fleet;
- error bodies come without `title`, with `detail` alone, or with `errors[]` (the reason shown
  is the most specific, `http.summarise_error`).

How a pod's fields are read (and what RunPod answers beyond the spec there) is `pods.py`.

REST v1 is retired and GraphQL retires in early 2027 (410 Gone), so GraphQL is used for
nothing but `myself { clientBalance currentSpendPerHr spendLimit }` and its failure is the
caller's warning, never a failed reap.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote, urlsplit

import httpx

from reaper import log
from reaper.core.models import Balance, BilledDay, Instance, ProviderName, Volume
from reaper.core.units import parse_time
from reaper.providers.base import HttpOptions, ProviderError, TerminateOutcome, merge_duplicates
from reaper.providers.http import Requester, json_object, read_each
from reaper.providers.parsing import CleanStr, RawModel, as_number, finite, read_tolerantly
from reaper.providers.runpod import KEY_VARIABLE, NAME, RunPodSettings, valid_pod_id
from reaper.providers.runpod.pods import network_volume_cost_per_month, parse_pod
from reaper.settings.parse import Account, ProviderSettings

# Pods asked for per page; the live API is said to cap it at 1000. A page guard far past any
# real account stops a server that never ends.
PAGE_LIMIT = 1000
MAX_PAGES = 1000
BALANCE_QUERY = "query { myself { clientBalance currentSpendPerHr spendLimit } }"


class _RawVolume(RawModel):
    id: CleanStr | None = None
    name: CleanStr | None = None
    size: float | None = None


class _RawEndpoint(RawModel):
    networkVolumes: list[CleanStr] | None = None


def make(account: Account, settings: ProviderSettings, options: HttpOptions) -> RunPodClient:
    """The client of one account, as the registry makes it."""
    assert isinstance(settings, RunPodSettings)
    return RunPodClient(account, settings.api_url, settings.graphql_url, options)


def _billing_window(metadata: object) -> tuple[datetime | None, datetime | None]:
    """The window a billing answer covers, from its `metadata.query` (start, end exclusive)."""
    query = metadata.get("query") if isinstance(metadata, dict) else None
    if not isinstance(query, dict):
        return None, None
    start, end = query.get("startTime"), query.get("endTime")
    return (
        parse_time(start) if isinstance(start, str) else None,
        parse_time(end) if isinstance(end, str) else None,
    )


class RunPodClient:
    """One RunPod account (`ProviderClient`)."""

    provider: ProviderName = "runpod"

    def __init__(
        self,
        account: Account,
        base_url: str,
        graphql_url: str,
        options: HttpOptions | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.account = account.name
        self.base_url = base_url.rstrip("/")
        self.graphql_url = graphql_url
        self.http = Requester("runpod", account, options or HttpOptions(), transport)
        self.read_batch: int | None = None
        self.max_concurrency = (options or HttpOptions()).max_concurrency
        # How many pages the latest complete listing took: what a fresh read by listing costs.
        self.pages_listed = 1

    async def aclose(self) -> None:
        await self.http.aclose()

    async def list_instances(self, only_ids: Collection[str] | None = None) -> list[Instance]:
        """Every pod, cluster members included (they carry `cluster_id`; the policy holds
        them because the pod endpoints cannot delete them). `only_ids` is ignored: the v2 list
        has no id filter and is one call anyway."""
        pods = await self._list_raw_pods()
        return merge_duplicates([parse_pod(raw, self.account, n) for n, raw in enumerate(pods)])

    async def _list_raw_pods(self) -> list[Any]:
        """Every page, following the cursor to the end; ProviderError for anything that cannot
        show the listing is complete (see the module docstring)."""
        pods: list[Any] = []
        cursor: str | None = None
        seen: set[str] = set()
        for page in range(1, MAX_PAGES + 1):
            what = f"listing pods (page {page})"
            params = {"includeClusterPods": "true", "limit": str(PAGE_LIMIT)}
            if cursor is not None:
                params["cursor"] = cursor
            reply = await self.http.request("GET", f"{self.base_url}/pods", params=params)
            if reply.status != 200:
                raise self.http.failure(reply, what)
            body = json_object(self.http, reply, what)
            items = body.get("pods")
            if not isinstance(items, list):
                raise self.http.error(f"{what}: the answer has no `pods` list")
            pods += items
            cursor = self._next_cursor(body, seen, what)
            if cursor is None:
                self.pages_listed = page
                return pods
            seen.add(cursor)
        raise self.http.error(f"listing pods: more than {MAX_PAGES} pages")

    def _next_cursor(self, body: dict[str, Any], seen: set[str], what: str) -> str | None:
        """The cursor of the next page, None at the end. No `pagination` at all is the spec's
        unpaged answer (the end); `hasNextPage: false` is the end; more pages without a new,
        non-empty cursor, or a marker of another shape, is an incomplete listing."""
        if "pagination" not in body:
            return None
        pagination = body["pagination"]
        if not isinstance(pagination, dict):
            raise self.http.error(
                f"{what}: `pagination` is not an object, so it may not be complete"
            )
        more = pagination.get("hasNextPage")
        cursor = pagination.get("nextCursor")
        if more is False or (more is None and cursor is None):
            return None
        if more is not True and more is not None:
            raise self.http.error(f"{what}: `hasNextPage` is not true or false")
        if not isinstance(cursor, str) or not cursor:
            raise self.http.error(
                f"{what}: more pages are announced without a cursor to reach them"
            )
        if cursor in seen:
            raise self.http.error(f"{what}: paging made no progress (the cursor repeats)")
        return cursor

    async def terminate(
        self,
        instance_id: str,
        *,
        not_after: float | None = None,
        before_send: Callable[[], None] | None = None,
    ) -> TerminateOutcome:
        """`DELETE /pods/{id}`: 204 is "deleted".

        404 is "not found *or not accessible to the caller*" by the spec, and the spec offers no
        way to tell the two apart; it is reported as "not_found" as the spec describes. That is
        safe only because the reap pass confirms every termination by a full re-list, never by
        trusting this answer: a pod that was merely inaccessible is still listed (or was never
        listed by this key in the first place). 409 (a cluster member) and everything else are
        errors.
        """
        if not valid_pod_id(instance_id):
            raise self.http.error(f"refusing to delete pod {instance_id!r}: not a pod id")
        reply = await self.http.request(
            "DELETE", self._pod_url(instance_id), not_after=not_after, before_send=before_send
        )
        if reply.status in (200, 202, 204):
            return "deleted"
        if reply.status == 404:
            return "not_found"
        raise self.http.failure(reply, f"deleting pod {instance_id}")

    def server_time(self) -> datetime | None:
        return self.http.server_date

    async def read_instances(self, instance_ids: Collection[str]) -> dict[str, Instance | None]:
        """These pods as RunPod shows them now, by whichever costs fewer round trips: one
        `GET /pods/{id}` each, concurrently (a handful of small reads), or the account's
        listing when the pods are more than one round of concurrent reads and the listing
        took fewer pages than that last time (100 pods out of 1,000: one page, not 13 rounds).
        Both are equally fresh; an id the listing does not show is None (not deleted)."""
        ids = sorted(set(instance_ids))
        rounds = -(-len(ids) // max(self.max_concurrency, 1))
        if ids and self.pages_listed < rounds:
            listed = {i.id: i for i in await self.list_instances()}
            return {i: listed.get(i) for i in ids}
        return await read_each(self.http, self.lookup, ids)

    async def lookup(self, instance_id: str) -> Instance | None:
        """`GET /pods/{id}`. A 404 is "not found or not accessible" by the spec; the same key
        listed the pod before, so it is read as gone — only ever as a second opinion beside a
        complete re-list (see `ProviderClient.lookup`)."""
        if not valid_pod_id(instance_id):
            raise self.http.error(f"refusing to read pod {instance_id!r}: not a pod id")
        what = f"reading pod {instance_id}"
        reply = await self.http.request("GET", self._pod_url(instance_id))
        if reply.status == 404:
            return None
        if reply.status != 200:
            raise self.http.failure(reply, what)
        return parse_pod(json_object(self.http, reply, what), self.account)

    def _pod_url(self, pod_id: str) -> str:
        """The URL of exactly one pod: the id is checked, quoted, and the result checked again
        to be `<base>/pods/<id>` and nothing else."""
        url = f"{self.base_url}/pods/{quote(pod_id, safe='')}"
        base_path = urlsplit(self.base_url).path.rstrip("/")
        if urlsplit(url).path != f"{base_path}/pods/{pod_id}":
            raise self.http.error(f"refusing to call {pod_id!r}: not one pod's URL")
        return url

    async def balance(self) -> Balance:
        """The account balance via GraphQL (the REST v2 spec has no balance endpoint).

        Every answer that shows no account is an error, never a balance of zero: `errors`
        (a resolver failure answers `myself: null` beside them), a bare `myself: null` (what
        RunPod answers a key that resolves to no account: runpod/runpodctl issue #46,
        runpod/runpod-mcp's credential check), and 410 Gone (GraphQL retired: the balance can
        no longer be read this way)."""
        what = "reading the balance (GraphQL)"
        reply = await self.http.request(
            "POST", self.graphql_url, json_body={"query": BALANCE_QUERY}
        )
        if reply.status == 410:
            raise self.http.failure(
                reply, f"{what}: RunPod has retired GraphQL, so the balance is no longer readable"
            )
        if reply.status != 200:
            raise self.http.failure(reply, what)
        body = json_object(self.http, reply, what)
        data = body.get("data")
        myself = data.get("myself") if isinstance(data, dict) else None
        if body.get("errors"):
            raise self.http.error(f"{what}: {self.http.reason(reply.body)}")
        if isinstance(data, dict) and "myself" in data and myself is None:
            raise self.http.error(
                f"{what}: the key belongs to no account (`myself` is null): check {KEY_VARIABLE}"
            )
        if not isinstance(myself, dict):
            raise self.http.error(f"{what}: the answer has no `myself`")
        return Balance(
            provider=NAME,
            account=self.account,
            balance=as_number(myself.get("clientBalance")),
            spend_per_hour=as_number(myself.get("currentSpendPerHr")),
            spend_limit=as_number(myself.get("spendLimit")),
        )

    async def billing(self, days: int) -> list[BilledDay]:
        """`GET /billing?bucketSize=day&lastN=<days>` (REST v2): one record per UTC day with its
        `totalAmount` across pods, serverless, storage and clusters. A record without a
        readable `startTime` or a finite `totalAmount` is left out (that day unknown, never
        zero); an answer without a `records` list is an error. A day inside the window the
        answer names (`metadata.query.startTime`) with no record billed nothing: whether the
        live API answers such days as zero or leaves them out is not documented, and both
        read the same."""
        what = "reading the billing history"
        reply = await self.http.request(
            "GET", f"{self.base_url}/billing", params={"bucketSize": "day", "lastN": str(days)}
        )
        if reply.status != 200:
            raise self.http.failure(reply, what)
        body = json_object(self.http, reply, what)
        records = body.get("records")
        if not isinstance(records, list):
            raise self.http.error(f"{what}: the answer has no `records` list")
        billed: dict[datetime, float] = {}
        start, end = _billing_window(body.get("metadata"))
        if start is not None and end is not None:
            day = start.replace(hour=0, minute=0, second=0, microsecond=0)
            while day < end and len(billed) < days + 1:
                billed[day] = 0.0
                day += timedelta(days=1)
        for record in records:
            if not isinstance(record, dict):
                continue
            raw_start = record.get("startTime")
            start = parse_time(raw_start) if isinstance(raw_start, str) else None
            amount = as_number(record.get("totalAmount"))
            if start is None or amount is None or amount < 0:
                continue
            start_day = start.replace(hour=0, minute=0, second=0, microsecond=0)
            billed[start_day] = billed.get(start_day, 0.0) + amount
        return [BilledDay(day=day, amount=round(total, 6)) for day, total in sorted(billed.items())]

    async def instance_billing(self, days: int) -> dict[str, float]:
        """`GET /billing/pods?bucketSize=day&lastN=<days>`: one record per pod per day; summed
        per `podId` over the window. A record without a readable `podId` or a finite, non-
        negative `totalAmount` is left out; an answer without a `records` list is an error."""
        what = "reading the pods' billing history"
        reply = await self.http.request(
            "GET",
            f"{self.base_url}/billing/pods",
            params={"bucketSize": "day", "lastN": str(days)},
        )
        if reply.status != 200:
            raise self.http.failure(reply, what)
        records = json_object(self.http, reply, what).get("records")
        if not isinstance(records, list):
            raise self.http.error(f"{what}: the answer has no `records` list")
        totals: dict[str, float] = {}
        for record in records:
            if not isinstance(record, dict):
                continue
            pod_id, amount = record.get("podId"), as_number(record.get("totalAmount"))
            if not isinstance(pod_id, str) or not valid_pod_id(pod_id):
                continue
            if amount is None or amount < 0:
                continue
            totals[pod_id] = totals.get(pod_id, 0.0) + amount
        return {pod_id: round(total, 6) for pod_id, total in totals.items()}

    async def volumes(self, instances: Sequence[Instance] | None = None) -> list[Volume]:
        """Network volumes, with `attached` worked out from what references them.

        The spec's `NetworkVolume` has no attachment field: a volume is attached when a pod
        (cluster members included) mounts it or a serverless endpoint lists it in
        `networkVolumes` (`GET /serverless`). If the serverless listing fails, volumes no pod
        mounts get `attached=None` (cannot tell) rather than a guess.
        """
        reply = await self.http.request("GET", f"{self.base_url}/network-volumes")
        if reply.status != 200:
            raise self.http.failure(reply, "listing network volumes")
        raw_volumes = json_object(self.http, reply, "listing network volumes").get("networkVolumes")
        if not isinstance(raw_volumes, list):
            raise self.http.error("listing network volumes: no `networkVolumes` list")
        pods = await self.list_instances() if instances is None else instances
        used = {i.network_volume_id for i in pods if i.network_volume_id}
        endpoint_volumes = await self._endpoint_volumes()
        volumes = []
        for raw in raw_volumes:
            if not isinstance(raw, dict):
                continue
            volume, _ = read_tolerantly(_RawVolume, raw)
            if not volume.id:
                continue
            attached: bool | None = volume.id in used
            if not attached and endpoint_volumes is not None:
                attached = volume.id in endpoint_volumes
            elif not attached:
                attached = None
            volumes.append(
                Volume(
                    provider=NAME,
                    account=self.account,
                    id=volume.id,
                    name=volume.name or "",
                    size_gb=volume.size,
                    attached=attached,
                    cost_per_month=finite(network_volume_cost_per_month(volume.size)),
                )
            )
        return volumes

    async def _endpoint_volumes(self) -> set[str] | None:
        try:
            reply = await self.http.request("GET", f"{self.base_url}/serverless")
            if reply.status != 200:
                raise self.http.failure(reply, "listing serverless endpoints")
            endpoints = json_object(self.http, reply, "listing serverless endpoints").get(
                "endpoints"
            )
        except ProviderError as exc:
            log.event("provider_warning", provider=NAME, account=self.account, message=exc.message)
            return None
        if not isinstance(endpoints, list):
            return None
        names: set[str] = set()
        for raw in endpoints:
            if isinstance(raw, dict):
                endpoint, _ = read_tolerantly(_RawEndpoint, raw)
                names.update(endpoint.networkVolumes or [])
        return names
