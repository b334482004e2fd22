"""The one retrying request layer under every provider client.

Why one layer: the providers fail in the same ways (429 storms, 5xx, dropped connections,
hung calls) and the reaper must treat them the same way everywhere: a timeout on every call,
capped exponential backoff with jitter, `Retry-After` honoured when a provider sends it (not
every one does), rate-limit headers that say the quota is spent obeyed before the
429 comes (`reaper.providers.pacing`), and an adaptive concurrency limit per client that halves
on a 429 and grows back on successes, so that a burst of terminations slows itself down
instead of hammering an API that is already saying "too many".

Bounded whatever the provider sends: every attempt has a total deadline (connect, headers and
the whole body: a provider that trickles a byte every few seconds never resets it, as it would
a per-read timeout) and its body is read streaming and given up at a size cap (a 500 MB answer
or an endless stream never reaches memory). Over the cap is an error for the account at once
(a provider that sent too much will again); a deadline passed is retried like a timeout.

DELETE is retried like the reads: both providers' deletes are idempotent (a repeat of one that
did go through answers 404 `not_found`), and the reap pass confirms by re-listing anyway.

The account key travels only in the `Authorization: Bearer` header. It is never put in a URL,
and every message this layer builds is scrubbed of it before it reaches an exception or a log.
"""

from __future__ import annotations

import asyncio
import functools
import json
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit

import httpx

from reaper import USER_AGENT, log
from reaper.capped import byte_size, read_capped
from reaper.core.models import Instance, ProviderName
from reaper.providers.base import HttpOptions, ProviderError, StaleReading, error_text
from reaper.providers.pacing import pacing_wait
from reaper.providers.parsing import clean_text
from reaper.settings.parse import Account

RETRYABLE_STATUSES = frozenset({429, 500, 502, 503, 504})
_SUMMARY_LIMIT = 200


class AdaptiveLimit:
    """An AIMD concurrency limit: halve on a 429, add one per `limit` successes.

    A provider may publish per-endpoint thresholds in an unstated unit and no `Retry-After`, so
    rather than pre-throttle to a guess the client starts at `maximum` and lets the provider's 429s
    teach it the pace; successes bring it back. `lowest` records how far it fell, for tests and
    the benchmark.
    """

    def __init__(self, maximum: int, minimum: int) -> None:
        self.maximum = maximum
        self.minimum = minimum
        self.limit = float(maximum)
        self.lowest = float(maximum)
        self.in_flight = 0
        self._changed: asyncio.Condition | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _condition(self) -> asyncio.Condition:
        # Made on first use in each event loop: a condition is bound to the loop it first waited
        # in, and a caller may run passes in successive `asyncio.run()` calls.
        loop = asyncio.get_running_loop()
        if self._changed is None or self._loop is not loop:
            self._changed, self._loop, self.in_flight = asyncio.Condition(), loop, 0
        return self._changed

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        changed = self._condition()
        async with changed:
            await changed.wait_for(lambda: self.in_flight < int(self.limit))
            self.in_flight += 1
        try:
            yield
        finally:
            async with changed:
                self.in_flight -= 1
                changed.notify_all()

    def succeeded(self) -> None:
        self.limit = min(float(self.maximum), self.limit + 1.0 / self.limit)

    def throttled(self) -> None:
        self.limit = max(float(self.minimum), self.limit / 2)
        self.lowest = min(self.lowest, self.limit)


@dataclass
class CallStats:
    """What the layer did, for tests, logs and the benchmark."""

    attempts: int = 0
    retries: int = 0
    throttled: int = 0
    delays: list[float] = field(default_factory=list)
    # Waits the rate-limit headers asked for before a request went out.
    paced: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class Reply:
    """A final (non-retried) HTTP answer, handed to the client to interpret."""

    method: str
    path: str
    status: int
    headers: httpx.Headers
    body: bytes

    def json(self) -> Any:
        """The parsed body; ValueError when it is not JSON."""
        return json.loads(self.body)


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """`Retry-After` as seconds: delta-seconds or an HTTP date (RFC 9110); junk is None."""
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    try:
        seconds = float(text)
    except ValueError:
        try:
            moment = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        seconds = (moment - (now or datetime.now(UTC))).total_seconds()
    if seconds != seconds:  # NaN
        return None
    return max(0.0, seconds)


