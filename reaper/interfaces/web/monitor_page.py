"""One monitor's page (`GET /monitor/<host>`): its state and settings in force, its buttons,
the form that sets its own timeout and grace, delete, and its ping log — the last 100 events
with their time, kind, exit status, the first 1 KB of the body and the client's address.

The status page links each watchdog here rather than carry every log: a page view stays a
fixed handful of store reads, and this one adds two (the monitor, its log).
"""

from __future__ import annotations

from datetime import datetime

from reaper.core.models import Monitor, PingEvent
from reaper.core.monitors import KEEP_FOREVER, HostKeep, grace_of, timeout_of
from reaper.core.units import humanize
from reaper.interfaces.readmodel import as_watchdog
from reaper.interfaces.web.layout import document, esc, hidden, post_button, stamp, when
from reaper.interfaces.web.page import monitor_actions, monitor_line
from reaper.settings.model import Settings


def monitor_path(host: str) -> str:
    return f"/monitor/{host}"


def _settings_form(monitor: Monitor, settings: Settings, csrf: str, problem: str) -> str:
    timeout = timeout_of(monitor, settings.heartbeat_timeout)
    grace = grace_of(monitor)
    default = " (HEARTBEAT_TIMEOUT)" if monitor.timeout is None else ""
    error = f'<p class="error">{esc(problem)}</p>' if problem else ""
    return (
        '<section class="card" id="settings"><h2>Its own timeout and grace</h2>'
        f'<p class="small dim">Down after timeout + grace of silence: now {esc(humanize(timeout))}'
        f"{esc(default)} + {esc(humanize(grace) if grace else 'no grace')}. Leave a field empty "
        "or write <code>default</code> for the default.</p>"
        f"{error}"
        f'<form method="post" action="{esc(monitor_path(monitor.host))}/settings">'
        f"{hidden('csrf', csrf)}"
        '<label>timeout <input type="text" name="timeout" maxlength="20" '
        f'value="{esc("" if monitor.timeout is None else humanize(timeout))}" '
        'placeholder="default"></label>'
        '<label>grace <input type="text" name="grace" maxlength="20" '
        f'value="{esc("" if monitor.grace is None else humanize(grace))}" '
        'placeholder="none"></label>'
        '<button class="primary" type="submit">Save</button></form></section>'
    )


def _delete_form(monitor: Monitor, csrf: str) -> str:
    return (
        '<section class="card" id="delete"><h2>Delete</h2>'
        f'<form method="post" action="{esc(monitor_path(monitor.host))}/delete">'
        f"{hidden('csrf', csrf)}"
        '<label><input type="checkbox" name="confirm" value="yes" required> delete '
        f"{esc(monitor.host)} and its ping log</label> "
        '<button type="submit">Delete</button></form>'
        '<p class="small dim">Its next ping creates it anew if HEARTBEAT_AUTO_CREATE is on.</p>'
        "</section>"
    )


def _read_back(keep: HostKeep | None, idle_after: str) -> str:
    """What the instance reads back on its JSON ping, when anything: the keep (until when, by
    whom) and the idle limit `reaper idle` set. Empty when neither is set."""
    parts = []
    if keep is not None:
        end = "with no end set" if keep.until >= KEEP_FOREVER else f"until {stamp(keep.until)}"
        by = f" (by {esc(keep.by)})" if keep.by else ""
        parts.append(f"kept {end}{by}: its idle-watch does not destroy it for idleness")
    if idle_after == "never":
        parts.append("no idle destroy (set by reaper idle)")
    elif idle_after:
        parts.append(f"idle limit {esc(idle_after)} (set by reaper idle)")
    if not parts:
        return ""
    return f'<span class="line small" id="read-back">{" · ".join(parts)}</span>'


def _event_row(event: PingEvent) -> str:
    kind = event.kind if event.exit_status is None else f"{event.kind} {event.exit_status}"
    body = f"<pre>{esc(event.body)}</pre>" if event.body else ""
    note = f'<div class="small dim">{esc(event.note)}</div>' if event.note else ""
    return (
        f"<tr><td>{event.seq}</td><td>{stamp(event.at)}</td><td>{esc(kind)}</td>"
        f"<td>{body}{note}</td><td>{esc(event.client)}</td></tr>"
    )


def _log(events: list[PingEvent]) -> str:
    if not events:
        return (
            '<section class="card" id="log"><h2>Ping log</h2>'
            '<p class="dim">No event yet.</p></section>'
        )
    rows = "".join(_event_row(e) for e in reversed(events))
    return (
        f'<section class="card" id="log"><h2>Ping log — the last {len(events)}, newest first</h2>'
        '<table class="log"><colgroup><col style="width:3em"><col style="width:11em">'
        '<col style="width:5em"><col><col style="width:8em"></colgroup>'
        "<tr><th>#</th><th>at (UTC)</th><th>kind</th><th>body</th><th>from</th></tr>"
        f"{rows}</table></section>"
    )


def monitor_page(
    monitor: Monitor,
    events: list[PingEvent],
    settings: Settings,
    now: datetime,
    csrf: str,
    problem: str = "",
    *,
    keep: HostKeep | None = None,
) -> bytes:
    """`keep`: the keep its instance reads back (`views.monitor_keep`), None when not kept."""
    dog = as_watchdog(monitor, settings, now)
    actions = monitor_actions(dog, now, csrf, back="monitor")
    message = (
        f'<pre class="msg">{esc(monitor.last_message[:1000])}</pre>' if monitor.last_message else ""
    )
    head = (
        '<header class="top"><h1>'
        f'<a href="/#m-{esc(monitor.host)}">reaper</a> / {esc(monitor.host)}</h1>'
        + post_button("/logout", "Sign out", {"csrf": csrf})
        + "</header>"
        f'<section class="card" id="state"><ul class="rows"><li class="monitor" '
        f'id="m-{esc(monitor.host)}" data-state="{esc(dog.state)}">'
        f'<span class="name">{esc(monitor.host)}</span>'
        f'<span class="badge {esc(dog.state)}">{esc(dog.state)}</span>'
        f'<span class="line small dim">{monitor_line(dog, now, settings)} · created '
        f"{when(monitor.created_at, now)}</span>{_read_back(keep, monitor.idle_after)}{message}"
        f'<span class="actions">{actions}</span></li></ul></section>'
    )
    body = head + _settings_form(monitor, settings, csrf, problem) + _log(events)
    return document(f"{monitor.host} · reaper", body + _delete_form(monitor, csrf))


__all__ = ["monitor_page", "monitor_path"]
