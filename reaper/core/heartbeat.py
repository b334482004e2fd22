"""The dead-man's switch, pure: what a ping does to a monitor.

State machine (`Monitor.status`):

    (none) --first ping--> new --ping--> up --silence > HEARTBEAT_TIMEOUT--> down --ping--> up
    any --/fail or exit != 0--> down (alert at once)     plain host --/bye--> retired --ping--> up
    provider host --/bye--> records bye_at only (a down monitor stays down: no recovery)

- The recovery alert goes out on the ping that revives a monitor (with the downtime), not on
  the next watch pass: the phone hears "back" as soon as the host is back.
- Downtime runs from the last ping before the silence (or from the `/fail`).
- For a provider host (a key for that provider configured) `bye` only records `bye_at`; the
  watch pass retires the monitor when the provider shows the instance gone or stopped. Silence
  after `bye` while the instance still bills alerts like any silence: a leaked ping key must
  not be able to silence another instance's watchdog.
- Paused (`Monitor.paused`): any ping resumes it; a sign of life after a pause sends no
  recovery alert (nobody was told it was down), a failure alerts as ever (as Healthchecks).
- Muted (`Monitor.muted_until`): the state moves as ever, the alert does not go out; a failure
  held back this way is said once by the watch pass when the mute ends (`alert_held`).
- The first ping of an unknown plain host announces the new monitor (a typo'd host is seen at
  once); a provider host, which the kit spells from its instance's id, is cross-checked
  instead.
- A failure ping right after the instance's own notify about it (`notified_at`, the next ping
  within FAILURE_WINDOW) sends no second alert.
- Every ping is an event of the monitor's log (`PingEvent`); `/log` is only that.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from reaper.core.monitors import log_body, muted, notified_just_now
from reaper.core.records import Monitor, PingEvent
from reaper.core.units import iso

if TYPE_CHECKING:
    from reaper.core.models import Alert

PingKind = Literal["ping", "start", "fail", "exit", "bye", "log"]

_HOST = re.compile(r"[A-Za-z0-9._-]{1,100}")


# What `valid_host` accepts, as every refusal of a host says it.
HOST_RULE = "expected 1-100 of A-Z a-z 0-9 . _ - (not . or ..)"


def valid_host(host: str) -> bool:
    """1-100 of [A-Za-z0-9._-], and not "." or ".." (the host ends up in URLs and logs)."""
    return bool(_HOST.fullmatch(host)) and host not in (".", "..")


@dataclass(frozen=True)
class Ping:
    """One request to `/ping/<key>/<host>[/...]`. `message` None keeps the last message."""

    host: str
    kind: PingKind = "ping"
    exit_status: int | None = None
    message: str | None = None
    # The client's address, for the ping log.
    client: str = ""


@dataclass(frozen=True)
class Transition:
    monitor: Monitor
    alert: Alert | None = None
    # What the ping log records of this ping.
    event: PingEvent | None = None


def _messages() -> Any:
    """The alert texts (and the pydantic models they build), imported by the first ping that
    alerts: an ordinary ping never needs them, and a cold one should not pay for them."""
    from reaper.core import messages

    return messages


def failing(ping: Ping) -> bool:
    """A ping that reports a failure: `/fail`, or an exit status other than 0."""
    return ping.kind == "fail" or (ping.kind == "exit" and ping.exit_status != 0)


def event_of(ping: Ping, seq: int, now: datetime, note: str = "") -> PingEvent:
    return PingEvent(
        seq=seq,
        at=now,
        kind=ping.kind,
        exit_status=ping.exit_status,
        body=log_body(ping.message),
        client=ping.client,
        note=note,
    )


def apply_log(current: Monitor, ping: Ping, now: datetime) -> Transition:
    """`/log`: an event of the monitor's log, and nothing else about it changes."""
    seq = current.events + 1
    return Transition(current.model_copy(update={"events": seq}), None, event_of(ping, seq, now))


