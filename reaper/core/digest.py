"""The daily digest and `reaper report`, pure: where the money goes, in one look.

`build_digest` turns what the providers say now (a `Survey`), the audit, the monitors and the
open leak episodes into a `Digest`; `digest_alert` is its one message a day. The passes
(`reaper.passes.digest`) gather the inputs; the views render it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict

from reaper.core.leaks import Finding, account_spend, detect, hours_left, is_low, with_spend
from reaper.core.models import Alert, AuditRecord, Balance, Episode, Instance, Monitor, Volume
from reaper.core.runway import runway_short
from reaper.core.units import HOURS_PER_MONTH, as_utc, humanize, money
from reaper.settings.model import Settings

DIGEST_WINDOW = timedelta(hours=24)
_SHOWN = 5


class _Line(BaseModel):
    model_config = ConfigDict(frozen=True)


class SpendLine(_Line):
    provider: str
    account: str
    per_hour: float
    # Instances that bill something now, and those whose cost is unknown (counted as 0).
    billing: int
    unknown_cost: int


class ReapedLine(_Line):
    provider: str
    account: str
    id: str
    name: str
    reason: str
    requested_at: datetime
    cost_per_hour: float | None
    per_month: float | None


class MonitorDownLine(_Line):
    host: str
    down_since: datetime | None
    last_ping_at: datetime | None


class BalanceLine(_Line):
    provider: str
    account: str
    balance: float | None
    spend_per_hour: float | None
    spend_limit: float | None
    hours_left: float | None
    low: bool | None
    # The runway (hours_left) is under BALANCE_HOURS; None: unknown, endless, or the check off.
    runway_short: bool | None = None


class LeakLine(_Line):
    kind: str
    provider: str
    account: str
    id: str
    name: str
    detail: str
    cost_per_hour: float | None
    # When the guards first saw it (None: no guard pass has recorded it yet).
    since: datetime | None
    alerted: bool


class ProblemLine(_Line):
    provider: str
    account: str
    message: str


class Digest(_Line):
    at: datetime
    # The providers' display names, by provider name (not part of the JSON).
    labels: dict[str, str] = {}
    spend_per_hour: float
    spend: list[SpendLine]
    reaped_24h: list[ReapedLine]
    reaped_per_month: float
    monitors_down: list[MonitorDownLine]
    balances: list[BalanceLine]
    leaks: list[LeakLine]
    # Listings that failed (spend and leaks of those accounts are unknown): exit 1.
    errors: list[ProblemLine]
    # Balance or volume reads that failed: reported, not an error.
    warnings: list[ProblemLine]

    @property
    def needs_attention(self) -> bool:
        return bool(
            self.leaks
            or self.monitors_down
            or self.errors
            or any(b.low or b.runway_short for b in self.balances)
        )


@dataclass
class Survey:
    """What the providers say now, account by account."""

    instances: list[Instance] = field(default_factory=list)
    balances: list[Balance] = field(default_factory=list)
    volumes: list[Volume] = field(default_factory=list)
    errors: list[ProblemLine] = field(default_factory=list)
    warnings: list[ProblemLine] = field(default_factory=list)
    listed: list[tuple[str, str]] = field(default_factory=list)
    # The providers' display names, by provider name, for the words.
    labels: dict[str, str] = field(default_factory=dict)


# --- the pure part ----------------------------------------------------------------------


def _spend(instances: Iterable[Instance], listed: Iterable[tuple[str, str]]) -> list[SpendLine]:
    lines: dict[tuple[str, str], list[Instance]] = {account: [] for account in listed}
    for inst in instances:
        if inst.state != "terminated":
            lines.setdefault((inst.provider, inst.account), []).append(inst)
    # The one burn rate per account (the runway's too: `with_spend`).
    rates = account_spend(inst for insts in lines.values() for inst in insts)
    return [
        SpendLine(
            provider=provider,
            account=account,
            per_hour=round(rates.get((provider, account), 0.0), 4),
            billing=sum(1 for i in insts if (i.cost_per_hour or 0.0) > 0),
            unknown_cost=sum(1 for i in insts if i.cost_per_hour is None),
        )
        for (provider, account), insts in sorted(lines.items())
    ]


def _reaped(audit: Iterable[AuditRecord], now: datetime) -> list[ReapedLine]:
    """Confirmed terminations in the last 24h, one per instance (the latest record)."""
    latest: dict[str, AuditRecord] = {}
    for record in audit:
        if not record.confirmed or now - as_utc(record.requested_at) > DIGEST_WINDOW:
            continue
        if record.key not in latest or record.requested_at > latest[record.key].requested_at:
            latest[record.key] = record
    return [
        ReapedLine(
            provider=r.provider,
            account=r.account,
            id=r.id,
            name=r.name,
            reason=r.reason,
            requested_at=as_utc(r.requested_at),
            cost_per_hour=r.cost_per_hour,
            per_month=None
            if r.cost_per_hour is None
            else round(r.cost_per_hour * HOURS_PER_MONTH, 2),
        )
        for r in sorted(latest.values(), key=lambda r: r.requested_at)
    ]


def _leaks(
    findings: Iterable[Finding], episodes: Mapping[str, Episode], now: datetime
) -> list[LeakLine]:
    """Leaks that have lasted their kind's span (an idle minute is not a leak yet); a kind
    that alerts at once needs no episode."""
    lines = []
    for f in findings:
        episode = episodes.get(f.key)
        since = as_utc(episode.opened_at) if episode else None
        if (now - since if since else timedelta(0)) < f.alert_after:
            continue
        lines.append(
            LeakLine(
                kind=f.kind,
                provider=f.provider,
                account=f.account,
                id=f.id,
                name=f.name,
                detail=f.detail,
                cost_per_hour=f.cost_per_hour,
                since=since,
                alerted=bool(episode and episode.alerted_at),
            )
        )
    return lines


def build_digest(
    now: datetime,
    live: Survey,
    audit: Iterable[AuditRecord],
    monitors: Iterable[Monitor],
    episodes: Iterable[Episode],
    settings: Settings,
) -> Digest:
    failed = {(e.provider, e.account) for e in live.errors}
    spend = _spend(live.instances, live.listed)
    reaped = _reaped(audit, now)
    balances = with_spend(live.balances, live.instances, failed)
    findings = detect(live.instances, live.volumes, now, settings)
    return Digest(
        at=now,
        labels=dict(live.labels),
        spend_per_hour=round(sum(s.per_hour for s in spend), 4),
        spend=spend,
        reaped_24h=reaped,
        reaped_per_month=round(sum(r.per_month or 0.0 for r in reaped), 2),
        monitors_down=[
            MonitorDownLine(host=m.host, down_since=m.down_since, last_ping_at=m.last_ping_at)
            for m in monitors
            if m.status == "down"
        ],
        balances=[
            BalanceLine(
                provider=b.provider,
                account=b.account,
                balance=b.balance,
                spend_per_hour=b.spend_per_hour,
                spend_limit=b.spend_limit,
                hours_left=hours_left(b),
                low=is_low(b, settings.balance_min),
                runway_short=runway_short(hours_left(b), settings.balance_hours),
            )
            for b in balances
        ],
        leaks=_leaks(findings, {e.key: e for e in episodes}, now),
        errors=list(live.errors),
        warnings=list(live.warnings),
    )


def _who(digest: Digest, provider: str, account: str) -> str:
    return f"{digest.labels.get(provider, provider)} {account}"


def _shown(items: list[str]) -> str:
    more = f" (+{len(items) - _SHOWN} more)" if len(items) > _SHOWN else ""
    return ", ".join(items[:_SHOWN]) + more


def _leak_label(leak: LeakLine) -> str:
    ref = f"{leak.provider}:{leak.id}"
    return f"{leak.kind} {leak.name} ({ref})" if leak.name else f"{leak.kind} {ref}"


def _balance_text(digest: Digest, b: BalanceLine) -> str:
    if b.balance is None:
        return f"{_who(digest, b.provider, b.account)} unknown"
    left = f", {humanize(timedelta(hours=b.hours_left))} left" if b.hours_left is not None else ""
    low = " LOW" if b.low else " SHORT" if b.runway_short else ""
    return f"{_who(digest, b.provider, b.account)} {money(b.balance)}{left}{low}"


def _unanswered(digest: Digest) -> str:
    """The accounts whose listing failed, beside the total that leaves them out."""
    failed = [_who(digest, e.provider, e.account) for e in digest.errors]
    return f" ({', '.join(failed)} did not answer)" if failed else ""


def digest_alert(digest: Digest) -> Alert:
    """One message a day: the title is the money, the body one short line per topic."""
    reaped = (
        f"; reaped {len(digest.reaped_24h)} in 24h ({money(digest.reaped_per_month)}/month stopped)"
        if digest.reaped_24h
        else "; nothing reaped in 24h"
    )
    lines = []
    if digest.spend:
        spends = [
            f"{_who(digest, s.provider, s.account)} {money(s.per_hour)}/h" for s in digest.spend
        ]
        lines.append(f"Spend: {_shown(spends)}.")
    if digest.balances:
        lines.append(f"Balances: {_shown([_balance_text(digest, b) for b in digest.balances])}.")
    if digest.leaks:
        lines.append(f"Leaks: {_shown([_leak_label(leak) for leak in digest.leaks])}.")
    if digest.monitors_down:
        lines.append(f"Monitors down: {_shown([m.host for m in digest.monitors_down])}.")
    for problem in digest.errors + digest.warnings:
        lines.append(
            f"Unreadable: {_who(digest, problem.provider, problem.account)}: {problem.message}."
        )
    lines.append(
        "Run `reaper report` for details."
        if digest.needs_attention
        else "Nothing needs you. `reaper report` has the details."
    )
    return Alert(
        title=f"Daily digest: {money(digest.spend_per_hour)}/h now{_unanswered(digest)}{reaped}",
        body="\n".join(lines),
        level="warning" if digest.needs_attention else "info",
        event="digest",
        dedup_key="digest",
    )
