"""Monitors changed by a person: `reaper monitor set|pause|resume|mute|delete` and
`PUT|DELETE /monitors/<host>` share these, so both behave the same way.

A monitor set for a host that has none is created (that is how monitors come with
HEARTBEAT_AUTO_CREATE=false), under REAPER_MAX_MONITORS like a first ping. Every value has
been checked before anything here runs (`reaper.core.monitors`): a change is whole or none.

Each change a person makes — settings, pause, resume, mute, delete, from the command line,
the admin API or the status page — leaves an action record saying who asked, through what
and when (`reaper audit`), the same trail keeps and phone presses leave.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from reaper import log
from reaper.core.models import ActionKind, ActionRecord, Monitor
from reaper.core.monitors import SettingsChange, apply_change, describe_change
from reaper.passes import correlate
from reaper.settings.model import Settings
from reaper.store.ports import Store


@dataclass(frozen=True)
class Changed:
    """What a change did: the monitor as written, whether it was created by it, or why it was
    refused (the cap)."""

    monitor: Monitor | None
    created: bool = False
    refused: str = ""


@dataclass(frozen=True)
class Asker:
    """Who asks for a change, and through what, as the action record names them."""

    by: str
    via: str


def _record(
    store: Store, asker: Asker, kind: ActionKind, host: str, at: datetime, done: bool, result: str
) -> None:
    label = {"set": "Set", "pause": "Pause", "resume": "Resume", "mute": "Mute"}.get(kind, "")
    store.record_action(
        ActionRecord(
            at=at,
            kind=kind,
            label=label or kind.capitalize(),
            targets=(host,),
            subject=host,
            by=asker.by,
            via=asker.via,
            done=done,
            result=result,
        )
    )


def _kind_of(change: SettingsChange) -> ActionKind:
    if change.given == {"paused"}:
        return "pause" if change.paused else "resume"
    if change.given == {"muted_until"}:
        return "mute" if change.muted_until is not None else "unmute"
    if change.given == {"keep_until"}:
        return "keep" if change.keep_until is not None else "unkeep"
    return "set"


def change_monitor(
    settings: Settings, store: Store, host: str, change: SettingsChange, asker: Asker
) -> Changed:
    """Apply `change` to the host's monitor, creating the monitor when there is none. A keep
    is written with who asked for it."""
    if "keep_until" in change.given:
        change = replace(change, keep_by=asker.by)
    changed = _change(settings, store, host, change)
    what = describe_change(change)
    if changed.monitor is None:
        _record(store, asker, _kind_of(change), host, change.at, False, changed.refused)
    else:
        prefix = "created with " if changed.created else ""
        _record(store, asker, _kind_of(change), host, change.at, True, prefix + what)
    return changed


def _change(settings: Settings, store: Store, host: str, change: SettingsChange) -> Changed:
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


def pause_monitor(store: Store, host: str, *, paused: bool, at: datetime, asker: Asker) -> bool:
    """Pause (or resume) an existing monitor; False when there is none (nothing recorded)."""
    if not store.pause_monitor(host, paused, at):
        return False
    kind: ActionKind = "pause" if paused else "resume"
    result = "paused: never alerts until resumed" if paused else "resumed: silence counts from now"
    _record(store, asker, kind, host, at, True, result)
    log.event("monitor_" + kind, host=host, by=asker.by)
    return True


def mute_monitor(
    store: Store, host: str, *, until: datetime | None, at: datetime, asker: Asker
) -> bool:
    """Mute an existing monitor until `until` (None unmutes); False when there is none."""
    if not store.mute_monitor(host, until):
        return False
    kind: ActionKind = "mute" if until is not None else "unmute"
    change = SettingsChange(at=at, given=frozenset({"muted_until"}), muted_until=until)
    result = describe_change(change)
    _record(store, asker, kind, host, at, True, result)
    log.event("monitor_" + kind, host=host, by=asker.by)
    return True


def delete_monitor(store: Store, host: str, *, at: datetime, asker: Asker) -> bool:
    """The monitor, its ping log and its failure marks; False when there was no monitor."""
    if store.get_monitor(host) is None:
        return False
    store.delete_monitor(host)
    correlate.forget(store, host)
    _record(store, asker, "delete", host, at, True, "deleted with its ping log")
    log.event("monitor_deleted", host=host, by=asker.by)
    return True
