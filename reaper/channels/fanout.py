"""One notifier over every configured channel, each delivered on its own.

The point of two channels is that one of them being down (a chat service blocked, a self-hosted
push server asleep) must not cost the other its message; so every channel runs concurrently under
its own deadline, and whatever goes wrong becomes a failed `Delivery`, never an exception in the
reap pass or the watcher that called `send`.

Retries, backoff and timeouts live here once; a channel only says how to turn an `Alert` into
requests and how to read its server's answers (`Verdict`). Every attempt is bounded in total
(`ChannelOptions.timeout` covers connect, headers and the whole answer, so a server trickling
bytes cannot hold it) and its answer is read no further than `ANSWER_CAP`: a channel's server
is a phone's relay, and what it answers is a few hundred bytes.
"""

from __future__ import annotations

import asyncio
import functools
import json
import ssl
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from reaper import USER_AGENT, log
from reaper.capped import byte_size, read_capped
from reaper.channels.base import (
    BODY_BUDGET,
    ActionSlots,
    Channel,
    ChannelOptions,
    ChannelRequest,
    Verdict,
)
from reaper.core.models import Alert, Delivery
from reaper.text import shown

if TYPE_CHECKING:
    import httpx

# The most of a channel server's answer that is read: a chat bot's echo of a 4096-character
# message is the largest real one, at some KB.
ANSWER_CAP = 256 * 1024


@dataclass
class _Outcome:
    ok: bool
    detail: str
    attempts: int = 0
    parts: int = 0


def scrub(text: str, secrets: Sequence[str]) -> str:
    """Remove secrets from text headed for a detail or a message, registered ones included."""
    for secret in sorted((s for s in secrets if s), key=len, reverse=True):
        text = text.replace(secret, log.REDACTED)
    return log.redact(text)


def _sanitise(alert: Alert, secrets: Sequence[str]) -> Alert:
    """An alert is output like a log line: no secret reaches a phone either, and its text is
    shown as text (`reaper.text.shown`: a lone surrogate, possible in JSON from a webhook, would
    make the HTTP client raise; a bidi override in a forwarded message would mirror it). Line
    feeds and tabs are kept: a forwarded message has lines."""
    return alert.model_copy(
        update={
            "title": scrub(shown(alert.title, lines=True), secrets),
            "body": scrub(shown(alert.body, lines=True), secrets),
        }
    )


