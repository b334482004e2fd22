"""The status page's routes: `GET /`, `POST /login`, `GET|POST /login/<token>`, `POST /logout`,
`POST /keep`, `POST /unkeep`, a monitor's `POST /pause`, `/resume`, `/mute`, `/unmute`, and its
own page `GET /monitor/<host>` with `POST /monitor/<host>/settings` and `/delete`.
`reaper.interfaces.http` lists them in its route table by import path (loaded by the first
request for one); the same core answers under `reaper serve` and on Lambda.

Rules, in the order they are applied:
- REAPER_ADMIN_KEY unset: every route here answers exactly like an unknown route (NOT_FOUND).
- No valid session (none, forged, expired, signed under a rotated key): `GET /` shows the
  sign-in page, which reveals nothing of the fleet; a state-changing POST answers 403 with it.
- Sign-in attempts with the admin key are rate-limited per client address (an IPv6 client by
  its /64), and per address only: a flood of wrong keys from other addresses never makes the
  owner's right key wait. A one-time sign-in link always signs in; a refused one (made up,
  used, expired) counts against its client's sign-in attempts.
- Every POST (sign-in, sign-out and the forms) must come from the page's own origin
  (`reaper.interfaces.web.origin`: REAPER_PUBLIC_URL's when it is set): 403 otherwise.
- Forms: at most FORM_LIMIT bytes (413), urlencoded (415), UTF-8, each field once (400);
  every state-changing form carries the session's CSRF token (403 without it).
Never the admin key in a page or a log line: it is compared in constant time and dropped.
"""

from __future__ import annotations

import weakref
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, quote

from reaper import log
from reaper.core import messages
from reaper.core.heartbeat import HOST_RULE, valid_host
from reaper.core.models import instance_key
from reaper.core.monitors import BadSetting, SettingsChange, duration_setting
from reaper.core.units import iso
from reaper.interfaces.api import NOT_FOUND, Response
from reaper.interfaces.ratelimit import Rate, TokenBuckets, client_network, retry_after
from reaper.interfaces.readmodel import listed_instance, read_view
from reaper.interfaces.views.monitors import monitor_keep
from reaper.interfaces.web.layout import HTML_HEADERS
from reaper.interfaces.web.monitor_page import monitor_page, monitor_path
from reaper.interfaces.web.origin import same_origin
from reaper.interfaces.web.page import KEEP_FOR, MUTE_FOR, keep_notice, status_page
from reaper.interfaces.web.session import (
    TOKEN_PATTERN,
    Session,
    admin_key_matches,
    clear_cookie,
    cookie_secure,
    end_session,
    session_of,
    set_cookie,
    spend_login_token,
    start_session,
)
from reaper.interfaces.web.signin import link_page, signin_page
from reaper.passes import keeping
from reaper.passes.monitors import (
    Asker,
    change_monitor,
    delete_monitor,
    mute_monitor,
    pause_monitor,
)
from reaper.providers.plugins import parse_target
from reaper.settings.parse import ConfigError

if TYPE_CHECKING:
    from reaper.interfaces.api import App, Request

# A form is a few short fields; anything larger is refused before it is parsed.
FORM_LIMIT = 8 * 1024
_MAX_FIELDS = 10
# Who a keep from the page is recorded as.
KEPT_BY = "status page"
# Sign-in attempts per client address. No limit over all clients: it would let a stranger with
# many addresses lock the owner out, and the key's length (16 characters at least) is what makes
# guessing it from many addresses hopeless.
SIGNIN_PER_CLIENT = Rate(capacity=10, per_second=1 / 6)
TOO_MANY = "Too many sign-in attempts from your address; try again in a minute."


def _page(status: int, body: bytes, headers: Mapping[str, str] | None = None) -> Response:
    return Response(status, body, {**HTML_HEADERS, **(headers or {})})


def _line(status: int, text: str, headers: Mapping[str, str] | None = None) -> Response:
    return Response(
        status,
        (text + "\n").encode(),
        {"content-type": "text/plain; charset=utf-8", **(headers or {})},
    )