def summarise_error(body: bytes) -> str:
    """A one-line reason from an error body, whichever provider shape it has, uncut: the
    provider's error code, if any, then the most specific words present.

    The shapes seen: RFC 9457 problems `{title, status, detail, errors[]}`, which live answers
    send without `title` or with `detail` alone (a public client's tests); `errors[]` (strings,
    or GraphQL's `{message}` objects) names each failure, `detail` this occurrence, `title` only
    the kind of problem: the first of those present is the reason. Others send
    `{success, error, msg}`, sometimes without `success` or `error`, with `message` or `detail`
    instead, or plain text ("API requests too frequent", a provider's rate-limit docs). It is not
    shortened here: a key the provider echoes must be scrubbed whole first
    (`Requester.reason`), or a cut through the key would leave its prefix unmatched.
    """
    text = body.decode("utf-8", "replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        code, listed = data.get("error"), data.get("errors")
        failures = listed if isinstance(listed, list) else []
        tiers = [
            [f.get("message") or f.get("detail") if isinstance(f, dict) else f for f in failures],
            [data.get(k) for k in ("detail", "msg", "message")],
            [data.get("title")],
        ]
        parts = [code] if isinstance(code, str) and code.strip() else []
        for tier in tiers:
            words = dict.fromkeys(w.strip() for w in tier if isinstance(w, str) and w.strip())
            if words:
                parts.append("; ".join(words))
                break
        if parts:
            text = ": ".join(parts)
    return " ".join(text.split())


@functools.cache
def tls_context() -> ssl.SSLContext:
    """One verified TLS context per process: building one loads the CA bundle (tens of ms),
    and every client of every account would otherwise pay that again."""
    return httpx.create_ssl_context()


class Requester:
    """One account's HTTP session: auth header, timeouts, retries, adaptive concurrency."""

    def __init__(
        self,
        provider: ProviderName,
        account: Account,
        options: HttpOptions,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.provider = provider
        self.account = account.name
        self.options = options
        self.limit = AdaptiveLimit(options.max_concurrency, options.min_concurrency)
        self.stats = CallStats()
        # The provider's clock, from the `Date` header of its latest answer.
        self.server_date: datetime | None = None
        # A monotonic instant before which no request goes out (a spent rate-limit window).
        self._resume_at = 0.0
        self._key = account.key
        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(options.timeout),
            transport=transport,
            headers={
                "Authorization": f"Bearer {account.key}",
                "Accept": "application/json",
                "User-Agent": USER_AGENT,
            },
            limits=httpx.Limits(max_connections=max(options.max_concurrency, 1) * 2),
            follow_redirects=False,
            verify=tls_context(),
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    def error(self, message: str, status: int | None = None) -> ProviderError:
        """A ProviderError for this account, scrubbed of the key whatever the message holds,
        and valid text whatever the provider's error body held."""
        return ProviderError(
            self.provider, self.account, self.scrub(clean_text(message)), status=status
        )

    def check_count(self, what: str, found: int, total: int, noun: str, field: str) -> None:
        """ProviderError unless the distinct entries a paged listing found are the server's own
        count (`field`): a listing that lost or gained entries while its pages were read cannot
        be trusted, whatever each page said."""
        if found != total:
            raise self.error(
                f"{what}: {found} distinct {noun} listed but the server counts {total}"
                f" (`{field}`), so the listing cannot be trusted"
            )

    def scrub(self, text: str) -> str:
        return log.redact(text.replace(self._key, log.REDACTED)) if self._key else text

    def reason(self, body: bytes) -> str:
        """The error body's reason, scrubbed and only then cut to a line's length."""
        return self.scrub(clean_text(summarise_error(body)))[:_SUMMARY_LIMIT]

    def failure(self, reply: Reply, what: str) -> ProviderError:
        """The error for an answer the caller did not expect."""
        reason = self.reason(reply.body)
        detail = f" ({reason})" if reason else ""
        refused = reply.status if 400 <= reply.status < 500 else None
        return self.error(
            f"{what}: {reply.method} {reply.path} answered HTTP {reply.status}{detail}",
            status=refused,
        )

    async def request(
        self,
        method: str,
        url: str,
        *,
        params: Mapping[str, str] | None = None,
        json_body: Any = None,
        not_after: float | None = None,
        before_send: Callable[[], None] | None = None,
    ) -> Reply:
        """Send until a non-retryable answer arrives; ProviderError once attempts run out.

        4xx answers other than 429 are returned, not raised: only the client knows whether a
        404 means "gone" (for some, only an `error` field says so). `not_after` (a
        monotonic instant) is checked right before each attempt goes out, after any wait for a
        concurrency slot, a backoff or the provider's rate limit: past it, `StaleReading` is
        raised and nothing is sent. `before_send` runs once, right before the first attempt
        actually goes out (the reap pass writes its audit record there, so a delete that was
        never sent leaves none). An answer over `max_body` is a ProviderError at once.
        """
        path = urlsplit(url).path
        last_problem = ""
        for attempt in range(1, self.options.max_attempts + 1):
            self.stats.attempts += 1
            retry_after: float | None = None
            try:
                async with self.limit.slot():
                    await self._paced()
                    if not_after is not None and time.monotonic() > not_after:
                        raise StaleReading(
                            self.provider,
                            self.account,
                            f"{method} {path} not sent: the reading it was decided on is too old",
                        )
                    if before_send is not None:
                        before_send()
                        before_send = None
                    reply = await self._attempt(method, url, path, params, json_body)
            except TimeoutError:
                last_problem = f"did not finish in {self.options.deadline:g} s"
            except httpx.TimeoutException:
                last_problem = f"timed out after {self.options.timeout:g}s"
            except httpx.TransportError as exc:
                last_problem = f"connection failed ({exc.__class__.__name__})"
            else:
                self._note_date(reply.headers.get("Date"))
                self._note_pacing(reply.headers)
                if reply.status not in RETRYABLE_STATUSES:
                    self.limit.succeeded()
                    return reply
                if reply.status == 429:
                    self.stats.throttled += 1
                    self.limit.throttled()
                retry_after = parse_retry_after(reply.headers.get("Retry-After"))
                reason = self.reason(reply.body)
                last_problem = f"HTTP {reply.status}" + (f" ({reason})" if reason else "")
            if attempt == self.options.max_attempts:
                break
            delay = self._delay(attempt, retry_after)
            self.stats.retries += 1
            self.stats.delays.append(delay)
            log.event(
                "provider_retry",
                provider=self.provider,
                account=self.account,
                method=method,
                path=path,
                problem=self.scrub(last_problem),
                attempt=attempt,
                delay_s=round(delay, 3),
                concurrency=int(self.limit.limit),
            )
            await asyncio.sleep(delay)
        raise self.error(
            f"{method} {path} failed after {self.options.max_attempts} attempts: {last_problem}"
        )

    async def _attempt(
        self,
        method: str,
        url: str,
        path: str,
        params: Mapping[str, str] | None,
        json_body: Any,
    ) -> Reply:
        """One request, its whole answer read within `deadline` (TimeoutError past it) and
        never more than `max_body` bytes of it (ProviderError)."""
        async with (
            asyncio.timeout(self.options.deadline),
            self._client.stream(method, url, params=params, json=json_body) as response,
        ):
            body = await read_capped(response, self.options.max_body)
        if body is None:
            raise self.error(
                f"{method} {path} answered more than {byte_size(self.options.max_body)}"
            )
        return Reply(method, path, response.status_code, response.headers, body)

    async def _paced(self) -> None:
        """Wait out a rate-limit window an earlier answer said was spent."""
        wait = self._resume_at - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)

    def _note_pacing(self, headers: httpx.Headers) -> None:
        """A spent window in the answer's rate-limit headers holds this account's next requests
        until it resets (capped like `Retry-After`); unreadable headers change nothing."""
        now = self.server_date.timestamp() if self.server_date is not None else time.time()
        wait = pacing_wait(headers, now)
        if wait is None or wait <= 0:
            return
        wait = min(wait, self.options.retry_after_cap)
        resume_at = time.monotonic() + wait
        if resume_at <= self._resume_at:
            return
        self._resume_at = resume_at
        self.stats.paced.append(wait)
        log.event(
            "provider_pacing",
            provider=self.provider,
            account=self.account,
            wait_s=round(wait, 3),
            reason="the rate-limit headers say the quota is spent",
        )

    def _note_date(self, value: str | None) -> None:
        if not value:
            return
        try:
            moment = parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return
        if moment.tzinfo is not None:
            self.server_date = moment.astimezone(UTC)

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        delay = self.options.backoff(attempt)
        if retry_after is not None:
            delay = max(delay, min(retry_after, self.options.retry_after_cap))
        return delay


def json_object(requester: Requester, reply: Reply, what: str) -> dict[str, Any]:
    """The reply's body as a JSON object, or ProviderError: an envelope we cannot read is an
    error for the account, never an empty fleet."""
    try:
        data = reply.json()
    except ValueError:
        raise requester.error(
            f"{what}: {reply.method} {reply.path} answered HTTP {reply.status} with a body that "
            "is not JSON"
        ) from None
    if not isinstance(data, dict):
        raise requester.error(f"{what}: {reply.method} {reply.path} answered a non-object")
    return data


async def read_each(
    requester: Requester,
    lookup: Callable[[str], Awaitable[Instance | None]],
    instance_ids: Collection[str],
) -> dict[str, Instance | None]:
    """A fresh reading by each instance's own endpoint, concurrently (the requester's limit
    paces them). A read that fails leaves its id out (it is then not deleted); ProviderError
    when every read failed, so "nothing could be read" is never "nothing is there"."""
    ids = sorted(set(instance_ids))
    results = await asyncio.gather(*(lookup(i) for i in ids), return_exceptions=True)
    found: dict[str, Instance | None] = {}
    for instance_id, result in zip(ids, results, strict=True):
        if isinstance(result, BaseException):
            log.event(
                "provider_warning",
                provider=requester.provider,
                account=requester.account,
                message=error_text(result),
            )
            continue
        found[instance_id] = result
    if ids and not found:
        raise requester.error("reading the instances about to be deleted: every read failed")
    return found
