"""`reaper monitor list|log|set|pause|resume|mute|unmute|delete`: monitors, one by one; and
what a monitor's instance reads back from its pings (`reaper keep host:<host>`, `reaper idle`).

Each command reads or changes the store directly (no pass runs): the watch pass and the pings
pick the change up at once. A host that is not valid, or a setting out of range, is a one-line
exit 2 before the store is opened; a host with no monitor is a bad argument too: one line
naming the nearest hosts that have one, exit 2, nothing changed.
"""

from __future__ import annotations

import json
import sys
from datetime import timedelta

from reaper.app import wiring
from reaper.clock import Clock, SystemClock
from reaper.core.heartbeat import HOST_RULE, valid_host
from reaper.core.monitors import KEEP_FOREVER, SettingsChange
from reaper.core.units import humanize, iso, utc
from reaper.interfaces import views
from reaper.interfaces.nearest import nearest
from reaper.passes.keeping import command_line_user
from reaper.passes.monitors import (
    Asker,
    change_monitor,
    delete_monitor,
    mute_monitor,
    pause_monitor,
)
from reaper.settings.model import Settings
from reaper.settings.parse import ConfigError
from reaper.store.ports import Store

EXIT_OK = 0
EXIT_ATTENTION = 1


def _checked(host: str) -> str:
    if not valid_host(host):
        raise ConfigError("<host>", HOST_RULE)
    return host


def _asker() -> Asker:
    return Asker(by=command_line_user(), via="command line")


def _missing(host: str, store: Store) -> ConfigError:
    """A host with no monitor is a bad argument (exit 2), named with the nearest hosts that
    have one: a typo must not read as "nothing to do"."""
    near = nearest(host, (m.host for m in store.list_monitors()))
    return ConfigError(
        "<host>", f"no monitor {host}; nearest: {', '.join(near) or 'none (no monitors)'}"
    )


def monitor_list(settings: Settings, *, json_output: bool, clock: Clock | None = None) -> int:
    now = (clock or SystemClock()).now()
    with wiring.opened(settings, read_only=True, existing=True) as runtime:
        store = runtime.store
        monitors = store.list_monitors()
        kept = store.history().kept
    if json_output:
        data = {
            "at": iso(now),
            "monitors": [views.monitor_json(m, settings, now, kept=kept) for m in monitors],
        }
        print(json.dumps(data, ensure_ascii=False))
    else:
        print(views.monitors_table(monitors, settings, now, kept))
    return EXIT_OK


def monitor_log(
    settings: Settings, host: str, *, json_output: bool, clock: Clock | None = None
) -> int:
    host = _checked(host)
    now = (clock or SystemClock()).now()
    with wiring.opened(settings, read_only=True, existing=True) as runtime:
        store = runtime.store
        monitor = store.get_monitor(host)
        if monitor is None:
            raise _missing(host, store)
        events = store.monitor_log(host)
        kept = store.history().kept if json_output else {}
    if json_output:
        print(json.dumps(views.monitor_detail_json(monitor, events, settings, now, kept)))
    else:
        print("\n".join(views.monitor_log_lines(monitor, events)))
    return EXIT_OK


def monitor_set(
    settings: Settings,
    host: str,
    *,
    timeout: timedelta | str | None,
    grace: timedelta | str | None,
    clock: Clock | None = None,
) -> int:
    """`timeout`/`grace`: None (not given) leaves one as it is, "default" resets it.
    A host without a monitor gets one (under REAPER_MAX_MONITORS)."""
    host = _checked(host)
    now = (clock or SystemClock()).now()
    values: dict[str, timedelta | None] = {}
    for name, value in (("timeout", timeout), ("grace", grace)):
        if value is not None:
            values[name] = None if isinstance(value, str) else value
    change = SettingsChange(at=now, given=frozenset(values), **values)  # type: ignore[arg-type]
    with wiring.opened(settings) as runtime:
        store = runtime.store
        changed = change_monitor(settings, store, host, change, _asker())
    if changed.monitor is None:
        print(f"reaper: {changed.refused}", file=sys.stderr)
        return EXIT_ATTENTION
    m = views.monitor_settings_json(changed.monitor, settings, now, None)
    timeout_text = humanize(timedelta(seconds=m["timeout"]))
    default = " (HEARTBEAT_TIMEOUT)" if m["timeout_default"] else ""
    grace_text = humanize(timedelta(seconds=m["grace"])) if m["grace"] else "none"
    what = "created" if changed.created else "set"
    print(f"{what} {host}: timeout {timeout_text}{default}, grace {grace_text}")
    return EXIT_OK