def _see_other(location: str, cookie: str | None = None) -> Response:
    headers = {"location": location, "content-type": "text/plain; charset=utf-8"}
    if cookie is not None:
        headers["set-cookie"] = cookie
    return Response(303, b"", headers)


# One set of buckets per App (per process on `serve`, per warm container on Lambda).
_limits: weakref.WeakKeyDictionary[App, TokenBuckets] = weakref.WeakKeyDictionary()


def _signin_wait(app: App, client: str) -> float:
    """Take one sign-in attempt from the client's bucket: 0.0, or the seconds to wait."""
    limits = _limits.get(app)
    if limits is None:
        limits = _limits[app] = TokenBuckets(SIGNIN_PER_CLIENT, app.clock)
    return limits.take(client_network(client))


def _too_many(wait: float, page: bytes, client: str) -> Response:
    log.event("signin", result="rate_limited", client=client)
    return _page(429, page, {"retry-after": retry_after(wait)})


class BadForm(ValueError):
    def __init__(self, status: int, line: str) -> None:
        super().__init__(line)
        self.status = status


def read_form(request: Request) -> dict[str, str]:
    """The urlencoded fields of a POST, each once; BadForm (a one-line 4xx) otherwise."""
    if len(request.body) > FORM_LIMIT:
        raise BadForm(413, f"request body too large (limit {FORM_LIMIT // 1024} KB)")
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if request.body and kind != "application/x-www-form-urlencoded":
        raise BadForm(415, "expected a form (application/x-www-form-urlencoded)")
    try:
        text = request.body.decode("utf-8")
        pairs = parse_qsl(text, keep_blank_values=True, max_num_fields=_MAX_FIELDS, errors="strict")
    except (UnicodeDecodeError, ValueError):
        raise BadForm(400, "the form is not valid (UTF-8, a few fields)") from None
    form: dict[str, str] = {}
    for name, value in pairs:
        if name in form:
            raise BadForm(400, f"the field {name[:40]!r} is given twice")
        form[name] = value
    return form


def _foreign(request: Request, app: App) -> Response | None:
    """The refusal of a POST that is not from the page's own origin, or None."""
    if same_origin(request.headers, app.settings.public_url):
        return None
    log.event("origin", result="refused", client=request.client)
    return _line(403, "refused: a POST from another site")


def _session(request: Request, app: App) -> Session | None:
    return session_of(request.headers, app.settings.admin_key, app.store, app.clock.now())


def _signed_in(request: Request, app: App) -> Response:
    """Sign the browser in: a fresh session, kept in the store, its cookie, then the page."""
    assert app.settings.admin_key
    value = start_session(app.store, app.settings.admin_key, app.clock.now())
    secure = cookie_secure(app.settings, request.headers)
    return _see_other("/", set_cookie(value, secure=secure))


# --- the routes -----------------------------------------------------------------------------


async def home(request: Request, app: App, params: Mapping[str, str]) -> Response:
    settings = app.settings
    if not settings.admin_key:
        return NOT_FOUND
    session = _session(request, app)
    if session is None:
        return _page(200, signin_page())
    view = read_view(app.store, settings, app.clock.now())
    done = dict(parse_qsl(request.query[:400]))
    notice = keep_notice(view, kept=done.get("kept"), unkept=done.get("unkept"))
    return _page(200, status_page(view, settings, session.csrf(settings.admin_key), notice))


async def login(request: Request, app: App, params: Mapping[str, str]) -> Response:
    """POST /login: the admin key from the form."""
    if not app.settings.admin_key:
        return NOT_FOUND
    if (foreign := _foreign(request, app)) is not None:
        return foreign
    wait = _signin_wait(app, request.client)
    if wait:
        return _too_many(wait, signin_page(TOO_MANY), request.client)
    try:
        form = read_form(request)
    except BadForm as bad:
        return _line(bad.status, str(bad))
    if not admin_key_matches(form.get("key", "").strip(), app.settings.admin_key):
        log.event("signin", result="wrong_key", client=request.client)
        return _page(403, signin_page("That is not the admin key."))
    log.event("signin", result="ok", how="admin key", client=request.client)
    return _signed_in(request, app)


