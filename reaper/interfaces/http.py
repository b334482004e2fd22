"""The one request-handling core of the HTTP API, for `reaper serve` and the Lambda adapter.

Both adapters turn their request into a `Request` and call `respond` (or `handle`, its
awaitable form); every rule of the contract lives here once. The rules that matter most come
from the threat model: a wrong key answers exactly like an unknown route (a stranger learns
nothing, not even that /ping exists), bodies and rates are capped before anything touches the
store, and no request ever gets a 500 for what it sent — only a genuine bug does, with a
generic body and a log line without the key. A store that cannot be written (a full or
read-only disk, DynamoDB throttling) answers 503 with `Retry-After`, opens an episode the
process remembers (`reaper.store.failure`: logged at ERROR and alerted once, shown by
`/healthz`) and closes it with the first ping stored again.

A cold ping stays cheap: this module imports what `/healthz` and `/ping` need and no more (the
request, its answers and the `App` are in `reaper.interfaces.api`). The other routes live in
`reaper.interfaces.routes`, `reaper.interfaces.web.routes` and a chat channel's own package
(its webhook, found by `reaper.interfaces.inbound`), which the route table names by import path
and the first request for one imports — the route table is one of reaper's dynamic seams (with
`reaper.app.wiring` and `reaper.interfaces.inbound`); and a ping without an alert is answered
with no event loop at all (`respond` returns its `Response`; only what must wait — an alert to
send, a provider to ask — comes back as an awaitable).
"""

from __future__ import annotations

import codecs
import hmac
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Literal
from urllib.parse import parse_qs

from reaper import log
from reaper.core.heartbeat import Ping, PingKind, valid_host
from reaper.interfaces.api import (
    INVALID_HOST,
    MAX_BODY,
    MESSAGE_LIMIT,
    NOT_FOUND,
    Answer,
    App,
    Params,
    Request,
    Response,
    RouteHandler,
    json_response,
    rate_limited,
    text_response,
    too_large,
)
from reaper.interfaces.inbound import inbound_channels
from reaper.passes.ping import PingOutcome, cross_checkable, place_ping
from reaper.store.failure import (
    RETRY_AFTER_SECONDS,
    StoreFailure,
    failure_alert,
    store_failure,
)

if TYPE_CHECKING:
    from reaper.core.models import Alert


def _method_not_allowed(allowed: str) -> Response:
    return text_response(405, "Method Not Allowed", {"allow": allowed})


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
    if len(parts) > 2 and parts[1] in ("ping", "alert", "login", "act", *INBOUND_WORDS):
        parts[2] = "***"
    cleaned = "/".join(parts)
    if not cleaned.isprintable():
        cleaned = "".join(c if c.isprintable() else "?" for c in cleaned)
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


def _ping(request: Request, app: App, params: Params) -> Answer:
    """At once when the ping alerts nobody (nearly every ping); else after its alert went."""
    host, suffix = params["host"], params.get("suffix")
    route = _ping_kind(suffix)
    assert route is not None  # the route table matched only a valid suffix
    if not valid_host(host):
        return text_response(400, INVALID_HOST)
    if len(request.body) > MAX_BODY:
        return too_large(MAX_BODY)
    try:
        asked, query_message = push_query(request.query, suffix)
    except BadQuery as exc:
        return text_response(400, str(exc))
    wait = app.per_host.take(host)
    if wait:
        return rate_limited(wait, "this host")
    kind, exit_status = route
    kind = asked or kind
    message = _message(request.body) if request.method == "POST" and request.body else None
    if message is None and query_message is not None:
        message = _message(query_message.encode("utf-8", "surrogatepass"))
    ping = Ping(
        host=host, kind=kind, exit_status=exit_status, message=message, client=request.client
    )
    outcome = place_ping(app.settings, app.store, app.clock, ping)
    answers_json = asks_for_json(request)
    if outcome.capped and cross_checkable(host, app.settings) is not None:
        return _looked_up(app, ping, answers_json)
    return _placed(app, ping, outcome, answers_json)


def _placed(app: App, ping: Ping, outcome: PingOutcome, answers_json: bool) -> Answer:
    """A placed (or refused) ping's answer: after its alert went, if it raised one."""
    if outcome.alert is not None:
        return _alerting(app, ping, outcome, outcome.alert, answers_json)
    return _pinged(app, outcome, answers_json)


def asks_for_json(request: Request) -> bool:
    """`application/json` listed explicitly in `Accept` (not `*/*`, not `application/*`): only
    the kit's two-way heartbeat asks, and every other client keeps its plain `OK`."""
    accept = request.headers.get("accept", "")
    return "application/json" in accept and any(
        part.split(";")[0].strip().lower() == "application/json" for part in accept.split(",")
    )


