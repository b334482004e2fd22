"""The routes that read or change more than one monitor: `/alert`, `/status`,
`/monitors/<host>`, `/act/<token>` (the status page's are in `reaper.interfaces.web.routes`;
a chat channel's webhook is in its own package). The route table
in `reaper.interfaces.http` names each by its import path, so this module — and the pydantic
models, the views and the channels it needs — is imported by the first request that needs
one: a container started for a ping never loads it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from reaper import log
from reaper.app import wiring
from reaper.core import messages
from reaper.core.heartbeat import valid_host
from reaper.core.models import Alert, AlertLevel
from reaper.core.monitors import BadSetting, parse_change
from reaper.core.units import parse_time
from reaper.interfaces.api import (
    INVALID_HOST,
    Answer,
    App,
    Params,
    Request,
    Response,
    json_response,
    rate_limited,
    text_response,
    too_large,
)
from reaper.interfaces.views import monitor_detail_json, status_report
from reaper.passes import correlate
from reaper.passes.arm import arm_safely
from reaper.passes.monitors import Asker, change_monitor, delete_monitor
from reaper.passes.ping import UNDELIVERED_ALERT

if TYPE_CHECKING:
    from reaper.passes.act import ActContext

# The /alert body limit.
ALERT_LIMIT = 16 * 1024
# A repeated identical /alert within this window is answered as deduplicated.
ALERT_DEDUP_WINDOW = timedelta(minutes=1)
_LEVELS: tuple[AlertLevel, ...] = ("info", "warning", "critical")
# Longer than any request lives (Lambda: 10 s): a send still marked as running after this
# was killed before it could say how it went.
_SEND_LIFETIME = timedelta(seconds=15)


class BadAlert(ValueError):
    """One line saying what is wrong with an /alert body."""


def _str_field(data: dict[str, Any], name: str, required: bool) -> str:
    value = data.get(name)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise BadAlert(f'"{name}" must be a non-empty string')
    return value


@dataclass(frozen=True)
class Forward:
    """An /alert body as read: the message, and for an idle warning when the instance says it
    destroys itself (`{"kind": "idle_soon", "destroy_at": ...}`)."""

    alert: Alert
    destroy_at: datetime | None = None


def _destroy_at(data: dict[str, Any]) -> datetime | None:
    kind = data.get("kind")
    if kind is None:
        return None
    if kind != "idle_soon":
        raise BadAlert('"kind" must be "idle_soon" (or left out)')
    value = data.get("destroy_at")
    moment = parse_time(value) if isinstance(value, str) and len(value) <= 40 else None
    if moment is None:
        raise BadAlert('"destroy_at" must be an ISO 8601 time, like "2026-12-02T21:32:00Z"')
    return moment


def _from_json(data: object) -> Forward:
    if not isinstance(data, dict):
        raise BadAlert('expected a JSON object like {"text": "..."}')
    level = data.get("level", "warning")
    if level not in _LEVELS:
        raise BadAlert('"level" must be "info", "warning" or "critical"')
    if "text" in data and "title" in data:
        raise BadAlert('send "text", or "title" and "body", not both')
    destroy_at = _destroy_at(data)
    if "title" in data:
        title, body = _str_field(data, "title", True), _str_field(data, "body", False)
        return Forward(messages.webhook(title=title, body=body, level=level), destroy_at)
    if "text" not in data:
        raise BadAlert('expected "text", or "title" and "body"')
    return Forward(messages.webhook(_str_field(data, "text", True), level=level), destroy_at)


def parse_alert(request: Request) -> Forward:
    """An /alert body as a `Forward`: JSON (also when sent as curl's default form type, since
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
        return Forward(messages.webhook(text))
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: a body of 16 KB of "[[[["
        raise BadAlert("the body is not valid JSON") from None
    return _from_json(data)


def _marked(forward: Forward, host: str | None) -> Alert:
    """What the phone shows: the instance's message marked as its own (`📟 <host>: …`), with
    Keep buttons on an idle warning sent for one host."""
    if host is not None and forward.destroy_at is not None:
        return messages.idle_soon(forward.alert, host, forward.destroy_at)
    return messages.forwarded(forward.alert, host)


def alert(request: Request, app: App, params: Params) -> Answer:
    """`/alert/<key>` and `/alert/<key>/<host>`: each host has its own budget, and the plain
    route one of its own, so that one noisy instance never makes another's alert wait."""
    host = params.get("host")
    if host is not None and not valid_host(host):
        return text_response(400, INVALID_HOST)
    if len(request.body) > ALERT_LIMIT:
        return too_large(ALERT_LIMIT)
    try:
        forward = parse_alert(request)
    except ValueError as exc:  # BadAlert, or webhook() finding nothing to send
        return text_response(400, str(exc))
    if not app.channels:
        return text_response(
            503, f"no alert channel is configured (set {app.settings.channel_hint})"
        )
    wait = app.alerts.take(_PLAIN_ROUTE if host is None else host)
    if wait:
        return rate_limited(wait, "alerts from this host" if host else "alerts")
    return _forward(app, forward, host)


# The budget of `/alert/<key>` (no host): apart from every host's, and no valid host name.
_PLAIN_ROUTE = "/"


async def _forward(app: App, forward: Forward, host: str | None) -> Response:
    now = app.clock.now()
    if host is None:
        named = correlate.notify_host(forward.alert, app.store)
    else:
        named = host if app.store.get_monitor(host) is not None else None
    alert = _marked(forward, host)
    # The key: a hash of the marked alert's level, title and body (its host among them).
    key = alert.dedup_key
    if named is not None and correlate.failure_alerted_just_now(app.store, named, now):
        # The monitor's failure alert said it a moment ago: one alert per failure.
        log.event("alert_delivery", result="skipped", alert_event=alert.event, host=named)
        return json_response(200, {"deduplicated": True, "already_alerted": f"{named} failed"})
    if not _take_alert(app, key, now):
        return json_response(200, {"deduplicated": True})
    if alert.actions:
        alert = arm_safely(alert, app.store, app.settings, now, app.notifier.actions)
    deliveries = await app.notifier.send(alert)
    results = [
        {"channel": d.channel, "ok": d.ok, "detail": log.redact(d.detail)} for d in deliveries
    ]
    delivered = any(d.ok for d in deliveries)
    mark = UNDELIVERED_ALERT + key
    if delivered and named is not None:
        correlate.notified(app.store, named, app.clock.now())
    if delivered:
        app.store.close_episode(mark)
    else:
        app.store.mark_episode_alerted(mark, app.clock.now())  # "alerted" here: failed at
    return json_response(200 if delivered else 502, {"delivered": delivered, "channels": results})


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


async def status(request: Request, app: App, params: Params) -> Response:
    return json_response(200, status_report(app.settings, app.store, app.clock.now()))


# --- actions from the phone ---------------------------------------------------------------


def act_context(app: App) -> ActContext:
    """What an action from the phone needs, from the process's App."""
    return wiring.act_context(app.settings, app.store, app.notifier, app.clock, http=app.act_http)


async def act(request: Request, app: App, params: Params) -> Response:
    """`/act/<token>`: the page (GET) and the action (POST); see `reaper.interfaces.web.act`."""
    from reaper.interfaces.web.act import answer_act

    page = await answer_act(
        request.method, params["token"], request.headers, request.body, act_context(app)
    )
    return Response(page.status, page.body, page.headers)


# --- /monitors/<host>: one monitor, for the admin --------------------------------------------

# Who a change through the admin API is recorded as: whoever holds the admin key.
ADMIN_API = Asker(by="admin key", via="admin API")
# A PUT body is a handful of fields.
SETTINGS_LIMIT = 4 * 1024


async def monitor(request: Request, app: App, params: Params) -> Response:
    """GET: the monitor and its ping log; PUT: its settings (created if missing); DELETE."""
    host = params["host"]
    if not valid_host(host):
        return text_response(400, INVALID_HOST)
    now = app.clock.now()
    if request.method == "PUT":
        return _put_monitor(request, app, host, now)
    if request.method == "DELETE":
        if not delete_monitor(app.store, host, at=now, asker=ADMIN_API):
            return text_response(404, f"no monitor {host}")
        return json_response(200, {"deleted": host})
    monitor = app.store.get_monitor(host)
    if monitor is None:
        return text_response(404, f"no monitor {host}")
    events = app.store.monitor_log(host)
    kept = app.store.history().kept
    return json_response(200, monitor_detail_json(monitor, events, app.settings, now, kept))


def _put_monitor(request: Request, app: App, host: str, now: datetime) -> Response:
    if len(request.body) > SETTINGS_LIMIT:
        return too_large(SETTINGS_LIMIT)
    try:
        data = json.loads(request.body.decode("utf-8"))
        change = parse_change(data, now)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        # BadSetting, or a body that is not JSON at all.
        line = str(exc) if isinstance(exc, BadSetting) else "the body is not a JSON object"
        return text_response(400, line)
    changed = change_monitor(app.settings, app.store, host, change, ADMIN_API)
    if changed.monitor is None:
        return text_response(403, changed.refused)
    events = app.store.monitor_log(host)
    body = monitor_detail_json(changed.monitor, events, app.settings, now, app.store.history().kept)
    return json_response(200, {**body, "created": changed.created})
