"""The daily digest and `reaper report`: where the money goes, in one look.

Both read the providers live (spend now, balances, volumes) and the store for what only it
knows (what was reaped, monitors, how long each leak has lasted). `build_digest` is the pure
part; `digest_once` sends it on a schedule, `report_command` prints it.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict

from reaper import log
from reaper.clock import Clock, SystemClock, as_utc, iso
from reaper.config import Settings
from reaper.guards import (
    DEFAULT_VOLUME_ORPHAN_AFTER,
    HOURS_PER_MONTH,
    LEAK_PREFIX,
    Finding,
    detect,
    hours_left,
    is_low,
    with_spend,
)
from reaper.models import (
    Alert,
    AuditRecord,
    Balance,
    Episode,
    Instance,
    Monitor,
    Volume,
)
from reaper.notify import messages
from reaper.notify.base import Notifier
from reaper.providers.base import ProviderClient, error_text
from reaper.providers.http import HttpOptions
from reaper.store.base import Store
from reaper.table import format_table

DIGEST_WINDOW = timedelta(hours=24)
# A second digest within this gap (a restarted `serve`, a retried Lambda) is skipped.
DIGEST_MIN_GAP = timedelta(hours=20)
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

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = self.model_dump(mode="json")
        data["at"] = iso(self.at)
        return data

    @property
    def needs_attention(self) -> bool:
        return bool(
            self.leaks or self.monitors_down or self.errors or any(b.low for b in self.balances)
        )


# --- live data ------------------------------------------------------------------------------


@dataclass
class Survey:
    """What the providers say now, account by account."""

    instances: list[Instance] = field(default_factory=list)
    balances: list[Balance] = field(default_factory=list)
    volumes: list[Volume] = field(default_factory=list)
    errors: list[ProblemLine] = field(default_factory=list)
    warnings: list[ProblemLine] = field(default_factory=list)
    listed: list[tuple[str, str]] = field(default_factory=list)


async def survey(clients: Sequence[ProviderClient]) -> Survey:
    """List instances, balances and volumes of every account concurrently; failures are
    recorded per account, never raised."""

    async def one(client: ProviderClient) -> tuple[Any, Any, Any]:
        listed, balance, volumes = await asyncio.gather(
            client.list_instances(), client.balance(), client.volumes(), return_exceptions=True
        )
        return listed, balance, volumes

    result = Survey()
    for client, (listed, balance, volumes) in zip(
        clients, await asyncio.gather(*(one(c) for c in clients)), strict=True
    ):
        where = {"provider": client.provider, "account": client.account}
        if isinstance(listed, BaseException):
            result.errors.append(ProblemLine(**where, message=error_text(listed)))
        else:
            result.instances += listed
            result.listed.append((client.provider, client.account))
        for what, value in (("balance", balance), ("volumes", volumes)):
            if isinstance(value, BaseException):
                message = f"{what}: {error_text(value)}"
                result.warnings.append(ProblemLine(**where, message=message))
        if isinstance(balance, Balance):
            result.balances.append(balance)
        if isinstance(volumes, list):
            result.volumes += volumes
    return result


# --- the pure part ----------------------------------------------------------------------


def _spend(instances: Iterable[Instance], listed: Iterable[tuple[str, str]]) -> list[SpendLine]:
    lines: dict[tuple[str, str], list[Instance]] = {account: [] for account in listed}
    for inst in instances:
        if inst.state != "terminated":
            lines.setdefault((inst.provider, inst.account), []).append(inst)
    return [
        SpendLine(
            provider=provider,
            account=account,
            per_hour=round(sum(i.cost_per_hour or 0.0 for i in insts), 4),
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
    *,
    volume_orphan_after: timedelta = DEFAULT_VOLUME_ORPHAN_AFTER,
) -> Digest:
    failed = {(e.provider, e.account) for e in live.errors}
    spend = _spend(live.instances, live.listed)
    reaped = _reaped(audit, now)
    balances = with_spend(live.balances, live.instances, failed)
    findings = detect(
        live.instances, live.volumes, now, settings, volume_orphan_after=volume_orphan_after
    )
    return Digest(
        at=now,
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
            )
            for b in balances
        ],
        leaks=_leaks(findings, {e.key: e for e in episodes}, now),
        errors=list(live.errors),
        warnings=list(live.warnings),
    )


def _who(provider: str, account: str) -> str:
    return f"{messages.provider_name(provider)} {account}"


def _shown(items: list[str]) -> str:
    more = f" (+{len(items) - _SHOWN} more)" if len(items) > _SHOWN else ""
    return ", ".join(items[:_SHOWN]) + more


def _leak_label(leak: LeakLine) -> str:
    ref = f"{leak.provider}:{leak.id}"
    return f"{leak.kind} {leak.name} ({ref})" if leak.name else f"{leak.kind} {ref}"


def _balance_text(b: BalanceLine) -> str:
    if b.balance is None:
        return f"{_who(b.provider, b.account)} unknown"
    left = f", {messages.humanize(timedelta(hours=b.hours_left))} left" if b.hours_left else ""
    low = " LOW" if b.low else ""
    return f"{_who(b.provider, b.account)} {messages.money(b.balance)}{left}{low}"


def digest_alert(digest: Digest) -> Alert:
    """One message a day: the title is the money, the body one short line per topic."""
    reaped = (
        f"; reaped {len(digest.reaped_24h)} in 24h"
        f" ({messages.money(digest.reaped_per_month)}/month stopped)"
        if digest.reaped_24h
        else "; nothing reaped in 24h"
    )
    lines = []
    if digest.spend:
        spends = [
            f"{_who(s.provider, s.account)} {messages.money(s.per_hour)}/h" for s in digest.spend
        ]
        lines.append(f"Spend: {_shown(spends)}.")
    if digest.balances:
        lines.append(f"Balances: {_shown([_balance_text(b) for b in digest.balances])}.")
    if digest.leaks:
        lines.append(f"Leaks: {_shown([_leak_label(leak) for leak in digest.leaks])}.")
    if digest.monitors_down:
        lines.append(f"Monitors down: {_shown([m.host for m in digest.monitors_down])}.")
    for problem in digest.errors + digest.warnings:
        lines.append(f"Unreadable: {_who(problem.provider, problem.account)}: {problem.message}.")
    lines.append(
        "Run `reaper report` for details."
        if digest.needs_attention
        else "Nothing needs you. `reaper report` has the details."
    )
    return Alert(
        title=f"Daily digest: {messages.money(digest.spend_per_hour)}/h now{reaped}",
        body="\n".join(lines),
        level="warning" if digest.needs_attention else "info",
        event="digest",
        dedup_key="digest",
    )


# --- running it -------------------------------------------------------------------------


async def collect(
    settings: Settings,
    store: Store,
    clients: Sequence[ProviderClient],
    now: datetime,
    *,
    volume_orphan_after: timedelta = DEFAULT_VOLUME_ORPHAN_AFTER,
) -> Digest:
    """Live provider data plus the store's records, as one `Digest`. Reads the store only."""
    live = await survey(clients)
    return build_digest(
        now,
        live,
        store.audit_log(since=now - DIGEST_WINDOW),
        store.list_monitors(),
        store.open_episodes(LEAK_PREFIX),
        settings,
        volume_orphan_after=volume_orphan_after,
    )


