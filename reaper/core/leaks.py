"""Leaks a stopped-instance reaper does not see: pure detection.

A stopped pod is one leak among several: an instance paused with its GPU still billed, a volume
that outlives its instances, a running instance idle at 0% with nobody watching, one stuck in a
state that bills and never ends, a balance running dry. Detection here is pure (lists of models
+ now + settings → `Finding`s); the guard pass (`reaper.passes.guards`) measures "for how long"
with store episodes and alerts once per episode.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from reaper.core.models import AlertLevel, Balance, Episode, Instance, ProviderName, Volume
from reaper.core.runway import runway_hours
from reaper.core.units import HOURS_PER_MONTH, money, utc
from reaper.settings.model import Settings

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


def leak_bills(cost_per_hour: float | None) -> str:
    return "cost unknown" if cost_per_hour is None else f"{money(cost_per_hour)}/h"


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
    return inst.frozen


# --- detectors: pure ---------------------------------------------------------------------


def frozen_instances(fleet: Iterable[Instance]) -> list[Finding]:
    """Frozen (paused, its GPU still billed): no state of the reaper's ever reaps it."""
    return [
        _finding("frozen", i, f"frozen, {leak_bills(i.cost_per_hour)}")
        for i in fleet
        if _is_frozen(i)
    ]


def stuck_instances(
    fleet: Iterable[Instance], ttl: timedelta, stuck_after: timedelta | None
) -> list[Finding]:
    """Two kinds of stuck. A state the provider names as one that bills and may never end by
    itself (`Instance.stalled`: a start that never finishes, a RUNNING pod whose container
    never came up, waiting for a GPU, in error, an abandoned start): alerted once it lasts
    REAPER_STUCK_AFTER. A state the reaper cannot read at all (unknown): never reaped by the
    safety rules, so after the stopped TTL somebody must look. Frozen has its own finding."""
    findings = []
    for inst in fleet:
        if _is_frozen(inst):
            continue
        if inst.stalled is not None:
            if stuck_after is None:
                continue
            detail = f"{inst.stalled}, {leak_bills(inst.cost_per_hour)}"
            findings.append(_finding("stuck", inst, detail, alert_after=stuck_after))
        elif inst.state == "unknown":
            detail = f"status {inst.raw_status or 'unreadable'}, {leak_bills(inst.cost_per_hour)}"
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
        bills = "cost unknown" if per_month is None else f"{money(per_month)}/month"
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
        detail = f"running since {utc(start)}, {leak_bills(inst.cost_per_hour)}"
        findings.append(_finding("max_runtime", inst, detail, started_at=start))
    return findings


def idle_instances(fleet: Iterable[Instance], idle_after: timedelta | None) -> list[Finding]:
    """Running under 1% GPU by the provider's metrics; alert once it has lasted `idle_after`
    (the episode spans the passes; None, IDLE_ALERT_AFTER=off: never). Alert only: the
    on-instance watchdog decides destruction."""
    if idle_after is None:
        return []
    return [
        _finding(
            "idle",
            i,
            f"under {IDLE_UTIL_PERCENT:g}% GPU, {leak_bills(i.cost_per_hour)}",
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
        detail = f"start time {utc(max(times))} is in the future"
        findings.append(_finding("future_start", inst, detail, started_at=max(times)))
    return findings


def detect(
    fleet: Sequence[Instance],
    volumes: Sequence[Volume],
    now: datetime,
    settings: Settings,
) -> list[Finding]:
    """Every leak condition seen now, before "for how long" is applied (see `due`)."""
    live = [i for i in fleet if i.state != "terminated"]
    return (
        frozen_instances(live)
        + stuck_instances(live, settings.stopped_ttl, settings.stuck_after)
        + orphan_volumes(volumes, settings.volume_orphan_after)
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
    """Each balance with its account's burn rate as the spend table counts it (`account_spend`:
    running instances and storage alike), whatever rate the provider reports of its own (one
    provider's counts running instances only): the runway and the table never disagree. An account
    whose listing failed keeps the provider's own figure, or None: an empty list there is not
    "nothing bills"."""
    spend = account_spend(fleet)
    return [
        b
        if (b.provider, b.account) in failed_accounts
        else b.model_copy(update={"spend_per_hour": spend.get((b.provider, b.account), 0.0)})
        for b in balances
    ]


def is_low(balance: Balance, minimum: float) -> bool | None:
    """True below BALANCE_MIN; None when the balance could not be read (no decision)."""
    return None if balance.balance is None else balance.balance < minimum


def hours_left(balance: Balance) -> float | None:
    """Hours until zero at the current spend rate (the runway, rounded for people and JSON);
    None when nothing bills or it is unknown."""
    hours = runway_hours(balance.balance, balance.spend_per_hour)
    return None if hours is None else round(hours, 2)
