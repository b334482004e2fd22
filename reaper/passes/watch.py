"""The watch pass: the dead-man's switch hears the silence.

A watchdog inside an instance dies with the instance (preempted, OOM-killed, never started);
the only thing that notices is something outside that hears the silence. Pings change a monitor
at once (`record_ping`); silence is noticed by `watch_pass`, which runs every minute under
`reaper serve` (or from cron as `reaper watch`).

State machine (`Monitor.status`):

    (none) --first ping--> new --ping--> up --silence > HEARTBEAT_TIMEOUT--> down --ping--> up
    any --/fail or exit != 0--> down (alert at once)     plain host --/bye--> retired --ping--> up
    provider host --/bye--> records bye_at only (a down monitor stays down: no recovery)

Design choices docs/http-api.md documents:
- The recovery alert goes out on the ping that revives a monitor (with the downtime), not on
  the next watch pass: the phone hears "back" as soon as the host is back.
- Downtime runs from the last ping before the silence (or from the `/fail`).
- For a provider host (`<provider prefix><id>`, with a key for that provider configured)
  `bye` only records `bye_at`; the watch pass retires the monitor when the provider shows the
  instance gone or stopped. Silence after `bye` while the instance still bills alerts like any
  silence: a leaked ping key must not be able to silence another instance's watchdog. Without a
  key for that provider nothing can be cross-checked, so such a host is treated as plain.
- Under `serve`, silence is counted from the later of the last ping and the moment the server
  started listening: pings sent while the server was down could not arrive, and a restart must
  not turn every monitor into an alert.
- Alerts of one pass beyond `STORM_LIMIT` are folded into one summary alert.
- Each monitor is down after its own `timeout` + `grace` of silence (HEARTBEAT_TIMEOUT when
  it has none). A paused monitor is not watched. A muted one is judged as ever, but its alerts
  are dropped until the mute ends; an outage still on then is said once (`alert_held`).
- HEARTBEAT_REPEAT=off: no reminders; every condition alerts once.
- The pass runs on a `Context`: it writes through `ctx.store` and alerts through
  `ctx.effects`, so `dry_run=True` is the same pass with every write and alert recorded.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Literal

from reaper import log
from reaper.channels.base import Notifier
from reaper.clock import Clock
from reaper.core import messages
from reaper.core.models import AccountError, Alert, Instance, Monitor, ReapRun
from reaper.core.monitors import down_after, heard_or_resumed, muted
from reaper.core.units import iso
from reaper.core.witness import trustworthy_absence
from reaper.passes import correlate
from reaper.passes.context import Context
from reaper.passes.observe import observe
from reaper.passes.ping import UNDELIVERED_ALERT, cross_checkable, prune_retired
from reaper.providers.base import ProviderClient
from reaper.settings.model import Settings
from reaper.store.ports import Store

# More alerts than this in one watch pass are folded into one summary alert.
STORM_LIMIT = 20
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_UNWATCHED = "unwatched:"
_YIELD_EVERY = 100
_REAPER_SILENT = "reaper:silent"
_NO_REAP_YET = "reaper:no-reap-yet"
# A mark matters only within the alert's one-minute dedup window; older ones are dropped.
_UNDELIVERED_KEPT = timedelta(hours=1)
# With HEARTBEAT_REPEAT=off, how long a claim keeps a racing watcher from alerting the same
# condition again (every key names its condition's start, so this only has to outlast a race).
_ONCE = timedelta(days=1)


# --- the cross-check ----------------------------------------------------------------------


Verdict = Literal["billing", "stopped", "gone", "unknown"]


@dataclass
class Fleet:
    """What one listing per account said, for this pass."""

    instances: dict[str, Instance] = field(default_factory=dict)
    errors: list[AccountError] = field(default_factory=list)
    # Providers whose every account listed completely, and believably about what is absent.
    complete: set[str] = field(default_factory=set)

    def verdict(self, provider: str, instance_id: str) -> tuple[Verdict, Instance | None]:
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

    def why_unknown(self, provider: str, inst: Instance | None) -> str:
        if inst is not None:
            return f"cross-check: {provider} reports status {inst.raw_status!r}"
        failed = [e for e in self.errors if e.provider == provider]
        if failed:
            first = failed[0]
            return f"cross-check with {provider} ({first.account}) failed: {first.message}"
        return f"cross-check with {provider} was not possible"


async def list_fleet(
    clients: Sequence[ProviderClient], providers: set[str], store: Store | None = None
) -> Fleet:
    """One listing per account of each provider asked for, all at once. A provider counts as
    complete only where every account listed, and none of them answered empty (or without
    any instance) while its last recorded listing had some: a two-minute outage answering
    `{"pods": []}` must not retire every silent watchdog."""
    seen = await observe(clients, providers=providers)
    fleet = Fleet(instances={i.key: i for i in seen.instances}, errors=list(seen.errors))
    complete = seen.complete_providers
    previous = {(x.provider, x.account): x for x in store.listings()} if store else {}
    for provider, account in seen.complete:
        last = previous.get((provider, account))
        known = {i.id for i in last.instances if i.state != "terminated"} if last else set()
        mine = {i.id for i in seen.of(provider, account)}
        if not trustworthy_absence(mine, known):
            complete.discard(provider)
    fleet.complete = complete
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
    errors: list[AccountError] = field(default_factory=list)
    cross_checked: list[str] = field(default_factory=list)
    # Retired monitors deleted by this pass (prune_retired).
    pruned: int = 0
    # Paused monitors, not watched; muted ones whose alerts this pass held back.
    paused: list[str] = field(default_factory=list)
    muted: list[str] = field(default_factory=list)
    # A dry run: nothing written, nothing sent (`effects.recorded` says what would have been).
    dry_run: bool = False

    @property
    def exit_code(self) -> int:
        """1 (needs attention) when a monitor is down, a listing failed or the reaper is silent."""
        return 1 if (self.down or self.errors or self.reaper_silent) else 0


@dataclass
class _Pass:
    """Everything one pass needs, so the per-monitor steps stay small functions."""

    ctx: Context
    now: datetime
    listening_since: datetime
    fleet: Fleet
    report: WatchReport

    @property
    def settings(self) -> Settings:
        return self.ctx.settings

    @property
    def store(self) -> Store:
        return self.ctx.store

    def silent_since(self, monitor: Monitor) -> datetime:
        return max(heard_or_resumed(monitor), self.listening_since)

    def silent(self, monitor: Monitor) -> bool:
        limit = down_after(monitor, self.settings.heartbeat_timeout)
        return self.now - self.silent_since(monitor) >= limit

    def claim(self, host: str, what: str, anchor: datetime | None) -> bool:
        """True if this process is the one to send this alert (another watcher may race us)."""
        key = f"heartbeat:{host}:{what}:{iso(anchor)}"
        return self.store.claim_alert(key, self.now, self.settings.heartbeat_repeat or _ONCE)

    def alert(self, alert: Alert) -> None:
        self.report.alerts.append(alert)


def _needs_look(p: _Pass, monitor: Monitor) -> bool:
    if monitor.status == "retired" or monitor.paused:
        return False
    guarded = cross_checkable(monitor.host, p.settings) is not None
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
    repeat = p.settings.heartbeat_repeat
    last = m.last_alert_at or m.down_since or p.now
    if repeat is None or p.now - last < repeat:
        return m
    p.report.reminded.append(m.host)
    since = m.down_since or last
    number = int((p.now - since) / repeat)
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
    parsed = cross_checkable(m.host, p.settings)
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
        queued = len(p.report.alerts)
        updated = _muting(p, current, _judge(p, current), queued)
        if updated != current:
            p.store.put_monitor(updated)
        if updated.status == "down":
            p.report.down.append(host)


def _muting(p: _Pass, current: Monitor, updated: Monitor, queued: int) -> Monitor:
    """A muted monitor's alerts of this pass are dropped (its state moved all the same); the
    first pass after the mute says once that an outage it held back is still on."""
    said = len(p.report.alerts) > queued
    if muted(current, p.now):
        if said:
            del p.report.alerts[queued:]
            p.report.muted.append(current.host)
            return updated.model_copy(update={"alert_held": updated.status == "down"})
        return updated
    if not current.alert_held:
        return updated
    if updated.status != "down" or said:
        return updated.model_copy(update={"alert_held": False})
    since = updated.down_since or p.silent_since(updated)
    until = current.muted_until or p.now
    if p.claim(current.host, "held", until):
        p.alert(messages.monitor_down_after_mute(current.host, since, until))
    return updated.model_copy(update={"alert_held": False, "last_alert_at": p.now})


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
    correlate.drop_stale(p.store, p.now)


async def watch_pass(
    settings: Settings,
    store: Store,
    notifier: Notifier,
    clock: Clock,
    clients: Sequence[ProviderClient],
    *,
    listening_since: datetime | None = None,
    dry_run: bool = False,
) -> WatchReport:
    """One check of every monitor, the unwatched instances and the reaper itself.

    Provider hosts are cross-checked with one listing per account (only of the providers some
    monitor needs, or all with HEARTBEAT_REQUIRED). `listening_since`: see the module doc.
    `dry_run`: the same pass on `DryRunEffects` (the store only read, no alert sent).
    """
    ctx = Context.make(settings, store, clients, notifier, clock, dry_run=dry_run)
    return await watch_with(ctx, listening_since=listening_since)


async def watch_with(ctx: Context, *, listening_since: datetime | None = None) -> WatchReport:
    """The watch pass on a context: every write through `ctx.store`, every alert through
    `ctx.effects`."""
    settings, store, clock = ctx.settings, ctx.store, ctx.clock
    now = clock.now()
    report = WatchReport(at=now, reaping=bool(settings.accounts), dry_run=ctx.dry_run)
    monitors = {m.host: m for m in store.list_monitors()}
    report.monitors = len(monitors)
    report.paused = [h for h, m in monitors.items() if m.paused and m.status != "retired"]
    probe = _Pass(ctx, now, listening_since or _EPOCH, Fleet(), report)
    hosts = [h for h, m in monitors.items() if _needs_look(probe, m)]
    wanted: set[str] = set()
    for host in hosts:
        parsed = cross_checkable(host, settings)
        if parsed is not None:
            wanted.add(parsed[0])
    if settings.heartbeat_required:
        wanted |= {a.provider for a in settings.accounts}
    if wanted:
        probe.fleet = await list_fleet(ctx.clients, wanted, store)
        report.errors = probe.fleet.errors
        probe.now = now = clock.now()
    await _watch_monitors(probe, hosts)
    if settings.heartbeat_required:
        _watch_unwatched(probe, monitors)
    if report.reaping:
        _watch_reaper(probe)
    _housekeeping(probe)
    for alert in messages.fold_heartbeat(report.alerts, STORM_LIMIT):
        await ctx.alert(alert)
    log.event(
        "watch",
        monitors=report.monitors,
        down=len(report.down),
        alerts=len(report.alerts),
        errors=len(report.errors),
        pruned=report.pruned,
        dry_run=ctx.dry_run,
    )
    return report