def _pinged(app: App, outcome: PingOutcome, answers_json: bool = False) -> Response:
    if not outcome.accepted:
        return text_response(404 if outcome.missing else 403, outcome.reason)
    if outcome.monitor is not None:
        app.health.recovered()  # the monitor was written: the store takes writes again
    if outcome.monitor is not None and outcome.monitor.status == "retired":
        app.note_retired()
    if answers_json and outcome.monitor is not None:
        from reaper.interfaces.heartbeat_answer import heartbeat_answer

        return heartbeat_answer(app, outcome.monitor)
    return text_response(200, "OK")


async def _looked_up(app: App, ping: Ping, answers_json: bool) -> Response:
    """A provider host the cap refused and the last listings do not show (an instance started
    since): one lookup of that instance (at most once per host an hour) may make its room."""
    from reaper.app.wiring import looked_up_room

    room = await looked_up_room(app.settings, app.store, app.clock, ping.host)
    outcome = place_ping(app.settings, app.store, app.clock, ping, looked_up=room)
    answer = _placed(app, ping, outcome, answers_json)
    return answer if isinstance(answer, Response) else await answer


async def _alerting(
    app: App, ping: Ping, outcome: PingOutcome, alert: Alert, answers_json: bool
) -> Response:
    """The answer of a ping that alerts: after its alert went (or gave up), so that the kit's
    `/fail` hears whether anyone was told; past the budgets of ping alerts, held for the fold
    (`reaper.interfaces.ping_alerts`) unless it is about a listed instance."""
    from reaper.interfaces.ping_alerts import send_or_hold

    await send_or_hold(app, ping, alert)
    return _pinged(app, outcome, answers_json)


def _healthz(request: Request, app: App, params: Params) -> Answer:
    """What the process last saw of its store: no store call of its own (it would fail, or
    hang, with the store)."""
    cause = app.health.cause
    if cause is not None:
        return json_response(503, {"ok": False, "store": cause})
    return json_response(200, {"ok": True})


def _webhook_secret(app: App, channel: str) -> tuple[str | None, str]:
    """The channel's webhook secret (None: unset or not configured) and its header."""
    inbound = next(i for p, i in inbound_channels() if p.name == channel)
    configured = app.settings.channel(channel)
    return (inbound.secret(configured) if configured else None), inbound.header


