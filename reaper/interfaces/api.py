"""What every route of the HTTP API works with: the request and its answer, the process's
`App`, and the answers every route may give (404, 413, 429, plain text and JSON).

Apart from the route table (`reaper.interfaces.http`), so that the routes it imports by name
(`reaper.interfaces.routes`, `reaper.interfaces.web.routes`) never import it back.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from reaper import log
from reaper.channels.base import ActionSlots, ChannelOptions
from reaper.clock import Clock
from reaper.core.heartbeat import HOST_RULE
from reaper.interfaces.ratelimit import Rate, TokenBuckets, retry_after
from reaper.passes.ping import prune_retired
from reaper.settings.model import Settings
from reaper.store.failure import StoreHealth
from reaper.store.ports import Store

if TYPE_CHECKING:
    from reaper.channels.base import Notifier
    from reaper.core.models import Alert, Delivery
    from reaper.providers.base import HttpOptions

# A ping body up to this is kept whole as the monitor's last message; longer is cut to it.
MESSAGE_LIMIT = 10 * 1024
# Any body over this answers 413; adapters stop reading one byte past it.
MAX_BODY = 1024 * 1024
# The alert channels of a request (/alert, and the alert of a /fail ping) on Lambda and under
# `reaper serve` alike: at most 4 s, under the kit's 5 s curl timeout so that the instance
# hears the real answer, and well under the HTTP function's 10 s (serverless.yml), where a
# request still running is killed and its answer lost. The schedules keep the patient
# defaults: nobody waits on them.
REQUEST_CHANNEL_OPTIONS = ChannelOptions(
    timeout=1.5, max_attempts=2, backoff_base=0.5, max_retry_after=1.0, deadline=4.0
)
# The request's own bound on the channels, whatever notifier the App was given: a backstop
# above REQUEST_CHANNEL_OPTIONS.deadline (which keeps the result per channel) and below the
# Lambda's 10 s, cold start included.
REQUEST_SEND_BUDGET = 6.0


@dataclass(frozen=True)
class Request:
    """`headers` have lower-case names; `body` holds at most MAX_BODY + 1 bytes (an adapter
    stops reading there, which is enough to know the body is too large)."""

    method: str
    path: str
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    client: str = "unknown"
    # The raw query string (without `?`), e.g. "status=down&msg=disk%20full".
    query: str = ""


@dataclass(frozen=True)
class Response:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Limits:
    """The in-memory rate limits of the API (token buckets).

    per_client: requests answered 404 or 401 (no key, a wrong key, an unknown route), by
        client address — bounds a stranger's flood without touching keyed pings.
    per_host: pings per monitor host — one leaked key cannot hog the store for one host.
    alerts: /alert overall — bounds what reaches the phone (and the channels' own limits).
    """

    per_client: Rate = field(default_factory=lambda: Rate(capacity=120, per_second=20))
    per_host: Rate = field(default_factory=lambda: Rate(capacity=30, per_second=0.5))
    alerts: Rate = field(default_factory=lambda: Rate(capacity=30, per_second=0.5))


class App:
    """Everything a request may need, built once per process."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        notifier: Notifier,
        clock: Clock,
        *,
        channels: Sequence[str] = (),
        limits: Limits | None = None,
        send_budget: float = REQUEST_SEND_BUDGET,
    ) -> None:
        self.settings = settings
        self.store = store
        # The store's failure episode as this process's requests (and passes) saw it.
        self.health = StoreHealth()
        # The configured alert channels; none -> /alert answers 503.
        self.channels = tuple(channels)
        self.notifier: Notifier = _Budgeted(notifier, self.channels, send_budget)
        self.clock = clock
        self.limits = limits or Limits()
        self.per_client = TokenBuckets(self.limits.per_client, clock)
        self.per_host = TokenBuckets(self.limits.per_host, clock)
        self.alerts = TokenBuckets(self.limits.alerts, clock, max_keys=1)
        # Retirements by `bye` since this process last pruned retired monitors: see
        # `note_retired`.
        self._retired_unpruned = 0
        # The provider clients' options for a "terminate now" from the phone (None: the
        # request-sized default); tests make them fast.
        self.act_http: HttpOptions | None = None
        # The ping key is in every ping path: make sure no log line can carry it.
        log.register_secrets(settings.secrets())

    def note_retired(self) -> None:
        """A `bye` retired a monitor. Every tenth of REAPER_MAX_MONITORS of them, prune the
        retired monitors right here rather than wait for the watch pass: a ping + bye flood
        with a leaked key then adds at most that many per process between two prunes, and a
        prune (on DynamoDB one read of every monitor) is paid once per many byes."""
        self._retired_unpruned += 1
        if self._retired_unpruned >= max(1, self.settings.max_monitors // 10):
            self._retired_unpruned = 0
            prune_retired(self.settings, self.store, self.clock.now())


class _Budgeted:
    """A notifier that gives up after `budget` seconds: a request must be answered before
    the platform kills it (Lambda) or the client gives up. What did not answer in time counts
    as failed, so that /alert answers 502 and a retry is sent again."""

    def __init__(self, inner: Notifier, channels: Sequence[str], budget: float) -> None:
        self._inner = inner
        self._channels = tuple(channels) or ("all",)
        self._budget = budget

    @property
    def body_budget(self) -> int:
        return self._inner.body_budget

    @property
    def actions(self) -> ActionSlots:
        return self._inner.actions

    async def send(self, alert: Alert) -> list[Delivery]:
        import asyncio

        from reaper.core.models import Delivery

        try:
            async with asyncio.timeout(self._budget):
                return await self._inner.send(alert)
        except TimeoutError:
            detail = f"no answer within {self._budget:g}s (the request's budget)"
            log.event("alert_delivery", result="failed", alert_event=alert.event, detail=detail)
            return [Delivery(channel=name, ok=False, detail=detail) for name in self._channels]


# --- answers ------------------------------------------------------------------------------


def text_response(status: int, line: str, headers: dict[str, str] | None = None) -> Response:
    return Response(
        status,
        (line + "\n").encode(),
        {"content-type": "text/plain; charset=utf-8", **(headers or {})},
    )


def json_response(status: int, data: dict[str, Any]) -> Response:
    return Response(
        status,
        json.dumps(data, ensure_ascii=False).encode(),
        {"content-type": "application/json"},
    )


# One constant: a wrong key must be byte-for-byte the unknown route.
NOT_FOUND = text_response(404, "Not Found")


def too_large(limit: int) -> Response:
    return text_response(413, f"request body too large (limit {limit // 1024} KB)")


def rate_limited(wait: float, what: str) -> Response:
    return text_response(
        429, f"too many requests ({what}); retry later", {"retry-after": retry_after(wait)}
    )


INVALID_HOST = f"invalid host: {HOST_RULE}"


Params = dict[str, str]
# What a route answers: its Response at once, or an awaitable of it when it must wait.
Answer = Response | Awaitable[Response]
RouteHandler = Callable[[Request, App, Params], Answer]
