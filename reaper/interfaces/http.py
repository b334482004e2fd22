"""The one request-handling core of the HTTP API, for `reaper serve` and the Lambda adapter.

Both adapters turn their request into a `Request` and call `handle`; every rule of the
contract lives here once. The rules that matter most come from the threat model: a wrong key
answers exactly like an unknown route (a stranger learns nothing, not even that /ping exists),
bodies and rates are capped before anything touches the store, and no request ever gets a 500
for what it sent — only a genuine bug does, with a generic body and a log line without the key.
"""

from __future__ import annotations

import asyncio
import codecs
import hmac
import json
import traceback
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import parse_qs

from reaper import log
from reaper.channels.base import ChannelOptions, Notifier
from reaper.clock import Clock
from reaper.config import Settings
from reaper.core import messages
from reaper.core.heartbeat import Ping, PingKind, valid_host
from reaper.core.models import Alert, AlertLevel, Delivery
from reaper.core.monitors import BadSetting, parse_change
from reaper.interfaces.ratelimit import Rate, TokenBuckets, retry_after
from reaper.interfaces.views import (
    RECENT_ACTIONS,
    fleet_view_json,
    monitor_detail_json,
    recent_actions,
    status_json,
)
from reaper.interfaces.web import routes as web
from reaper.interfaces.web.readmodel import read_view
from reaper.passes import correlate
from reaper.passes.monitors import Asker, change_monitor, delete_monitor
from reaper.passes.ping import UNDELIVERED_ALERT, prune_retired, record_ping
from reaper.store.base import Store

if TYPE_CHECKING:
    from reaper.passes.act import ActContext
    from reaper.providers.http import HttpOptions

