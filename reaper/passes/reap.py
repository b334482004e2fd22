"""One reap pass: observe, decide, apply — warn, terminate, confirm, record, alert.

The pass is the only place that acts on the policy's decisions, and it treats every provider
answer with suspicion: a listing that failed is an error for that account (no decisions for
it); right before a delete the instance is read again and the policy asked again; a delete
that answered 2xx is only a request — the instance counts as terminated once a complete,
trustworthy re-listing of its account shows it gone or terminated.

Everything it changes goes through `ctx.effects` (see `reaper.passes.context`), so a dry run
is this same pass with effects that record instead of acting.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import socket
import time
import uuid
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict

from reaper import log
from reaper.channels.base import Notifier
from reaper.channels.fanout import channel_plugin
from reaper.channels.registry import CHANNELS
from reaper.clock import Clock, SystemClock
from reaper.config import Settings
from reaper.core import messages
from reaper.core.license import announced_deadline
from reaper.core.models import (
    AccountError,
    Action,
    Alert,
    AuditRecord,
    Decision,
    Delivery,
    Exemption,
    History,
    Instance,
    Listing,
    Plan,
    ReapRun,
    WarningRecord,
    instance_key,
)
from reaper.core.policy import (
    RESETTING_STATES,
    decide,
    no_channel_reason,
)
from reaper.core.snapshot import take_snapshot
from reaper.core.units import HOURS_PER_MONTH, humanize, iso, utc
from reaper.core.witness import proves_gone, trustworthy_absence
from reaper.passes import gate
from reaper.passes.context import Context
from reaper.passes.deadline import PassDeadline, pass_seconds
from reaper.passes.gate import pass_history
from reaper.passes.guards import GuardReport, guard_pass
from reaper.passes.observe import Observation, observe
from reaper.providers.base import (
    UNREADABLE_ID_PREFIX,
    ProviderClient,
    error_text,
)
from reaper.providers.plugins import label
from reaper.store.base import Lease, Store

LEASE_NAME = "reap"
# Short, so that a pass that was killed holds up the next for two minutes, not half an hour;
# kept alive while its pass runs: renewed before each step that acts and, in the background,
# every LEASE_RENEW_EVERY (a slow listing or a slow channel takes as long as it takes). Each
# renewal is fenced: it only extends a lease this pass still holds and that has not expired.
LEASE_TTL = timedelta(minutes=2)
LEASE_RENEW_EVERY = 20.0
# More warnings than this in one pass are folded into as few messages as hold them (see
# `messages.fold`): a chat's per-minute limit must not delay the notice of the last one.
FOLD_WARNINGS_AFTER = 5
# Unconfirmed audit records older than this are no longer reconciled against listings.
RECONCILE_WINDOW = timedelta(days=30)
# The providers' clocks (their answers' `Date`) and ours may differ by this much; more, and a
# pass decides nothing: a clock a day ahead would make a pod stopped for two hours look due.
MAX_CLOCK_SKEW = timedelta(minutes=5)
CAP_EPISODE = "reap:cap"
CLOCK_EPISODE = "reap:clock_behind"
NO_CHANNEL_EPISODE = "reap:no_channel"
UNKNOWN_EPISODE = "reap:unknown_settings"
# One episode per provider whose clock is off, and one per instance and exemption kind.
PROVIDER_CLOCK_EPISODE = "reap:provider_clock:"
EXEMPT_EPISODE = "exempt:"
# The exemptions alerted per instance; the cap's and no-channel's alerts are one each, naming
# every instance they hold.
PER_INSTANCE_EXEMPTIONS: tuple[Exemption, ...] = ("unreadable_protection", "cluster")

Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True)
class ConfirmOptions:
    """How long to wait for terminations to show in a re-listing: bounded, with backoff.

    The first re-listing goes out at once (the delete was acknowledged), and usually settles
    everything: an instance a provider still lists as destroyed (its hardware unloaded) or
    TERMINATED counts as gone. Only what still reads stopped waits, re-read alone: 0.5, 1, 2,
    4, 8, 8, 8, 8 s — about 40 s in all, as long as before but with the early reads denser.
    """

    attempts: int = 9
    first_delay: float = 0.0
    backoff: float = 0.5
    max_delay: float = 8.0


@dataclass(frozen=True)
class ActOptions:
    """How fresh a reading must be for a delete to go out on it.

    `fresh_for`: seconds from the fresh read (taken right before the deletes) after which no
    delete goes out on it; one held up longer (a queue, a rate-limit wait) is read again.
    `rounds`: how many fresh reads one account gets in one pass before the rest waits for the
    next pass.
    """

    fresh_for: float = 5.0
    rounds: int = 3


class ActionResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    provider: str
    account: str
    id: str
    name: str
    action: Action
    reason: str
    done: bool = False
    confirmed: bool = False
    # Past its deadline and left alone for a reason a person may not intend (see
    # `Decision.exempt`): named in an alert, and the pass exits 1 while it lasts.
    exempt: Exemption | None = None


@dataclass
class ReapReport:
    dry_run: bool
    mode: Literal["enforce", "observe"]
    at: datetime
    instances: list[Instance] = field(default_factory=list)
    actions: list[ActionResult] = field(default_factory=list)
    errors: list[AccountError] = field(default_factory=list)
    cap_exceeded: bool = False
    lease_taken: bool = False
    # Who holds the lease that was taken, and until when, in a line (for `lease_taken`).
    lease_note: str = ""
    # The pass ran past its lease and another took it: it stopped acting (needs attention).
    lease_lost: bool = False
    # The pass's clock read earlier than the last completed pass, or far from the providers':
    # it decided nothing. `clock_problem` says which, in a line.
    clock_behind: bool = False
    clock_problem: str = ""
    # No channel reaches a person: warnings went only to the log.
    no_channel: bool = False
    # Audit records left unconfirmed by an earlier pass, confirmed by this pass's listing.
    reconciled: list[str] = field(default_factory=list)
    # The money guards' findings (leaks, balances) of this pass; None when they did not run.
    guards: GuardReport | None = None
    # The termination cap of this pass and what set it (the setting or `--max-terminations`).
    cap: int | None = None
    cap_source: str = "REAPER_MAX_TERMINATIONS"

    @property
    def exit_code(self) -> int:
        """1 when something needs a human: a provider failed, a termination is unconfirmed or
        was not done, a warning reached nobody, an instance past its deadline is left alone for
        a reason a person may not intend (the cap, a cluster member, an unreadable protection,
        no channel), the lease was lost, the clock is wrong. A cap of 0 and observe mode are a
        person's choice: 0."""
        if self.lease_lost or self.clock_behind:
            return 1
        if self.lease_taken:
            return 0
        unconfirmed = any(
            a.action == "terminate" and a.done and not a.confirmed for a in self.actions
        )
        not_done = not self.dry_run and any(
            a.action in ("terminate", "warn") and not a.done for a in self.actions
        )
        exempt = any(a.exempt is not None for a in self.actions)
        return 1 if self.errors or unconfirmed or not_done or exempt else 0


