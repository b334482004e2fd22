"""What the status page, `/status` and `reaper status` show, read from the store alone (shared
by the web pages and the command line's views).

A page view never lists a provider: it reads what the passes recorded — each account's last
complete listing, the stopped clocks, warnings and keeps, the monitors, the audit and the
snapshots — a fixed handful of store reads (on DynamoDB one Query per partition), whatever the
size of the fleet. When each stopped instance goes, or why not, comes from the reap policy
itself (`policy.outlook`), on these records and the current time: no second rule.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TypeVar

from reaper.core.models import (
    AuditRecord,
    BilledDay,
    History,
    Instance,
    KeptInstance,
    Listing,
    Monitor,
    ReapRun,
    instance_key,
)
from reaper.core.monitors import down_after, heard_or_resumed
from reaper.core.policy import Outlook, outlook
from reaper.core.runway import runway_hours
from reaper.core.snapshot import AccountSnapshot, Snapshot
from reaper.core.terminated import confirmed_terminations, listed_gone
from reaper.core.units import HOURS_PER_MONTH
from reaper.providers.plugins import provider_host
from reaper.settings.model import Settings
from reaper.store.ports import Store

_T = TypeVar("_T")

# How far back the page looks: the chart's longest range, and the audit it lists.
LOOKBACK = timedelta(days=30)
# At most this many terminations are listed (newest first).
AUDIT_SHOWN = 50
BILLING_STATES = frozenset({"running", "starting"})


@dataclass(frozen=True)
class Watchdog:
    """A monitor as the page shows it: `state` up, new, late (silent past its own timeout and
    grace but not yet marked down by a watch pass), down, paused or retired."""

    monitor: Monitor
    state: str
    silent_for: timedelta


@dataclass(frozen=True)
class AccountView:
    """One account: its last listing's time and the newest snapshot's balance and spend."""

    provider: str
    account: str
    listed_at: datetime | None
    balance: float | None = None
    spend_per_hour: float | None = None
    billing_per_hour: float | None = None
    # The provider's own billing history, from the newest snapshot that has it.
    billed: tuple[BilledDay, ...] | None = None

    def billed_over(self, days: int, now: datetime) -> float | None:
        """What the provider billed over the last `days` UTC days (today included), or None
        when it offers no history or its history misses one of those days."""
        if self.billed is None:
            return None
        today = now.replace(hour=0, minute=0, second=0, microsecond=0)
        wanted = {today - timedelta(days=n) for n in range(days)}
        amounts = {b.day: b.amount for b in self.billed if b.day in wanted}
        if len(amounts) < days:
            return None
        return round(sum(amounts.values()), 2)

    @property
    def runway_hours(self) -> float | None:
        spend = self.spend_per_hour if self.spend_per_hour is not None else self.billing_per_hour
        return runway_hours(self.balance, spend)


@dataclass(frozen=True)
class FleetView:
    now: datetime
    listings: list[Listing]
    running: list[Instance]
    stopped: list[Outlook]
    # Neither billing compute nor stopped: unknown, frozen... (never reaped).
    other: list[Instance]
    watchdogs: list[Watchdog]
    # instance key -> the watchdog whose host names it
    watchdog_of: dict[str, Watchdog]
    kept: dict[str, KeptInstance]
    audit: list[AuditRecord]
    snapshots: list[Snapshot]
    last_reap: ReapRun | None
    accounts: list[AccountView] = field(default_factory=list)
    # instance key -> what its provider billed for it over the last 30 days, by its own
    # billing history (from the newest snapshot of its account that holds one).
    instance_billed: dict[str, float] = field(default_factory=dict)

    @property
    def listed_at(self) -> datetime | None:
        """The oldest of the accounts' last listings: how old the page's data is at worst."""
        return min((x.at for x in self.listings), default=None)

    @property
    def running_per_hour(self) -> float:
        return sum(i.cost_per_hour or 0.0 for i in self.running)

    @property
    def needs_you(self) -> list[Outlook]:
        """Stopped instances past their deadline that the reaper will not terminate, for a
        reason a person may not intend (the policy's `exempt`): what a pass alerts and exits 1
        for, read from the same decisions."""
        return [o for o in self.stopped if o.exempt is not None]

    @property
    def storage_per_hour(self) -> float:
        return sum(o.instance.cost_per_hour or 0.0 for o in self.stopped)

    @property
    def saved_per_month(self) -> float:
        """What the confirmed terminations listed stopped billing, per month."""
        return sum(saved_per_month(r) or 0.0 for r in self.audit if r.confirmed)


def saved_per_month(record: AuditRecord) -> float | None:
    if record.cost_per_hour is None:
        return None
    return record.cost_per_hour * HOURS_PER_MONTH


def as_watchdog(monitor: Monitor, settings: Settings, now: datetime) -> Watchdog:
    silent_for = now - heard_or_resumed(monitor)
    state: str = monitor.status
    if monitor.paused and state != "retired":
        state = "paused"
    elif state in ("new", "up") and silent_for >= down_after(monitor, settings.heartbeat_timeout):
        state = "late"
    return Watchdog(monitor=monitor, state=state, silent_for=silent_for)


def _accounts(listings: list[Listing], snapshots: list[Snapshot]) -> list[AccountView]:
    """Each account from the newest snapshot, with the newest billing history any snapshot
    holds for it (a pass whose billing read failed leaves the last one in force)."""
    rows: dict[tuple[str, str], AccountView] = {
        (x.provider, x.account): AccountView(x.provider, x.account, x.at) for x in listings
    }
    billed = _newest(snapshots, lambda row: row.billed)
    latest = max(snapshots, key=lambda s: s.at) if snapshots else None
    for snap in latest.accounts if latest is not None else []:
        key = (snap.provider, snap.account)
        listed = rows[key].listed_at if key in rows else None
        rows[key] = _account_view(snap, listed, billed.get(key))
    return [rows[key] for key in sorted(rows)]


def _account_view(
    snap: AccountSnapshot, listed_at: datetime | None, billed: list[BilledDay] | None
) -> AccountView:
    return AccountView(
        provider=snap.provider,
        account=snap.account,
        listed_at=listed_at,
        balance=snap.balance,
        spend_per_hour=snap.spend_per_hour,
        billing_per_hour=snap.per_hour,
        billed=tuple(billed) if billed is not None else None,
    )


def read_view(store: Store, settings: Settings, now: datetime) -> FleetView:
    """Everything the page shows, from the store alone."""
    listings = store.listings()
    history = store.history()
    monitors = store.list_monitors()
    audit = store.audit_log(since=now - LOOKBACK)
    snapshots = store.snapshots(now - LOOKBACK)
    last_reap = store.last_reap()
    return build_view(settings, now, listings, history, monitors, audit, snapshots, last_reap)


def build_view(
    settings: Settings,
    now: datetime,
    listings: list[Listing],
    history: History,
    monitors: list[Monitor],
    audit: list[AuditRecord],
    snapshots: list[Snapshot],
    last_reap: ReapRun | None,
) -> FleetView:
    # A listing is taken before the pass acts: what the pass (or a later one) terminated and
    # confirmed since is gone, whatever that listing still shows.
    gone = confirmed_terminations(audit)
    instances = [i for x in listings for i in x.instances if not listed_gone(i, x.at, gone)]
    stopped = sorted(
        outlook(instances, history, now, settings),
        key=lambda o: (o.terminate_at is None, o.terminate_at or now, o.instance.key),
    )
    running = sorted(
        (i for i in instances if i.state in BILLING_STATES),
        key=lambda i: (-(i.cost_per_hour or 0.0), i.key),
    )
    other = [i for i in instances if i.state not in BILLING_STATES and i.state != "stopped"]
    watchdogs = [as_watchdog(m, settings, now) for m in monitors if m.status != "retired"]
    watchdog_of: dict[str, Watchdog] = {}
    for dog in watchdogs:
        named = provider_host(dog.monitor.host)
        if named is not None:
            watchdog_of[instance_key(*named)] = dog
    return FleetView(
        now=now,
        listings=listings,
        running=running,
        stopped=stopped,
        other=other,
        watchdogs=watchdogs,
        watchdog_of=watchdog_of,
        kept={k: v for k, v in history.kept.items() if v.active(now)},
        # A delete that never left (`not_sent`) is no termination.
        audit=sorted(
            (r for r in audit if r.result != "not_sent"),
            key=lambda r: r.requested_at,
            reverse=True,
        )[:AUDIT_SHOWN],
        snapshots=snapshots,
        last_reap=last_reap,
        accounts=_accounts(listings, snapshots),
        instance_billed=_instance_billed(snapshots),
    )


def _instance_billed(snapshots: list[Snapshot]) -> dict[str, float]:
    newest = _newest(snapshots, lambda row: row.billed_instances)
    return {
        instance_key(provider, instance_id): amount
        for (provider, _account), amounts in newest.items()
        for instance_id, amount in amounts.items()
    }


def _newest(
    snapshots: list[Snapshot], read: Callable[[AccountSnapshot], _T | None]
) -> dict[tuple[str, str], _T]:
    """Per account, the newest value `read` finds in a snapshot (a pass whose read failed
    wrote None there, and leaves the one before in force)."""
    found: dict[tuple[str, str], _T] = {}
    for taken in sorted(snapshots, key=lambda s: s.at):
        for row in taken.accounts:
            value = read(row)
            if value is not None:
                found[(row.provider, row.account)] = value
    return found


def listed_instance(view: FleetView, key: str) -> Instance | None:
    """The instance with this key in the last listings (what a keep button may name)."""
    for listing in view.listings:
        for inst in listing.instances:
            if inst.key == key:
                return inst
    return None


__all__ = [
    "AccountView",
    "FleetView",
    "Watchdog",
    "build_view",
    "listed_instance",
    "read_view",
    "saved_per_month",
]
