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
import time
import uuid
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict

from reaper import log
from reaper.clock import Clock, SystemClock, human_duration, iso
from reaper.config import ConfigError, Settings
from reaper.guards import GuardReport, guard_pass
from reaper.models import (
    Action,
    Alert,
    AuditRecord,
    Decision,
    Delivery,
    History,
    Instance,
    KeptInstance,
    Listing,
    Plan,
    ProviderName,
    ReapRun,
    WarningRecord,
    instance_key,
)
from reaper.notify import messages
from reaper.notify.base import Notifier
from reaper.policy import NO_CHANNEL_REASON, RESETTING_STATES, decide, recheck
from reaper.providers.base import UNREADABLE_ID_PREFIX, ProviderClient, StaleReading, error_text
from reaper.providers.parsing import merge_duplicates
from reaper.store.base import Store
from reaper.table import format_table

LEASE_NAME = "reap"
# Long enough for a pass with confirmation waits; short enough that a crashed pass does not
# block the next hourly one.
LEASE_TTL = timedelta(minutes=30)
HOURS_PER_MONTH = 730.0
# More warnings than this in one pass go out as one message naming each instance: a chat's
# per-minute limit must not delay the notice of the last one.
FOLD_WARNINGS_AFTER = 5
# Unconfirmed audit records older than this are no longer reconciled against listings.
RECONCILE_WINDOW = timedelta(days=30)
CAP_EPISODE = "reap:cap"
CLOCK_EPISODE = "reap:clock_behind"
NO_CHANNEL_EPISODE = "reap:no_channel"

Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True)
class ConfirmOptions:
    """How long to wait for terminations to show in a re-listing: bounded, with backoff."""

    attempts: int = 7
    # The first re-listing goes out at once (the delete was acknowledged); then 1, 2, 4, ... s.
    first_delay: float = 0.0
    backoff: float = 1.0
    max_delay: float = 16.0


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
    # The pass's clock read earlier than the last completed pass: it decided nothing.
    clock_behind: bool = False
    # No channel reaches a person: warnings went only to the log.
    no_channel: bool = False
    # Audit records left unconfirmed by an earlier pass, confirmed by this pass's listing.
    reconciled: list[str] = field(default_factory=list)
    # The money guards' findings (leaks, balances) of this pass; None when they did not run.
    guards: GuardReport | None = None

    @property
    def exit_code(self) -> int:
        """1 when something needs a human: a provider failed, a termination is unconfirmed or
        was not done, the cap held terminations back, the lease was lost, the clock is wrong."""
        if self.lease_lost or self.clock_behind:
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
            "clock_behind": self.clock_behind,
            "no_channel": self.no_channel,
            "reconciled": self.reconciled,
            "exit_code": self.exit_code,
            "guards": self.guards.to_json() if self.guards else None,
        }


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
    )


def _storage_per_month(inst: Instance) -> float | None:
    """A stopped instance bills only its storage, so its $/h times a month is what reaping stops."""
    if inst.cost_per_hour is None:
        return None
    return round(inst.cost_per_hour * HOURS_PER_MONTH, 2)


class LeaseLost(Exception):
    """The pass no longer holds the reap lease: it must stop acting at once."""


def _witnesses(fleet: Sequence[Instance], pending: Collection[str]) -> set[str]:
    """Instances a re-list must still show: listed alive in the reading the deletes were
    decided on, and not being deleted."""
    return {i.id for i in fleet if i.id not in pending and i.state != "terminated"}


