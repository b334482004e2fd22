"""One alert per failure: a failure the instance reports twice — through its notify
(`POST /alert`) and through its monitor (`/fail`, a non-zero exit status) — reaches the phone
once, by whichever path saw it first.

The kit does exactly that: run.sh's exit path sends the notify `<host>: run.sh: job exited
with status 1; ...` and then pings `/<host>/1`; a failed destroy pings `/fail` first and then
notifies. A notify names its host the way the kit writes every notify: `<host>: ` at the
start of its text (or of its title), and that host must have a monitor.

- Notify first: a notify that reached a channel records `notified_at` on the host's monitor
  (one atomic update, the monitor's state left alone). The very next ping clears it; if that
  ping is a failure within FAILURE_WINDOW it sends no alert of its own (the monitor still
  goes down, and its log says why). This costs a plain ping nothing: the ping reads and
  writes the monitor anyway.
- Failure first: a failure alert that reached a channel leaves a mark `failure-alerted:X`
  (an episode); the next notify of X within the window takes it and is answered
  `{"deduplicated": true, ...}` without being forwarded. The mark is taken once (closing an
  episode is one atomic delete in both stores), so a later notify of the same run goes out.

Only a delivered message counts: when one path reached nobody, the other still alerts.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from reaper.core.heartbeat import valid_host
from reaper.core.monitors import FAILURE_WINDOW, SettingsChange
from reaper.store.ports import Store

if TYPE_CHECKING:
    from reaper.core.models import Alert

FAILURE_ALERTED = "failure-alerted:"

_PREFIX = re.compile(r"([A-Za-z0-9._-]{1,100}): ")


def notify_host(alert: Alert, store: Store) -> str | None:
    """The monitor a notify is about: its text starts with `<host>: ` and that monitor exists."""
    found = _PREFIX.match(alert.title)
    if found is None or not valid_host(found.group(1)):
        return None
    host = found.group(1)
    return host if store.get_monitor(host) is not None else None


def notified(store: Store, host: str, now: datetime) -> None:
    """A notify about `host` reached a channel: the next failure ping of it stays quiet."""
    change = SettingsChange(at=now, given=frozenset({"notified_at"}), notified_at=now)
    store.set_monitor_settings(host, change)


def failure_alerted(store: Store, host: str, now: datetime) -> None:
    """A failure alert of `host` reached a channel: the next notify of it stays quiet."""
    store.close_episode(FAILURE_ALERTED + host)
    store.open_episode(FAILURE_ALERTED + host, now)


def failure_alerted_just_now(store: Store, host: str, now: datetime) -> bool:
    """Take the failure mark if one was left within the window; True when it was."""
    episode = store.close_episode(FAILURE_ALERTED + host)
    return episode is not None and timedelta(0) <= now - episode.opened_at < FAILURE_WINDOW


def drop_stale(store: Store, now: datetime) -> None:
    """Marks nobody took: after the window they mean nothing."""
    for episode in store.open_episodes(FAILURE_ALERTED):
        if now - episode.opened_at >= FAILURE_WINDOW:
            store.close_episode(episode.key)


def forget(store: Store, host: str) -> None:
    """A deleted monitor takes its mark with it."""
    store.close_episode(FAILURE_ALERTED + host)