async def login_link(request: Request, app: App, params: Mapping[str, str]) -> Response:
    """GET shows a button (a link preview must not spend the token); POST spends it. A valid
    link signs in whatever its client's sign-in attempts: the way in that a flood of wrong
    keys from the owner's own address (a shared proxy, a NAT) cannot close."""
    token = params["token"]
    if not app.settings.admin_key or not TOKEN_PATTERN.fullmatch(token):
        return NOT_FOUND
    if request.method in ("GET", "HEAD"):
        return _page(200, link_page(token))
    if (foreign := _foreign(request, app)) is not None:
        return foreign
    if len(request.body) > FORM_LIMIT:
        return _line(413, f"request body too large (limit {FORM_LIMIT // 1024} KB)")
    if not spend_login_token(app.store, token, app.clock.now()):
        wait = _signin_wait(app, request.client)
        if wait:
            return _too_many(wait, link_page(token, TOO_MANY), request.client)
        log.event("signin", result="link_refused", client=request.client)
        return _page(403, link_page(token, "This sign-in link was used already or has expired."))
    log.event("signin", result="ok", how="link", client=request.client)
    return _signed_in(request, app)


def _authorised(
    request: Request, app: App
) -> tuple[Session | None, dict[str, str], Response | None]:
    """The session and form of a state-changing POST, or the answer that refuses it."""
    try:
        form = read_form(request)
    except BadForm as bad:
        return None, {}, _line(bad.status, str(bad))
    session = _session(request, app)
    if session is None:
        return None, form, _page(403, signin_page("Your session has ended: sign in again."))
    assert app.settings.admin_key
    if not session.csrf_ok(app.settings.admin_key, form.get("csrf")):
        log.event("csrf", result="refused", client=request.client)
        return session, form, _line(403, "missing or wrong CSRF token: reload the page")
    return session, form, None


def _asked(request: Request, app: App) -> tuple[Session, dict[str, str]] | Response:
    """The session and form of a state-changing POST from a signed-in page; else its answer:
    the unknown route's when the page is off (no admin key), or the refusal."""
    if not app.settings.admin_key:
        return NOT_FOUND
    if (foreign := _foreign(request, app)) is not None:
        return foreign
    session, form, refused = _authorised(request, app)
    if refused is not None:
        return refused
    assert session is not None
    return session, form


async def logout(request: Request, app: App, params: Mapping[str, str]) -> Response:
    """Ends the session on the server and clears the cookie: a copy of the cookie kept
    elsewhere opens nothing afterwards. A signed-in browser's sign-out needs its CSRF token."""
    if not app.settings.admin_key:
        return NOT_FOUND
    if (foreign := _foreign(request, app)) is not None:
        return foreign
    try:
        form = read_form(request)
    except BadForm as bad:
        return _line(bad.status, str(bad))
    session = _session(request, app)
    if session is not None:
        if not session.csrf_ok(app.settings.admin_key, form.get("csrf")):
            return _line(403, "missing or wrong CSRF token: reload the page")
        end_session(app.store, session)
        log.event("signout", client=request.client)
    return _see_other("/", clear_cookie(secure=cookie_secure(app.settings, request.headers)))


def _target(form: Mapping[str, str]) -> tuple[str, Response | None]:
    """The instance key a keep/unkeep names, checked against the last listings."""
    raw = form.get("instance", "")
    try:
        provider, instance_id = parse_target(raw)
    except ConfigError as exc:
        return "", _line(400, f"instance: {exc.expected}")
    return instance_key(provider, instance_id), None