def apply_ping(current: Monitor | None, ping: Ping, now: datetime, *, guarded: bool) -> Transition:
    """The state machine for one ping, pure: the new monitor, the alert to send if any, and
    the event for its log.

    `guarded` is True for a provider host that the watch pass can cross-check: its `bye` only
    records the wish to go away.
    """
    transition = _apply(current, ping, now, guarded=guarded)
    monitor, alert = transition.monitor, transition.alert
    note = ""
    if current is None:
        note = "created the monitor"
        if not guarded:
            # A name someone typed: say it once, so that a typo is seen. A provider host is
            # the kit's own spelling of its instance, cross-checked with the provider.
            created = _messages().monitor_created(ping.host)
            alert = created if alert is None else _messages().with_note(alert, created.title + ".")
    elif alert is not None and failing(ping) and notified_just_now(current, now):
        # run.sh's notify said it a moment ago: one alert per failure.
        note = "alert already sent by the instance's notify"
        alert = None
    elif alert is not None and muted(monitor, now):
        note = f"alert held: muted until {iso(monitor.muted_until)}"
        held = alert.event == "monitor_failed"
        monitor = monitor.model_copy(update={"alert_held": held})
        alert = None
    return Transition(monitor, alert, event_of(ping, monitor.events, now, note))


def _apply(current: Monitor | None, ping: Ping, now: datetime, *, guarded: bool) -> Transition:
    base = current or Monitor(host=ping.host, status="new", created_at=now)
    was_down = current is not None and current.status == "down"
    # A ping is a sign its instance exists: an absence seen by a listing starts over.
    changes: dict[str, Any] = {
        "last_ping_at": now,
        "last_ping_kind": ping.kind,
        "absent_since": None,
        # Any ping resumes a paused monitor, and follows whatever notify came before it.
        "paused": False,
        "notified_at": None,
        # It is the next event of the monitor's log.
        "events": base.events + 1,
    }
    if ping.message is not None:
        changes["last_message"] = ping.message
    if ping.kind == "exit":
        changes["last_exit_status"] = ping.exit_status

    if failing(ping):
        changes |= {
            "status": "down",
            "down_since": base.down_since if was_down else now,
            "job_started_at": None,
            "bye_at": None,
            "stopped_noted": False,
        }
        if was_down:
            return Transition(base.model_copy(update=changes))
        changes["last_alert_at"] = now
        message = ping.message if ping.message is not None else base.last_message
        exit_status = ping.exit_status if ping.kind == "exit" else None
        failed = _messages().monitor_failed(ping.host, exit_status, message)
        return Transition(base.model_copy(update=changes), failed)

    if ping.kind == "bye" and not guarded:
        changes |= {
            "status": "retired",
            "bye_at": now,
            "down_since": None,
            "job_started_at": None,
            "alert_held": False,
        }
        return Transition(base.model_copy(update=changes))

    if ping.kind == "bye" and was_down:
        # run.sh reports a failed job (/<status>) and then says bye: that is no recovery. The
        # watch pass retires the monitor once the provider shows the instance stopped or gone.
        return Transition(base.model_copy(update=changes | {"bye_at": now}))

    # A sign of life: ping, start, exit 0, or a guarded bye of a monitor that is not down.
    changes |= {
        "status": "new" if current is None else "up",
        "down_since": None,
        "stopped_noted": False,
        "bye_at": now if ping.kind == "bye" else None,
        "job_started_at": now if ping.kind == "start" else None,
        "alert_held": False,
    }
    if not (was_down and current is not None) or base.paused:
        # Back from a pause: as in Healthchecks, no recovery alert (the pause said "not now").
        return Transition(base.model_copy(update=changes))
    changes["last_alert_at"] = now
    downtime = now - (current.down_since or now)
    return Transition(
        base.model_copy(update=changes), _messages().monitor_recovered(ping.host, downtime)
    )
