"""Money guards: the leaks a stopped-instance reaper does not see, seen from outside.

A stopped pod is one leak among several: a frozen Vast instance bills its GPU, a network volume
outlives its pods, a running pod idles at 0% with nobody watching, an instance sits in an
unknown or ERROR state the reaper never touches, a balance runs dry. Everything here only
reports and alerts; nothing is ever deleted (deterministic code decides destruction, and only
the reap policy does that).

Detection is pure (lists of models + now + settings → `Finding`s). "Longer than" is measured
with store episodes: an episode opens when a condition is first seen and closes when it is
gone, so its `opened_at` is when the condition started, and alerting once per episode (again
only when its `detail` changes) is what keeps a condition from becoming an alert storm.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from reaper import log
from reaper.clock import Clock, iso
from reaper.config import Settings
from reaper.models import Alert, AlertLevel, Balance, Episode, Instance, ProviderName, Volume
from reaper.notify import messages
from reaper.notify.base import Notifier
from reaper.providers.base import ProviderClient, error_text
from reaper.store.base import Store

LeakKind = Literal["frozen", "stuck", "orphan_volume", "max_runtime", "idle", "future_start"]
LEAK_KINDS: tuple[LeakKind, ...] = (
    "frozen",
    "stuck",
    "orphan_volume",
    "max_runtime",
    "idle",
    "future_start",
)
# Below this GPU utilisation (percent) a running instance counts as idle.
IDLE_UTIL_PERCENT = 1.0
# Proposed setting REAPER_VOLUME_ORPHAN_AFTER: a volume nothing references for this long is a
# leak. A day leaves room to recreate a pod on a volume without an alert.
DEFAULT_VOLUME_ORPHAN_AFTER = timedelta(hours=24)
HOURS_PER_MONTH = 730.0

LEAK_PREFIX = "leak:"
BALANCE_PREFIX = "balance:"
FETCH_PREFIX = "guard_fetch:"

FetchWhat = Literal["balance", "volumes"]
FETCH_WHATS: tuple[FetchWhat, ...] = ("balance", "volumes")


class Finding(BaseModel):
    """One leak seen in this pass.

    `detail` holds only the material facts (status, start time, price): it is stored in the
    episode, and a change in it is what re-alerts. Elapsed times never go in it, or every pass
    would be a "change". `alert_after` is how long the condition must have held (its episode's
    age) before it is worth an alert; zero alerts at once.
    """

    model_config = ConfigDict(frozen=True)

    key: str
    kind: LeakKind
    provider: ProviderName
    account: str
    id: str
    name: str = ""
    detail: str
    cost_per_hour: float | None = None
    level: AlertLevel = "warning"
    alert_after: timedelta = timedelta(0)
    console_url: str | None = None
    # For `stuck`: the provider's raw status, its stuck condition and state; for
    # `max_runtime`: the run's start.
    raw_status: str = ""
    stalled: str | None = None
    state: str = ""
    started_at: datetime | None = None

    @property
    def subject(self) -> str:
        """`name (provider:id)`: the name people recognise and the id the console shows."""
        ref = f"{self.provider}:{self.id}"
        return f"{self.name} ({ref})" if self.name else ref

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "provider": self.provider,
            "account": self.account,
            "id": self.id,
            "name": self.name,
            "detail": self.detail,
            "cost_per_hour": self.cost_per_hour,
            "level": self.level,
        }


def leak_key(kind: LeakKind, provider: str, account: str, subject_id: str) -> str:
    """The episode key of one leak. Account names cannot hold `:`; the id goes last."""
    return f"{LEAK_PREFIX}{kind}:{provider}:{account}:{subject_id}"


def parse_leak_key(key: str) -> tuple[str, str, str, str] | None:
    """(kind, provider, account, id) of a leak episode key, None if it is not one."""
    if not key.startswith(LEAK_PREFIX):
        return None
    parts = key[len(LEAK_PREFIX) :].split(":", 3)
    if len(parts) != 4:
        return None
    kind, provider, account, subject_id = parts
    return kind, provider, account, subject_id


def _bills(cost_per_hour: float | None) -> str:
    return "cost unknown" if cost_per_hour is None else f"{messages.money(cost_per_hour)}/h"


def _finding(kind: LeakKind, inst: Instance, detail: str, **extra: Any) -> Finding:
    return Finding(
        key=leak_key(kind, inst.provider, inst.account, inst.id),
        kind=kind,
        provider=inst.provider,
        account=inst.account,
        id=inst.id,
        name=inst.name,
        detail=detail,
        cost_per_hour=inst.cost_per_hour,
        console_url=inst.console_url,
        raw_status=inst.raw_status,
        stalled=inst.stalled,
        state=inst.state,
        **extra,
    )


def _is_frozen(inst: Instance) -> bool:
    return inst.provider == "vast" and inst.raw_status.strip().lower() == "frozen"


# --- detectors: pure ---------------------------------------------------------------------


def frozen_instances(fleet: Iterable[Instance]) -> list[Finding]:
    """Vast `frozen`: the GPU still bills, and no state of the reaper's ever reaps it."""
    return [
        _finding("frozen", i, f"frozen, {_bills(i.cost_per_hour)}") for i in fleet if _is_frozen(i)
    ]