def _instance_form(request: Request, app: App) -> tuple[dict[str, str], str] | Response:
    """The form of a keep/unkeep and the instance key it names, or the answer refusing it."""
    asked = _asked(request, app)
    if isinstance(asked, Response):
        return asked
    _signed_in_as, form = asked
    key, bad = _target(form)
    return bad if bad is not None else (form, key)


def _anchor(key: str, done: str) -> str:
    """Back to the instance on the page, which then says what was done (`done`: kept or
    unkept); the page reads that from the store, so the address claims nothing itself."""
    fragment = "".join(c if c.isalnum() or c in "-_" else "-" for c in key)
    return f"/?{done}={quote(key, safe='')}#i-{fragment}"


async def keep(request: Request, app: App, params: Mapping[str, str]) -> Response:
    """The record `reaper keep` writes, with who asked; none for an instance already terminated
    (a page opened before its termination still shows its buttons)."""
    asked = _instance_form(request, app)
    if isinstance(asked, Response):
        return asked
    form, key = asked
    choice = form.get("for", "")
    if choice not in KEEP_FOR:
        return _line(400, "for: expected 1d, 7d or nothing (until unkept)")
    now = app.clock.now()
    view = read_view(app.store, app.settings, now)
    listed = listed_instance(view, key)
    if listed is None:
        return _line(404, f"{key[:120]} is not in the last listing: reload the page")
    gone = keeping.terminated_among(app.store, [key])
    if gone:
        return _line(409, messages.action_not_kept(messages.label(listed), gone))
    length = KEEP_FOR[choice]
    until = now + length if length is not None else None
    keeping.keep(app.store, key, now=now, until=until, by=KEPT_BY, via=KEPT_BY)
    log.event("keep", instance=key, until=iso(until), by=KEPT_BY, result="kept")
    return _see_other(_anchor(key, "kept"))


async def unkeep(request: Request, app: App, params: Mapping[str, str]) -> Response:
    """The record `reaper unkeep` ends, with who asked."""
    asked = _instance_form(request, app)
    if isinstance(asked, Response):
        return asked
    _form, key = asked
    ended = keeping.unkeep(app.store, key, now=app.clock.now(), by=KEPT_BY, via=KEPT_BY).done
    log.event("unkeep", instance=key, by=KEPT_BY, result="ended" if ended else "none")
    return _see_other(_anchor(key, "unkept"))


# --- a monitor's buttons: pause, resume, mute, unmute ----------------------------------------

PAGE = Asker(by=KEPT_BY, via=KEPT_BY)
# A button's change: True done, False no such monitor, or the answer refusing the form.
MonitorChange = Callable[["App", str, Mapping[str, str], datetime], "bool | Response"]
WebRoute = Callable[["Request", "App", Mapping[str, str]], Awaitable[Response]]


def _monitor_button(change: MonitorChange) -> WebRoute:
    """A monitor button's route: signed in, its CSRF token, a valid host; then `change`."""

    async def route(request: Request, app: App, params: Mapping[str, str]) -> Response:
        asked = _asked(request, app)
        if isinstance(asked, Response):
            return asked
        _signed_in_as, form = asked
        host = form.get("host", "")
        if not valid_host(host):
            return _bad_host()
        done = change(app, host, form, app.clock.now())
        if isinstance(done, Response):
            return done
        if not done:
            return _line(404, f"no monitor {host}: reload the page")
        return _see_other(monitor_path(host) if form.get("back") == "monitor" else "/#m-" + host)

    route.__doc__ = change.__doc__
    return route


def _pause(app: App, host: str, form: Mapping[str, str], at: datetime) -> bool:
    """As `reaper monitor pause`: it never alerts until resumed (a ping resumes it)."""
    return pause_monitor(app.store, host, paused=True, at=at, asker=PAGE)


def _resume(app: App, host: str, form: Mapping[str, str], at: datetime) -> bool:
    """As `reaper monitor resume`: its silence counts from now."""
    return pause_monitor(app.store, host, paused=False, at=at, asker=PAGE)


