"""The dead-man's switch: monitors, what a ping does to them, and the watch pass.

A watchdog inside an instance dies with the instance (preempted, OOM-killed, never started);
the only thing that notices is something outside that hears the silence. Pings change a monitor
at once (`record_ping`); silence is noticed by `watch_pass`, which runs every minute under
`reaper serve` (or from cron as `reaper watch`).

State machine (`Monitor.status`):

    (none) --first ping--> new --ping--> up --silence > HEARTBEAT_TIMEOUT--> down --ping--> up
    any --/fail or exit != 0--> down (alert at once)     plain host --/bye--> retired --ping--> up
    provider host --/bye--> records bye_at only (a down monitor stays down: no recovery)

Design choices the README documents:
- The recovery alert goes out on the ping that revives a monitor (with the downtime), not on
  the next watch pass: the phone hears "back" as soon as the host is back.
- Downtime runs from the last ping before the silence (or from the `/fail`).
- For a provider host (`runpod-<id>`, `vast-<id>`, with a key for that provider configured)
  `bye` only records `bye_at`; the watch pass retires the monitor when the provider shows the
  instance gone or stopped. Silence after `bye` while the instance still bills alerts like any
  silence: a leaked ping key must not be able to silence another instance's watchdog. Without a
  key for that provider nothing can be cross-checked, so such a host is treated as plain.
- Under `serve`, silence is counted from the later of the last ping and the moment the server
  started listening: pings sent while the server was down could not arrive, and a restart must
  not turn every monitor into an alert.
- Alerts of one pass beyond `STORM_LIMIT` are folded into one summary alert.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from reaper import log
from reaper.clock import Clock, SystemClock, iso
from reaper.config import Settings
from reaper.models import Alert, History, Instance, Monitor, ProviderName, ReapRun
from reaper.notify import messages
from reaper.notify.base import Notifier
from reaper.providers.base import ProviderClient, ProviderError
from reaper.store.base import Store

PingKind = Literal["ping", "start", "fail", "exit", "bye"]

# More alerts than this in one watch pass are folded into one summary alert.
STORM_LIMIT = 20
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_HOST = re.compile(r"[A-Za-z0-9._-]{1,100}")
_PROVIDER_HOST = re.compile(r"(runpod|vast)-([A-Za-z0-9._-]+)")
_UNWATCHED = "unwatched:"
_YIELD_EVERY = 100
_REAPER_SILENT = "reaper:silent"
_NO_REAP_YET = "reaper:no-reap-yet"
# An /alert not yet delivered (reaper.http): an episode under this prefix + the alert's key.
UNDELIVERED_ALERT = "alert-undelivered:"
# A mark matters only within the alert's one-minute dedup window; older ones are dropped.
_UNDELIVERED_KEPT = timedelta(hours=1)
# How long a retired monitor stays after it was last heard from (see prune_retired).
RETIRED_KEPT = timedelta(days=7)


def valid_host(host: str) -> bool:
    """1-100 of [A-Za-z0-9._-], and not "." or ".." (the host ends up in URLs and logs)."""
    return bool(_HOST.fullmatch(host)) and host not in (".", "..")


def provider_host(host: str) -> tuple[ProviderName, str] | None:
    """`runpod-<podId>` / `vast-<instanceId>` -> (provider, id); any other host -> None."""
    match = _PROVIDER_HOST.fullmatch(host)
    if match is None:
        return None
    provider: ProviderName = "runpod" if match.group(1) == "runpod" else "vast"
    return provider, match.group(2)


def _cross_checkable(host: str, settings: Settings) -> tuple[ProviderName, str] | None:
    """A provider host whose provider we hold a key for; only those get the `bye` protection."""
    parsed = provider_host(host)
    if parsed is None:
        return None
    accounts = settings.runpod_accounts if parsed[0] == "runpod" else settings.vast_accounts
    return parsed if accounts else None


# --- pings --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ping:
    """One request to `/ping/<key>/<host>[/...]`. `message` None keeps the last message."""

    host: str
    kind: PingKind = "ping"
    exit_status: int | None = None
    message: str | None = None


@dataclass(frozen=True)
class PingOutcome:
    accepted: bool
    # Why a ping was refused (the monitor cap), one line for the HTTP answer.
    reason: str = ""
    monitor: Monitor | None = None
    alert: Alert | None = None


@dataclass(frozen=True)
class Transition:
    monitor: Monitor
    alert: Alert | None = None


def _failing(ping: Ping) -> bool:
    return ping.kind == "fail" or (ping.kind == "exit" and ping.exit_status != 0)


def apply_ping(current: Monitor | None, ping: Ping, now: datetime, *, guarded: bool) -> Transition:
    """The state machine for one ping, pure: the new monitor and the alert to send, if any.

    `guarded` is True for a provider host that the watch pass can cross-check: its `bye` only
    records the wish to go away.
    """
    base = current or Monitor(host=ping.host, status="new", created_at=now)
    was_down = current is not None and current.status == "down"
    # A ping is a sign its instance exists: an absence seen by a listing starts over.
    changes: dict[str, Any] = {
        "last_ping_at": now,
        "last_ping_kind": ping.kind,
        "absent_since": None,
    }
    if ping.message is not None:
        changes["last_message"] = ping.message
    if ping.kind == "exit":
        changes["last_exit_status"] = ping.exit_status

    if _failing(ping):
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
        failed = messages.monitor_failed(ping.host, exit_status, message)
        return Transition(base.model_copy(update=changes), failed)

    if ping.kind == "bye" and not guarded:
        changes |= {"status": "retired", "bye_at": now, "down_since": None, "job_started_at": None}
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
    }
    if not (was_down and current is not None):
        return Transition(base.model_copy(update=changes))
    changes["last_alert_at"] = now
    downtime = now - (current.down_since or now)
    return Transition(
        base.model_copy(update=changes), messages.monitor_recovered(ping.host, downtime)
    )


def _cap_reason(settings: Settings) -> str:
    return (
        f"monitor limit reached: {settings.max_monitors} monitors exist "
        "(REAPER_MAX_MONITORS); this host was not created"
    )


async def record_ping(
    settings: Settings, store: Store, notifier: Notifier, clock: Clock, ping: Ping
) -> PingOutcome:
    """Apply one ping to the store and send its alert, if it has one.

    The read and the write happen with no `await` between them, so that within one event loop
    a watch pass or another ping never interleaves with them; the alert is sent after the
    write, so a slow channel never holds the monitor's state back.
    """
    guarded = _cross_checkable(ping.host, settings) is not None
    for _attempt in range(2):
        now = clock.now()
        current = store.get_monitor(ping.host)
        if current is None and ping.kind == "bye":
            return PingOutcome(accepted=True)  # nothing to retire
        transition = apply_ping(current, ping, now, guarded=guarded)
        placed = _place(store, current, transition.monitor, settings.max_monitors)
        if placed is None:
            continue  # created meanwhile by another process: apply to that one
        if not placed:
            return PingOutcome(accepted=False, reason=_cap_reason(settings))
        if transition.alert is not None:
            log.event("monitor", host=ping.host, change=transition.alert.event)
            await notifier.send(transition.alert)
        return PingOutcome(accepted=True, monitor=transition.monitor, alert=transition.alert)
    return PingOutcome(accepted=False, reason=_cap_reason(settings))


def _place(store: Store, current: Monitor | None, monitor: Monitor, limit: int) -> bool | None:
    """Write the monitor. A first ping and a retired monitor coming back both take a place
    under REAPER_MAX_MONITORS: otherwise ping + bye + ping on the same names would walk past
    the cap. True if written, False if the cap refused it (a refused revival leaves the
    retired monitor as it was), None if another process created the host meanwhile."""
    reviving = current is not None and current.status == "retired" and monitor.status != "retired"
    if current is not None and not reviving:
        store.put_monitor(monitor)
        return True
    if reviving:
        store.delete_monitor(monitor.host)  # create_monitor counts, and wants a new host
    if store.create_monitor(monitor, limit):
        return True
    if store.get_monitor(monitor.host) is not None:
        return None
    if current is not None:
        store.put_monitor(current)
    return False


def prune_retired(settings: Settings, store: Store, now: datetime) -> int:
    """Retired monitors watch nothing. They stay for `reaper status` a week after they were
    last heard from, and only the REAPER_MAX_MONITORS most recently heard: ping + bye on new
    names with a leaked key cannot grow the store without bound, while a fleet of short-lived
    instances churns freely (a retired monitor never takes a place under the cap)."""
    return store.delete_retired(now - RETIRED_KEPT, keep=settings.max_monitors)


# --- the cross-check ----------------------------------------------------------------------


Verdict = Literal["billing", "stopped", "gone", "unknown"]


@dataclass(frozen=True)
class ListingError:
    provider: ProviderName
    account: str
    message: str


@dataclass
class Fleet:
    """What one listing per account said, for this pass."""

    instances: dict[str, Instance] = field(default_factory=dict)
    errors: list[ListingError] = field(default_factory=list)
    # Providers listed, with every one of their accounts complete.
    complete: set[ProviderName] = field(default_factory=set)
    listed: set[ProviderName] = field(default_factory=set)

    def verdict(self, provider: ProviderName, instance_id: str) -> tuple[Verdict, Instance | None]:
        inst = self.instances.get(f"{provider}:{instance_id}")
        if inst is None:
            return ("gone", None) if provider in self.complete else ("unknown", None)
        if inst.state == "terminated":
            return "gone", inst
        if inst.state == "stopped":
            return "stopped", inst
        if inst.state in ("running", "starting"):
            return "billing", inst
        return "unknown", inst

    def why_unknown(self, provider: ProviderName, inst: Instance | None) -> str:
        if inst is not None:
            return f"cross-check: {provider} reports status {inst.raw_status!r}"
        failed = [e for e in self.errors if e.provider == provider]
        if failed:
            first = failed[0]
            return f"cross-check with {provider} ({first.account}) failed: {first.message}"
        return f"cross-check with {provider} was not possible"


async def list_fleet(clients: Sequence[ProviderClient], providers: set[ProviderName]) -> Fleet:
    """One listing per account of each provider asked for, all at once."""
    chosen = [c for c in clients if c.provider in providers]
    results = await asyncio.gather(*(c.list_instances() for c in chosen), return_exceptions=True)
    fleet = Fleet()
    failed: set[ProviderName] = set()
    for client, result in zip(chosen, results, strict=True):
        fleet.listed.add(client.provider)
        if isinstance(result, BaseException):
            message = (
                result.message
                if isinstance(result, ProviderError)
                else (f"unexpected {result.__class__.__name__}")
            )
            fleet.errors.append(ListingError(client.provider, client.account, log.redact(message)))
            failed.add(client.provider)
            continue
        for inst in result:
            fleet.instances[inst.key] = inst
    fleet.complete = fleet.listed - failed
    return fleet


# --- the watch pass -----------------------------------------------------------------------


@dataclass
class WatchReport:
    """What one watch pass saw and did; `to_json()` is the `reaper watch --json` object."""

    at: datetime
    monitors: int = 0
    down: list[str] = field(default_factory=list)
    went_down: list[str] = field(default_factory=list)
    reminded: list[str] = field(default_factory=list)
    billing_silent: list[str] = field(default_factory=list)
    stopped: list[str] = field(default_factory=list)
    retired: list[str] = field(default_factory=list)
    # Provider hosts missing from one complete listing: retired if the next one agrees.
    absent: list[str] = field(default_factory=list)
    unwatched: list[str] = field(default_factory=list)
    reaper_silent: bool = False
    reaping: bool = False
    alerts: list[Alert] = field(default_factory=list)
    errors: list[ListingError] = field(default_factory=list)
    cross_checked: list[str] = field(default_factory=list)
    # Retired monitors deleted by this pass (prune_retired).
    pruned: int = 0

    @property
    def exit_code(self) -> int:
        """1 (needs attention) when a monitor is down, a listing failed or the reaper is silent."""
        return 1 if (self.down or self.errors or self.reaper_silent) else 0

    def to_json(self) -> dict[str, Any]:
        return {
            "at": iso(self.at),
            "monitors": self.monitors,
            "down": self.down,
            "went_down": self.went_down,
            "reminded": self.reminded,
            "billing_silent": self.billing_silent,
            "stopped": self.stopped,
            "retired": self.retired,
            "absent": self.absent,
            "unwatched": self.unwatched,
            "reaping": self.reaping,
            "reaper_silent": self.reaper_silent,
            "alerts": [{"event": a.event, "level": a.level, "title": a.title} for a in self.alerts],
            "errors": [
                {"provider": e.provider, "account": e.account, "message": e.message}
                for e in self.errors
            ],
            "exit_code": self.exit_code,
        }


@dataclass
class _Pass:
    """Everything one pass needs, so the per-monitor steps stay small functions."""

    settings: Settings
    store: Store
    now: datetime
    listening_since: datetime
    fleet: Fleet
    report: WatchReport

    def silent_since(self, monitor: Monitor) -> datetime:
        return max(monitor.last_ping_at or monitor.created_at, self.listening_since)

    def silent(self, monitor: Monitor) -> bool:
        return self.now - self.silent_since(monitor) >= self.settings.heartbeat_timeout

    def claim(self, host: str, what: str, anchor: datetime | None) -> bool:
        """True if this process is the one to send this alert (another watcher may race us)."""
        key = f"heartbeat:{host}:{what}:{iso(anchor)}"
        return self.store.claim_alert(key, self.now, self.settings.heartbeat_repeat)

    def alert(self, alert: Alert) -> None:
        self.report.alerts.append(alert)


def _needs_look(p: _Pass, monitor: Monitor) -> bool:
    if monitor.status == "retired":
        return False
    guarded = _cross_checkable(monitor.host, p.settings) is not None
    return monitor.status == "down" or p.silent(monitor) or (guarded and monitor.bye_at is not None)


def _go_down(
    p: _Pass, m: Monitor, alert: Alert, what: str = "down", anchor: datetime | None = None
) -> Monitor:
    """`what` and `anchor` name the condition for de-duplication (default: down since the
    silence began): a new condition needs a key of its own, or it is taken for a repeat."""
    down_since = p.silent_since(m)
    changed = m.model_copy(
        update={"status": "down", "down_since": down_since, "last_alert_at": p.now}
    )
    p.report.went_down.append(m.host)
    if p.claim(m.host, what, anchor or down_since):
        p.alert(alert)
    return changed


def _remind(p: _Pass, m: Monitor, alert: Alert) -> Monitor:
    last = m.last_alert_at or m.down_since or p.now
    if p.now - last < p.settings.heartbeat_repeat:
        return m
    p.report.reminded.append(m.host)
    since = m.down_since or last
    number = int((p.now - since) / p.settings.heartbeat_repeat)
    if p.claim(m.host, f"remind{number}", since):
        p.alert(alert)
    return m.model_copy(update={"last_alert_at": p.now})


def _plain(p: _Pass, m: Monitor, note: str = "") -> Monitor:
    """Down after the timeout, then a reminder every HEARTBEAT_REPEAT."""

    def annotated(alert: Alert) -> Alert:
        return alert.model_copy(update={"body": f"{alert.body}\n{note}"}) if note else alert

    if m.status != "down":
        if not p.silent(m):
            return m
        return _go_down(p, m, annotated(messages.monitor_down(m.host, m.last_ping_at, p.now)))
    since = m.down_since or p.silent_since(m)
    return _remind(p, m, annotated(messages.monitor_still_down(m.host, since, p.now)))


def _retire(p: _Pass, m: Monitor) -> Monitor:
    p.report.retired.append(m.host)
    return m.model_copy(
        update={
            "status": "retired",
            "down_since": None,
            "job_started_at": None,
            "absent_since": None,
        }
    )


def _billing(p: _Pass, m: Monitor, inst: Instance) -> Monitor:
    """The alert that matters: the watchdog is silent and the instance is still billing."""
    if m.status != "down" and not p.silent(m):
        return m
    alert = messages.watchdog_silent_billing(m.host, inst, m.last_ping_at)
    if m.bye_at is not None:
        note = f"It said bye at {iso(m.bye_at)} but is still {inst.raw_status}."
        alert = alert.model_copy(update={"body": f"{alert.body}\n{note}"})
    p.report.billing_silent.append(m.host)
    if m.status != "down":
        return _go_down(p, m, alert)
    if m.stopped_noted:
        # It was stopped, and bills again: a new condition, keyed by the stop note's time
        # (the same for two watchers racing, different for each stop of a flapping instance).
        rebilled = m.model_copy(update={"stopped_noted": False})
        return _go_down(p, rebilled, alert, "billing-again", m.last_alert_at)
    return _remind(p, m, alert)


def _stopped(p: _Pass, m: Monitor, inst: Instance) -> Monitor:
    """Stopped: one note, then the reaper takes over (it warns before it terminates)."""
    if m.bye_at is not None:
        return _retire(p, m)
    if m.status != "down" and not p.silent(m):
        return m
    p.report.stopped.append(m.host)
    if m.stopped_noted:
        return m
    down_since = m.down_since or p.silent_since(m)
    if p.claim(m.host, "stopped", down_since):
        p.alert(messages.instance_stopped_watchdog(m.host, inst))
    return m.model_copy(
        update={
            "status": "down",
            "down_since": down_since,
            "stopped_noted": True,
            "last_alert_at": p.now,
        }
    )


def _absent(p: _Pass, m: Monitor) -> Monitor:
    """Missing from a complete listing. One listing can miss an instance that still bills (a
    provider's hiccup, a page it skipped): the monitor retires as gone only when a second
    complete listing, a watch period or more later, misses it too. Until then it waits quietly
    with what it was."""
    if m.absent_since is None:
        p.report.absent.append(m.host)
        return m.model_copy(update={"absent_since": p.now})
    if p.now - m.absent_since >= p.settings.watch_every:
        return _retire(p, m)
    p.report.absent.append(m.host)
    return m


def _judge(p: _Pass, m: Monitor) -> Monitor:
    """The monitor as it should be after this pass; queues its alert on `p.report`."""
    parsed = _cross_checkable(m.host, p.settings)
    if parsed is None:
        return _plain(p, m)
    provider, instance_id = parsed
    verdict, inst = p.fleet.verdict(provider, instance_id)
    p.report.cross_checked.append(m.host)
    if verdict == "gone" and inst is None:
        return _absent(p, m)
    if m.absent_since is not None:
        m = m.model_copy(update={"absent_since": None})
    if verdict == "gone":
        return _retire(p, m)
    if verdict == "stopped" and inst is not None:
        return _stopped(p, m, inst)
    if verdict == "billing" and inst is not None:
        return _billing(p, m, inst)
    return _plain(p, m, note=p.fleet.why_unknown(provider, inst))


async def _watch_monitors(p: _Pass, hosts: list[str]) -> None:
    """Re-read each monitor right before deciding and write it at once (no await between):
    a ping that arrived while the providers were listed is never overwritten. Between
    monitors the pass yields now and then, so that under `serve` a pass over thousands of
    monitors does not hold pings back for its whole length."""
    for index, host in enumerate(hosts):
        if index % _YIELD_EVERY == _YIELD_EVERY - 1:
            await asyncio.sleep(0)
        current = p.store.get_monitor(host)
        if current is None or not _needs_look(p, current):
            continue
        updated = _judge(p, current)
        if updated != current:
            p.store.put_monitor(updated)
        if updated.status == "down":
            p.report.down.append(host)


def _watch_unwatched(p: _Pass, monitors: dict[str, Monitor]) -> None:
    """HEARTBEAT_REQUIRED: a running instance that never got a monitor, once per episode."""
    open_keys = {e.key: e for e in p.store.open_episodes(_UNWATCHED)}
    running: set[str] = set()
    for inst in p.fleet.instances.values():
        if inst.state != "running":
            continue
        key = _UNWATCHED + inst.key
        running.add(key)
        host = f"{inst.provider}-{inst.id}"
        # The pass's first read, confirmed from the store only when it had no monitor (a first
        # ping may have arrived while the providers were being listed).
        watch = monitors.get(host) or p.store.get_monitor(host)
        if watch is not None and watch.status != "retired":
            if key in open_keys:
                p.store.close_episode(key)
            continue
        started = inst.started_at or inst.created_at
        if started is None:
            started = p.store.open_episode(key, p.now, inst.name).opened_at
        if p.now - started < p.settings.heartbeat_timeout:
            continue
        p.report.unwatched.append(inst.key)
        episode = p.store.open_episode(key, p.now, inst.name)
        if episode.alerted_at is None:
            p.alert(messages.running_without_watchdog(inst, p.now))
            p.store.mark_episode_alerted(key, p.now)
    for key in open_keys.keys() - running:
        provider = key[len(_UNWATCHED) :].split(":", 1)[0]
        if provider in p.fleet.complete:  # only a complete listing may say it stopped
            p.store.close_episode(key)


def _watch_reaper(p: _Pass) -> None:
    """No completed reap for twice REAPER_REAP_EVERY: the reaper itself is silent, once."""
    last: ReapRun | None = p.store.last_reap()
    if last is not None:
        reference = last.finished_at
        p.store.close_episode(_NO_REAP_YET)
    else:
        reference = p.store.open_episode(_NO_REAP_YET, p.now).opened_at
    if p.now - reference < 2 * p.settings.reap_every:
        p.store.close_episode(_REAPER_SILENT)
        return
    p.report.reaper_silent = True
    episode = p.store.open_episode(_REAPER_SILENT, p.now)
    if episode.alerted_at is None:
        p.alert(messages.reaper_silent(None if last is None else last.finished_at, p.now))
        p.store.mark_episode_alerted(_REAPER_SILENT, p.now)


def _housekeeping(p: _Pass) -> None:
    """What nobody else cleans up, once a minute: retired monitors past their stay, and
    undelivered-alert marks nobody came back for (a leaked key sending distinct alerts while
    the channels fail must not grow the store either)."""
    p.report.pruned = prune_retired(p.settings, p.store, p.now)
    for episode in p.store.open_episodes(UNDELIVERED_ALERT):
        if p.now - episode.opened_at >= _UNDELIVERED_KEPT:
            p.store.close_episode(episode.key)


def _fold(alerts: list[Alert]) -> list[Alert]:
    """Past STORM_LIMIT, the rest become one summary: a storm helps nobody read it."""
    if len(alerts) <= STORM_LIMIT:
        return alerts
    rest = alerts[STORM_LIMIT - 1 :]
    titles = "\n".join(a.title for a in rest[:10])
    more = f"\n… and {len(rest) - 10} more" if len(rest) > 10 else ""
    summary = Alert(
        title=f"{len(rest)} more heartbeat alerts in this check",
        body=f"{titles}{more}\nSee `reaper status` for all monitors.",
        level=max((a.level for a in rest), key=("info", "warning", "critical").index),
        dedup_key="heartbeat:summary",
        event="heartbeat_summary",
    )
    return [*alerts[: STORM_LIMIT - 1], summary]


async def watch_pass(
    settings: Settings,
    store: Store,
    notifier: Notifier,
    clock: Clock,
    clients: Sequence[ProviderClient],
    *,
    listening_since: datetime | None = None,
) -> WatchReport:
    """One check of every monitor, the unwatched instances and the reaper itself.

    Provider hosts are cross-checked with one listing per account (only of the providers some
    monitor needs, or all with HEARTBEAT_REQUIRED). `listening_since`: see the module doc.
    """
    now = clock.now()
    report = WatchReport(at=now, reaping=bool(settings.accounts))
    monitors = {m.host: m for m in store.list_monitors()}
    report.monitors = len(monitors)
    probe = _Pass(settings, store, now, listening_since or _EPOCH, Fleet(), report)
    hosts = [h for h, m in monitors.items() if _needs_look(probe, m)]
    wanted: set[ProviderName] = set()
    for host in hosts:
        parsed = _cross_checkable(host, settings)
        if parsed is not None:
            wanted.add(parsed[0])
    if settings.heartbeat_required:
        wanted |= {a.provider for a in settings.accounts}
    if wanted:
        probe.fleet = await list_fleet(clients, wanted)
        report.errors = probe.fleet.errors
        probe.now = now = clock.now()
    await _watch_monitors(probe, hosts)
    if settings.heartbeat_required:
        _watch_unwatched(probe, monitors)
    if report.reaping:
        _watch_reaper(probe)
    _housekeeping(probe)
    for alert in _fold(report.alerts):
        await notifier.send(alert)
    log.event(
        "watch",
        monitors=report.monitors,
        down=len(report.down),
        alerts=len(report.alerts),
        errors=len(report.errors),
        pruned=report.pruned,
    )
    return report


# --- status -------------------------------------------------------------------------------


def monitor_json(monitor: Monitor, settings: Settings, now: datetime) -> dict[str, Any]:
    silent_for = now - (monitor.last_ping_at or monitor.created_at)
    return {
        "host": monitor.host,
        "status": monitor.status,
        "overdue": monitor.status in ("new", "up") and silent_for >= settings.heartbeat_timeout,
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
    }


def status_json(settings: Settings, store: Store, now: datetime) -> dict[str, Any]:
    """The object of `reaper status --json` and of `GET /status`."""
    monitors = store.list_monitors()
    counts = {s: 0 for s in ("new", "up", "down", "retired")}
    for monitor in monitors:
        counts[monitor.status] += 1
    last = store.last_reap()
    return {
        "at": iso(now),
        "counts": counts,
        "monitors": [monitor_json(m, settings, now) for m in monitors],
        "reaping": bool(settings.accounts),
        "last_reap": None if last is None else json.loads(last.model_dump_json()),
        "fleet": fleet_json(store.history(), settings, now),
    }


def fleet_json(history: History, settings: Settings, now: datetime) -> dict[str, Any]:
    """The fleet as the store knows it between passes: what is stopped since when, when it
    becomes due, which were warned, which are kept (the live listing is `reaper reap --dry-run`)."""
    stopped = [
        {
            "instance": key,
            "stopped_since": iso(since),
            "due_at": iso(since + settings.stopped_ttl),
            "warned_at": iso(w.at) if (w := history.warnings.get(key)) else None,
        }
        for key, since in sorted(history.first_seen_stopped.items(), key=lambda kv: kv[1])
    ]
    kept = [
        {"instance": k.key, "since": iso(k.since), "until": iso(k.until)}
        for k in sorted(history.kept.values(), key=lambda k: k.key)
        if k.active(now)
    ]
    return {"stopped": stopped, "kept": kept}


def _status_lines(data: dict[str, Any]) -> list[str]:
    c = data["counts"]
    lines = [f"monitors: {c['up']} up, {c['new']} new, {c['down']} down, {c['retired']} retired"]
    for m in data["monitors"]:
        state = "overdue" if m["overdue"] else m["status"]
        job = f"  job running since {m['job_started_at']}" if m["job_running"] else ""
        lines.append(f"  {m['host']:<40} {state:<8} last ping {m['last_ping_at'] or 'never'}{job}")
    fleet = data["fleet"]
    lines.append(f"stopped instances: {len(fleet['stopped'])}, kept: {len(fleet['kept'])}")
    for item in fleet["stopped"]:
        warned = f", warned {item['warned_at']}" if item["warned_at"] else ""
        lines.append(
            f"  {item['instance']:<40} stopped since {item['stopped_since']}, "
            f"due {item['due_at']}{warned}"
        )
    for item in fleet["kept"]:
        lines.append(f"  {item['instance']:<40} kept until {item['until'] or 'further notice'}")
    last = data["last_reap"]
    if last is None:
        lines.append("last reap: none recorded" + ("" if data["reaping"] else " (reaping is off)"))
    else:
        lines.append(
            f"last reap: finished {last['finished_at']}, {last['instances']} instances, "
            f"{last['terminated']} terminated, exit {last['exit_code']}"
        )
    return lines


def status_command(settings: Settings, json_output: bool) -> int:
    """`reaper status`: monitors, the stopped fleet and the last reap, as the store knows them."""
    from reaper.store import open_store

    store = open_store(settings.state, read_only=True)
    try:
        data = status_json(settings, store, SystemClock().now())
    finally:
        store.close()
    if json_output:
        print(json.dumps(data, ensure_ascii=False))
    else:
        print("\n".join(_status_lines(data)))
    return 0


def _watch_lines(report: WatchReport) -> list[str]:
    lines = [f"watched {report.monitors} monitors: {len(report.down)} down"]
    for name, hosts in (
        ("went down", report.went_down),
        ("reminded", report.reminded),
        ("silent while billing", report.billing_silent),
        ("stopped", report.stopped),
        ("retired", report.retired),
        ("running without a watchdog", report.unwatched),
    ):
        if hosts:
            lines.append(f"  {name}: {', '.join(hosts)}")
    if report.reaper_silent:
        lines.append("  the reaper itself is silent")
    lines += [f"  {e.provider} ({e.account}): {e.message}" for e in report.errors]
    return lines


async def _watch_once(settings: Settings) -> WatchReport:
    from reaper.notify import make_notifier
    from reaper.providers import make_clients
    from reaper.store import open_store

    store = open_store(settings.state)
    clients: list[ProviderClient] = list(make_clients(settings))
    try:
        notifier: Notifier = make_notifier(settings)
        return await watch_pass(settings, store, notifier, SystemClock(), clients)
    finally:
        for client in clients:
            await client.aclose()
        store.close()


def watch_command(settings: Settings, json_output: bool) -> int:
    """`reaper watch`: one watch pass, for cron or a Lambda schedule."""
    report = asyncio.run(_watch_once(settings))
    if json_output:
        print(json.dumps(report.to_json(), ensure_ascii=False))
    else:
        print("\n".join(_watch_lines(report)), file=sys.stdout)
    return report.exit_code