def stuck_instances(
    fleet: Iterable[Instance], ttl: timedelta, stuck_after: timedelta | None
) -> list[Finding]:
    """Two kinds of stuck. A state the provider names as one that bills and may never end by
    itself (`Instance.stalled`: a start that never finishes, a RUNNING pod whose container
    never came up, Vast `scheduling` or `error`, an abandoned start): alerted once it lasts
    REAPER_STUCK_AFTER. A state the reaper cannot read at all (unknown): never reaped by the
    safety rules, so after the stopped TTL somebody must look. Frozen has its own finding."""
    findings = []
    for inst in fleet:
        if _is_frozen(inst):
            continue
        if inst.stalled is not None:
            if stuck_after is None:
                continue
            detail = f"{inst.stalled}, {_bills(inst.cost_per_hour)}"
            findings.append(_finding("stuck", inst, detail, alert_after=stuck_after))
        elif inst.state == "unknown":
            detail = f"status {inst.raw_status or 'unreadable'}, {_bills(inst.cost_per_hour)}"
            findings.append(_finding("stuck", inst, detail, alert_after=ttl))
    return findings


def orphan_volumes(volumes: Iterable[Volume], orphan_after: timedelta) -> list[Finding]:
    """Volumes that nothing references (`attached` False; None = cannot tell, never a leak)."""
    findings = []
    for v in volumes:
        if v.attached is not False:
            continue
        per_month = v.cost_per_month
        size = f"{v.size_gb:g} GB, " if v.size_gb else ""
        bills = "cost unknown" if per_month is None else f"{messages.money(per_month)}/month"
        findings.append(
            Finding(
                key=leak_key("orphan_volume", v.provider, v.account, v.id),
                kind="orphan_volume",
                provider=v.provider,
                account=v.account,
                id=v.id,
                name=v.name,
                detail=f"unattached, {size}{bills}",
                cost_per_hour=None if per_month is None else round(per_month / HOURS_PER_MONTH, 6),
                alert_after=orphan_after,
            )
        )
    return findings


def over_max_runtime(
    fleet: Iterable[Instance], now: datetime, max_runtime: timedelta | None
) -> list[Finding]:
    """Running longer than REAPER_MAX_RUNTIME, from `started_at`, else `created_at`. The start
    is in the detail: a restart is a new run and may alert again."""
    if max_runtime is None:
        return []
    findings = []
    for inst in fleet:
        start = inst.started_at or inst.created_at
        if inst.state != "running" or start is None or now - start <= max_runtime:
            continue
        detail = f"running since {messages.utc(start)}, {_bills(inst.cost_per_hour)}"
        findings.append(_finding("max_runtime", inst, detail, started_at=start))
    return findings


def idle_instances(fleet: Iterable[Instance], idle_after: timedelta) -> list[Finding]:
    """Running under 1% GPU by the provider's metrics; alert once it has lasted `idle_after`
    (the episode spans the passes). Alert only: the on-instance watchdog decides destruction."""
    return [
        _finding(
            "idle",
            i,
            f"under {IDLE_UTIL_PERCENT:g}% GPU, {_bills(i.cost_per_hour)}",
            alert_after=idle_after,
        )
        for i in fleet
        if i.state == "running" and i.gpu_util is not None and i.gpu_util < IDLE_UTIL_PERCENT
    ]


