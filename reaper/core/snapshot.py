"""Snapshots: one small row per reap pass — what the fleet bills, per account — and the spend
series the status page draws from them. Pure: the reap pass builds a snapshot from what it
listed, the store keeps it, the page reads a range back.

A snapshot holds rates ($/h at the pass), not amounts: the spend over a period is the rates
integrated over time, each rate holding until the next snapshot (at most `MAX_GAP`: a reaper
that was down for a day does not pretend it knows what was billed meanwhile).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict, Field

from reaper.core.models import AccountError, Balance, BilledDay, Instance, State

# How long a snapshot's rates are taken to hold when no later snapshot follows sooner.
MAX_GAP = timedelta(hours=2)
# States whose cost is compute (a starting instance bills as it comes up).
COMPUTE_STATES: frozenset[State] = frozenset({"running", "starting"})


class AccountSnapshot(BaseModel):
    """One account at one pass. `complete` False: its listing failed; its rates are unknown
    (None), never zero."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    provider: str
    account: str
    complete: bool = True
    # $/h of running and starting instances, of stopped ones (their storage), of the rest
    # (unknown, frozen...: what bills there when the provider says so).
    running_per_hour: float | None = 0.0
    storage_per_hour: float | None = 0.0
    other_per_hour: float | None = 0.0
    # Instances by state (the contract's five states).
    counts: dict[str, int] = Field(default_factory=dict)
    # What the provider reported of the account, when it did.
    balance: float | None = None
    spend_per_hour: float | None = None
    # The provider's own billing history as this pass read it (the last 30 UTC days, today
    # last and in progress); None where the provider offers none or it could not be read.
    billed: list[BilledDay] | None = None
    # What it billed for each instance over those 30 days, by instance id (where it bills each
    # instance on its own); None where it offers none or it could not be read.
    billed_instances: dict[str, float] | None = None

    @property
    def per_hour(self) -> float | None:
        rates = (self.running_per_hour, self.storage_per_hour, self.other_per_hour)
        if any(r is None for r in rates):
            return None
        return sum(r for r in rates if r is not None)


class Snapshot(BaseModel):
    """One reap pass's row."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    at: datetime
    accounts: list[AccountSnapshot] = Field(default_factory=list)

    @property
    def running_per_hour(self) -> float:
        return sum(a.running_per_hour or 0.0 for a in self.accounts)

    @property
    def storage_per_hour(self) -> float:
        return sum((a.storage_per_hour or 0.0) + (a.other_per_hour or 0.0) for a in self.accounts)

    def counts(self) -> dict[str, int]:
        total: dict[str, int] = {}
        for account in self.accounts:
            for state, count in account.counts.items():
                total[state] = total.get(state, 0) + count
        return total


def _rate(instances: Iterable[Instance]) -> float:
    return round(sum(i.cost_per_hour or 0.0 for i in instances), 6)


def take_snapshot(
    at: datetime,
    accounts: Sequence[tuple[str, str]],
    instances: Sequence[Instance],
    balances: Sequence[Balance] = (),
    errors: Sequence[AccountError] = (),
    *,
    billed: Mapping[tuple[str, str], list[BilledDay]] | None = None,
    billed_instances: Mapping[tuple[str, str], dict[str, float]] | None = None,
) -> Snapshot:
    """The snapshot of a pass: `accounts` are every (provider, account) it listed."""
    failed = {(e.provider, e.account) for e in errors}
    by_balance = {(b.provider, b.account): b for b in balances}
    rows: list[AccountSnapshot] = []
    for provider, account in sorted(set(accounts)):
        balance = by_balance.get((provider, account))
        known = {
            "balance": balance.balance if balance else None,
            "spend_per_hour": balance.spend_per_hour if balance else None,
            "billed": (billed or {}).get((provider, account)),
            "billed_instances": (billed_instances or {}).get((provider, account)),
        }
        if (provider, account) in failed:
            rows.append(
                AccountSnapshot(
                    provider=provider,
                    account=account,
                    complete=False,
                    running_per_hour=None,
                    storage_per_hour=None,
                    other_per_hour=None,
                    **known,
                )
            )
            continue
        mine = [
            i
            for i in instances
            if i.provider == provider and i.account == account and i.state != "terminated"
        ]
        counts: dict[str, int] = {}
        for inst in mine:
            counts[inst.state] = counts.get(inst.state, 0) + 1
        rows.append(
            AccountSnapshot(
                provider=provider,
                account=account,
                running_per_hour=_rate(i for i in mine if i.state in COMPUTE_STATES),
                storage_per_hour=_rate(i for i in mine if i.state == "stopped"),
                other_per_hour=_rate(
                    i for i in mine if i.state not in COMPUTE_STATES and i.state != "stopped"
                ),
                counts=counts,
                **known,
            )
        )
    return Snapshot(at=at, accounts=rows)


class SpendDay(BaseModel):
    """What was billed on one UTC day, as far as the snapshots tell (`covered`: the hours the
    snapshots account for; fewer than 24 means part of the day is unknown)."""

    model_config = ConfigDict(frozen=True)

    day: datetime
    running: float = 0.0
    storage: float = 0.0
    covered_hours: float = 0.0

    @property
    def total(self) -> float:
        return self.running + self.storage


def daily_spend(snapshots: Sequence[Snapshot], now: datetime, days: int) -> list[SpendDay]:
    """The last `days` UTC days (today last), each rate held until the next snapshot (at most
    MAX_GAP, never past `now`), split where a day ends."""
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    first = today - timedelta(days=days - 1)
    totals = {first + timedelta(days=n): [0.0, 0.0, 0.0] for n in range(days)}
    ordered = sorted(snapshots, key=lambda s: s.at)
    for index, snap in enumerate(ordered):
        nxt = ordered[index + 1].at if index + 1 < len(ordered) else now
        end = min(nxt, snap.at + MAX_GAP, now)
        start = max(snap.at, first)
        while start < end:
            day = start.replace(hour=0, minute=0, second=0, microsecond=0)
            stop = min(end, day + timedelta(days=1))
            hours = (stop - start).total_seconds() / 3600
            if day in totals:
                row = totals[day]
                row[0] += snap.running_per_hour * hours
                row[1] += snap.storage_per_hour * hours
                row[2] += hours
            start = stop
    return [
        SpendDay(day=day, running=round(r, 4), storage=round(s, 4), covered_hours=round(h, 3))
        for day, (r, s, h) in totals.items()
    ]


__all__ = [
    "MAX_GAP",
    "AccountSnapshot",
    "Snapshot",
    "SpendDay",
    "daily_spend",
    "take_snapshot",
]