def _json_or_none(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        return None


def _with_retry_after(verdict: Verdict, header: str | None) -> Verdict:
    """A retry the server timed with `Retry-After` (whole seconds; a chat service's 429 may say
    when only there) waits that long, unless the channel read a wait from the answer's body
    itself."""
    if verdict.kind != "retry" or verdict.retry_after is not None:
        return verdict
    if header is None or not header.strip().isdigit():
        return verdict
    return Verdict("retry", verdict.detail, float(header.strip()))


async def _post(
    client: httpx.AsyncClient,
    channel: Channel,
    request: ChannelRequest,
    options: ChannelOptions,
    cap: int,
) -> Verdict:
    """One attempt, its whole answer within `options.timeout` (TimeoutError past it)."""
    async with (
        asyncio.timeout(options.timeout),
        client.stream("POST", request.url, json=request.body, headers=request.headers) as response,
    ):
        body = await read_capped(response, cap)
    if body is None:
        return Verdict("fail", f"HTTP {response.status_code}: answered more than {byte_size(cap)}")
    verdict = channel.classify(response.status_code, _json_or_none(body))
    return _with_retry_after(verdict, response.headers.get("retry-after"))


async def _post_with_retries(
    client: httpx.AsyncClient,
    channel: Channel,
    request: ChannelRequest,
    options: ChannelOptions,
    outcome: _Outcome,
    cap: int,
) -> Verdict:
    """Send one request until it succeeds, fails for good, or runs out of attempts."""
    import httpx  # with the first delivery: a ping never pays for the HTTP client's import

    verdict = Verdict("fail", "not sent")
    limit = max(1, options.max_attempts)
    attempts = 0
    while attempts < limit:
        attempts += 1
        outcome.attempts += 1
        try:
            verdict = await _post(client, channel, request, options, cap)
        except (TimeoutError, httpx.TimeoutException):
            verdict = Verdict("retry", f"no answer within {options.timeout:g}s")
        except httpx.TransportError as exc:
            verdict = Verdict("retry", f"connection failed ({type(exc).__name__})")
        except httpx.HTTPError as exc:
            return Verdict("fail", f"request failed ({type(exc).__name__})")
        if verdict.kind != "retry":
            return verdict
        if verdict.retry_after is not None and verdict.retry_after > options.max_retry_after:
            detail = (
                f"{verdict.detail}: asked to wait {verdict.retry_after:g}s,"
                f" more than {options.max_retry_after:g}s"
            )
            return Verdict("fail", detail)
        if attempts < limit:
            wait = verdict.retry_after
            if wait is None:
                wait = options.backoff_base * 2 ** (attempts - 1)
            await options.sleep(wait)
    return Verdict("fail", f"{verdict.detail} (after {attempts} attempts)")


@functools.cache
def tls_context() -> ssl.SSLContext:
    """Loading the CA bundle costs ~100 ms of CPU; one context serves every client."""
    import httpx

    return httpx.create_ssl_context()


async def _deliver(
    channel: Channel, alert: Alert, options: ChannelOptions, outcome: _Outcome, cap: int
) -> None:
    """Fills `outcome` as it goes, so that a deadline cutting this short still reports what
    was tried."""
    import httpx

    requests = channel.requests(alert)
    outcome.parts = len(requests)
    async with httpx.AsyncClient(
        timeout=options.timeout,
        verify=tls_context(),
        follow_redirects=False,
        headers={"User-Agent": USER_AGENT},
    ) as client:
        for number, request in enumerate(requests, start=1):
            verdict = await _post_with_retries(client, channel, request, options, outcome, cap)
            if verdict.kind != "ok":
                where = f"part {number}/{len(requests)}: " if len(requests) > 1 else ""
                outcome.detail = where + verdict.detail
                return
    outcome.ok = True
    outcome.detail = f"sent in {len(requests)} parts" if len(requests) > 1 else "sent"


class FanoutNotifier:
    """Sends every alert through every channel at once; see the module docstring. `unheard`:
    the names of the channels no person reads (a plain webhook): a message delivered there is
    delivered, but not heard. `body_budget` and `actions`: what its channels can carry
    together (`reaper.channels.plugins`)."""

    def __init__(
        self,
        channels: Sequence[Channel],
        options: ChannelOptions | None = None,
        unheard: frozenset[str] = frozenset(),
        *,
        answer_cap: int = ANSWER_CAP,
        body_budget: int = BODY_BUDGET,
        actions: ActionSlots | None = None,
    ) -> None:
        self.channels = list(channels)
        self.options = options or ChannelOptions()
        self.unheard = unheard
        self.answer_cap = answer_cap
        self.body_budget = body_budget
        self.actions = actions or ActionSlots()

    async def send(self, alert: Alert) -> list[Delivery]:
        return list(await asyncio.gather(*(self._one(c, alert) for c in self.channels)))

    async def _one(self, channel: Channel, alert: Alert) -> Delivery:
        started = time.monotonic()
        outcome = _Outcome(ok=False, detail="")
        try:
            alert = _sanitise(alert, channel.secrets)
            async with asyncio.timeout(self.options.deadline):
                await _deliver(channel, alert, self.options, outcome, self.answer_cap)
        except TimeoutError:
            outcome.detail = f"gave up after {self.options.deadline:g}s (channel deadline)"
        except Exception as exc:
            # Never raise into the reap pass or the watcher: an alert that failed is logged and
            # reported, and the pass goes on.
            outcome.detail = f"internal error ({type(exc).__name__})"
        detail = scrub(outcome.detail, channel.secrets)
        log.event(
            "alert_delivery",
            channel=channel.name,
            result="ok" if outcome.ok else "failed",
            alert_event=alert.event,
            level=alert.level,
            title=alert.title,
            attempts=outcome.attempts,
            parts=outcome.parts,
            detail=detail,
            ms=round((time.monotonic() - started) * 1000),
        )
        heard = outcome.ok and channel.name not in self.unheard
        return Delivery(channel=channel.name, ok=outcome.ok, detail=detail, heard=heard)