def future_starts(fleet: Iterable[Instance], now: datetime) -> list[Finding]:
    """A start or creation time after now cannot be read (the provider's clock, or ours, is
    wrong): the stopped clock keeps its recorded stretch instead of restarting every pass, and
    somebody must know, because such an instance is reaped later than it should be."""
    findings = []
    for inst in fleet:
        times = [t for t in (inst.started_at, inst.created_at) if t is not None and t > now]
        if not times or inst.state == "terminated":
            continue
        detail = f"start time {messages.utc(max(times))} is in the future"
        findings.append(_finding("future_start", inst, detail, started_at=max(times)))
    return findings


def detect(
    fleet: Sequence[Instance],
    volumes: Sequence[Volume],
    now: datetime,
    settings: Settings,
    *,
    volume_orphan_after: timedelta = DEFAULT_VOLUME_ORPHAN_AFTER,
) -> list[Finding]:
    """Every leak condition seen now, before "for how long" is applied (see `due`)."""
    live = [i for i in fleet if i.state != "terminated"]
    return (
        frozen_instances(live)
        + stuck_instances(live, settings.stopped_ttl, settings.stuck_after)
        + orphan_volumes(volumes, volume_orphan_after)
        + over_max_runtime(live, now, settings.max_runtime)
        + idle_instances(live, settings.idle_alert_after)
        + future_starts(live, now)
    )


def undetermined_keys(fleet: Iterable[Instance], volumes: Iterable[Volume]) -> set[str]:
    """Leak episodes whose condition cannot be read this pass: they stay as they are (neither
    closed nor alerted), as unknown keeps the stopped clock, so one missing metric does not
    restart an idle span or a volume's orphan clock."""
    keys = {
        leak_key("idle", i.provider, i.account, i.id)
        for i in fleet
        if i.state == "running" and i.gpu_util is None
    }
    keys |= {
        leak_key("orphan_volume", v.provider, v.account, v.id)
        for v in volumes
        if v.attached is None
    }
    return keys


def due(
    findings: Iterable[Finding], episodes: Mapping[str, Episode], now: datetime
) -> list[Finding]:
    """Findings to alert now: old enough, and never alerted in this episode or changed since.
    A finding without an episode (a dry run) counts as first seen now."""
    result = []
    for finding in findings:
        episode = episodes.get(finding.key)
        opened_at = episode.opened_at if episode else now
        if now - opened_at < finding.alert_after:
            continue
        if episode is None or episode.alerted_at is None or episode.detail != finding.detail:
            result.append(finding)
    return result


def account_spend(fleet: Iterable[Instance]) -> dict[tuple[str, str], float]:
    """$/h per (provider, account) from what each instance bills now (unknown costs count 0)."""
    spend: dict[tuple[str, str], float] = {}
    for inst in fleet:
        if inst.state == "terminated":
            continue
        key = (inst.provider, inst.account)
        spend[key] = spend.get(key, 0.0) + (inst.cost_per_hour or 0.0)
    return {k: round(v, 6) for k, v in spend.items()}


def with_spend(
    balances: Iterable[Balance],
    fleet: Sequence[Instance],
    failed_accounts: Collection[tuple[str, str]] = (),
) -> list[Balance]:
    """Vast reports no spend rate: use the sum of the account's instances' $/h (also for a
    RunPod answer without `currentSpendPerHr`). An account whose listing failed keeps None:
    an empty list there is not "nothing bills"."""
    spend = account_spend(fleet)
    return [
        b
        if b.spend_per_hour is not None or (b.provider, b.account) in failed_accounts
        else b.model_copy(update={"spend_per_hour": spend.get((b.provider, b.account), 0.0)})
        for b in balances
    ]


def is_low(balance: Balance, minimum: float) -> bool | None:
    """True below BALANCE_MIN; None when the balance could not be read (no decision)."""
    return None if balance.balance is None else balance.balance < minimum


def hours_left(balance: Balance) -> float | None:
    """Hours until zero at the current spend rate; None when nothing bills or it is unknown."""
    if balance.balance is None or not balance.spend_per_hour or balance.spend_per_hour <= 0:
        return None
    return round(max(balance.balance, 0.0) / balance.spend_per_hour, 2)


# --- alerts --------------------------------------------------------------------------------


