"""The two-way heartbeat: what a ping that asks for JSON is answered — whether the instance is
kept, and the idle limit `reaper idle` set for it — so that the watchdog inside the instance
obeys a Keep pressed on the phone within one ping period.

Imported by the first ping that asks for JSON (`reaper.interfaces.http`): a plain ping reads
nothing more than its monitor and never loads this. A keep is found in two places: on the
monitor itself (`reaper keep host:<host>`, a Keep pressed on the instance's idle warning) and,
for a provider host (`<prefix>-<id>`, each provider's prefix), in the keep of its instance
(`reaper keep <provider>:<id>`, the status page, a termination warning's button) — the later
end wins (`reaper.core.monitors.host_keep`, which the monitor views show too). Of the pings,
only this answer reads the instance's keep, so only a JSON ping pays for it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import format_datetime

from reaper.core.monitors import host_keep
from reaper.core.records import Monitor
from reaper.core.units import iso
from reaper.interfaces.api import App, Response, json_response
from reaper.providers.plugins import provider_host


def keep_until(app: App, monitor: Monitor, now: datetime) -> datetime | None:
    """When the instance's keep ends (KEEP_FOREVER for none), None when it is not kept now."""
    from reaper.core.models import instance_key

    parsed = provider_host(monitor.host)
    kept = None
    if parsed is not None:
        # Point reads of that one instance (the whole history would be read on every ping).
        key = instance_key(*parsed)
        kept = app.store.history_of(key, now).kept.get(key)
    keep = host_keep(monitor, kept, now)
    return keep.until if keep is not None else None


def heartbeat_answer(app: App, monitor: Monitor) -> Response:
    """200 {"ok": true, "keep_until", "idle_after"} with the guard's own `Date`: the kit
    judges the keep against it, never against the instance's clock."""
    now = app.clock.now()
    until = keep_until(app, monitor, now)
    body = {
        "ok": True,
        "keep_until": iso(until) if until is not None else None,
        "idle_after": monitor.idle_after or None,
    }
    response = json_response(200, body)
    date = format_datetime(now.astimezone(UTC), usegmt=True)
    return Response(response.status, response.body, {**response.headers, "date": date})
