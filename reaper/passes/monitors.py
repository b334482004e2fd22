"""Monitors changed by a person: `reaper monitor set|pause|resume|mute|delete` and
`PUT|DELETE /monitors/<host>` share these, so both behave the same way.

A monitor set for a host that has none is created (that is how monitors come with
HEARTBEAT_AUTO_CREATE=false), under REAPER_MAX_MONITORS like a first ping. Every value has
been checked before anything here runs (`reaper.core.monitors`): a change is whole or none.
"""

from __future__ import annotations

from dataclasses import dataclass

from reaper import log
from reaper.config import Settings
from reaper.core.models import Monitor
from reaper.core.monitors import SettingsChange, apply_change
from reaper.passes import correlate
from reaper.store.base import Store


@dataclass(frozen=True)
class Changed:
    """What a change did: the monitor as written, whether it was created by it, or why it was
    refused (the cap)."""

    monitor: Monitor | None
    created: bool = False
    refused: str = ""


def change_monitor(settings: Settings, store: Store, host: str, change: SettingsChange) -> Changed:
    """Apply `change` to the host's monitor, creating the monitor when there is none."""
    for _attempt in range(2):
        changed = store.set_monitor_settings(host, change)
        if changed is not None:
            log.event("monitor_settings", host=host, changed=",".join(sorted(change.given)))
            return Changed(changed)
        fresh = apply_change(Monitor(host=host, status="new", created_at=change.at), change)
        if store.create_monitor(fresh, settings.max_monitors):
            log.event("monitor_settings", host=host, changed="created")
            return Changed(fresh, created=True)
        if store.get_monitor(host) is None:
            return Changed(
                None,
                refused=(
                    f"monitor limit reached: {settings.max_monitors} monitors exist "
                    f"(REAPER_MAX_MONITORS); {host} was not created"
                ),
            )
        # Created meanwhile by a first ping: change that one.
    return Changed(store.set_monitor_settings(host, change))


def delete_monitor(store: Store, host: str) -> bool:
    """The monitor, its ping log and its failure marks; False when there was no monitor."""
    if store.get_monitor(host) is None:
        return False
    store.delete_monitor(host)
    correlate.forget(store, host)
    log.event("monitor_deleted", host=host)
    return True
