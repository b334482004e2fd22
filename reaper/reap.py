"""One reap pass: list, decide, warn, terminate, confirm, record, alert.

The pass is the only place that acts on the policy's decisions, and it treats every provider
answer with suspicion: a listing that failed is an error for that account (no decisions for
it), a delete that answered 2xx is only a request — the instance counts as terminated once a
complete re-listing of its account shows it gone or TERMINATED.
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from reaper import log
from reaper.clock import Clock, SystemClock, human_duration, iso
from reaper.config import ConfigError, Settings
from reaper.guards import GuardReport, guard_pass
from reaper.models import (
    Action,
    AuditRecord,
    Decision,
    History,
    Instance,
    KeptInstance,
    ProviderName,
    ReapRun,
    instance_key,
)
from reaper.notify import messages
from reaper.notify.base import Notifier
from reaper.policy import decide
from reaper.providers.base import UNREADABLE_ID_PREFIX, ProviderClient, error_text
from reaper.store.base import Store
from reaper.table import format_table

LEASE_NAME = "reap"
# Long enough for a pass with confirmation waits; short enough that a crashed pass does not
# block the next hourly one.
LEASE_TTL = timedelta(minutes=30)
HOURS_PER_MONTH = 730.0

Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True)
class ConfirmOptions:
    """How long to wait for terminations to show in a re-listing: bounded, with backoff."""

    attempts: int = 7
    # The first re-listing goes out at once (the delete was acknowledged); then 1, 2, 4, ... s.
    first_delay: float = 0.0
    backoff: float = 1.0
    max_delay: float = 16.0


class ActionResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    provider: ProviderName
    account: str
    id: str
    name: str
    action: Action
    reason: str
    done: bool = False
    confirmed: bool = False


class AccountError(BaseModel):
    model_config = ConfigDict(frozen=True)

    provider: ProviderName
    account: str
    message: str


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
    # The pass ran past its lease and another took it: it stopped acting (needs attention).
    lease_lost: bool = False
    # The money guards' findings (leaks, balances) of this pass; None when they did not run.
    guards: GuardReport | None = None

    @property
    def exit_code(self) -> int:
        """1 when something needs a human: a provider failed, a termination is unconfirmed, or
        the cap held terminations back."""
        if self.lease_lost:
            return 1
        if self.lease_taken:
            return 0
        unconfirmed = any(
            a.action == "terminate" and a.done and not a.confirmed for a in self.actions
        )
        failed = (
            any(a.action == "terminate" and not a.done for a in self.actions) and not self.dry_run
        )
        return 1 if self.errors or unconfirmed or failed or self.cap_exceeded else 0

    def to_json(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "mode": self.mode,
            "at": iso(self.at),
            "instances": [
                {
                    "provider": i.provider,
                    "account": i.account,
                    "id": i.id,
                    "name": i.name,
                    "state": i.state,
                    "raw_status": i.raw_status,
                    "stopped_since": iso(i.stopped_since),
                    "cost_per_hour": i.cost_per_hour,
                }
                for i in self.instances
            ],
            "actions": [a.model_dump() for a in self.actions],
            "errors": [e.model_dump() for e in self.errors],
            "cap_exceeded": self.cap_exceeded,
            "lease_taken": self.lease_taken,
            "lease_lost": self.lease_lost,
            "exit_code": self.exit_code,
            "guards": self.guards.to_json() if self.guards else None,
        }


def _result(
    decision: Decision, *, done: bool = False, confirmed: bool = False, reason: str = ""
) -> ActionResult:
    inst = decision.instance
    return ActionResult(
        provider=inst.provider,
        account=inst.account,
        id=inst.id,
        name=inst.name,
        action=decision.action,
        reason=reason or decision.reason,
        done=done,
        confirmed=confirmed,
    )


def _storage_per_month(inst: Instance) -> float | None:
    """A stopped instance bills only its storage, so its $/h times a month is what reaping stops."""
    if inst.cost_per_hour is None:
        return None
    return round(inst.cost_per_hour * HOURS_PER_MONTH, 2)


@dataclass
class _Pass:
    settings: Settings
    store: Store
    clients: Sequence[ProviderClient]
    notifier: Notifier
    clock: Clock
    dry_run: bool
    confirm: ConfirmOptions
    sleep: Sleep
    # When the pass began: the "now" of every decision and of the warnings it records.
    started: datetime
    lease_owner: str | None
    # The first listing of this pass (complete accounts only), for confirmation witnesses.
    fleet: list[Instance] = field(default_factory=list)

    def still_leased(self) -> bool:
        """Renew the lease; False if another pass took it (this one ran past its TTL). A pass
        that lost its lease stops acting: two passes must never terminate side by side."""
        if self.lease_owner is None:
            return True
        return self.store.acquire_lease(LEASE_NAME, self.lease_owner, self.clock.now(), LEASE_TTL)

    async def alert(self, alert: Any) -> bool:
        """Send unless this is a dry run; True if at least one channel took it."""
        if self.dry_run:
            return False
        deliveries = await self.notifier.send(alert)
        return any(d.ok for d in deliveries)

    async def list_all(self, report: ReapReport) -> list[Instance]:
        results = await asyncio.gather(
            *(c.list_instances() for c in self.clients), return_exceptions=True
        )
        fleet: dict[str, Instance] = {}
        for client, result in zip(self.clients, results, strict=True):
            episode = f"provider:{client.provider}:{client.account}"
            if isinstance(result, BaseException):
                message = error_text(result)
                report.errors.append(
                    AccountError(provider=client.provider, account=client.account, message=message)
                )
                log.event(
                    "list",
                    provider=client.provider,
                    account=client.account,
                    result="error",
                    error=message,
                )
                if not self.dry_run:
                    opened = self.store.open_episode(episode, report.at, message)
                    if opened.alerted_at is None:
                        await self.alert(
                            messages.provider_failing(client.provider, client.account, message)
                        )
                        self.store.mark_episode_alerted(episode, report.at)
                continue
            log.event(
                "list",
                provider=client.provider,
                account=client.account,
                result="ok",
                count=len(result),
            )
            if not self.dry_run:
                self.store.close_episode(episode)
            for inst in result:
                # Two keys of one account list the same pods: one instance, first account wins.
                fleet.setdefault(inst.key, inst)
        return list(fleet.values())

    async def warn(self, decision: Decision) -> ActionResult:
        if self.dry_run:
            return _result(decision)
        inst = decision.instance
        assert decision.due_at is not None
        alert = messages.termination_warning(
            inst, decision.due_at, self.clock.now(), self.settings.protect_marker
        )
        delivered = await self.alert(alert)
        if not delivered:
            # No warning reached anyone: do not record it, so no termination can follow from it.
            log.event("warn", provider=inst.provider, id=inst.id, result="undelivered")
            return _result(
                decision, reason=f"{decision.reason} (warning not delivered; retried next pass)"
            )
        # At the pass's own time: the deadline the warning announced was computed from it.
        recorded = self.store.record_warning(inst.key, self.started)
        log.event(
            "warn",
            provider=inst.provider,
            id=inst.id,
            name=inst.name,
            result="sent",
            due=decision.due_at,
        )
        return _result(decision, done=recorded)

    async def hold(self, decision: Decision) -> ActionResult:
        inst = decision.instance
        if not self.dry_run and self.settings.mode == "observe" and inst.cluster_id is None:
            since = iso(inst.stopped_since) or ""
            if self.store.claim_alert(
                f"observe:{inst.key}:{since}", self.clock.now(), timedelta(days=365)
            ):
                await self.alert(messages.would_terminate(inst))
        return _result(decision)

    async def terminate(
        self, decision: Decision, client: ProviderClient
    ) -> tuple[Decision, AuditRecord]:
        inst = decision.instance
        record = AuditRecord(
            provider=inst.provider,
            account=inst.account,
            id=inst.id,
            name=inst.name,
            reason=decision.reason,
            requested_at=self.clock.now(),
            stopped_since=inst.stopped_since,
            cost_per_hour=inst.cost_per_hour,
            result="requested",
        )
        self.store.record_termination(record)
        try:
            outcome = await client.terminate(inst.id)
            record = record.model_copy(update={"result": outcome})
        except Exception as exc:  # any failure is recorded, never raised
            record = record.model_copy(update={"result": "failed", "detail": error_text(exc)})
        self.store.record_termination(record)
        log.event(
            "terminate",
            provider=inst.provider,
            account=inst.account,
            id=inst.id,
            name=inst.name,
            result=record.result,
            detail=record.detail or None,
        )
        return decision, record

    def _witness(self, client: ProviderClient, pending: set[str]) -> str | None:
        """An instance of this account that the first listing showed alive and that is not being
        terminated: a filtered re-list must return it, or the filter is not to be trusted."""
        for inst in self.fleet:
            if (
                inst.provider == client.provider
                and inst.account == client.account
                and inst.id not in pending
                and inst.state != "terminated"
            ):
                return inst.id
        return None

    async def _relist(self, client: ProviderClient, pending: set[str]) -> dict[str, Instance]:
        """A complete listing for confirmation: narrowed to the pending ids where the provider
        can filter, with a witness that must come back; otherwise, or if the witness is missing
        (a filter ignored the ids, or the witness went away), the whole account."""
        witness = self._witness(client, pending)
        if witness is not None:
            narrowed = {i.id: i for i in await client.list_instances(only_ids={*pending, witness})}
            if witness in narrowed:
                return narrowed
            log.event(
                "confirm", provider=client.provider, account=client.account, result="full_relist"
            )
        return {i.id: i for i in await client.list_instances()}

    async def confirm_account(
        self, client: ProviderClient, records: list[AuditRecord]
    ) -> dict[str, bool]:
        """Re-list the account until every id is gone or TERMINATED, or the wait runs out."""
        pending = {r.id for r in records}
        confirmed: dict[str, bool] = {r.id: False for r in records}
        delay = self.confirm.first_delay
        for attempt in range(self.confirm.attempts):
            if delay > 0:
                await self.sleep(delay)
            if not self.still_leased():
                break
            delay = min(self.confirm.backoff * 2**attempt, self.confirm.max_delay)
            try:
                listed = await self._relist(client, pending)
            except Exception as exc:  # an incomplete listing proves nothing
                log.event(
                    "confirm",
                    provider=client.provider,
                    account=client.account,
                    result="list_failed",
                    error=error_text(exc),
                )
                continue
            if any(i.startswith(UNREADABLE_ID_PREFIX) for i in listed):
                # Something is listed whose id cannot be read: it may be one of ours.
                log.event(
                    "confirm", provider=client.provider, account=client.account, result="unreadable"
                )
                continue
            for instance_id in list(pending):
                inst = listed.get(instance_id)
                if inst is None or inst.state == "terminated":
                    confirmed[instance_id] = True
                    pending.discard(instance_id)
            if not pending:
                break
        return confirmed

    async def terminate_account(
        self, client: ProviderClient, decisions: list[Decision]
    ) -> list[ActionResult]:
        """Delete this account's due instances concurrently, then prove it by re-listing.

        Each account runs its own pipeline, so a slow provider never delays another's proof.
        """
        done = await asyncio.gather(*(self.terminate(d, client) for d in decisions))
        requested = [r for _d, r in done if r.result in ("deleted", "not_found")]
        confirmations = await self.confirm_account(client, requested) if requested else {}

        results: list[ActionResult] = []
        for decision, record in done:
            inst = decision.instance
            ok = record.result in ("deleted", "not_found")
            confirmed = ok and confirmations.get(record.id, False)
            if confirmed:
                record = record.model_copy(
                    update={"confirmed": True, "confirmed_at": self.clock.now()}
                )
                self.store.record_termination(record)
                self.store.reset_stopped_clock(inst.key)
                await self.alert(messages.terminated(inst, _storage_per_month(inst)))
                reason = decision.reason
            else:
                await self.alert(messages.termination_unconfirmed(inst))
                reason = (
                    f"{decision.reason}; still listed after the confirmation wait"
                    if ok
                    else f"{decision.reason}; delete failed: {record.detail}"
                )
            log.event(
                "confirm",
                provider=inst.provider,
                id=inst.id,
                result="confirmed" if confirmed else "unconfirmed",
            )
            results.append(_result(decision, done=ok, confirmed=confirmed, reason=reason))
        return results

    async def terminate_all(self, decisions: list[Decision]) -> list[ActionResult]:
        by_account: dict[tuple[ProviderName, str], list[Decision]] = {}
        for d in decisions:
            by_account.setdefault((d.instance.provider, d.instance.account), []).append(d)
        clients = {(c.provider, c.account): c for c in self.clients}
        per_account = await asyncio.gather(
            *(self.terminate_account(clients[acct], ds) for acct, ds in by_account.items())
        )
        return [result for results in per_account for result in results]


def _vanished(
    history: History,
    fleet: list[Instance],
    clients: Sequence[ProviderClient],
    errors: list[AccountError],
) -> set[str]:
    """Recorded stretches of instances no longer listed by a provider whose every account listed
    completely: gone (deleted by hand, or by an earlier pass), so their records can go. A
    provider with any failed account proves nothing, and is left alone."""
    complete = {c.provider for c in clients} - {e.provider for e in errors}
    listed = {i.key for i in fleet}
    recorded = set(history.first_seen_stopped) | set(history.warned_at)
    return {k for k in recorded if k.split(":", 1)[0] in complete and k not in listed}


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
    sleep: Sleep = asyncio.sleep,
) -> ReapReport:
    """Run one pass. A dry run reads the store and the providers and changes nothing."""
    now = clock.now()
    report = ReapReport(dry_run=dry_run, mode=settings.mode, at=now)
    owner = uuid.uuid4().hex
    if not dry_run and not store.acquire_lease(LEASE_NAME, owner, now, LEASE_TTL):
        report.lease_taken = True
        log.event("reap", result="lease_taken")
        return report
    run = _Pass(
        settings,
        store,
        clients,
        notifier,
        clock,
        dry_run,
        confirm or ConfirmOptions(),
        sleep,
        started=now,
        lease_owner=None if dry_run else owner,
    )
    try:
        fleet = run.fleet = await run.list_all(report)
        history = store.history()
        plan = decide(fleet, history, now, settings, max_terminations=max_terminations)
        report.instances = plan.instances
        report.cap_exceeded = plan.cap_exceeded
        if not run.still_leased():
            report.lease_lost = True
            log.event("reap", result="lease_lost", phase="after listing")
            return report
        if not dry_run:
            for change in plan.clock_changes:
                if change.change in ("reset", "restart"):
                    store.reset_stopped_clock(change.key)
                if change.change in ("start", "restart"):
                    store.start_stopped_clock(change.key, change.at)
            for key in _vanished(history, fleet, clients, report.errors):
                store.reset_stopped_clock(key)

        # The money guards reuse this listing and run beside the actions: they only alert, never
        # act, and never fail a pass.
        guards = asyncio.create_task(
            guard_pass(
                settings,
                store,
                clients,
                notifier,
                clock,
                report.instances,
                failed_accounts={(e.provider, e.account) for e in report.errors},
                dry_run=dry_run,
                volume_orphan_after=settings.volume_orphan_after,
            )
        )
        due = [d for d in plan.decisions if d.action == "terminate"]
        for decision in plan.decisions:
            if decision.action == "warn":
                report.actions.append(await run.warn(decision))
            elif decision.action == "hold":
                report.actions.append(await run.hold(decision))
            elif decision.action == "protect":
                report.actions.append(_result(decision))
        if plan.cap_exceeded and not dry_run:
            cap = settings.max_terminations if max_terminations is None else max_terminations
            held = [d.instance for d in plan.decisions if d.action == "hold"]
            await run.alert(messages.cap_exceeded(plan.due_count, cap, held))
        if due and not run.still_leased():
            report.lease_lost = True
            log.event("reap", result="lease_lost", phase="before terminating")
            due = []
        if due:
            report.actions += [_result(d) for d in due] if dry_run else await run.terminate_all(due)

        report.guards = await guards

        if not dry_run:
            finished = clock.now()
            store.record_reap(
                ReapRun(
                    at=now,
                    finished_at=finished,
                    dry_run=False,
                    mode=settings.mode,
                    instances=len(report.instances),
                    terminated=sum(
                        1 for a in report.actions if a.action == "terminate" and a.confirmed
                    ),
                    warned=sum(1 for a in report.actions if a.action == "warn" and a.done),
                    errors=len(report.errors),
                    exit_code=report.exit_code,
                )
            )
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
    finally:
        if not dry_run:
            store.release_lease(LEASE_NAME, owner)


async def run_pass(
    settings: Settings,
    store: Store,
    *,
    dry_run: bool = False,
    max_terminations: int | None = None,
    notifier: Notifier | None = None,
    clock: Clock | None = None,
) -> ReapReport:
    """One pass as the CLI, `serve` and Lambda run it: clients and notifier from the settings
    (a dry run alerts no one), the clients closed whatever happens."""
    from reaper.notify import make_notifier
    from reaper.notify.base import RecordingNotifier
    from reaper.providers import make_clients

    if notifier is None:
        notifier = RecordingNotifier() if dry_run else make_notifier(settings)
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
        )
    finally:
        await asyncio.gather(*(c.aclose() for c in clients), return_exceptions=True)


async def reap_once(settings: Settings, store: Store, notifier: Notifier, clock: Clock) -> int:
    """A scheduled pass (`serve`). Never raises for an expected outcome: the exit code says
    what happened."""
    report = await run_pass(settings, store, notifier=notifier, clock=clock)
    return report.exit_code


# --- the command line ---------------------------------------------------------------------


def _action_label(action: ActionResult, dry_run: bool) -> str:
    if dry_run:
        return (
            f"{action.action} (dry run)"
            if action.action in ("terminate", "warn")
            else action.action
        )
    if action.action == "terminate":
        if action.confirmed:
            return "terminated"
        return "terminate (unconfirmed)" if action.done else "terminate (not done)"
    if action.action == "warn" and not action.done:
        return "warn (not sent)"
    return action.action


def render_table(report: ReapReport, settings: Settings) -> str:
    actions = {(a.provider, a.id): a for a in report.actions}
    rows: list[list[str]] = []
    for inst in sorted(report.instances, key=lambda i: (i.provider, i.account, i.id)):
        action = actions.get((inst.provider, inst.id))
        stopped_for = human_duration(report.at - inst.stopped_since) if inst.stopped_since else ""
        what = _action_label(action, report.dry_run) if action else ""
        rows.append(
            [
                inst.provider,
                inst.account,
                inst.id,
                inst.name,
                inst.state
                if inst.state == inst.raw_status.lower()
                else f"{inst.state} ({inst.raw_status})",
                stopped_for,
                "" if inst.cost_per_hour is None else f"{inst.cost_per_hour:.3f}",
                what,
                action.reason if action else "",
            ]
        )
    headers = [
        "provider",
        "account",
        "id",
        "name",
        "state",
        "stopped for",
        "$/h",
        "action",
        "reason",
    ]
    lines = [f"reap {'dry run ' if report.dry_run else ''}at {iso(report.at)} (mode {report.mode})"]
    lines.append(format_table(headers, rows, max_width=70) if rows else "no instances")
    for error in report.errors:
        lines.append(f"error: {error.provider}/{error.account}: {error.message}")
    if report.cap_exceeded:
        lines.append(
            "cap: more terminations were due than REAPER_MAX_TERMINATIONS allows; none were done"
        )
    return "\n".join(lines)


def reap_command(
    settings: Settings, *, dry_run: bool, json_output: bool, max_terminations: int | None
) -> int:
    from reaper.store import open_store

    settings.require_provider_keys()
    store = open_store(settings.state, read_only=dry_run)
    try:
        report = asyncio.run(
            run_pass(settings, store, dry_run=dry_run, max_terminations=max_terminations)
        )
    finally:
        store.close()
    if report.lease_taken:
        print("reaper: another reap pass holds the lease; nothing done", file=sys.stderr)
    if json_output:
        print(json.dumps(report.to_json(), ensure_ascii=False))
    elif not report.lease_taken:
        print(render_table(report, settings))
    return report.exit_code


def parse_target(target: str) -> tuple[ProviderName, str]:
    provider, sep, instance_id = target.partition(":")
    if not sep or provider not in ("runpod", "vast") or not instance_id:
        raise ConfigError(
            "<provider>:<id>", f"expected runpod:<podId> or vast:<instanceId>, got {target!r}"
        )
    if not all(c.isalnum() or c in "-_." for c in instance_id) or len(instance_id) > 100:
        raise ConfigError("<provider>:<id>", f"not a valid instance id: {instance_id!r}")
    return provider, instance_id  # type: ignore[return-value]


def keep_command(settings: Settings, *, target: str, duration: timedelta | None) -> int:
    from reaper.store import open_store

    provider, instance_id = parse_target(target)
    now = SystemClock().now()
    key = instance_key(provider, instance_id)
    until = now + duration if duration else None
    store = open_store(settings.state)
    try:
        store.keep(KeptInstance(key=key, since=now, until=until))
    finally:
        store.close()
    log.event("keep", provider=provider, id=instance_id, until=until, result="kept")
    print(f"kept {key} " + (f"until {iso(until)}" if until else "until further notice"))
    return 0


def audit_command(settings: Settings, *, json_output: bool) -> int:
    from reaper.store import open_store

    store = open_store(settings.state, read_only=True)
    try:
        records = store.audit_log()
    finally:
        store.close()
    if json_output:
        print(
            json.dumps(
                {"terminations": [r.model_dump(mode="json") for r in records]}, ensure_ascii=False
            )
        )
        return 0
    if not records:
        print("no terminations recorded")
        return 0
    rows = [
        [
            iso(r.requested_at) or "",
            r.provider,
            r.account,
            r.id,
            r.name,
            r.result,
            "yes" if r.confirmed else "NO",
            r.reason + (f" ({r.detail})" if r.detail else ""),
        ]
        for r in records
    ]
    print(
        format_table(
            ["when", "provider", "account", "id", "name", "result", "confirmed", "why"],
            rows,
            max_width=80,
        )
    )
    return 0
