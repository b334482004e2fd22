"""The guard pass: the money guards' I/O — balances and volumes read, episodes kept, alerts sent.

Detection is pure (`reaper.core.leaks`). "Longer than" is measured with store episodes: an
episode opens when a condition is first seen and closes when it is gone, so its `opened_at` is
when the condition started, and alerting once per episode (again only when its `detail`
changes) is what keeps a condition from becoming an alert storm. Everything here only reports
and alerts; nothing is ever deleted (only the reap policy decides destruction).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from pydantic import BaseModel, ConfigDict

from reaper import log
from reaper.core import messages
from reaper.core.leaks import (
    BALANCE_PREFIX,
    FETCH_PREFIX,
    FETCH_WHATS,
    LEAK_PREFIX,
    FetchWhat,
    Finding,
    detect,
    due,
    is_low,
    parse_leak_key,
    undetermined_keys,
    with_spend,
)
from reaper.core.models import (
    Alert,
    Balance,
    BilledDay,
    Episode,
    Instance,
    Volume,
    instance_key,
)
from reaper.core.policy import protection_reason
from reaper.core.runway import runway_hours, runway_key, runway_short
from reaper.passes.context import Context
from reaper.passes.observe import Observation, read_extras
from reaper.providers.base import error_text
from reaper.providers.plugins import label, plugin


class GuardWarning(BaseModel):
    """Something the guards could not read; never an error of the reap pass. `provider` and
    `account` are empty for a failure of the guards themselves."""

    model_config = ConfigDict(frozen=True)

    provider: str
    account: str
    message: str


@dataclass
class GuardReport:
    at: datetime
    dry_run: bool = False
    findings: list[Finding] = field(default_factory=list)
    # Episode keys alerted in this pass (in a dry run: that would have been alerted).
    alerted: list[str] = field(default_factory=list)
    balances: list[Balance] = field(default_factory=list)
    volumes: list[Volume] = field(default_factory=list)
    # The providers' own billing history, per account that offers one (for the snapshot).
    billed: dict[tuple[str, str], list[BilledDay]] = field(default_factory=dict)
    billed_instances: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)
    warnings: list[GuardWarning] = field(default_factory=list)
    balance_min: float = 0.0
    balance_hours: float = 0.0


def fetch_episode_key(provider: str, account: str, what: FetchWhat) -> str:
    """The episode a failed balance or volume read is kept under; a provider may keep one of
    its own (a read through an API being retired)."""
    own = plugin(provider).fetch_episode(account, what)
    return own or f"{FETCH_PREFIX}{what}:{provider}:{account}"


def balance_key(provider: str, account: str) -> str:
    return f"{BALANCE_PREFIX}{provider}:{account}"


@dataclass
class _GuardPass:
    ctx: Context
    now: datetime
    report: GuardReport

    async def send(self, key: str, alert: Alert, detail: str | None = None) -> None:
        """Send once for the episode; marked alerted (with the detail alerted about) only when
        some channel took it, so a channel outage retries next pass instead of losing it."""
        self.report.alerted.append(key)
        deliveries = await self.ctx.effects.send(alert)
        if any(d.ok for d in deliveries):
            self.ctx.store.mark_episode_alerted(key, self.now, detail)

    async def fetch_outcome(
        self,
        provider: str,
        account: str,
        what: FetchWhat,
        message: str | None,
        listing_failed: bool,
    ) -> None:
        """A balance or volume read that failed is one warning per episode, never an error.
        If the account's listing failed too, the reap pass has alerted already: no second one."""
        store = self.ctx.store
        key = fetch_episode_key(provider, account, what)
        if message is None:
            store.close_episode(key)
            return
        self.report.warnings.append(
            GuardWarning(provider=provider, account=account, message=message)
        )
        log.event(
            "guard_fetch",
            provider=provider,
            account=account,
            what=what,
            result="error",
            error=message,
        )
        if listing_failed:
            return
        episode = store.open_episode(key, self.now, message)
        if episode.alerted_at is None:
            found = plugin(provider)
            alert = messages.fetch_failed_alert(
                provider,
                account,
                what,
                message,
                label=found.label,
                note=found.fetch_note(account, what),
            )
            await self.send(key, alert)

    async def balance(self, balance: Balance) -> None:
        """Low: one alert per crossing below BALANCE_MIN. Back up: the episode closes, so the
        next crossing alerts again. Unreadable: no decision either way."""
        settings, store = self.ctx.settings, self.ctx.store
        low = is_low(balance, settings.balance_min)
        if low is None:
            return
        key = balance_key(balance.provider, balance.account)
        if not low:
            if store.close_episode(key) is not None:
                log.event(
                    "balance",
                    provider=balance.provider,
                    account=balance.account,
                    result="recovered",
                    balance=balance.balance,
                )
            return
        assert balance.balance is not None
        episode = store.open_episode(key, self.now, f"{balance.balance:.2f}")
        if episode.alerted_at is None:
            alert = messages.balance_low(
                balance.provider,
                label(balance.provider),
                balance.account,
                balance.balance,
                balance.spend_per_hour,
                settings.balance_min,
            )
            await self.send(key, alert)

    async def runway(self, balance: Balance) -> None:
        """Short: one alert per episode of a runway under BALANCE_HOURS, while the balance is
        still above BALANCE_MIN (below it, the low-balance alert says how long it lasts, and
        this episode is left as it is). Long again, or nothing bills: the episode closes.
        An unknown balance or spend decides nothing."""
        settings, store = self.ctx.settings, self.ctx.store
        if balance.balance is None or balance.spend_per_hour is None:
            return
        if is_low(balance, settings.balance_min):
            return
        key = runway_key(balance.provider, balance.account)
        hours = runway_hours(balance.balance, balance.spend_per_hour)
        if hours is None or not runway_short(hours, settings.balance_hours):
            if store.close_episode(key) is not None:
                log.event(
                    "balance_runway",
                    provider=balance.provider,
                    account=balance.account,
                    result="recovered",
                    hours=None if hours is None else round(hours, 2),
                )
            return
        episode = store.open_episode(key, self.now, f"{settings.balance_hours:g}h")
        if episode.alerted_at is None:
            alert = messages.balance_runway(
                balance.provider,
                label(balance.provider),
                balance.account,
                balance.balance,
                balance.spend_per_hour,
                hours,
                settings.balance_hours,
            )
            await self.send(key, alert)

    def reconcile(
        self, findings: list[Finding], closable: set[tuple[str, str, str]], keep: set[str]
    ) -> dict[str, Episode]:
        """Open an episode per finding; close leak episodes whose condition is gone, but only
        where it was actually read (`closable`: (kind group, provider, account)) — an
        account whose listing failed infers nothing gone."""
        store = self.ctx.store
        episodes = {e.key: e for e in store.open_episodes(LEAK_PREFIX)}
        found = {f.key for f in findings}
        for key in set(episodes) - found - keep:
            parsed = parse_leak_key(key)
            if parsed is None:
                continue
            kind, provider, account, _ = parsed
            group = "volumes" if kind == "orphan_volume" else "instances"
            if (group, provider, account) in closable or not self._configured(provider, account):
                store.close_episode(key)
                del episodes[key]
        for finding in findings:
            episodes[finding.key] = store.open_episode(finding.key, self.now, finding.detail)
        return episodes

    def _configured(self, provider: str, account: str) -> bool:
        return any(a.provider == provider and a.name == account for a in self.ctx.settings.accounts)