def _mute(app: App, host: str, form: Mapping[str, str], at: datetime) -> bool | Response:
    """For `for` (1d or 7d): its state is tracked, no alert goes out."""
    length = MUTE_FOR.get(form.get("for", ""))
    if length is None:
        return _line(400, "for: expected 1d or 7d")
    return mute_monitor(app.store, host, until=at + length, at=at, asker=PAGE)


def _unmute(app: App, host: str, form: Mapping[str, str], at: datetime) -> bool:
    """It alerts again at once."""
    return mute_monitor(app.store, host, until=None, at=at, asker=PAGE)


pause, resume = _monitor_button(_pause), _monitor_button(_resume)
mute, unmute = _monitor_button(_mute), _monitor_button(_unmute)


# --- a monitor's own page: its log, its settings, delete ------------------------------------


def _monitor_shown(
    app: App, session: Session, host: str, problem: str = "", status: int = 200
) -> Response:
    monitor = app.store.get_monitor(host)
    if monitor is None:
        return _line(404, f"no monitor {host}")
    assert app.settings.admin_key
    now = app.clock.now()
    page = monitor_page(
        monitor,
        app.store.monitor_log(host),
        app.settings,
        now,
        session.csrf(app.settings.admin_key),
        problem,
        keep=monitor_keep(monitor, app.store.history().kept, now),
    )
    return _page(status, page)


async def monitor_view(request: Request, app: App, params: Mapping[str, str]) -> Response:
    """`GET /monitor/<host>`: the monitor's page, for a signed-in browser."""
    if not app.settings.admin_key:
        return NOT_FOUND
    session = _session(request, app)
    if session is None:
        return _page(200, signin_page())
    host = params["host"]
    if not valid_host(host):
        return _bad_host()
    return _monitor_shown(app, session, host)


def _bad_host() -> Response:
    return _line(400, f"host: {HOST_RULE}")


def _duration_field(form: Mapping[str, str], name: str) -> timedelta | None:
    """Empty (or "default") is the default; BadSetting, one line, for anything unreadable."""
    text = form.get(name, "").strip()
    return None if not text else duration_setting(text, name)


async def monitor_settings(request: Request, app: App, params: Mapping[str, str]) -> Response:
    """`POST /monitor/<host>/settings`: its own timeout and grace, as `reaper monitor set`."""
    asked = _asked(request, app)
    if isinstance(asked, Response):
        return asked
    session, form = asked
    host = params["host"]
    if not valid_host(host):
        return _bad_host()
    if app.store.get_monitor(host) is None:
        return _line(404, f"no monitor {host}: reload the page")
    try:
        timeout, grace = _duration_field(form, "timeout"), _duration_field(form, "grace")
    except BadSetting as bad:
        return _monitor_shown(app, session, host, str(bad), status=400)
    change = SettingsChange(
        at=app.clock.now(), given=frozenset({"timeout", "grace"}), timeout=timeout, grace=grace
    )
    change_monitor(app.settings, app.store, host, change, PAGE)
    return _see_other(monitor_path(host))


async def monitor_delete(request: Request, app: App, params: Mapping[str, str]) -> Response:
    """`POST /monitor/<host>/delete` with `confirm=yes`: the monitor and its ping log."""
    asked = _asked(request, app)
    if isinstance(asked, Response):
        return asked
    _signed_in_as, form = asked
    host = params["host"]
    if not valid_host(host):
        return _bad_host()
    if form.get("confirm") != "yes":
        return _line(400, "confirm: tick the box to delete the monitor and its log")
    if not delete_monitor(app.store, host, at=app.clock.now(), asker=PAGE):
        return _line(404, f"no monitor {host}: reload the page")
    return _see_other("/#monitors")


__all__ = [
    "FORM_LIMIT",
    "KEPT_BY",
    "BadForm",
    "home",
    "keep",
    "login",
    "login_link",
    "logout",
    "monitor_delete",
    "monitor_settings",
    "monitor_view",
    "mute",
    "pause",
    "read_form",
    "resume",
    "unkeep",
    "unmute",
]