# A ping body up to this is kept whole as the monitor's last message; longer is cut to it.
MESSAGE_LIMIT = 10 * 1024
# Any body over this answers 413; adapters stop reading one byte past it.
MAX_BODY = 1024 * 1024
# The /alert body limit.
ALERT_LIMIT = 16 * 1024
# A repeated identical /alert within this window is answered as deduplicated.
ALERT_DEDUP_WINDOW = timedelta(minutes=1)
_LEVELS: tuple[AlertLevel, ...] = ("info", "warning", "critical")

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
# Longer than any request lives (Lambda: 10 s): a send still marked as running after this
# was killed before it could say how it went.
_SEND_LIFETIME = timedelta(seconds=15)


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
    alerts: /alert overall — bounds what reaches the phone (and Telegram's own limits).
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

    async def send(self, alert: Alert) -> list[Delivery]:
        try:
            async with asyncio.timeout(self._budget):
                return await self._inner.send(alert)
        except TimeoutError:
            detail = f"no answer within {self._budget:g}s (the request's budget)"
            log.event("alert_delivery", result="failed", alert_event=alert.event, detail=detail)
            return [Delivery(channel=name, ok=False, detail=detail) for name in self._channels]


# --- answers ------------------------------------------------------------------------------


def _text(status: int, line: str, headers: dict[str, str] | None = None) -> Response:
    return Response(
        status,
        (line + "\n").encode(),
        {"content-type": "text/plain; charset=utf-8", **(headers or {})},
    )


def _json(status: int, data: dict[str, Any]) -> Response:
    return Response(
        status,
        json.dumps(data, ensure_ascii=False).encode(),
        {"content-type": "application/json"},
    )


# One constant: a wrong key must be byte-for-byte the unknown route.
NOT_FOUND = _text(404, "Not Found")


def _method_not_allowed(allowed: str) -> Response:
    return _text(405, "Method Not Allowed", {"allow": allowed})


def _too_large(limit: int) -> Response:
    return _text(413, f"request body too large (limit {limit // 1024} KB)")


def _rate_limited(wait: float, what: str) -> Response:
    return _text(
        429, f"too many requests ({what}); retry later", {"retry-after": retry_after(wait)}
    )


# --- keys and routes ----------------------------------------------------------------------


def _same(given: str, expected: str | None) -> bool:
    """Constant-time comparison; an unset key matches nothing."""
    if not expected:
        return False
    return hmac.compare_digest(
        given.encode("utf-8", "surrogatepass"), expected.encode("utf-8", "surrogatepass")
    )


def redact_path(path: str) -> str:
    """The path as it may appear in a log: key segment as ***, control characters escaped,
    any registered secret scrubbed (a key sent in the wrong place), then cut to 200
    characters. Scrubbing comes first: a cut through a key would leave its start, which no
    longer matches the secret, in the log."""
    parts = path.split("/")
    if len(parts) > 2 and parts[1] in ("ping", "alert", "login", "act", "telegram"):
        parts[2] = "***"
    cleaned = "".join(c if c.isprintable() else "?" for c in "/".join(parts))
    return log.redact(cleaned)[:200]


def _exit_status(suffix: str) -> int | None:
    if suffix.isascii() and suffix.isdigit() and len(suffix) <= 3 and int(suffix) <= 255:
        return int(suffix)
    return None


_SUFFIX_KINDS: dict[str, PingKind] = {
    "start": "start",
    "fail": "fail",
    "bye": "bye",
    "log": "log",
}


def _ping_kind(suffix: str | None) -> tuple[PingKind, int | None] | None:
    """None for a suffix that is not a route."""
    if suffix is None:
        return "ping", None
    if suffix in _SUFFIX_KINDS:
        return _SUFFIX_KINDS[suffix], None
    status = _exit_status(suffix)
    return None if status is None else ("exit", status)


def _message(body: bytes) -> str:
    """Up to MESSAGE_LIMIT bytes as text; a character cut in half at the limit is dropped."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    return decoder.decode(body[:MESSAGE_LIMIT], final=len(body) <= MESSAGE_LIMIT)


# --- routes -------------------------------------------------------------------------------


_INVALID_HOST = "invalid host: expected 1-100 of A-Z a-z 0-9 . _ - (not . or ..)"


class BadQuery(ValueError):
    """One line saying what is wrong with a ping's query string."""


def push_query(query: str, suffix: str | None) -> tuple[PingKind | None, str | None]:
    """The push conventions other monitors' clients bring (Uptime Kuma's push URL):
    `?status=up` is a success and `?status=down` a failure of the plain ping; `?msg=` is the
    message when there is no body, on every ping route. Other parameters (Uptime Kuma's
    `ping=`) are ignored. Returns the kind `status` asks for (None: as the route says) and
    the message."""
    try:
        values = parse_qs(query, keep_blank_values=True, strict_parsing=False, max_num_fields=20)
    except ValueError:
        raise BadQuery("bad query string: at most 20 parameters") from None
    for name in ("status", "msg"):
        if len(values.get(name, [])) > 1:
            raise BadQuery(f"{name}= given more than once")
    message = values["msg"][0] if "msg" in values else None
    if "status" not in values:
        return None, message
    status = values["status"][0].strip().lower()
    if suffix is not None:
        raise BadQuery(f"status= goes with /ping/<key>/<host> only, not with /{suffix}")
    if status == "up":
        return "ping", message
    if status == "down":
        return "fail", message
    raise BadQuery('status= expected "up" or "down"')


async def _ping(request: Request, app: App, params: Params) -> Response:
    host, suffix = params["host"], params.get("suffix")
    route = _ping_kind(suffix)
    assert route is not None  # the route table matched only a valid suffix
    if not valid_host(host):
        return _text(400, _INVALID_HOST)
    if len(request.body) > MAX_BODY:
        return _too_large(MAX_BODY)
    try:
        asked, query_message = push_query(request.query, suffix)
    except BadQuery as exc:
        return _text(400, str(exc))
    wait = app.per_host.take(host)
    if wait:
        return _rate_limited(wait, "this host")
    kind, exit_status = route
    kind = asked or kind
    message = _message(request.body) if request.method == "POST" and request.body else None
    if message is None and query_message is not None:
        message = _message(query_message.encode("utf-8", "surrogatepass"))
    ping = Ping(
        host=host, kind=kind, exit_status=exit_status, message=message, client=request.client
    )
    outcome = await record_ping(app.settings, app.store, app.notifier, app.clock, ping)
    if not outcome.accepted:
        return _text(404 if outcome.missing else 403, outcome.reason)
    if outcome.monitor is not None and outcome.monitor.status == "retired":
        app.note_retired()
    return _text(200, "OK")


class BadAlert(ValueError):
    """One line saying what is wrong with an /alert body."""


def _str_field(data: dict[str, Any], name: str, required: bool) -> str:
    value = data.get(name)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise BadAlert(f'"{name}" must be a non-empty string')
    return value


def _from_json(data: object) -> Alert:
    if not isinstance(data, dict):
        raise BadAlert('expected a JSON object like {"text": "..."}')
    level = data.get("level", "warning")
    if level not in _LEVELS:
        raise BadAlert('"level" must be "info", "warning" or "critical"')
    if "text" in data and "title" in data:
        raise BadAlert('send "text", or "title" and "body", not both')
    if "title" in data:
        title, body = _str_field(data, "title", True), _str_field(data, "body", False)
        return messages.webhook(title=title, body=body, level=level)
    if "text" not in data:
        raise BadAlert('expected "text", or "title" and "body"')
    return messages.webhook(_str_field(data, "text", True), level=level)


def parse_alert(request: Request) -> Alert:
    """An /alert body as an `Alert`: JSON (also when sent as curl's default form type, since
    scripts often forget the header) or plain text."""
    try:
        text = request.body.decode("utf-8")
    except UnicodeDecodeError:
        raise BadAlert("the body is not valid UTF-8") from None
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    as_json = "json" in content_type or (
        content_type != "text/plain" and text.lstrip().startswith("{")
    )
    if not as_json:
        if not text.strip():
            raise BadAlert("the alert text is empty")
        return messages.webhook(text)
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: a body of 16 KB of "[[[["
        raise BadAlert("the body is not valid JSON") from None
    return _from_json(data)


async def _alert(request: Request, app: App, params: Params) -> Response:
    if len(request.body) > ALERT_LIMIT:
        return _too_large(ALERT_LIMIT)
    try:
        alert = parse_alert(request)
    except ValueError as exc:  # BadAlert, or webhook() finding nothing to send
        return _text(400, str(exc))
    if not app.channels:
        return _text(503, f"no alert channel is configured (set {app.settings.channel_hint})")
    wait = app.alerts.take("all")
    if wait:
        return _rate_limited(wait, "alerts")
    # webhook() keys the alert by a hash of its level, title and body.
    key = alert.dedup_key
    now = app.clock.now()
    host = correlate.notify_host(alert, app.store)
    if host is not None and correlate.failure_alerted_just_now(app.store, host, now):
        # The monitor's failure alert said it a moment ago: one alert per failure.
        log.event("alert_delivery", result="skipped", alert_event=alert.event, host=host)
        return _json(200, {"deduplicated": True, "already_alerted": f"{host} failed"})
    if not _take_alert(app, key, now):
        return _json(200, {"deduplicated": True})
    deliveries = await app.notifier.send(alert)
    results = [
        {"channel": d.channel, "ok": d.ok, "detail": log.redact(d.detail)} for d in deliveries
    ]
    delivered = any(d.ok for d in deliveries)
    mark = UNDELIVERED_ALERT + key
    if delivered and host is not None:
        correlate.notified(app.store, host, app.clock.now())
    if delivered:
        app.store.close_episode(mark)
    else:
        app.store.mark_episode_alerted(mark, app.clock.now())  # "alerted" here: failed at
    return _json(200 if delivered else 502, {"delivered": delivered, "channels": results})


def _take_alert(app: App, key: str, now: datetime) -> bool:
    """True if this request is the one to send the alert; False for a duplicate.

    The claim in the store makes a repeat within a minute a duplicate, and a claim cannot be
    undone; so while it is sent the alert also carries a mark in the store (an episode): open
    while sending, closed once a channel took it, stamped when every channel failed. A repeat
    that finds the mark of a failed send — or of a send older than any request lives, killed
    before it could say how it went (Lambda's timeout) — takes it over and sends again; only
    one repeat can take it. A repeat while the first is still being sent is a duplicate.
    """
    mark = UNDELIVERED_ALERT + key
    if app.store.claim_alert(key, now, ALERT_DEDUP_WINDOW):
        app.store.close_episode(mark)  # a mark left from an earlier window says nothing now
    elif not _take_failed(app, mark, now):
        return False
    app.store.open_episode(mark, now)
    return True


def _take_failed(app: App, mark: str, now: datetime) -> bool:
    for episode in app.store.open_episodes(mark):
        if episode.key == mark:
            sending = episode.alerted_at is None and now - episode.opened_at < _SEND_LIFETIME
            return not sending and app.store.close_episode(mark) is not None
    return False


async def _status(request: Request, app: App, params: Params) -> Response:
    store, now = app.store, app.clock.now()
    data = status_json(
        app.settings,
        store.list_monitors(),
        store.last_reap(),
        store.history(),
        now,
        store.listings(),
        actions=recent_actions(store.action_log(since=now - RECENT_ACTIONS)),
    )
    # The status page's data by name (names, costs, deadlines, runway, snapshots).
    data |= fleet_view_json(read_view(store, app.settings, now))
    return _json(200, data)


async def _healthz(request: Request, app: App, params: Params) -> Response:
    return _json(200, {"ok": True})


# --- actions from the phone ---------------------------------------------------------------


def act_context(app: App) -> ActContext:
    """What an action from the phone needs, from the process's App."""
    from reaper.passes.act import ActContext

    return ActContext(app.settings, app.store, app.notifier, app.clock, http=app.act_http)


async def _act(request: Request, app: App, params: Params) -> Response:
    """`/act/<token>`: the page (GET) and the action (POST); see `reaper.interfaces.web.act`."""
    from reaper.interfaces.web.act import answer_act

    page = await answer_act(
        request.method, params["token"], request.headers, request.body, act_context(app)
    )
    return Response(page.status, page.body, page.headers)


async def _telegram(request: Request, app: App, params: Params) -> Response:
    """`POST /telegram/<secret>`: a Telegram update (its secrets checked by the route key)."""
    from reaper.interfaces.presses import answer_webhook

    if len(request.body) > MAX_BODY:
        return _too_large(MAX_BODY)
    status, line = await answer_webhook(request.body, act_context(app))
    return _text(status, line)


def _webhook_secret(app: App) -> str | None:
    from reaper.channels.telegram import TelegramSettings

    telegram = app.settings.channel("telegram")
    return telegram.webhook_secret if isinstance(telegram, TelegramSettings) else None


# --- /monitors/<host>: one monitor, for the admin --------------------------------------------

# Who a change through the admin API is recorded as: whoever holds the admin key.
ADMIN_API = Asker(by="admin key", via="admin API")
# A PUT body is a handful of fields.
SETTINGS_LIMIT = 4 * 1024


async def _monitor(request: Request, app: App, params: Params) -> Response:
    """GET: the monitor and its ping log; PUT: its settings (created if missing); DELETE."""
    host = params["host"]
    if not valid_host(host):
        return _text(400, _INVALID_HOST)
    now = app.clock.now()
    if request.method == "PUT":
        return _put_monitor(request, app, host, now)
    if request.method == "DELETE":
        if not delete_monitor(app.store, host, at=now, asker=ADMIN_API):
            return _text(404, f"no monitor {host}")
        return _json(200, {"deleted": host})
    monitor = app.store.get_monitor(host)
    if monitor is None:
        return _text(404, f"no monitor {host}")
    events = app.store.monitor_log(host)
    return _json(200, monitor_detail_json(monitor, events, app.settings, now))


def _put_monitor(request: Request, app: App, host: str, now: datetime) -> Response:
    if len(request.body) > SETTINGS_LIMIT:
        return _too_large(SETTINGS_LIMIT)
    try:
        data = json.loads(request.body.decode("utf-8"))
        change = parse_change(data, now)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        # BadSetting, or a body that is not JSON at all.
        line = str(exc) if isinstance(exc, BadSetting) else "the body is not a JSON object"
        return _text(400, line)
    changed = change_monitor(app.settings, app.store, host, change, ADMIN_API)
    if changed.monitor is None:
        return _text(403, changed.refused)
    events = app.store.monitor_log(host)
    body = monitor_detail_json(changed.monitor, events, app.settings, now)
    return _json(200, {**body, "created": changed.created})


# Answers a request without the right key gets; only these spend the per-client budget.
_KEYLESS = frozenset({401, 404})

Params = dict[str, str]
RouteHandler = Callable[[Request, App, Params], Awaitable[Response]]
GET_HEAD = frozenset({"GET", "HEAD"})


@dataclass(frozen=True)
class Segment:
    """A path segment a route takes as a parameter: `name`, and `accepts` when only some
    values make it that route (any other is an unknown route)."""

    name: str
    accepts: Callable[[str], bool] = lambda _value: True


@dataclass(frozen=True)
class Route:
    """One line of the route table.

    `path`: literal words and `Segment`s. `key`: "ping" — the `key` segment must be
    REAPER_PING_KEY, else the answer is exactly the unknown route's, whatever the method;
    "admin" — `Authorization: Bearer <REAPER_ADMIN_KEY>` (unset → the unknown route; wrong →
    401); "telegram" — the `secret` segment and the `X-Telegram-Bot-Api-Secret-Token` header
    must both be TELEGRAM_WEBHOOK_SECRET (unset or wrong → the unknown route). Then the method
    (405 with `Allow`), then the handler.
    """

    path: tuple[str | Segment, ...]
    methods: frozenset[str]
    handler: RouteHandler
    key: Literal["ping", "admin", "telegram"] | None = None

    def match(self, parts: list[str]) -> Params | None:
        if len(parts) != len(self.path):
            return None
        params: Params = {}
        for part, want in zip(parts, self.path, strict=True):
            if isinstance(want, Segment):
                if not want.accepts(part):
                    return None
                params[want.name] = part
            elif part != want:
                return None
        return params


def _web(handler: Callable[[Request, App, Params], Awaitable[web.Answer | None]]) -> RouteHandler:
    """A status-page route in the table: its answer as a `Response`; None is the unknown
    route's answer, byte for byte (REAPER_ADMIN_KEY unset, a malformed link)."""

    async def route(request: Request, app: App, params: Params) -> Response:
        answer = await handler(request, app, params)
        if answer is None:
            return NOT_FOUND
        return Response(answer.status, answer.body, answer.headers)

    return route


KEY, HOST = Segment("key"), Segment("host")
TOKEN, SECRET = Segment("token"), Segment("secret")
SUFFIX = Segment("suffix", lambda suffix: _ping_kind(suffix) is not None)
PING_METHODS = frozenset({"GET", "POST", "HEAD"})

ROUTES: tuple[Route, ...] = (
    Route(("healthz",), GET_HEAD, _healthz),
    Route(("status",), GET_HEAD, _status, key="admin"),
    Route(("ping", KEY, HOST), PING_METHODS, _ping, key="ping"),
    Route(("ping", KEY, HOST, SUFFIX), PING_METHODS, _ping, key="ping"),
    Route(("alert", KEY), frozenset({"POST"}), _alert, key="ping"),
    Route(("monitors", HOST), frozenset({"GET", "HEAD", "PUT", "DELETE"}), _monitor, key="admin"),
    Route(("act", TOKEN), frozenset({"GET", "HEAD", "POST"}), _act),
    Route(("telegram", SECRET), frozenset({"POST"}), _telegram, key="telegram"),
    # --- the status page (reaper.interfaces.web): its own sessions, never a Bearer key ---
    Route(("",), GET_HEAD, _web(web.home)),
    Route(("login",), frozenset({"POST"}), _web(web.login)),
    Route(("login", Segment("token")), frozenset({"GET", "POST", "HEAD"}), _web(web.login_link)),
    Route(("logout",), frozenset({"POST"}), _web(web.logout)),
    Route(("keep",), frozenset({"POST"}), _web(web.keep)),
    Route(("unkeep",), frozenset({"POST"}), _web(web.unkeep)),
    Route(("pause",), frozenset({"POST"}), _web(web.pause)),
    Route(("resume",), frozenset({"POST"}), _web(web.resume)),
    Route(("mute",), frozenset({"POST"}), _web(web.mute)),
    Route(("unmute",), frozenset({"POST"}), _web(web.unmute)),
)


def _key_refusal(route: Route, request: Request, app: App, params: Params) -> Response | None:
    """The answer for a wrong key, or None when the key is right (or none is needed)."""
    if route.key == "ping":
        return None if _same(params["key"], app.settings.ping_key) else NOT_FOUND
    if route.key == "admin":
        expected = app.settings.admin_key
        if not expected:
            return NOT_FOUND
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not _same(token.strip(), expected):
            return _text(401, "unauthorized", {"www-authenticate": "Bearer"})
    if route.key == "telegram":
        secret = _webhook_secret(app)
        header = request.headers.get("x-telegram-bot-api-secret-token", "")
        if not (_same(params["secret"], secret) and _same(header, secret)):
            return NOT_FOUND
    return None


async def _route(request: Request, app: App) -> Response:
    """The answer, with the per-client limit applied to keyless requests only.

    Several instances share one address (a Vast host, a NAT): a stranger or a neighbour
    without the key must not spend the budget of the instances' keyed pings, which the
    per-host buckets limit already. The key check touches nothing, so answering first and
    charging after costs a flood nothing more than refusing it up front.
    """
    parts = request.path.split("/")[1:] if request.path.startswith("/") else []
    response = await _dispatch(request, app, parts)
    if response.status in _KEYLESS and parts != ["healthz"]:
        wait = app.per_client.take(request.client)
        if wait:
            return _rate_limited(wait, "this client")
    return response


async def _dispatch(request: Request, app: App, parts: list[str]) -> Response:
    for route in ROUTES:
        params = route.match(parts)
        if params is None:
            continue
        refused = _key_refusal(route, request, app, params)
        if refused is not None:
            return refused
        if request.method not in route.methods:
            return _method_not_allowed(", ".join(sorted(route.methods, key=_METHOD_ORDER.index)))
        return await route.handler(request, app, params)
    return NOT_FOUND


_METHOD_ORDER = ["GET", "POST", "PUT", "DELETE", "HEAD"]


def _for_method(request: Request, response: Response) -> Response:
    """HEAD: the headers GET would get, no body (the adapter sets the length from it)."""
    if request.method != "HEAD":
        return response
    headers = {**response.headers, "content-length": str(len(response.body))}
    return Response(response.status, b"", headers)


def _where(exc: BaseException) -> str:
    """The frames of a bug on one line (file:line function), without the message, which
    could quote the request."""
    frames = traceback.extract_tb(exc.__traceback__)[-6:]
    return " > ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in frames)


async def handle(request: Request, app: App) -> Response:
    """Answer one request. Never raises: a bug becomes a generic 500 and one log line."""
    try:
        response = await _route(request, app)
    except Exception as exc:
        log.event(
            "http_error",
            method=request.method[:10],
            route=redact_path(request.path),
            error=exc.__class__.__name__,
            where=_where(exc),
        )
        response = _text(500, "internal error")
    return _for_method(request, response)


Handler = Callable[[Request, App], Awaitable[Response]]