def leak_alert(finding: Finding, since: datetime, now: datetime, settings: Settings) -> Alert:
    """The words for one leak: title = what, body = what to do."""
    held = messages.humanize(now - since)
    bills = _bills(finding.cost_per_hour)
    who = finding.subject
    provider = messages.provider_name(finding.provider)
    title: str
    body: str
    if finding.kind == "frozen":
        title = f"{who} is frozen and still bills its GPU ({bills})"
        body = "Nothing reaps a frozen instance: destroy it in the Vast console if its job is over."
    elif finding.kind == "stuck" and finding.stalled:
        title = f"{who} stuck for {held}: {finding.stalled}"
        body = (
            f"It bills {bills} and may never become usable: check it in the {provider} console"
            " and terminate it if it is dead."
            + (
                " (A stopped one is reaped after REAPER_STOPPED_TTL, with a warning first.)"
                if finding.state == "stopped"
                else " The reaper never terminates it for this."
            )
        )
    elif finding.kind == "stuck":
        title = f"{who} stuck in {finding.raw_status or 'an unreadable state'} for {held}"
        body = (
            f"The reaper never terminates unknown or ERROR instances ({bills}): check it in the"
            f" {provider} console and terminate it if it is dead."
        )
    elif finding.kind == "orphan_volume":
        title = f"{provider} volume {who} unattached for {held} ({finding.detail})"
        body = (
            "Nothing references it: delete it in the console once its data is safe elsewhere,"
            " or attach it to a new instance."
        )
    elif finding.kind == "max_runtime":
        start = finding.started_at or since
        limit = messages.humanize(settings.max_runtime or timedelta(0))
        title = f"{who} running for {messages.humanize(now - start)} at {bills}"
        body = f"Past REAPER_MAX_RUNTIME ({limit}): stop it if its job is done."
    elif finding.kind == "future_start":
        title = f"{who}: {provider} reports a start time in the future"
        body = (
            f"{finding.detail}: the reaper cannot read it as a restart and keeps the stopped clock"
            " it has; check this machine's clock (NTP) and the instance in the console."
        )
    else:
        title = f"{who} idle while billing {bills}"
        body = (
            f"Under {IDLE_UTIL_PERCENT:g}% GPU for {held} by {provider}'s metrics: stop it if its"
            " job is done (its own idle-watch decides on its own)."
        )
    return Alert(
        title=title,
        body=body,
        level=finding.level,
        event=finding.kind,
        dedup_key=f"{finding.kind}:{finding.provider}:{finding.id}",
        url=finding.console_url,
    )


def fetch_failed_alert(provider: str, account: str, what: FetchWhat, message: str) -> Alert:
    name = messages.provider_name(provider)
    if provider == "runpod" and what == "balance":
        title = f"RunPod {account}: balance unreadable (GraphQL)"
        body = (
            "Reaping is unaffected; the low-balance alert is off for this account until GraphQL"
            " answers (RunPod retires it in early 2027)."
        )
    else:
        title = f"{name} {account}: {what} unreadable"
        body = (
            f"Reaping is unaffected; {what} checks skip this account until it answers: check the"
            " key's permissions."
        )
    return Alert(
        title=title,
        body=f"{body} ({' '.join(message.split())[:200]})",
        level="warning",
        event="guard_fetch_failed",
        dedup_key=f"guard_fetch_failed:{provider}:{account}:{what}",
    )


# --- the pass ----------------------------------------------------------------------------


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
    warnings: list[GuardWarning] = field(default_factory=list)
    balance_min: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """For `reap --json` under a `guards` key."""
        return {
            "at": iso(self.at),
            "leaks": [f.to_json() | {"alerted": f.key in self.alerted} for f in self.findings],
            "balances": [
                {
                    "provider": b.provider,
                    "account": b.account,
                    "balance": b.balance,
                    "spend_per_hour": b.spend_per_hour,
                    "hours_left": hours_left(b),
                    "low": is_low(b, self.balance_min),
                }
                for b in self.balances
            ],
            "warnings": [w.model_dump() for w in self.warnings],
        }


def fetch_episode_key(provider: str, account: str, what: FetchWhat) -> str:
    """RunPod's balance is GraphQL, retiring in early 2027: its own `graphql:<account>`."""
    if provider == "runpod" and what == "balance":
        return f"graphql:{account}"
    return f"{FETCH_PREFIX}{what}:{provider}:{account}"