def monitor_pause(
    settings: Settings, host: str, *, paused: bool, clock: Clock | None = None
) -> int:
    host = _checked(host)
    now = (clock or SystemClock()).now()
    with wiring.opened(settings) as runtime:
        store = runtime.store
        if not pause_monitor(store, host, paused=paused, at=now, asker=_asker()):
            raise _missing(host, store)
    if paused:
        print(f"paused {host}: it never alerts until resumed (any ping resumes it)")
    else:
        print(f"resumed {host}: its silence counts from now")
    return EXIT_OK


def monitor_mute(
    settings: Settings, host: str, *, duration: timedelta | None, clock: Clock | None = None
) -> int:
    """`duration` None unmutes."""
    host = _checked(host)
    now = (clock or SystemClock()).now()
    until = None if duration is None else now + duration
    with wiring.opened(settings) as runtime:
        store = runtime.store
        if not mute_monitor(store, host, until=until, at=now, asker=_asker()):
            raise _missing(host, store)
    if until is None:
        print(f"unmuted {host}")
    else:
        print(f"muted {host} until {utc(until)}: its state is tracked, no alert goes out")
    return EXIT_OK


def monitor_delete(settings: Settings, host: str, *, clock: Clock | None = None) -> int:
    host = _checked(host)
    now = (clock or SystemClock()).now()
    with wiring.opened(settings) as runtime:
        store = runtime.store
        if not delete_monitor(store, host, at=now, asker=_asker()):
            raise _missing(host, store)
    print(f"deleted {host} and its ping log (its next ping creates it anew, if auto-create is on)")
    return EXIT_OK


def _changed(settings: Settings, host: str, change: SettingsChange) -> int | None:
    """Apply a change to the host's monitor (created under the cap if missing); exit 1 with
    the reason when the cap refused it, None when done."""
    with wiring.opened(settings) as runtime:
        changed = change_monitor(settings, runtime.store, host, change, _asker())
    if changed.monitor is None:
        print(f"reaper: {changed.refused}", file=sys.stderr)
        return EXIT_ATTENTION
    return None


def monitor_keep(
    settings: Settings, host: str, *, duration: timedelta | None, clock: Clock | None = None
) -> int:
    """`reaper keep host:<host>`: the instance that pings as `host` reads the keep back on its
    next ping and does not destroy itself for idleness before it ends (`duration` None: no
    end, until `reaper unkeep host:<host>`)."""
    host = _checked(host)
    now = (clock or SystemClock()).now()
    until = KEEP_FOREVER if duration is None else now + duration
    change = SettingsChange(at=now, given=frozenset({"keep_until"}), keep_until=until)
    if (refused := _changed(settings, host, change)) is not None:
        return refused
    end = "until `reaper unkeep host:" + host + "`" if duration is None else f"until {utc(until)}"
    print(f"kept {host} {end}: its idle-watch reads it back on its next ping")
    return EXIT_OK


def monitor_unkeep(settings: Settings, host: str, *, clock: Clock | None = None) -> int:
    host = _checked(host)
    now = (clock or SystemClock()).now()
    change = SettingsChange(at=now, given=frozenset({"keep_until"}), keep_until=None)
    with wiring.opened(settings) as runtime:
        if runtime.store.get_monitor(host) is None:
            raise _missing(host, runtime.store)
        change_monitor(settings, runtime.store, host, change, _asker())
    print(f"no longer kept: {host} (its idle-watch reads it back on its next ping)")
    return EXIT_OK


def monitor_idle(settings: Settings, host: str, *, after: str, clock: Clock | None = None) -> int:
    """`reaper idle <host>`: `after` is what the instance reads back as `idle_after` ("90m",
    "never", or "" for its own IDLE_LIMIT)."""
    host = _checked(host)
    now = (clock or SystemClock()).now()
    change = SettingsChange(at=now, given=frozenset({"idle_after"}), idle_after=after)
    if (refused := _changed(settings, host, change)) is not None:
        return refused
    said = {"": "its own IDLE_LIMIT", "never": "never (no idle destroy)"}.get(after, after)
    print(f"{host}: idle limit {said}, read back on its next ping")
    return EXIT_OK