async def guard_pass(ctx: Context, seen: Observation, fleet: list[Instance]) -> GuardReport:
    """Run the money guards once, on the reap pass's listing (`seen`, and `fleet`: its
    instances with their stopped clocks) — not listed again.

    An account whose listing failed infers nothing gone. Never raises and never fails the reap:
    anything unexpected becomes a warning in the report.
    """
    now = ctx.clock.now()
    report = GuardReport(
        at=now,
        dry_run=ctx.dry_run,
        balance_min=ctx.settings.balance_min,
        balance_hours=ctx.settings.balance_hours,
    )
    try:
        await _run(_GuardPass(ctx, now, report), seen, fleet)
    except Exception as exc:  # the guards must never take the reap pass down with them
        message = error_text(exc)
        log.event("guards", result="error", error=message)
        report.warnings.append(GuardWarning(provider="", account="", message=message))
    log.event(
        "guards",
        result="done",
        dry_run=ctx.dry_run,
        leaks=len(report.findings),
        **{ctx.effects.alerted: len(report.alerted)},
        warnings=len(report.warnings),
    )
    return report


def _protected(ctx: Context, fleet: list[Instance], now: datetime) -> dict[str, str]:
    """Why each protected instance of the fleet is protected (the marker, the lock, a keep):
    a leak alert about one must not promise what its protection forbids."""
    history = ctx.store.history()
    marker = ctx.settings.protect_marker
    return {
        inst.key: why
        for inst in fleet
        if (why := protection_reason(inst, history, now, marker)) is not None
    }


async def _run(run: _GuardPass, seen: Observation, fleet: list[Instance]) -> None:
    ctx, report = run.ctx, run.report
    extras = await read_extras(ctx.clients, seen, billing=True)
    failed = {(e.provider, e.account) for e in seen.errors}
    closable: set[tuple[str, str, str]] = set()
    for client in ctx.clients:
        account = (client.provider, client.account)
        listing_failed = account in failed
        failures = extras.failures.get(account, {})
        for what in FETCH_WHATS:
            await run.fetch_outcome(*account, what, failures.get(what), listing_failed)
        if not listing_failed:
            closable.add(("instances", *account))
            if account in extras.volumes_read:
                closable.add(("volumes", *account))
    report.volumes = extras.volumes
    report.billed = extras.billed
    report.billed_instances = extras.billed_instances
    report.balances = with_spend(extras.balances, fleet, failed)
    for balance in report.balances:
        await run.balance(balance)
        await run.runway(balance)

    report.findings = detect(fleet, report.volumes, report.at, ctx.settings)
    keep = undetermined_keys(fleet, report.volumes)
    episodes = run.reconcile(report.findings, closable, keep)
    alerting = due(report.findings, episodes, report.at)
    protected = _protected(ctx, fleet, report.at) if alerting else {}
    for finding in alerting:
        episode = episodes.get(finding.key)
        since = episode.opened_at if episode else report.at
        alert = messages.leak_alert(
            finding,
            since,
            report.at,
            label=label(finding.provider),
            max_runtime=ctx.settings.max_runtime,
            protected=protected.get(instance_key(finding.provider, finding.id)),
        )
        await run.send(finding.key, alert, finding.detail)
        log.event(
            "leak",
            kind=finding.kind,
            provider=finding.provider,
            account=finding.account,
            id=finding.id,
            detail=finding.detail,
        )
