"""Monitors: each as JSON and in a table, one by one (`reaper monitor ...`,
`/monitors/<host>`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from reaper.core.models import Instance, KeptInstance, Listing, Monitor, PingEvent, instance_key
from reaper.core.monitors import (
    KEEP_FOREVER,
    HostKeep,
    down_after,
    grace_of,
    heard_or_resumed,
    host_keep,
    muted,
    timeout_of,
)
from reaper.core.units import humanize, iso, parse_time, utc, when
from reaper.interfaces.table import format_table
from reaper.providers.plugins import provider_host
from reaper.settings.model import Settings


def _names(listings: Sequence[Listing]) -> dict[str, Instance]:
    """The instances of the last complete listings, by `<provider>:<id>`."""
    return {inst.key: inst for listing in listings for inst in listing.instances}


def _monitor_name(host: str, listed: dict[str, Instance]) -> str:
    """The instance name behind a provider host (`<provider>-<id>`), from the last listing."""
    found = provider_host(host)
    inst = listed.get(f"{found[0]}:{found[1]}") if found else None
    return inst.name if inst else ""


def instance_keep(host: str, kept: Mapping[str, KeptInstance]) -> KeptInstance | None:
    """The keep of the instance a provider host names (`<provider>-<id>`); None for another."""
    found = provider_host(host)
    return kept.get(instance_key(*found)) if found else None


def monitor_keep(
    monitor: Monitor, kept: Mapping[str, KeptInstance], now: datetime
) -> HostKeep | None:
    """The keep the instance reads back on its next JSON ping (the same rule as that answer)."""
    return host_keep(monitor, instance_keep(monitor.host, kept), now)


def keep_text(keep: HostKeep) -> str:
    """ "until 2026-12-05 19:00 UTC", or "with no end set" for a keep `--for forever`."""
    return "with no end set" if keep.until >= KEEP_FOREVER else f"until {utc(keep.until)}"


def monitor_json(
    monitor: Monitor,
    settings: Settings,
    now: datetime,
    name: str = "",
    *,
    kept: Mapping[str, KeptInstance],
) -> dict[str, Any]:
    """`kept`: the instance keeps by instance key (`History.kept`): a provider host reads its
    instance's keep back too."""
    silent_for = now - heard_or_resumed(monitor)
    limit = down_after(monitor, settings.heartbeat_timeout)
    return {
        "host": monitor.host,
        "status": monitor.status,
        "overdue": monitor.status in ("new", "up") and not monitor.paused and silent_for >= limit,
        "created_at": iso(monitor.created_at),
        "last_ping_at": iso(monitor.last_ping_at),
        "last_ping_kind": monitor.last_ping_kind,
        "last_exit_status": monitor.last_exit_status,
        "last_message": monitor.last_message,
        "job_started_at": iso(monitor.job_started_at),
        "job_running": monitor.job_started_at is not None,
        "down_since": iso(monitor.down_since),
        "last_alert_at": iso(monitor.last_alert_at),
        "bye_at": iso(monitor.bye_at),
        "name": name,
        **monitor_settings_json(monitor, settings, now, monitor_keep(monitor, kept, now)),
    }


def monitor_state(m: dict[str, Any]) -> str:
    """One word for a monitor in a table: paused, muted, overdue, or its state."""
    if m["paused"]:
        return "paused"
    state = "overdue" if m["overdue"] else m["status"]
    return f"{state}, muted" if m["muted_until"] else state


def monitor_settings_json(
    monitor: Monitor, settings: Settings, now: datetime, keep: HostKeep | None
) -> dict[str, Any]:
    """A monitor's own settings, in force: durations in whole seconds; `keep_until` and
    `idle_after` exactly as the instance reads them back on its JSON ping, and who set the
    keep."""
    return {
        "timeout": int(timeout_of(monitor, settings.heartbeat_timeout).total_seconds()),
        "timeout_default": monitor.timeout is None,
        "grace": int(grace_of(monitor).total_seconds()),
        "paused": monitor.paused,
        "muted_until": iso(monitor.muted_until) if muted(monitor, now) else None,
        "alert_held": monitor.alert_held,
        "events": monitor.events,
        "keep_until": iso(keep.until) if keep is not None else None,
        "kept_by": (keep.by or None) if keep is not None else None,
        "idle_after": monitor.idle_after or None,
    }


def event_json(event: PingEvent) -> dict[str, Any]:
    return {
        "seq": event.seq,
        "at": iso(event.at),
        "kind": event.kind,
        "exit_status": event.exit_status,
        "body": event.body,
        "client": event.client,
        "note": event.note,
    }


def monitor_detail_json(
    monitor: Monitor,
    events: Sequence[PingEvent],
    settings: Settings,
    now: datetime,
    kept: Mapping[str, KeptInstance],
) -> dict[str, Any]:
    """The object of `GET /monitors/<host>` and `reaper monitor log --json`: the monitor (as
    in `status --json`) and its ping log, oldest first."""
    return {
        "monitor": monitor_json(monitor, settings, now, kept=kept),
        "events": [event_json(e) for e in events],
    }


def _seconds(seconds: int) -> str:
    return humanize(timedelta(seconds=seconds)) if seconds else "0"


def monitors_table(
    monitors: Sequence[Monitor],
    settings: Settings,
    now: datetime,
    kept: Mapping[str, KeptInstance],
) -> str:
    """`reaper monitor list`: every monitor with its own settings, the keep and the idle limit
    its instance reads back among them."""
    if not monitors:
        return "no monitors"
    rows = []
    for monitor in monitors:
        m = monitor_json(monitor, settings, now, kept=kept)
        keep = monitor_keep(monitor, kept, now)
        state = monitor_state(m)
        timeout = _seconds(m["timeout"]) + ("" if m["timeout_default"] else " (own)")
        muted_until = parse_time(m["muted_until"])
        rows.append(
            [
                m["host"],
                state,
                when(parse_time(m["last_ping_at"]), now),
                timeout,
                _seconds(m["grace"]),
                utc(muted_until) if muted_until else "",
                keep_text(keep).removeprefix("until ") if keep is not None else "",
                m["idle_after"] or "",
            ]
        )
    headers = ["host", "state", "last ping", "timeout", "grace", "muted until", "kept", "idle"]
    return format_table(headers, rows)


def monitor_log_lines(monitor: Monitor, events: Sequence[PingEvent]) -> list[str]:
    """`reaper monitor log <host>`: one line per event, oldest first."""
    kept = f"the last {len(events)} of {monitor.events}" if monitor.events > len(events) else "all"
    lines = [f"{monitor.host}: {len(events)} events ({kept}; the log keeps 100)"]
    for e in events:
        kind = f"exit {e.exit_status}" if e.kind == "exit" else e.kind
        body = " ".join(e.body.split())
        body = body if len(body) <= 80 else body[:79] + "…"
        note = f" [{e.note}]" if e.note else ""
        lines.append(f"  {utc(e.at)}  #{e.seq:<5} {kind:<8} {e.client:<15} {body}{note}")
    return lines