def _result(
    decision: Decision,
    *,
    done: bool = False,
    confirmed: bool = False,
    reason: str = "",
    action: Action | None = None,
) -> ActionResult:
    inst = decision.instance
    return ActionResult(
        provider=inst.provider,
        account=inst.account,
        id=inst.id,
        name=inst.name,
        action=action or decision.action,
        reason=reason or decision.reason,
        done=done,
        confirmed=confirmed,
        exempt=decision.exempt if action is None else None,
    )


def storage_per_month(inst: Instance) -> float | None:
    """A stopped instance bills only its storage, so its $/h times a month is what reaping stops."""
    if inst.cost_per_hour is None:
        return None
    return round(inst.cost_per_hour * HOURS_PER_MONTH, 2)


class LeaseLost(Exception):
    """The pass no longer holds the reap lease: it must stop acting at once."""


def lease_owner() -> str:
    """`<host>:<pid>:<token>`: unique per pass, and saying whose it is to a pass that finds
    it taken (a host name holds no `:`)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex}"


def lease_note(lease: Lease | None) -> str:
    """ "another reap pass (host h, pid 42) holds the lease until 10:02 UTC", in a line."""
    if lease is None:
        return "another reap pass holds the lease"
    parts = lease.owner.split(":")
    whose = f" (host {parts[0]}, pid {parts[1]})" if len(parts) == 3 else ""
    return f"another reap pass{whose} holds the lease until {utc(lease.expires_at)}"


async def keep_leased(
    store: Store,
    name: str,
    owner: str,
    clock: Clock,
    *,
    on_lost: Callable[[], None],
    sleep: Sleep = asyncio.sleep,
    every: float = LEASE_RENEW_EVERY,
) -> None:
    """Renew the lease every `every` seconds while the pass runs (cancel to stop). Fenced as
    every renewal is: it never takes back a lease that expired or changed hands — then it
    calls `on_lost` and ends, and the pass stops acting at its next step."""
    while True:
        await sleep(every)
        try:
            renewed = store.renew_lease(name, owner, clock.now(), LEASE_TTL)
        except Exception as exc:  # the store failing now: the next renewal (or step) decides
            log.event("reap", result="renewal_failed", error=error_text(exc))
            continue
        if not renewed:
            log.event("reap", result="lease_lost", phase="background renewal")
            on_lost()
            return


def _witnesses(fleet: Sequence[Instance], pending: Collection[str]) -> set[str]:
    """Instances a re-list must still show: listed alive in the reading the deletes were
    decided on, and not being deleted."""
    return {i.id for i in fleet if i.id not in pending and i.state != "terminated"}


T = TypeVar("T")


def _by_account(
    items: Sequence[T], key: Callable[[T], tuple[str, str]] | None = None
) -> dict[tuple[str, str], list[T]]:
    def default(item: T) -> tuple[str, str]:
        return (getattr(item, "provider"), getattr(item, "account"))  # noqa: B009

    grouped: dict[tuple[str, str], list[T]] = {}
    for item in items:
        grouped.setdefault((key or default)(item), []).append(item)
    return grouped


@dataclass
class _Pass:
    ctx: Context
    confirm: ConfirmOptions
    act: ActOptions
    sleep: Sleep
    # When the pass began: the "now" of every decision.
    started: datetime
    lease_owner: str
    report: ReapReport
    seen: Observation = field(default_factory=Observation)
    # The pass's time (REAPER_PASS_DEADLINE): its listing's cutoff and what acting may still
    # start; None only for passes that set no deadline of their own (tests of one step).
    deadline: PassDeadline | None = None
    # Set by the background renewal when it found the lease lost.
    lost: bool = False
    # The history the plan was decided on: a keep or unkeep recorded since shows against it.
    planned: History | None = None

    @property
    def settings(self) -> Settings:
        return self.ctx.settings

    @property
    def store(self) -> Store:
        return self.ctx.store

    def time_for_a_step(self, waiting: float = 0.0) -> bool:
        """Whether a step that must not be cut short (a fresh read and its deletes, a
        confirmation's re-list after `waiting`) may still start: the wait and the pass's
        wrap-up must fit before its deadline. A step that then hangs is cut by the backstop
        (`reaper serve`, Lambda), and what it left `requested` the next pass settles."""
        if self.deadline is None:
            return True
        return self.deadline.time_for(waiting + self.deadline.wrap_up)

    def still_leased(self) -> bool:
        """Renew the lease; False if it was lost (this pass ran past its TTL, or another took
        it). Renewing never takes back a lease that expired or changed hands."""
        if self.lost:
            return False
        return self.store.renew_lease(LEASE_NAME, self.lease_owner, self.ctx.clock.now(), LEASE_TTL)

    async def leased(self, body: Awaitable[T]) -> T:
        """Run `body` with the lease renewed in the background (`keep_leased`)."""

        def lost() -> None:
            self.lost = True

        renewal = asyncio.create_task(
            keep_leased(self.store, LEASE_NAME, self.lease_owner, self.ctx.clock, on_lost=lost)
        )
        try:
            return await body
        finally:
            renewal.cancel()
            await asyncio.gather(renewal, return_exceptions=True)

    def require_lease(self, phase: str) -> None:
        if not self.still_leased():
            self.report.lease_lost = True
            log.event("reap", result="lease_lost", phase=phase)
            raise LeaseLost(phase)

    async def alert(self, alert: Alert) -> list[Delivery]:
        return await self.ctx.alert(alert)

    async def alert_once(self, episode: str, alert: Alert, detail: str = "") -> None:
        """One alert per episode: opened now or earlier, alerted once until it closes."""
        opened = self.store.open_episode(episode, self.started, detail)
        if opened.alerted_at is None:
            await self.alert(alert)
            self.store.mark_episode_alerted(episode, self.started)

    # --- observe ---------------------------------------------------------------------------

    async def list_all(self) -> list[Instance]:
        self.seen = await observe(self.ctx.clients, deadline=self.deadline)
        self.report.errors = list(self.seen.errors)
        failed = {(e.provider, e.account): e.message for e in self.seen.errors}
        for client in self.ctx.clients:
            episode = f"provider:{client.provider}:{client.account}"
            message = failed.get((client.provider, client.account))
            log.event(
                "list",
                provider=client.provider,
                account=client.account,
                result="error" if message else "ok",
                error=message,
                count=None if message else len(self.seen.of(client.provider, client.account)),
            )
            if message is None:
                self.store.close_episode(episode)
                continue
            failing = messages.provider_failing(
                client.provider, label(client.provider), client.account, message
            )
            await self.alert_once(episode, failing)
        return self.seen.instances

    def clock_problem(self) -> str:
        """Why this pass's own clock cannot be trusted, or "" when it can: earlier than the last
        completed pass, or far from every provider's clock the same way (`provider_clocks`)."""
        now = self.started
        last = self.store.last_reap()
        if last is not None and now < last.finished_at:
            return (
                f"this pass's clock ({iso(now)}) reads earlier than the last pass"
                f" ({iso(last.finished_at)})"
            )
        off = self.provider_clocks()
        answered = {c.provider for c in self.ctx.clients if c.server_time() is not None}
        directions = {direction for _theirs, direction in off.values()}
        if off and set(off) == answered and len(directions) == 1:
            provider, (theirs, _direction) = sorted(off.items())[0]
            return (
                f"this pass's clock ({iso(now)}) is {abs(theirs - now)} away from"
                f" {label(provider)}'s ({iso(theirs)})"
            )
        return ""

    def provider_clocks(self) -> dict[str, tuple[datetime, str]]:
        """The providers whose clock (their answers' `Date`) is more than MAX_CLOCK_SKEW from
        this pass's: their time, and whether it is "ahead" or "behind". A listing takes time,
        so theirs is compared with this pass's clock from its start to now. A provider that
        sends no `Date` is not judged."""
        earliest, latest = self.started - MAX_CLOCK_SKEW, self.ctx.clock.now() + MAX_CLOCK_SKEW
        off: dict[str, tuple[datetime, str]] = {}
        for client in self.ctx.clients:
            theirs = client.server_time()
            if theirs is None or earliest <= theirs <= latest:
                continue
            direction = "ahead of" if theirs > latest else "behind"
            if off.get(client.provider, (theirs, direction))[1] != direction:
                direction = "away from"
            off[client.provider] = (theirs, direction)
        return off

    async def set_aside_skewed(self) -> None:
        """The accounts of a provider whose clock is off (but not every provider's the same
        way: then ours is to blame) decide nothing in this pass: each is an error naming the
        provider and both times, alerted once per episode; the other providers go on."""
        off = self.provider_clocks()
        for client in self.ctx.clients:
            if client.provider in off or client.server_time() is None:
                continue
            self.store.close_episode(PROVIDER_CLOCK_EPISODE + client.provider)
        if not off:
            return
        seen = self.seen
        for provider, (theirs, direction) in sorted(off.items()):
            name = label(provider)
            gap = humanize(theirs - self.started)
            message = (
                f"{name}'s clock ({iso(theirs)}) is {gap} {direction} this pass's"
                f" ({iso(self.started)}): nothing on {name} is decided until they agree"
            )
            log.event("list", provider=provider, result="clock_off", error=message)
            accounts = sorted(a for p, a in seen.complete if p == provider)
            seen.errors += [
                AccountError(provider=provider, account=a, message=message) for a in accounts
            ]
            seen.complete -= {(provider, a) for a in accounts}
            alert = messages.provider_clock_off(provider, name, message)
            await self.alert_once(PROVIDER_CLOCK_EPISODE + provider, alert)
        seen.instances = [i for i in seen.instances if i.provider not in off]
        self.report.errors = list(seen.errors)

    async def gone(
        self,
        client: ProviderClient,
        listed: Mapping[str, Instance],
        candidates: Collection[str],
        witnesses: Collection[str],
    ) -> set[str]:
        """Of `candidates`, those a complete re-list `listed` proves gone (absent or
        terminated); see `core.witness.proves_gone`. An account with nothing else to check
        against needs the instance's own endpoint to agree."""
        if any(i.startswith(UNREADABLE_ID_PREFIX) for i in listed):
            # Something is listed whose id cannot be read: it may be one of ours.
            return set()
        absent = {i for i in candidates if i not in listed or listed[i].state == "terminated"}
        if not absent:
            return set()
        if witnesses:
            return absent if proves_gone(set(listed), witnesses) else set()
        proven: set[str] = set()
        for instance_id in sorted(absent):
            if instance_id in listed:
                proven.add(instance_id)  # listed as terminated: the provider says so itself
                continue
            try:
                alone = await client.lookup(instance_id)
            except Exception as exc:  # a failed read proves nothing
                log.event(
                    "confirm",
                    provider=client.provider,
                    account=client.account,
                    id=instance_id,
                    result="lookup_failed",
                    error=error_text(exc),
                )
                continue
            if alone is None or alone.state == "terminated":
                proven.add(instance_id)
        return proven

    async def reconcile(self, fleet: list[Instance]) -> None:
        """Audit records a crashed or cut-off pass left unconfirmed, settled against this
        pass's complete listing: gone → confirmed and announced; listed running again → the
        delete did not happen; still listed stopped → it did not take effect: a `requested`
        record (the pass died before or as the DELETE left) is `not_sent`, one the provider
        answered is `failed` — so that `reaper audit` never shows two terminations of one
        instance — and the policy decides again."""
        open_records = [
            r
            for r in self.store.audit_log(since=self.started - RECONCILE_WINDOW)
            if not r.confirmed
            and r.result not in ("failed", "not_sent")
            and (r.provider, r.account) in self.seen.complete
        ]
        if not open_records:
            return
        previous = {(x.provider, x.account): x for x in self.store.listings()}
        for (provider, account), records in _by_account(open_records).items():
            client = self.ctx.client(provider, account)
            if client is None:
                continue
            mine = {i.id: i for i in fleet if i.provider == provider and i.account == account}
            ids = {r.id for r in records}
            last = previous.get((provider, account))
            known = _witnesses(last.instances, ids) if last is not None else set()
            if known and not trustworthy_absence(set(mine), known):
                continue
            gone = await self.gone(client, mine, ids, known & set(mine))
            for record in records:
                inst = mine.get(record.id)
                if record.id in gone:
                    await self._reconciled(record)
                elif inst is not None and inst.state in RESETTING_STATES:
                    self._settle(
                        record,
                        "failed",
                        f"listed {inst.raw_status} after the pass that asked for the delete"
                        " ended: it did not happen",
                    )
                elif inst is not None and inst.state == "stopped":
                    self._settle(
                        record,
                        "not_sent" if record.result == "requested" else "failed",
                        f"still listed stopped ({inst.raw_status}) by the next pass: the delete"
                        + (
                            " never left (or took no effect)"
                            if record.result == "requested"
                            else " took no effect"
                        ),
                    )

    def _settle(self, record: AuditRecord, result: Literal["failed", "not_sent"], why: str) -> None:
        detail = f"answered {record.result}; {why}" if record.result != "requested" else why
        settled = record.model_copy(update={"result": result, "detail": detail})
        self.store.record_termination(settled)
        log.event("reconcile", provider=record.provider, id=record.id, result=result)

    async def _reconciled(self, record: AuditRecord) -> None:
        confirmed = record.model_copy(
            update={
                "result": "deleted" if record.result == "requested" else record.result,
                "confirmed": True,
                "confirmed_at": self.ctx.clock.now(),
                "announced": False,
                "detail": (record.detail + "; " if record.detail else "")
                + "confirmed by a later pass's listing",
            }
        )
        self.store.record_termination(confirmed)
        self.store.reset_stopped_clock(record.key)
        self.report.reconciled.append(record.key)
        log.event("reconcile", provider=record.provider, id=record.id, result="confirmed")
        await self.announce(confirmed)

    async def announce(self, record: AuditRecord) -> None:
        """The "Terminated …" alert of a confirmed termination, then its record marked
        announced: a process that dies in between leaves it for the next pass to send."""
        inst = Instance(
            provider=record.provider,
            account=record.account,
            id=record.id,
            name=record.name,
            state="terminated",
            raw_status="",
            stopped_since=record.stopped_since,
            cost_per_hour=record.cost_per_hour,
        )
        await self.alert(messages.terminated(inst, storage_per_month(inst)))
        self.store.record_termination(record.model_copy(update={"announced": True}))

    async def announce_pending(self) -> None:
        """Send what was confirmed and never announced (a pass died between the two)."""
        for record in self.store.audit_log(since=self.started - RECONCILE_WINDOW):
            if record.confirmed and not record.announced:
                log.event("announce", provider=record.provider, id=record.id, result="late")
                await self.announce(record)

    # --- warnings --------------------------------------------------------------------------

    async def warn_all(self, decisions: list[Decision]) -> list[ActionResult]:
        """Send this pass's warnings at once: alone and concurrently when few, folded into as
        few messages as hold them when many, so a slow channel cannot eat one instance's
        notice. Each announces the deadline computed from the clock right before sending
        (never one already past), and is recorded at its own delivery time, with whether a
        person could read it; an instance counts as warned only if a message naming it was
        delivered."""
        if not decisions:
            return []
        self.require_lease("before warning")
        observe_mode = self.settings.mode == "observe"
        next_check = self.started + self.settings.reap_every
        marker = self.settings.protect_marker
        issued = self.ctx.clock.now()
        deadline = {d.instance.key: self._announced(d, issued) for d in decisions}
        groups: list[tuple[list[Decision], Alert]]
        if len(decisions) > FOLD_WARNINGS_AFTER:
            chunks = messages.fold_warnings(
                [(d.instance, deadline[d.instance.key]) for d in decisions],
                issued,
                marker,
                next_check=next_check,
                observe=observe_mode,
                budget=self.fold_budget(),
            )
            by_key = {d.instance.key: d for d in decisions}
            groups = [([by_key[k] for k in keys], alert) for keys, alert in chunks]
        else:
            groups = [
                (
                    [d],
                    messages.termination_warning(
                        d.instance,
                        deadline[d.instance.key],
                        issued,
                        marker,
                        next_check=next_check,
                        observe=observe_mode,
                    ),
                )
                for d in decisions
            ]
        sent = await asyncio.gather(*(self._deliver(alert) for _group, alert in groups))
        self.require_lease("after warning")
        history = self.store.history()
        results: list[ActionResult] = []
        for (group, _alert), (deliveries, delivered_at) in zip(groups, sent, strict=True):
            heard = any(d.ok and d.heard for d in deliveries)
            logged = any(d.ok for d in deliveries)
            for decision in group:
                warning = WarningRecord(
                    at=delivered_at,
                    heard=heard,
                    mode=self.settings.mode,
                    terminate_at=deadline[decision.instance.key],
                    stretch=decision.instance.stopped_since,
                    issued_at=issued,
                    ttl=self.settings.stopped_ttl,
                    warn_before=self.settings.warn_before,
                )
                results.append(self._record_warning(decision, warning, logged, history))
        return results

    def _announced(self, decision: Decision, issued: datetime) -> datetime:
        stretch = decision.instance.stopped_since
        assert stretch is not None
        return announced_deadline(stretch, issued, self.settings)

    def fold_budget(self) -> int:
        """What one folded message may carry: the smallest of the configured channels."""
        budgets = [channel_plugin(c.channel).body_budget for c in self.settings.channels]
        return (
            min(budgets) if budgets else max(channel_plugin(name).body_budget for name in CHANNELS)
        )

    async def _deliver(self, alert: Alert) -> tuple[list[Delivery], datetime]:
        deliveries = await self.alert(alert)
        return deliveries, self.ctx.clock.now()

    def _record_warning(
        self, decision: Decision, warning: WarningRecord, logged: bool, history: History
    ) -> ActionResult:
        inst = decision.instance
        if not logged:
            # No warning reached anyone: do not record it, so no termination can follow from it.
            log.event("warn", provider=inst.provider, id=inst.id, result="undelivered")
            return _result(
                decision, reason=f"{decision.reason} (warning not delivered; retried next pass)"
            )
        kept = history.kept.get(inst.key)
        planned = self.planned.kept.get(inst.key) if self.planned is not None else kept
        if kept != planned or (kept is not None and kept.since >= self.started):
            # Kept (or unkept) while the warning was on its way: the person answered already,
            # and a warning recorded now would outlive the keep. A later pass warns anew.
            log.event("warn", provider=inst.provider, id=inst.id, result="kept_meanwhile")
            return _result(
                decision,
                done=self.ctx.effects.live,
                reason=f"{decision.reason} (kept meanwhile: not recorded)",
            )
        self.store.record_warning(inst.key, warning)
        log.event(
            "warn",
            provider=inst.provider,
            id=inst.id,
            name=inst.name,
            result="sent" if warning.heard else "logged",
            due=warning.terminate_at,
        )
        live = self.ctx.effects.live
        if warning.heard:
            return _result(decision, done=live)
        return _result(
            decision,
            done=live,
            reason=f"{decision.reason} (written to the log only:"
            f" {no_channel_reason(self.settings)})",
        )

    def mark_held(self, decisions: list[Decision]) -> None:
        """A licensed termination held back (the cap, observe mode): its license does not go
        stale while that lasts — the next pass that may terminate does not warn again."""
        for decision in decisions:
            if decision.licensed_by is not None:
                self.store.mark_warning_held(
                    decision.instance.key, decision.licensed_by, self.started
                )

    async def alert_exemptions(self, decisions: list[Decision]) -> None:
        """Each instance past its deadline that an unreadable protection or its cluster keeps
        from termination: one episode per instance and kind, its first pass named in one alert
        per kind (with what each bills); an episode closes once it no longer applies to an
        instance its provider listed completely."""
        current = {(d.exempt, d.instance.key): d.instance for d in decisions if d.exempt}
        for kind in PER_INSTANCE_EXEMPTIONS:
            fresh: list[tuple[Instance, str]] = []
            for (exempt, key), inst in sorted(current.items(), key=lambda kv: kv[0][1]):
                if exempt != kind:
                    continue
                opened = self.store.open_episode(f"{EXEMPT_EPISODE}{kind}:{key}", self.started)
                if opened.alerted_at is None:
                    reason = next(d.reason for d in decisions if d.instance.key == key)
                    fresh.append((inst, reason))
            if fresh:
                await self.alert(messages.needs_you(kind, fresh))
                for inst, _reason in fresh:
                    self.store.mark_episode_alerted(
                        f"{EXEMPT_EPISODE}{kind}:{inst.key}", self.started
                    )
        trusted = self.seen.complete_providers
        for open_one in self.store.open_episodes(EXEMPT_EPISODE):
            named, _, key = open_one.key.removeprefix(EXEMPT_EPISODE).partition(":")
            if (named, key) not in current and key.split(":", 1)[0] in trusted:
                self.store.close_episode(open_one.key)

    async def observe_holds(self, decisions: list[Decision]) -> None:
        """Observe mode: "would terminate" once per instance and stretch, folded when many."""
        if self.settings.mode != "observe":
            return
        fresh = [
            d.instance
            for d in decisions
            if d.instance.cluster_id is None
            and self.store.claim_alert(
                f"observe:{d.instance.key}:{iso(d.instance.stopped_since) or ''}",
                self.ctx.clock.now(),
                timedelta(days=365),
            )
        ]
        if len(fresh) > FOLD_WARNINGS_AFTER:
            for alert in messages.fold_would_terminate(
                fresh, self.started, budget=self.fold_budget()
            ):
                await self.alert(alert)
        else:
            for inst in fresh:
                await self.alert(messages.would_terminate(inst))

    # --- terminations ----------------------------------------------------------------------

    async def delete_fresh(
        self, client: ProviderClient, decisions: list[Decision]
    ) -> tuple[list[tuple[Decision, AuditRecord]], list[ActionResult], dict[str, Instance]]:
        """Delete what a fresh reading still shows due. The due instances are read in the
        client's batches, one read at a time, and each batch's deletes go out as soon as its
        own reading is in — while the next batch is read — so no delete waits on a reading of
        other instances, and none goes out on a reading older than its batch's. Returns the
        deletes that went out, the decisions that fell away (with why), and the readings."""
        size = client.read_batch or len(decisions) or 1
        batches = [decisions[i : i + size] for i in range(0, len(decisions), size)]
        one_read_at_a_time = asyncio.Lock()
        outcomes = await asyncio.gather(
            *(self._delete_batch(client, batch, one_read_at_a_time) for batch in batches)
        )
        sent: list[tuple[Decision, AuditRecord]] = []
        dropped: list[ActionResult] = []
        fresh: dict[str, Instance] = {}
        for batch_sent, batch_dropped, batch_fresh in outcomes:
            sent += batch_sent
            dropped += batch_dropped
            fresh |= batch_fresh
        return sent, dropped, fresh

    async def _delete_batch(
        self, client: ProviderClient, decisions: list[Decision], reading: asyncio.Lock
    ) -> tuple[list[tuple[Decision, AuditRecord]], list[ActionResult], dict[str, Instance]]:
        """One batch, round by round: a delete that could not go out while its reading was
        fresh is read again."""
        sent: list[tuple[Decision, AuditRecord]] = []
        dropped: list[ActionResult] = []
        pending = decisions
        fresh: dict[str, Instance] = {}
        for _round in range(self.act.rounds):
            if not self.time_for_a_step():
                why = (
                    "the pass's REAPER_PASS_DEADLINE left no time for a fresh read and its deletes"
                )
                dropped += [_result(d, reason=f"{d.reason}; not deleted: {why}") for d in pending]
                return sent, dropped, fresh
            async with reading:
                self.require_lease("before the fresh read")
                read_at = time.monotonic()
                try:
                    read = await client.read_instances([d.instance.id for d in pending])
                except Exception as exc:  # no fresh reading, no delete
                    why = f"the fresh read right before the delete failed ({error_text(exc)})"
                    dropped += [
                        _result(d, reason=f"{d.reason}; not deleted: {why}") for d in pending
                    ]
                    return sent, dropped, fresh
            current_reads = {i: inst for i, inst in read.items() if inst is not None}
            fresh |= current_reads
            self.require_lease("before deleting")
            not_after = read_at + self.act.fresh_for
            # The store's history once for the round, as fresh as the reading it goes with.
            history = gate.pass_history(self.store, self.ctx.clock.now())
            outcomes = await asyncio.gather(
                *(
                    gate.delete(
                        self.ctx,
                        client,
                        decision,
                        current_reads.get(decision.instance.id),
                        not_after=not_after,
                        history=history,
                    )
                    for decision in pending
                )
            )
            waiting, pending = pending, []
            for decision, outcome in zip(waiting, outcomes, strict=True):
                if isinstance(outcome, gate.Refused):
                    dropped.append(
                        _result(decision, action="hold", reason=f"not terminated: {outcome.why}")
                    )
                elif isinstance(outcome, gate.NotSent):
                    pending.append(decision)
                else:
                    sent.append((decision, outcome))
            if not pending:
                break
        dropped += [
            _result(d, reason=f"{d.reason}; not deleted: no fresh enough reading in this pass")
            for d in pending
        ]
        return sent, dropped, fresh

    async def confirm_account(
        self, client: ProviderClient, records: list[AuditRecord], witnesses: set[str]
    ) -> set[str]:
        """Re-list the account until every id is proven gone, or the wait runs out."""
        pending = {r.id for r in records}
        confirmed: set[str] = set()
        delay = self.confirm.first_delay
        for attempt in range(self.confirm.attempts):
            if not self.time_for_a_step(delay):
                # Left unconfirmed: the next pass's reconciliation settles it.
                break
            if delay > 0:
                await self.sleep(delay)
            if not self.still_leased():
                self.report.lease_lost = True
                break
            delay = min(self.confirm.backoff * 2**attempt, self.confirm.max_delay)
            try:
                listed = await self._relist(client, pending, witnesses)
            except Exception as exc:  # an incomplete listing proves nothing
                log.event(
                    "confirm",
                    provider=client.provider,
                    account=client.account,
                    result="list_failed",
                    error=error_text(exc),
                )
                continue
            expected = self._expected(listed, witnesses, pending)
            proven = await self.gone(client, listed, pending, expected)
            if not proven and pending:
                log.event(
                    "confirm",
                    provider=client.provider,
                    account=client.account,
                    result="not_yet",
                    pending=len(pending),
                )
            confirmed |= proven
            pending -= proven
            if not pending:
                break
        return confirmed

    @staticmethod
    def _expected(
        listed: Mapping[str, Instance], witnesses: set[str], pending: set[str]
    ) -> set[str]:
        """The witnesses a re-list must show: for one narrowed to the pending ids (it holds
        nothing else but the witness that was asked for), that witness; for anything else — a
        whole listing, or a filter the provider ignored — every witness."""
        asked = {min(witnesses)} if witnesses else set()
        narrowed = set(listed) <= asked | pending
        return asked if narrowed else witnesses

    async def _relist(
        self, client: ProviderClient, pending: set[str], witnesses: set[str]
    ) -> dict[str, Instance]:
        """A complete listing for confirmation: narrowed to the pending ids and one witness
        where the provider can filter; the whole account when the witness does not come back
        (a filter ignored, or the witness went away)."""
        witness = min(witnesses) if witnesses else None
        if witness is not None:
            narrowed = {i.id: i for i in await client.list_instances(only_ids={*pending, witness})}
            if witness in narrowed:
                return narrowed
            log.event(
                "confirm", provider=client.provider, account=client.account, result="full_relist"
            )
        return {i.id: i for i in await client.list_instances()}

    async def terminate_account(
        self, client: ProviderClient, decisions: list[Decision]
    ) -> list[ActionResult]:
        """Read fresh, delete what is still due, then prove it by re-listing. Each account runs
        its own pipeline, so a slow provider never delays another's proof."""
        sent, results, _fresh = await self.delete_fresh(client, decisions)
        if not self.ctx.effects.live:
            return results + [_result(d) for d, _record in sent]
        requested = [r for _d, r in sent if r.result in ("deleted", "not_found", "requested")]
        account_now = {
            i.id: i for i in self.seen.of(client.provider, client.account) if i.id not in _fresh
        } | _fresh
        witnesses = _witnesses(list(account_now.values()), {r.id for r in requested})
        confirmations = (
            await self.confirm_account(client, requested, witnesses) if requested else set()
        )
        for decision, record in sent:
            inst = decision.instance
            asked = record.result in ("deleted", "not_found", "requested")
            confirmed = asked and record.id in confirmations
            if confirmed:
                update: dict[str, object] = {
                    "confirmed": True,
                    "confirmed_at": self.ctx.clock.now(),
                }
                if record.result == "requested":
                    update["result"] = "deleted"
                record = record.model_copy(update=update)
                self.store.record_termination(record)
                self.store.reset_stopped_clock(inst.key)
                await self.announce(record)
                reason = decision.reason
            else:
                await self.alert(messages.termination_unconfirmed(inst))
                reason = (
                    f"{decision.reason}; still listed after the confirmation wait"
                    if asked
                    else f"{decision.reason}; delete failed: {record.detail}"
                )
            log.event(
                "confirm",
                provider=inst.provider,
                id=inst.id,
                result="confirmed" if confirmed else "unconfirmed",
            )
            results.append(_result(decision, done=asked, confirmed=confirmed, reason=reason))
        return results

    async def terminate_all(self, decisions: list[Decision]) -> list[ActionResult]:
        by_account = _by_account(decisions, key=lambda d: (d.instance.provider, d.instance.account))
        jobs = []
        for (provider, account), ds in by_account.items():
            client = self.ctx.client(provider, account)
            assert client is not None
            jobs.append(self.terminate_account(client, ds))
        per_account = await asyncio.gather(*jobs, return_exceptions=True)
        results: list[ActionResult] = []
        for (_acct, ds), outcome in zip(by_account.items(), per_account, strict=True):
            if isinstance(outcome, LeaseLost):
                lost = "not deleted: the lease was lost"
                results += [_result(d, reason=f"{d.reason}; {lost}") for d in ds]
            elif isinstance(outcome, BaseException):
                raise outcome
            else:
                results += outcome
        return results


def _trusted_providers(seen: Observation, previous: Mapping[tuple[str, str], Listing]) -> set[str]:
    """Providers whose every account listed completely and trustworthily in this pass: only
    their listings can show an instance absent. A provider with any failed account proves
    nothing, and neither does a listing that misses every instance its account showed last
    time (an empty answer from a provider that lost its way) or holds an id it cannot read."""
    complete = seen.complete_providers
    for provider, account in seen.complete:
        mine = {i.id for i in seen.of(provider, account)}
        last = previous.get((provider, account))
        known = {i.id for i in last.instances if i.state != "terminated"} if last else set()
        if any(i.startswith(UNREADABLE_ID_PREFIX) for i in mine) or (
            known and not trustworthy_absence(mine, known)
        ):
            complete.discard(provider)
    return complete


def _absences(
    history: History,
    seen: Observation,
    previous: Mapping[tuple[str, str], Listing],
    now: datetime,
    every: timedelta,
) -> tuple[set[str], set[str]]:
    """Of the recorded stretches whose instance a trustworthy listing no longer shows:
    (ended, missed). Absence is not a restart: one missing listing keeps the stretch and its
    warning (`missed`: the first miss is recorded); only when a listing at least `every`
    (REAPER_REAP_EVERY) after the first miss still misses it is it gone (deleted by hand, or
    by an earlier pass) and its records end. A warning with no stretch left ends at once."""
    trusted = _trusted_providers(seen, previous)
    listed = {i.key for i in seen.instances}
    recorded = set(history.first_seen_stopped) | set(history.warnings)
    absent = {k for k in recorded if k.split(":", 1)[0] in trusted and k not in listed}
    ended = {
        k
        for k in absent
        if k not in history.first_seen_stopped
        or ((first := history.missing_since.get(k)) is not None and now - first >= every)
    }
    return ended, absent - ended


async def reap_pass(
    settings: Settings,
    store: Store,
    clients: Sequence[ProviderClient],
    notifier: Notifier,
    clock: Clock,
    *,
    dry_run: bool = False,
    max_terminations: int | None = None,
    confirm: ConfirmOptions | None = None,
    act: ActOptions | None = None,
    sleep: Sleep = asyncio.sleep,
    deadline: PassDeadline | None = None,
) -> ReapReport:
    """Run one pass. A dry run reads the store and the providers and changes nothing.
    `deadline`: the pass's time (by default REAPER_PASS_DEADLINE from now)."""
    ctx = Context.make(settings, store, clients, notifier, clock, dry_run=dry_run)
    now = clock.now()
    report = ReapReport(dry_run=dry_run, mode=settings.mode, at=now)
    owner = lease_owner()
    if not ctx.store.acquire_lease(LEASE_NAME, owner, now, LEASE_TTL):
        report.lease_taken = True
        report.lease_note = lease_note(ctx.store.lease_holder(LEASE_NAME))
        log.event("reap", result="lease_taken", holder=report.lease_note)
        return report
    run = _Pass(
        ctx,
        confirm or ConfirmOptions(),
        act or ActOptions(),
        sleep,
        started=now,
        lease_owner=owner,
        report=report,
        deadline=deadline or PassDeadline.start(pass_seconds(settings.pass_deadline)),
    )
    try:
        await run.leased(_run(run, max_terminations))
    except LeaseLost:
        pass
    finally:
        ctx.store.release_lease(LEASE_NAME, owner)
    log.event(
        "reap",
        result="done",
        dry_run=dry_run,
        mode=settings.mode,
        instances=len(report.instances),
        actions=len(report.actions),
        errors=len(report.errors),
        exit_code=report.exit_code,
    )
    return report


async def _guards_in_time(run: _Pass) -> GuardReport | None:
    """The money guards' pass, cut at the pass's deadline less its wrap-up (their reads are
    what a slow provider makes long; nothing depends on them but alerts and the snapshot)."""
    left = run.deadline.working_left() if run.deadline is not None else None
    try:
        return await asyncio.wait_for(guard_pass(run.ctx, run.seen, run.report.instances), left)
    except TimeoutError:
        log.event("guards", result="error", error="cut at the pass's REAPER_PASS_DEADLINE")
        return None


async def _unknown_settings(run: _Pass) -> None:
    """REAPER_* names reaper does not know (a typo whose default applies silently): the
    command line refuses them for `reap` and `serve` in enforce mode; where nobody reads a
    command's stderr (the Lambda functions, which never stop for it) the pass says so once."""
    names = run.settings.unknown_names
    if names and not run.settings.allow_unknown:
        await run.alert_once(UNKNOWN_EPISODE, messages.unknown_settings(names), ",".join(names))
    else:
        run.store.close_episode(UNKNOWN_EPISODE)


async def _run(run: _Pass, max_terminations: int | None) -> None:
    settings, store, report, now = run.settings, run.store, run.report, run.started
    report.no_channel = not settings.human_channel
    if report.no_channel:
        # Every pass says so: a warning nobody can read is no notice.
        log.event(
            "no_alert_channel",
            message=f"no alert channel reaches a person (set {settings.channel_hint}): "
            "warnings go only to this log"
            + (
                " and due terminations are held (REAPER_REQUIRE_CHANNEL=true)"
                if settings.require_channel
                else ""
            ),
        )
    await _unknown_settings(run)
    await run.announce_pending()
    await run.list_all()
    problem = run.clock_problem()
    if problem:
        report.clock_behind, report.clock_problem = True, problem
        log.event("reap", result="clock_behind", problem=problem)
        await run.alert_once(CLOCK_EPISODE, messages.clock_behind(problem))
        return
    store.close_episode(CLOCK_EPISODE)
    await run.set_aside_skewed()
    fleet = run.seen.instances
    await run.reconcile(fleet)
    history = pass_history(store, now)
    run.planned = history
    plan = decide(fleet, history, now, settings, max_terminations=max_terminations)
    report.instances = plan.instances
    report.cap_exceeded = plan.cap_exceeded
    run.require_lease("after listing")
    _apply_clock_changes(store, plan, history)
    previous = {(x.provider, x.account): x for x in store.listings()}
    ended, missed = _absences(history, run.seen, previous, now, settings.reap_every)
    for key in ended:
        store.reset_stopped_clock(key)
    for key in missed - set(history.missing_since):
        store.mark_missing(key, now)
    for key in set(history.missing_since) & {i.key for i in fleet}:
        store.clear_missing(key)
    _record_listings(run, plan.instances)

    # The money guards reuse this listing and run beside the actions: they only alert, never
    # act, and never fail a pass.
    guards = asyncio.create_task(_guards_in_time(run))
    try:
        await _act(run, plan, max_terminations)
        _end_carried_out(store, history, report.actions)
    finally:
        report.guards = await guards

    _record_snapshot(run)
    store.record_reap(
        ReapRun(
            at=now,
            finished_at=run.ctx.clock.now(),
            dry_run=False,
            mode=settings.mode,
            instances=len(report.instances),
            terminated=sum(1 for a in report.actions if a.action == "terminate" and a.confirmed),
            warned=sum(1 for a in report.actions if a.action == "warn" and a.done),
            errors=len(report.errors),
            exit_code=report.exit_code,
        )
    )


def _apply_clock_changes(store: Store, plan: Plan, history: History) -> None:
    """Record the plan's stopped-clock changes. A start ends a "terminate now" request too:
    it was asked for the stretch that just ended."""
    for change in plan.clock_changes:
        if change.change in ("reset", "restart"):
            store.reset_stopped_clock(change.key)
            if change.key in history.requests:
                store.end_termination_request(change.key)
        if change.change in ("start", "restart"):
            store.start_stopped_clock(change.key, change.at, started_at=change.started_at)


def _end_carried_out(store: Store, history: History, actions: Sequence[ActionResult]) -> None:
    """Requests whose delete went out are done (confirmation is the audit record's business)."""
    for action in actions:
        key = instance_key(action.provider, action.id)
        if action.action == "terminate" and action.done and key in history.requests:
            store.end_termination_request(key)


def _record_listings(run: _Pass, instances: list[Instance]) -> None:
    """Each complete account's listing, for `keep`, `status` and the status page."""
    grouped = _by_account(instances)
    for provider, account in sorted(run.seen.complete):
        listing = Listing(
            provider=provider,
            account=account,
            at=run.started,
            instances=grouped.get((provider, account), []),
        )
        try:
            run.store.record_listing(listing)
        except Exception as exc:  # a read model for people; never fails the pass
            log.event(
                "listing", provider=provider, account=account, result="error", error=error_text(exc)
            )


def _record_snapshot(run: _Pass) -> None:
    """One small row per pass — $/h running and stored, counts per state, balances, per
    account — for the status page's spend chart and runway. A read model for people: it never
    fails the pass (and a dry run's store only records that it would write it)."""
    report = run.report
    guards = report.guards
    snapshot = take_snapshot(
        run.started,
        run.seen.listed,
        report.instances,
        guards.balances if guards is not None else [],
        report.errors,
        billed=guards.billed if guards is not None else {},
        billed_instances=guards.billed_instances if guards is not None else {},
    )
    try:
        run.store.record_snapshot(snapshot)
    except Exception as exc:
        log.event("snapshot", result="error", error=error_text(exc))


async def _act(run: _Pass, plan: Plan, max_terminations: int | None) -> None:
    settings, report = run.settings, run.report
    warn = [d for d in plan.decisions if d.action == "warn"]
    due = [d for d in plan.decisions if d.action == "terminate"]
    held = [d for d in plan.decisions if d.action == "hold"]
    report.actions += await run.warn_all(warn)
    await run.observe_holds(held)
    report.actions += [_result(d) for d in plan.decisions if d.action in ("hold", "protect")]
    run.mark_held(held)

    cap = settings.max_terminations if max_terminations is None else max_terminations
    source = "REAPER_MAX_TERMINATIONS" if max_terminations is None else "--max-terminations"
    report.cap, report.cap_source = cap, source
    if plan.cap_exceeded:
        capped = [d.instance for d in held if d.instance.key in plan.capped]
        await run.alert_once(
            CAP_EPISODE, messages.cap_exceeded(plan.due_count, cap, capped, source)
        )
    else:
        run.store.close_episode(CAP_EPISODE)

    unheard = [d.instance for d in held if d.exempt == "no_channel"]
    if unheard:
        alert = messages.no_channel_hold(unheard, settings.channel_hint)
        await run.alert_once(NO_CHANNEL_EPISODE, alert)
    else:
        run.store.close_episode(NO_CHANNEL_EPISODE)
    await run.alert_exemptions(plan.decisions)

    if due:
        report.actions += await run.terminate_all(due)


# --- "terminate now" from the phone ----------------------------------------------------------


@dataclass(frozen=True)
class RequestOutcome:
    """What a pass for one requested termination did: `terminated` (confirmed by a re-list),
    `unconfirmed` (the delete went out, a re-list still shows it), `refused` (a check said no:
    the request is ended), `later` (it could not decide now: the request stays for the next
    pass). `why`: one line, for the answer to whoever asked."""

    result: Literal["terminated", "unconfirmed", "refused", "later"]
    why: str = ""


# Why a "terminate now" is refused when it was issued with the warning of another stretch.
STALE_REQUEST = "it was started and stopped again since this warning: a new warning will come"
UNBOUND_REQUEST = (
    "this button was sent by an older reaper and names no stopped stretch: use the button of"
    " the next warning"
)


def _why_not(inst: Instance, decision: Decision | None, settings: Settings) -> str:
    if inst.state != "stopped":
        return f"it is {inst.state} now ({inst.raw_status})"
    if decision is None or decision.action == "warn":
        return STALE_REQUEST
    if decision.action == "hold" and settings.mode == "observe":
        return "REAPER_MODE=observe destroys nothing"
    return decision.reason


async def request_pass(
    ctx: Context,
    key: str,
    *,
    confirm: ConfirmOptions | None = None,
    act: ActOptions | None = None,
    sleep: Sleep = asyncio.sleep,
) -> RequestOutcome:
    """Carry out the "terminate now" request for one instance (`key`) at once, with every check
    of a reap pass and its one delete path: the reap lease (so no other pass acts beside it),
    a complete listing of its provider's accounts, the clock check, the policy (stopped,
    unprotected, not locked or kept, the cap, observe mode and clusters `hold`), then the fresh
    read right before the DELETE, the re-list that confirms it and the audit record. The
    request itself was recorded by the caller; it is ended here unless the answer is `later`.
    """
    settings, store = ctx.settings, ctx.store
    provider = key.partition(":")[0]
    clients = [c for c in ctx.clients if c.provider == provider]
    if not clients:
        store.end_termination_request(key)
        return RequestOutcome("refused", f"no account of {provider} is configured")
    narrow = dataclasses.replace(ctx, clients=clients)
    now = ctx.clock.now()
    owner = lease_owner()
    if not store.acquire_lease(LEASE_NAME, owner, now, LEASE_TTL):
        log.event("request", id=key, result="lease_taken")
        return RequestOutcome("later", "a reap pass is running now")
    run = _Pass(
        narrow,
        confirm or ConfirmOptions(),
        act or ActOptions(),
        sleep,
        started=now,
        lease_owner=owner,
        report=ReapReport(dry_run=ctx.dry_run, mode=settings.mode, at=now),
    )
    try:
        outcome = await run.leased(_request(run, key))
    except LeaseLost:
        outcome = RequestOutcome("later", "the reap lease was lost")
    finally:
        store.release_lease(LEASE_NAME, owner)
    if outcome.result != "later":
        store.end_termination_request(key)
    log.event("request", id=key, result=outcome.result, why=outcome.why)
    return outcome


async def _request(run: _Pass, key: str) -> RequestOutcome:
    await run.list_all()
    problem = run.clock_problem()
    if problem:
        return RequestOutcome("later", problem)
    await run.set_aside_skewed()
    listed = [i for i in run.seen.instances if i.key == key]
    if not listed:
        if run.seen.errors:
            return RequestOutcome("later", f"the listing failed ({run.seen.errors[0].message})")
        return RequestOutcome("refused", "it is not listed any more (gone already?)")
    history = pass_history(run.store, run.started)
    plan = decide(listed, history, run.started, run.settings)
    _apply_clock_changes(run.store, plan, history)
    [inst] = plan.instances
    request = history.requests.get(key)
    if inst.state == "stopped" and request is not None and request.stretch != inst.stopped_since:
        # Bound to the stretch of the warning it came with: a restart since voids it.
        return RequestOutcome("refused", STALE_REQUEST if request.stretch else UNBOUND_REQUEST)
    decision = plan.decisions[0] if plan.decisions else None
    if decision is None or decision.action != "terminate":
        return RequestOutcome("refused", _why_not(inst, decision, run.settings))
    [result] = await run.terminate_all([decision])
    if not run.ctx.effects.live:
        return RequestOutcome("refused", "a dry run deletes nothing")
    if result.action == "hold":
        return RequestOutcome("refused", result.reason.removeprefix("not terminated: "))
    if not result.done:
        return RequestOutcome("later", result.reason)
    return RequestOutcome("terminated" if result.confirmed else "unconfirmed", result.reason)


async def run_pass(
    settings: Settings,
    store: Store,
    *,
    dry_run: bool = False,
    max_terminations: int | None = None,
    notifier: Notifier | None = None,
    clock: Clock | None = None,
    deadline: PassDeadline | None = None,
) -> ReapReport:
    """One pass as the CLI, `serve` and Lambda run it: clients and notifier from the settings
    (a dry run alerts no one), the clients closed whatever happens. `deadline`: the pass's
    time (Lambda: no later than the invocation's remaining time allows)."""
    from reaper.channels.base import SilentNotifier
    from reaper.channels.fanout import make_notifier
    from reaper.providers.plugins import make_clients

    if notifier is None:
        notifier = SilentNotifier() if dry_run else make_notifier(settings)
    clients = make_clients(settings)
    try:
        return await reap_pass(
            settings,
            store,
            clients,
            notifier,
            clock or SystemClock(),
            dry_run=dry_run,
            max_terminations=max_terminations,
            deadline=deadline,
        )
    finally:
        await asyncio.gather(*(c.aclose() for c in clients), return_exceptions=True)


async def reap_once(settings: Settings, store: Store, notifier: Notifier, clock: Clock) -> int:
    """A scheduled pass (`serve`). Never raises for an expected outcome: the exit code says
    what happened."""
    report = await run_pass(settings, store, notifier=notifier, clock=clock)
    return report.exit_code