async def _with_clients(
    settings: Settings,
    store: Store,
    clients: Sequence[ProviderClient] | None,
    now: datetime,
    volume_orphan_after: timedelta,
    http_options: HttpOptions | None = None,
) -> Digest:
    from reaper.providers import make_clients

    own = list(make_clients(settings, http_options)) if clients is None else None
    try:
        return await collect(
            settings, store, own or clients or [], now, volume_orphan_after=volume_orphan_after
        )
    finally:
        if own:
            await asyncio.gather(*(c.aclose() for c in own), return_exceptions=True)


async def digest_once(
    settings: Settings,
    store: Store,
    notifier: Notifier,
    clock: Clock,
    *,
    clients: Sequence[ProviderClient] | None = None,
    volume_orphan_after: timedelta = DEFAULT_VOLUME_ORPHAN_AFTER,
) -> int:
    """The scheduled daily digest (`serve`, Lambda). At most one per DIGEST_MIN_GAP per store,
    so a restarted server or a retried invocation does not send it twice. Never raises for an
    expected outcome: 0 sent (or skipped), 1 when a provider listing failed."""
    now = clock.now()
    if not store.claim_alert("digest", now, DIGEST_MIN_GAP):
        log.event("digest", result="skipped", reason="sent within the last 20h")
        return 0
    digest = await _with_clients(settings, store, clients, now, volume_orphan_after)
    deliveries = await notifier.send(digest_alert(digest))
    log.event(
        "digest",
        result="sent" if any(d.ok for d in deliveries) else "undelivered",
        spend_per_hour=digest.spend_per_hour,
        leaks=len(digest.leaks),
        errors=len(digest.errors),
    )
    return 1 if digest.errors else 0