# Answers a request without the right key gets; only these spend the per-client budget.
_KEYLESS = frozenset({401, 404})

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
    401); "inbound" — the `secret` segment and the chat channel's secret header must both be
    its webhook secret (unset or wrong → the unknown route). Then the method
    (405 with `Allow`), then the handler: a function, or the import path of one
    ("module:name", imported by the first request that needs it).
    """

    path: tuple[str | Segment, ...]
    methods: frozenset[str]
    handler: RouteHandler | str
    key: Literal["ping", "admin", "inbound"] | None = None

    def handler_function(self) -> RouteHandler:
        if not isinstance(self.handler, str):
            return self.handler
        module, _, name = self.handler.partition(":")
        found: RouteHandler = getattr(import_module(module), name)
        return found

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


KEY, HOST = Segment("key"), Segment("host")
# The first word of each chat channel's webhook route: its name.
INBOUND_WORDS = tuple(plugin.name for plugin, _ in inbound_channels())


def _channel(name: str) -> Segment:
    return Segment("channel", lambda word: word == name)


TOKEN, SECRET = Segment("token"), Segment("secret")
SUFFIX = Segment("suffix", lambda suffix: _ping_kind(suffix) is not None)
PING_METHODS = frozenset({"GET", "POST", "HEAD"})

_ROUTES = "reaper.interfaces.routes:"
_WEB = "reaper.interfaces.web.routes:"
POST = frozenset({"POST"})

ROUTES: tuple[Route, ...] = (
    Route(("healthz",), GET_HEAD, _healthz),
    Route(("status",), GET_HEAD, _ROUTES + "status", key="admin"),
    Route(("ping", KEY, HOST), PING_METHODS, _ping, key="ping"),
    Route(("ping", KEY, HOST, SUFFIX), PING_METHODS, _ping, key="ping"),
    Route(("alert", KEY), POST, _ROUTES + "alert", key="ping"),
    Route(("alert", KEY, HOST), POST, _ROUTES + "alert", key="ping"),
    Route(
        ("monitors", HOST),
        frozenset({"GET", "HEAD", "PUT", "DELETE"}),
        _ROUTES + "monitor",
        key="admin",
    ),
    Route(("act", TOKEN), frozenset({"GET", "HEAD", "POST"}), _ROUTES + "act"),
    # A chat channel's webhook, `/<channel>/<secret>` (reaper.interfaces.inbound).
    *(
        Route((_channel(p.name), SECRET), POST, inbound.webhook, key="inbound")
        for p, inbound in inbound_channels()
    ),
    # --- the status page (reaper.interfaces.web): its own sessions, never a Bearer key ---
    Route(("",), GET_HEAD, _WEB + "home"),
    Route(("login",), POST, _WEB + "login"),
    Route(("login", Segment("token")), frozenset({"GET", "POST", "HEAD"}), _WEB + "login_link"),
    Route(("logout",), POST, _WEB + "logout"),
    Route(("keep",), POST, _WEB + "keep"),
    Route(("unkeep",), POST, _WEB + "unkeep"),
    Route(("pause",), POST, _WEB + "pause"),
    Route(("resume",), POST, _WEB + "resume"),
    Route(("mute",), POST, _WEB + "mute"),
    Route(("unmute",), POST, _WEB + "unmute"),
    Route(("monitor", HOST), GET_HEAD, _WEB + "monitor_view"),
    Route(("monitor", HOST, "settings"), POST, _WEB + "monitor_settings"),
    Route(("monitor", HOST, "delete"), POST, _WEB + "monitor_delete"),
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
            return text_response(401, "unauthorized", {"www-authenticate": "Bearer"})
    if route.key == "inbound":
        secret, name = _webhook_secret(app, params["channel"])
        header = request.headers.get(name, "")
        if not (_same(params["secret"], secret) and _same(header, secret)):
            return NOT_FOUND
    return None


def _route(request: Request, app: App) -> Answer:
    """The answer, with the per-client limit applied to keyless requests only.

    Several instances share one address (a provider's host, a NAT): a stranger or a neighbour
    without the key must not spend the budget of the instances' keyed pings, which the
    per-host buckets limit already. The key check touches nothing, so answering first and
    charging after costs a flood nothing more than refusing it up front.
    """
    parts = request.path.split("/")[1:] if request.path.startswith("/") else []
    answer = _dispatch(request, app, parts)
    if isinstance(answer, Response):
        return _charged(request, app, parts, answer)
    return _charged_after(request, app, parts, answer)


def _charged(request: Request, app: App, parts: list[str], response: Response) -> Response:
    if response.status in _KEYLESS and parts != ["healthz"]:
        wait = app.per_client.take(request.client)
        if wait:
            return rate_limited(wait, "this client")
    return response


async def _charged_after(
    request: Request, app: App, parts: list[str], pending: Awaitable[Response]
) -> Response:
    return _charged(request, app, parts, await pending)


def _dispatch(request: Request, app: App, parts: list[str]) -> Answer:
    for route in ROUTES:
        params = route.match(parts)
        if params is None:
            continue
        refused = _key_refusal(route, request, app, params)
        if refused is not None:
            return refused
        if request.method not in route.methods:
            return _method_not_allowed(", ".join(sorted(route.methods, key=_METHOD_ORDER.index)))
        return route.handler_function()(request, app, params)
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


def _bug(request: Request, exc: Exception) -> Response:
    log.event(
        "http_error",
        method=request.method[:10],
        route=redact_path(request.path),
        error=exc.__class__.__name__,
        where=_where(exc),
    )
    return text_response(500, "internal error")


def store_unavailable(failure: StoreFailure) -> Response:
    return text_response(
        503,
        f"the state store is failing ({failure.cause}); retry later",
        {"retry-after": str(RETRY_AFTER_SECONDS)},
    )


def _failed(request: Request, app: App, exc: Exception) -> Answer:
    """A store failure is 503 with `Retry-After` (the first of an episode answers once its
    alert went, within the request's budget); anything else is a bug."""
    failure = store_failure(exc)
    if failure is None:
        return _bug(request, exc)
    if app.health.failed(failure):
        return _alerted(app, failure)
    return store_unavailable(failure)


async def _alerted(app: App, failure: StoreFailure) -> Response:
    await app.notifier.send(failure_alert(failure))
    return store_unavailable(failure)


def respond(request: Request, app: App) -> Response | Awaitable[Response]:
    """Answer one request: its `Response` when nothing had to wait (a ping that alerts nobody,
    a refusal), else an awaitable of it. Never raises: a store that fails is a 503, a bug a
    generic 500 and one log line."""
    try:
        answer = _route(request, app)
    except Exception as exc:
        answer = _failed(request, app, exc)
    if isinstance(answer, Response):
        return _for_method(request, answer)
    return _finished(request, app, answer)


async def _finished(request: Request, app: App, pending: Awaitable[Response]) -> Response:
    try:
        response = await pending
    except Exception as exc:
        failed = _failed(request, app, exc)
        response = failed if isinstance(failed, Response) else await failed
    return _for_method(request, response)


async def handle(request: Request, app: App) -> Response:
    """`respond`, awaited: what an adapter with an event loop (`reaper serve`) calls."""
    answer = respond(request, app)
    return answer if isinstance(answer, Response) else await answer


Handler = Callable[[Request, App], Awaitable[Response]]