def balance_key(provider: str, account: str) -> str:
    return f"{BALANCE_PREFIX}{provider}:{account}"


@dataclass
class _Fetched:
    client: ProviderClient
    balance: Balance | None
    volumes: list[Volume] | None
    failures: dict[FetchWhat, str]


async def _fetch(client: ProviderClient, listed: list[Instance] | None) -> _Fetched:
    """`listed`: the account's instances from this pass (None if its listing failed)."""
    balance, volumes = await asyncio.gather(
        client.balance(), client.volumes(listed), return_exceptions=True
    )
    failures: dict[FetchWhat, str] = {}
    if isinstance(balance, BaseException):
        failures["balance"] = error_text(balance)
    if isinstance(volumes, BaseException):
        failures["volumes"] = error_text(volumes)
    return _Fetched(
        client,
        None if isinstance(balance, BaseException) else balance,
        None if isinstance(volumes, BaseException) else volumes,
        failures,
    )


@dataclass
class _GuardPass:
    settings: Settings
    store: Store
    notifier: Notifier
    now: datetime
    dry_run: bool
    report: GuardReport

    async def send(self, key: str, alert: Alert, detail: str | None = None) -> None:
        """Send once for the episode; marked alerted (with the detail alerted about) only when
        some channel took it, so a channel outage retries next pass instead of losing it."""
        self.report.alerted.append(key)
        if self.dry_run:
            return
        deliveries = await self.notifier.send(alert)
        if any(d.ok for d in deliveries):
            self.store.mark_episode_alerted(key, self.now, detail)

    async def fetch_outcome(self, fetched: _Fetched, what: FetchWhat, listing_failed: bool) -> None:
        """A balance or volume read that failed is one warning per episode, never an error.
        If the account's listing failed too, the reap pass has alerted already: no second one."""
        client = fetched.client
        key = fetch_episode_key(client.provider, client.account, what)
        message = fetched.failures.get(what)
        if message is None:
            if not self.dry_run:
                self.store.close_episode(key)
            return
        self.report.warnings.append(
            GuardWarning(provider=client.provider, account=client.account, message=message)
        )
        log.event(
            "guard_fetch",
            provider=client.provider,
            account=client.account,
            what=what,
            result="error",
            error=message,
        )
        if listing_failed or self.dry_run:
            return
        episode = self.store.open_episode(key, self.now, message)
        if episode.alerted_at is None:
            await self.send(key, fetch_failed_alert(client.provider, client.account, what, message))

    async def balance(self, balance: Balance) -> None:
        """Low: one alert per crossing below BALANCE_MIN. Back up: the episode closes, so the
        next crossing alerts again. Unreadable: no decision either way."""
        low = is_low(balance, self.settings.balance_min)
        if low is None or self.dry_run:
            return
        key = balance_key(balance.provider, balance.account)
        if not low:
            if self.store.close_episode(key) is not None:
                log.event(
                    "balance",
                    provider=balance.provider,
                    account=balance.account,
                    result="recovered",
                    balance=balance.balance,
                )
            return
        assert balance.balance is not None
        episode = self.store.open_episode(key, self.now, f"{balance.balance:.2f}")
        if episode.alerted_at is None:
            alert = messages.balance_low(
                balance.provider,
                balance.account,
                balance.balance,
                balance.spend_per_hour,
                self.settings.balance_min,
            )
            await self.send(key, alert)

    def reconcile(
        self, findings: list[Finding], closable: set[tuple[str, str, str]], keep: set[str]
    ) -> dict[str, Episode]:
        """Open an episode per finding; close leak episodes whose condition is gone, but only
        where it was actually read (`closable`: (kind group, provider, account)) — an
        account whose listing failed infers nothing gone."""
        episodes = {e.key: e for e in self.store.open_episodes(LEAK_PREFIX)}
        found = {f.key for f in findings}
        if self.dry_run:
            return episodes
        for key in set(episodes) - found - keep:
            parsed = parse_leak_key(key)
            if parsed is None:
                continue
            kind, provider, account, _ = parsed
            group = "volumes" if kind == "orphan_volume" else "instances"
            if (group, provider, account) in closable or not self._configured(provider, account):
                self.store.close_episode(key)
                del episodes[key]
        for finding in findings:
            episodes[finding.key] = self.store.open_episode(finding.key, self.now, finding.detail)
        return episodes

    def _configured(self, provider: str, account: str) -> bool:
        return any(a.provider == provider and a.name == account for a in self.settings.accounts)