@dataclass
class _Pass:
    settings: Settings
    store: Store
    clients: Sequence[ProviderClient]
    notifier: Notifier
    clock: Clock
    dry_run: bool
    confirm: ConfirmOptions
    act: ActOptions
    sleep: Sleep
    # When the pass began: the "now" of every decision.
    started: datetime
    lease_owner: str | None
    report: ReapReport

    def still_leased(self) -> bool:
        """Renew the lease; False if it was lost (this pass ran past its TTL, or another took
        it). Renewing never takes back a lease that expired or changed hands."""
        if self.lease_owner is None:
            return True
        return self.store.renew_lease(LEASE_NAME, self.lease_owner, self.clock.now(), LEASE_TTL)

    def require_lease(self, phase: str) -> None:
        if not self.still_leased():
            self.report.lease_lost = True
            log.event("reap", result="lease_lost", phase=phase)
            raise LeaseLost(phase)

    async def alert(self, alert: Alert) -> list[Delivery]:
        """Send unless this is a dry run."""
        if self.dry_run:
            return []
        return await self.notifier.send(alert)

    async def alert_once(self, episode: str, alert: Alert, detail: str = "") -> None:
        """One alert per episode: opened now or earlier, alerted once until it closes."""
        if self.dry_run:
            return
        opened = self.store.open_episode(episode, self.started, detail)
        if opened.alerted_at is None:
            await self.alert(alert)
            self.store.mark_episode_alerted(episode, self.started)

    def close_episode(self, episode: str) -> None:
        if not self.dry_run:
            self.store.close_episode(episode)

    def client(self, provider: str, account: str) -> ProviderClient | None:
        return next(
            (c for c in self.clients if c.provider == provider and c.account == account), None
        )

    # --- observe ---------------------------------------------------------------------------

    async def list_all(self) -> list[Instance]:
        results = await asyncio.gather(
            *(c.list_instances() for c in self.clients), return_exceptions=True
        )
        listed: list[Instance] = []
        for client, result in zip(self.clients, results, strict=True):
            episode = f"provider:{client.provider}:{client.account}"
            if isinstance(result, BaseException):
                message = error_text(result)
                self.report.errors.append(
                    AccountError(provider=client.provider, account=client.account, message=message)
                )
                log.event(
                    "list",
                    provider=client.provider,
                    account=client.account,
                    result="error",
                    error=message,
                )
                await self.alert_once(
                    episode, messages.provider_failing(client.provider, client.account, message)
                )
                continue
            log.event(
                "list",
                provider=client.provider,
                account=client.account,
                result="ok",
                count=len(result),
            )
            self.close_episode(episode)
            listed += result
        # Two keys of one account list the same pods: one instance, unless they disagree.
        return merge_duplicates(listed)

    def complete_accounts(self) -> set[tuple[ProviderName, str]]:
        failed = {(e.provider, e.account) for e in self.report.errors}
        return {(c.provider, c.account) for c in self.clients} - failed

    async def gone(
        self,
        client: ProviderClient,
        listed: Mapping[str, Instance],
        candidates: Collection[str],
        witnesses: Collection[str],
    ) -> set[str]:
        """Of `candidates`, those a complete re-list `listed` proves gone (absent or
        terminated).

        The re-list proves something only if it still shows an instance that must be there
        (a witness); an account with nothing else to check against needs the instance's own
        endpoint to agree (RunPod `GET /pods/{id}`, Vast `GET /instances/{id}/`). An empty
        answer from a provider that lost its way must never read as "terminated".
        """
        if any(i.startswith(UNREADABLE_ID_PREFIX) for i in listed):
            # Something is listed whose id cannot be read: it may be one of ours.
            return set()
        absent = {i for i in candidates if i not in listed or listed[i].state == "terminated"}
        if not absent:
            return set()
        if witnesses:
            return absent if any(w in listed for w in witnesses) else set()
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
        pass's complete listing: gone → confirmed and alerted; listed running again → the delete
        did not happen; still stopped → left for the policy to decide again."""
        if self.dry_run:
            return
        complete = self.complete_accounts()
        open_records = [
            r
            for r in self.store.audit_log(since=self.started - RECONCILE_WINDOW)
            if not r.confirmed and r.result != "failed" and (r.provider, r.account) in complete
        ]
        if not open_records:
            return
        previous: dict[tuple[str, str], Listing] = {
            (x.provider, x.account): x for x in self.store.listings()
        }
        for (provider, account), records in _by_account(open_records).items():
            client = self.client(provider, account)
            if client is None:
                continue
            mine = {i.id: i for i in fleet if i.provider == provider and i.account == account}
            ids = {r.id for r in records}
            last = previous.get((provider, account))
            known = _witnesses(last.instances, ids) if last is not None else set()
            gone = await self.gone(client, mine, ids, known)
            for record in records:
                inst = mine.get(record.id)
                if record.id in gone:
                    await self._reconciled(record)
                elif inst is not None and inst.state in RESETTING_STATES:
                    self.store.record_termination(
                        record.model_copy(
                            update={
                                "result": "failed",
                                "detail": f"listed {inst.raw_status} after the pass that asked "
                                "for the delete ended: it did not happen",
                            }
                        )
                    )

    async def _reconciled(self, record: AuditRecord) -> None:
        confirmed = record.model_copy(
            update={
                "result": "deleted" if record.result == "requested" else record.result,
                "confirmed": True,
                "confirmed_at": self.clock.now(),
                "detail": (record.detail + "; " if record.detail else "")
                + "confirmed by a later pass's listing",
            }
        )
        self.store.record_termination(confirmed)
        self.store.reset_stopped_clock(record.key)
        self.report.reconciled.append(record.key)
        log.event("reconcile", provider=record.provider, id=record.id, result="confirmed")
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
        if self.store.claim_alert(f"terminated:{record.key}", self.started, timedelta(days=1)):
            await self.alert(messages.terminated(inst, _storage_per_month(inst)))

    # --- warnings --------------------------------------------------------------------------

    async def warn_all(self, decisions: list[Decision]) -> list[ActionResult]:
        """Send this pass's warnings at once: alone and concurrently when few, folded into one
        message when many, so a slow channel cannot eat one instance's notice. Each is recorded
        at its own delivery time, with whether a person could read it."""
        if self.dry_run or not decisions:
            return [_result(d) for d in decisions]
        self.require_lease("before warning")
        observe = self.settings.mode == "observe"
        next_check = self.started + self.settings.reap_every
        marker = self.settings.protect_marker
        groups: list[tuple[list[Decision], Alert]]
        if len(decisions) > FOLD_WARNINGS_AFTER:
            items = [(d.instance, _due(d)) for d in decisions]
            folded = messages.termination_warnings(
                items, self.started, marker, next_check=next_check, observe=observe
            )
            groups = [(decisions, folded)]
        else:
            groups = [
                (
                    [d],
                    messages.termination_warning(
                        d.instance,
                        _due(d),
                        self.started,
                        marker,
                        next_check=next_check,
                        observe=observe,
                    ),
                )
                for d in decisions
            ]
        sent = await asyncio.gather(*(self._deliver(alert) for _group, alert in groups))
        self.require_lease("after warning")
        results: list[ActionResult] = []
        for (group, _alert), (deliveries, delivered_at) in zip(groups, sent, strict=True):
            heard = any(d.ok and d.heard for d in deliveries)
            logged = any(d.ok for d in deliveries)
            for decision in group:
                results.append(self._record_warning(decision, heard, logged, delivered_at))
        return results

    async def _deliver(self, alert: Alert) -> tuple[list[Delivery], datetime]:
        deliveries = await self.alert(alert)
        return deliveries, self.clock.now()

    def _record_warning(
        self, decision: Decision, heard: bool, logged: bool, delivered_at: datetime
    ) -> ActionResult:
        inst = decision.instance
        if not logged:
            # No warning reached anyone: do not record it, so no termination can follow from it.
            log.event("warn", provider=inst.provider, id=inst.id, result="undelivered")
            return _result(
                decision, reason=f"{decision.reason} (warning not delivered; retried next pass)"
            )
        self.store.record_warning(
            inst.key,
            WarningRecord(
                at=delivered_at,
                heard=heard,
                mode=self.settings.mode,
                terminate_at=decision.due_at,
            ),
        )
        log.event(
            "warn",
            provider=inst.provider,
            id=inst.id,
            name=inst.name,
            result="sent" if heard else "logged",
            due=decision.due_at,
        )
        if heard:
            return _result(decision, done=True)
        return _result(
            decision,
            done=True,
            reason=f"{decision.reason} (written to the log only: {NO_CHANNEL_REASON})",
        )

    async def hold(self, decision: Decision) -> ActionResult:
        inst = decision.instance
        if not self.dry_run and self.settings.mode == "observe" and inst.cluster_id is None:
            since = iso(inst.stopped_since) or ""
            if self.store.claim_alert(
                f"observe:{inst.key}:{since}", self.clock.now(), timedelta(days=365)
            ):
                await self.alert(messages.would_terminate(inst))
        return _result(decision)

    # --- terminations ----------------------------------------------------------------------

    async def _fresh_read(
        self, client: ProviderClient, due_ids: set[str]
    ) -> tuple[dict[str, Instance], float]:
        """The account as it stands right now, and the monotonic instant of the read.

        Narrowed to the due ids where the provider can filter (Vast), with a witness that
        must come back, else the whole account (RunPod's listing is paged, not filtered)."""
        witness = self._witness(client, due_ids)
        read_at = time.monotonic()
        if witness is not None:
            narrowed = await client.list_instances(only_ids={*due_ids, witness})
            by_id = {i.id: i for i in narrowed}
            if witness in by_id:
                return by_id, read_at
            read_at = time.monotonic()
        return {i.id: i for i in await client.list_instances()}, read_at

    def _witness(self, client: ProviderClient, pending: Collection[str]) -> str | None:
        """An instance of this account that the pass's listing showed alive and that is not
        being terminated: a filtered re-list must return it, or the filter is not trusted."""
        for inst in self.report.instances:
            if (
                inst.provider == client.provider
                and inst.account == client.account
                and inst.id not in pending
                and inst.state != "terminated"
            ):
                return inst.id
        return None

    async def terminate(
        self, decision: Decision, client: ProviderClient, not_after: float
    ) -> AuditRecord | None:
        """One delete; its audit record, or None when it was not sent (its reading grew too
        old while it waited: the caller reads again)."""
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
        sent = False

        def write_requested() -> None:
            # Right before the request goes out, so a pass that dies mid-call still leaves a
            # record that the next pass reconciles, and a delete never sent leaves none.
            nonlocal sent
            sent = True
            self.store.record_termination(record)

        try:
            outcome = await client.terminate(
                inst.id, not_after=not_after, before_send=write_requested
            )
            record = record.model_copy(update={"result": outcome})
        except StaleReading as exc:
            if not sent:
                log.event(
                    "terminate",
                    provider=inst.provider,
                    id=inst.id,
                    result="not_sent",
                    detail=error_text(exc),
                )
                return None
            record = record.model_copy(update={"result": "failed", "detail": error_text(exc)})
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
        return record

    async def delete_fresh(
        self, client: ProviderClient, decisions: list[Decision]
    ) -> tuple[list[tuple[Decision, AuditRecord]], list[ActionResult], dict[str, Instance]]:
        """Delete what a fresh reading still shows due, round by round: a delete that could not
        go out while its reading was fresh is read again. Returns the deletes that went out,
        the decisions that fell away (with why), and the last fresh reading."""
        sent: list[tuple[Decision, AuditRecord]] = []
        dropped: list[ActionResult] = []
        pending = decisions
        fresh: dict[str, Instance] = {}
        for _round in range(self.act.rounds):
            self.require_lease("before the fresh read")
            try:
                fresh, read_at = await self._fresh_read(client, {d.instance.id for d in pending})
            except Exception as exc:  # no fresh reading, no delete
                why = f"the fresh read right before the delete failed ({error_text(exc)})"
                dropped += [_result(d, reason=f"{d.reason}; not deleted: {why}") for d in pending]
                return sent, dropped, fresh
            history = self.store.history()
            now = self.clock.now()
            go: list[Decision] = []
            for decision in pending:
                why_not = recheck(
                    decision, fresh.get(decision.instance.id), history, now, self.settings
                )
                if why_not is None:
                    go.append(decision)
                else:
                    log.event(
                        "terminate",
                        provider=decision.instance.provider,
                        id=decision.instance.id,
                        result="skipped",
                        reason=why_not,
                    )
                    dropped.append(
                        _result(decision, action="hold", reason=f"not terminated: {why_not}")
                    )
            self.require_lease("before deleting")
            not_after = read_at + self.act.fresh_for
            records = await asyncio.gather(*(self.terminate(d, client, not_after) for d in go))
            pending = []
            for decision, record in zip(go, records, strict=True):
                if record is None:
                    pending.append(decision)
                else:
                    sent.append((decision, record))
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
            proven = await self.gone(client, listed, pending, witnesses)
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
        sent, results, fresh = await self.delete_fresh(client, decisions)
        requested = [r for _d, r in sent if r.result in ("deleted", "not_found")]
        witnesses = _witnesses(list(fresh.values()), {r.id for r in requested})
        confirmations = (
            await self.confirm_account(client, requested, witnesses) if requested else set()
        )
        for decision, record in sent:
            inst = decision.instance
            ok = record.result in ("deleted", "not_found")
            confirmed = ok and record.id in confirmations
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
        by_account = _by_account(decisions, key=lambda d: (d.instance.provider, d.instance.account))
        jobs = []
        for (provider, account), ds in by_account.items():
            client = self.client(provider, account)
            assert client is not None
            jobs.append(self.terminate_account(client, ds))
        per_account = await asyncio.gather(*jobs, return_exceptions=True)
        results: list[ActionResult] = []
        for (_acct, ds), outcome in zip(by_account.items(), per_account, strict=True):
            if isinstance(outcome, LeaseLost):
                results += [
                    _result(d, reason=f"{d.reason}; not deleted: the lease was lost") for d in ds
                ]
            elif isinstance(outcome, BaseException):
                raise outcome
            else:
                results += outcome
        return results


def _due(decision: Decision) -> datetime:
    assert decision.due_at is not None
    return decision.due_at


T = TypeVar("T")


def _by_account(
    items: Sequence[T], key: Callable[[T], tuple[str, str]] | None = None
) -> dict[tuple[str, str], list[T]]:
    def default(item: Any) -> tuple[str, str]:
        return (item.provider, item.account)

    grouped: dict[tuple[str, str], list[T]] = {}
    for item in items:
        grouped.setdefault((key or default)(item), []).append(item)
    return grouped


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
    recorded = set(history.first_seen_stopped) | set(history.warnings)
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
    act: ActOptions | None = None,
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
        act or ActOptions(),
        sleep,
        started=now,
        lease_owner=None if dry_run else owner,
        report=report,
    )
    try:
        await _run(run, max_terminations)
    except LeaseLost:
        pass
    finally:
        if not dry_run:
            store.release_lease(LEASE_NAME, owner)
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