def render_text(digest: Digest) -> str:
    """The terminal form of `reaper report`: one short table per topic."""
    out = [f"report at {iso(digest.at)}: spend now {messages.money(digest.spend_per_hour)}/h"]
    if digest.spend:
        rows = [
            [s.provider, s.account, f"{s.per_hour:.3f}", str(s.billing), str(s.unknown_cost)]
            for s in digest.spend
        ]
        out += ["", format_table(["provider", "account", "$/h", "billing", "cost unknown"], rows)]
    out.append("")
    if digest.balances:
        rows = [
            [
                b.provider,
                b.account,
                "" if b.balance is None else f"{b.balance:.2f}",
                "" if b.spend_per_hour is None else f"{b.spend_per_hour:.3f}",
                "" if b.hours_left is None else messages.humanize(timedelta(hours=b.hours_left)),
                "LOW" if b.low else "",
            ]
            for b in digest.balances
        ]
        out.append(format_table(["provider", "account", "balance", "$/h", "left", "status"], rows))
    else:
        out.append("balances: none readable")
    out.append("")
    if digest.leaks:
        rows = [
            [
                leak.kind,
                leak.provider,
                leak.account,
                leak.id,
                leak.name,
                leak.detail,
                messages.humanize(digest.at - leak.since) if leak.since else "new",
                "yes" if leak.alerted else "no",
            ]
            for leak in digest.leaks
        ]
        headers = ["leak", "provider", "account", "id", "name", "detail", "for", "alerted"]
        out.append(format_table(headers, rows))
    else:
        out.append("leaks: none")
    out.append("")
    if digest.reaped_24h:
        out.append(
            f"reaped in 24h: {len(digest.reaped_24h)}, stopping"
            f" {messages.money(digest.reaped_per_month)}/month"
        )
        rows = [
            [
                r.provider,
                r.id,
                r.name,
                "" if r.per_month is None else f"{r.per_month:.2f}",
                iso(r.requested_at) or "",
                r.reason,
            ]
            for r in digest.reaped_24h
        ]
        out.append(format_table(["provider", "id", "name", "$/month", "at", "reason"], rows))
    else:
        out.append("reaped in 24h: nothing")
    if digest.monitors_down:
        out.append("")
        hosts = ", ".join(m.host for m in digest.monitors_down)
        out.append(f"monitors down: {hosts}")
    for problem in digest.errors:
        out.append(f"error: {problem.provider}/{problem.account}: {problem.message}")
    for problem in digest.warnings:
        out.append(f"warning: {problem.provider}/{problem.account}: {problem.message}")
    return "\n".join(out)


def report_command(
    settings: Settings,
    *,
    json_output: bool,
    clock: Clock | None = None,
    volume_orphan_after: timedelta = DEFAULT_VOLUME_ORPHAN_AFTER,
    http_options: HttpOptions | None = None,
) -> int:
    """`reaper report [--json]`: providers live, the store read-only. 0 done; 1 when a
    listing failed (its spend and leaks are unknown); no keys at all is a config error."""
    from reaper.store import open_store

    settings.require_provider_keys()
    now = (clock or SystemClock()).now()
    store = open_store(settings.state, read_only=True)
    try:
        digest = asyncio.run(
            _with_clients(settings, store, None, now, volume_orphan_after, http_options)
        )
    finally:
        store.close()
    if json_output:
        print(json.dumps(digest.to_json(), ensure_ascii=False))
    else:
        print(render_text(digest))
    for problem in digest.errors:
        print(f"reaper: {problem.provider}/{problem.account}: {problem.message}", file=sys.stderr)
    return 1 if digest.errors else 0