async def guard_pass(
    settings: Settings,
    store: Store,
    clients: Sequence[ProviderClient],
    notifier: Notifier,
    clock: Clock,
    fleet: list[Instance],
    *,
    failed_accounts: Collection[tuple[str, str]] = (),
    dry_run: bool = False,
    volume_orphan_after: timedelta = DEFAULT_VOLUME_ORPHAN_AFTER,
) -> GuardReport:
    """Run the money guards once, after the reap pass has listed `fleet` (not listed again).

    `failed_accounts`: (provider, account) whose listing failed in this pass — nothing about
    them is inferred gone. Never raises and never fails the reap: anything unexpected becomes
    a warning in the report. A dry run reads and reports; it writes and sends nothing.
    """
    now = clock.now()
    report = GuardReport(at=now, dry_run=dry_run, balance_min=settings.balance_min)
    try:
        await _run(
            settings,
            store,
            clients,
            notifier,
            fleet,
            report,
            set(failed_accounts),
            dry_run,
            volume_orphan_after,
        )
    except Exception as exc:  # the guards must never take the reap pass down with them
        message = error_text(exc)
        log.event("guards", result="error", error=message)
        report.warnings.append(GuardWarning(provider="", account="", message=message))
    log.event(
        "guards",
        result="done",
        dry_run=dry_run,
        leaks=len(report.findings),
        alerted=len(report.alerted),
        warnings=len(report.warnings),
    )
    return report


async def _run(
    settings: Settings,
    store: Store,
    clients: Sequence[ProviderClient],
    notifier: Notifier,
    fleet: list[Instance],
    report: GuardReport,
    failed: set[tuple[str, str]],
    dry_run: bool,
    volume_orphan_after: timedelta,
) -> None:
    run = _GuardPass(settings, store, notifier, report.at, dry_run, report)

    def listed(client: ProviderClient) -> list[Instance] | None:
        # Every listed instance of the provider, not only this account's: the pass keeps one
        # copy of a pod that two configured keys both list, and a volume is attached when any
        # pod mounts it. An account whose listing failed lists for itself.
        if (client.provider, client.account) in failed:
            return None
        return [i for i in fleet if i.provider == client.provider]

    fetched = await asyncio.gather(*(_fetch(c, listed(c)) for c in clients))
    closable: set[tuple[str, str, str]] = set()
    for item in fetched:
        account = (item.client.provider, item.client.account)
        listing_failed = account in failed
        for what in FETCH_WHATS:
            await run.fetch_outcome(item, what, listing_failed)
        if not listing_failed:
            closable.add(("instances", *account))
            if item.volumes is not None:
                closable.add(("volumes", *account))
    report.volumes = [v for item in fetched for v in item.volumes or []]
    balances = [i.balance for i in fetched if i.balance is not None]
    report.balances = with_spend(balances, fleet, failed)
    for balance in report.balances:
        await run.balance(balance)

    report.findings = detect(
        fleet, report.volumes, report.at, settings, volume_orphan_after=volume_orphan_after
    )
    keep = undetermined_keys(fleet, report.volumes)
    episodes = run.reconcile(report.findings, closable, keep)
    for finding in due(report.findings, episodes, report.at):
        episode = episodes.get(finding.key)
        since = episode.opened_at if episode else report.at
        await run.send(finding.key, leak_alert(finding, since, report.at, settings), finding.detail)
        log.event(
            "leak",
            kind=finding.kind,
            provider=finding.provider,
            account=finding.account,
            id=finding.id,
            detail=finding.detail,
        )


# --- digest and report (in reaper.report; re-exported for the CLI and the schedules) ------


async def digest_once(
    settings: Settings,
    store: Store,
    notifier: Notifier,
    clock: Clock,
    *,
    clients: Sequence[ProviderClient] | None = None,
) -> int:
    """The daily digest (see `reaper.report.digest_once`)."""
    from reaper.report import digest_once as run

    return await run(settings, store, notifier, clock, clients=clients)


def report_command(settings: Settings, json_output: bool) -> int:
    """`reaper report [--json]` (see `reaper.report.report_command`)."""
    from reaper.report import report_command as run

    return run(settings, json_output=json_output)