async def _run(run: _Pass, max_terminations: int | None) -> None:
    settings, store, report, now = run.settings, run.store, run.report, run.started
    last = store.last_reap()
    if last is not None and now < last.finished_at:
        report.clock_behind = True
        log.event("reap", result="clock_behind", now=now, last_pass=last.finished_at)
        await run.alert_once(CLOCK_EPISODE, messages.clock_behind(now, last.finished_at))
        return
    run.close_episode(CLOCK_EPISODE)

    report.no_channel = not settings.human_channel
    if report.no_channel:
        # Every pass says so: a warning nobody can read is no notice.
        log.event(
            "no_alert_channel",
            message="no alert channel is configured (TELEGRAM_BOT_TOKEN and TELEGRAM_CHAT_ID, "
            "BARK_URL or NTFY_URL): warnings go only to this log"
            + (
                " and due terminations are held (REAPER_REQUIRE_CHANNEL=true)"
                if settings.require_channel
                else ""
            ),
        )
    fleet = await run.list_all()
    await run.reconcile(fleet)
    history = store.history()
    plan = decide(fleet, history, now, settings, max_terminations=max_terminations)
    report.instances = plan.instances
    report.cap_exceeded = plan.cap_exceeded
    run.require_lease("after listing")
    if not run.dry_run:
        for change in plan.clock_changes:
            if change.change in ("reset", "restart"):
                store.reset_stopped_clock(change.key)
            if change.change in ("start", "restart"):
                store.start_stopped_clock(change.key, change.at)
        for key in _vanished(history, fleet, run.clients, report.errors):
            store.reset_stopped_clock(key)
        _record_listings(run, plan.instances)

    # The money guards reuse this listing and run beside the actions: they only alert, never
    # act, and never fail a pass.
    guards = asyncio.create_task(
        guard_pass(
            settings,
            store,
            run.clients,
            run.notifier,
            run.clock,
            report.instances,
            failed_accounts={(e.provider, e.account) for e in report.errors},
            dry_run=run.dry_run,
            volume_orphan_after=settings.volume_orphan_after,
        )
    )
    try:
        await _act(run, plan, max_terminations)
    finally:
        report.guards = await guards

    if not run.dry_run:
        store.record_reap(
            ReapRun(
                at=now,
                finished_at=run.clock.now(),
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


def _record_listings(run: _Pass, instances: list[Instance]) -> None:
    """Each complete account's listing, for `keep`, `status` and the status page."""
    grouped = _by_account(instances)
    for provider, account in sorted(run.complete_accounts()):
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


async def _act(run: _Pass, plan: Plan, max_terminations: int | None) -> None:
    settings, report = run.settings, run.report
    warn = [d for d in plan.decisions if d.action == "warn"]
    due = [d for d in plan.decisions if d.action == "terminate"]
    report.actions += await run.warn_all(warn)
    for decision in plan.decisions:
        if decision.action == "hold":
            report.actions.append(await run.hold(decision))
        elif decision.action == "protect":
            report.actions.append(_result(decision))

    cap = settings.max_terminations if max_terminations is None else max_terminations
    source = "REAPER_MAX_TERMINATIONS" if max_terminations is None else "--max-terminations"
    if plan.cap_exceeded:
        held = [d.instance for d in plan.decisions if d.action == "hold"]
        await run.alert_once(CAP_EPISODE, messages.cap_exceeded(plan.due_count, cap, held, source))
    else:
        run.close_episode(CAP_EPISODE)

    unheard = [d for d in plan.decisions if d.action == "hold" and NO_CHANNEL_REASON in d.reason]
    if unheard:
        await run.alert_once(NO_CHANNEL_EPISODE, messages.no_channel_hold(len(unheard)))
    else:
        run.close_episode(NO_CHANNEL_EPISODE)

    if due:
        report.actions += [_result(d) for d in due] if run.dry_run else await run.terminate_all(due)


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
    """`<provider>:<id>`, the id canonicalised the way the provider's listing spells it."""
    from reaper.providers import canonical_id

    provider, sep, raw_id = target.strip().partition(":")
    if not sep or provider not in ("runpod", "vast") or not raw_id:
        raise ConfigError(
            "<provider>:<id>", f"expected runpod:<podId> or vast:<instanceId>, got {target!r}"
        )
    instance_id = canonical_id(provider, raw_id)
    if instance_id is None:
        expected = "ASCII digits" if provider == "vast" else "letters and digits"
        raise ConfigError(
            "<provider>:<id>", f"not a valid {provider} instance id ({expected}): {raw_id!r}"
        )
    return provider, instance_id  # type: ignore[return-value]


def _last_seen(store: Store, key: str) -> tuple[Instance | None, datetime | None]:
    """The instance as the last complete listing of its provider showed it, and when the
    newest listing of that provider was taken (None: never listed)."""
    provider = key.split(":", 1)[0]
    newest: datetime | None = None
    for listing in store.listings():
        if listing.provider != provider:
            continue
        newest = listing.at if newest is None else max(newest, listing.at)
        for inst in listing.instances:
            if inst.key == key:
                return inst, listing.at
    return None, newest


def keep_command(settings: Settings, *, target: str, duration: timedelta | None) -> int:
    from reaper.store import open_store

    provider, instance_id = parse_target(target)
    now = SystemClock().now()
    key = instance_key(provider, instance_id)
    until = now + duration if duration else None
    store = open_store(settings.state)
    try:
        store.keep(KeptInstance(key=key, since=now, until=until))
        seen, listed_at = _last_seen(store, key)
    finally:
        store.close()
    log.event("keep", provider=provider, id=instance_id, until=until, result="kept")
    name = f" ({seen.name})" if seen is not None and seen.name else ""
    print(f"kept {key}{name} " + (f"until {iso(until)}" if until else "until further notice"))
    if seen is None:
        where = (
            f"the last listing ({iso(listed_at)})"
            if listed_at
            else f"any listing yet (no reap pass has listed {provider})"
        )
        print(f"reaper: note: {key} is not in {where}: check the id", file=sys.stderr)
    return 0


def unkeep_command(settings: Settings, *, target: str) -> int:
    from reaper.store import open_store

    provider, instance_id = parse_target(target)
    key = instance_key(provider, instance_id)
    store = open_store(settings.state)
    try:
        ended = store.unkeep(key)
    finally:
        store.close()
    log.event("unkeep", provider=provider, id=instance_id, result="ended" if ended else "none")
    if ended:
        print(f"no longer kept: {key} (the reaper treats it as any other instance again)")
        return 0
    print(f"reaper: {key} was not kept; nothing changed", file=sys.stderr)
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
