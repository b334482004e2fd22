"""Terminations: the fresh read right before the deletes (through the one gate), the
re-listing that proves them, the "Terminated" announcement, and the reconciliation of what an
earlier pass left unconfirmed."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import Literal

from reaper import log
from reaper.core import messages
from reaper.core.models import AuditRecord, Decision, Instance
from reaper.core.policy import RESETTING_STATES
from reaper.core.witness import proves_gone, trustworthy_absence
from reaper.passes.reap.gate import (
    LOST_ANSWER_WINDOW,
    RECONCILE_WINDOW,
    Fence,
    NotSent,
    Refused,
    delete,
    earlier_deletes,
    pass_history,
)
from reaper.passes.reap.report import ActionResult, result_of, storage_per_month
from reaper.passes.reap.state import LeaseLost, PassState, by_account
from reaper.providers.base import UNREADABLE_ID_PREFIX, ProviderClient, error_text


def witnesses_of(fleet: Sequence[Instance], pending: Collection[str]) -> set[str]:
    """Instances a re-list must still show: listed alive in the reading the deletes were
    decided on, and not being deleted."""
    return {i.id for i in fleet if i.id not in pending and i.state != "terminated"}


async def gone(
    run: PassState,
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


async def reconcile(run: PassState, fleet: list[Instance]) -> None:
    """Audit records a crashed or cut-off pass left unconfirmed, settled against this
    pass's complete listing: gone → confirmed and announced; listed running again → the
    delete did not happen; still listed stopped → it did not take effect: a `requested`
    record (the pass died before or as the DELETE left) is `not_sent`, one the provider
    answered is `failed` — so that `reaper audit` never shows two terminations of one
    instance — and the policy decides again."""
    open_records = [
        r
        for r in run.store.audit_log(since=run.started - RECONCILE_WINDOW)
        if not r.confirmed
        and r.result not in ("failed", "not_sent")
        and (r.provider, r.account) in run.seen.complete
    ]
    if not open_records:
        return
    previous = {(x.provider, x.account): x for x in run.store.listings()}
    for (provider, account), records in by_account(open_records).items():
        client = run.ctx.client(provider, account)
        if client is None:
            continue
        mine = {i.id: i for i in fleet if i.provider == provider and i.account == account}
        ids = {r.id for r in records}
        last = previous.get((provider, account))
        known = witnesses_of(last.instances, ids) if last is not None else set()
        if known and not trustworthy_absence(set(mine), known):
            continue
        proven = await gone(run, client, mine, ids, known & set(mine))
        for record in records:
            inst = mine.get(record.id)
            if record.id in proven:
                await _reconciled(run, record)
            elif inst is not None and inst.state in RESETTING_STATES:
                _settle(
                    run,
                    record,
                    "failed",
                    f"listed {inst.raw_status} after the pass that asked for the delete"
                    " ended: it did not happen",
                )
            elif inst is not None and inst.state == "stopped":
                _settle(
                    run,
                    record,
                    "not_sent" if record.result == "requested" else "failed",
                    f"still listed stopped ({inst.raw_status}) by the next pass: the delete"
                    + (
                        " never left (or took no effect)"
                        if record.result == "requested"
                        else " took no effect"
                    ),
                )


def _settle(
    run: PassState, record: AuditRecord, result: Literal["failed", "not_sent"], why: str
) -> None:
    detail = f"answered {record.result}; {why}" if record.result != "requested" else why
    settled = record.model_copy(update={"result": result, "detail": detail})
    run.store.record_termination(settled)
    log.event("reconcile", provider=record.provider, id=record.id, result=result)


async def confirm_lost_answers(
    run: PassState, ended: Collection[str], stretches: Mapping[str, datetime]
) -> None:
    """Stretches that end as gone (two listings missed the instance) right after a delete of
    theirs whose answer was lost — left `requested`, or settled `not_sent` because a listing
    still showed it stopped (the provider took its time) — were ended by that delete: it is
    confirmed and announced, once (a confirmed record is never matched again)."""
    if not ended:
        return
    for record in run.store.audit_log(since=run.started - LOST_ANSWER_WINDOW):
        since = stretches.get(record.key)
        if (
            record.key in ended
            and since is not None
            and record.requested_at >= since
            and not record.confirmed
            and record.result in ("requested", "not_sent")
        ):
            why = "gone from two listings after it: the delete's answer was lost"
            await _reconciled(run, record, why)


async def _reconciled(
    run: PassState, record: AuditRecord, why: str = "confirmed by a later pass's listing"
) -> None:
    confirmed = record.model_copy(
        update={
            "result": "deleted" if record.result in ("requested", "not_sent") else record.result,
            "confirmed": True,
            "confirmed_at": run.ctx.clock.now(),
            "announced": False,
            "detail": (record.detail + "; " if record.detail else "") + why,
        }
    )
    run.store.record_termination(confirmed)
    run.store.reset_stopped_clock(record.key)
    run.report.reconciled.append(record.key)
    log.event("reconcile", provider=record.provider, id=record.id, result="confirmed")
    await announce(run, confirmed)


async def announce(run: PassState, record: AuditRecord) -> None:
    """The "Terminated …" alert of a confirmed termination, then its record marked
    announced — only when a channel took it: a process that dies in between, or a message
    every channel failed, leaves it for the next pass to send (`announce_pending`)."""
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
    deliveries = await run.alert(messages.terminated(inst, storage_per_month(inst)))
    if deliveries and not any(d.ok for d in deliveries):
        log.event("announce", provider=record.provider, id=record.id, result="failed")
        return
    run.store.record_termination(record.model_copy(update={"announced": True}))


async def announce_pending(run: PassState) -> None:
    """Send what was confirmed and never announced (a pass died between the two)."""
    for record in run.store.audit_log(since=run.started - RECONCILE_WINDOW):
        if record.confirmed and not record.announced:
            log.event("announce", provider=record.provider, id=record.id, result="late")
            await announce(run, record)


async def delete_fresh(
    run: PassState, client: ProviderClient, decisions: list[Decision]
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
        *(_delete_batch(run, client, batch, one_read_at_a_time) for batch in batches)
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
    run: PassState, client: ProviderClient, decisions: list[Decision], reading: asyncio.Lock
) -> tuple[list[tuple[Decision, AuditRecord]], list[ActionResult], dict[str, Instance]]:
    """One batch, round by round: a delete that could not go out while its reading was
    fresh is read again."""
    sent: list[tuple[Decision, AuditRecord]] = []
    dropped: list[ActionResult] = []
    pending = decisions
    fresh: dict[str, Instance] = {}
    for _round in range(run.act.rounds):
        if not run.time_for_a_step():
            why = "the pass's REAPER_PASS_DEADLINE left no time for a fresh read and its deletes"
            dropped += [result_of(d, reason=f"{d.reason}; not deleted: {why}") for d in pending]
            return sent, dropped, fresh
        async with reading:
            run.require_lease("before the fresh read")
            read_at = time.monotonic()
            try:
                read = await client.read_instances([d.instance.id for d in pending])
            except Exception as exc:  # no fresh reading, no delete
                why = f"the fresh read right before the delete failed ({error_text(exc)})"
                dropped += [result_of(d, reason=f"{d.reason}; not deleted: {why}") for d in pending]
                return sent, dropped, fresh
        current_reads = {i: inst for i, inst in read.items() if inst is not None}
        fresh |= current_reads
        run.require_lease("before deleting")
        not_after = read_at + run.act.fresh_for
        # The store's history once for the round, as fresh as the reading it goes with.
        round_at = run.ctx.clock.now()
        history = pass_history(run.store, round_at)
        earlier = earlier_deletes(run.store, round_at)
        fence = Fence(run.store, lambda: _holds_lease(run))
        outcomes = await asyncio.gather(
            *(
                delete(
                    run.ctx,
                    client,
                    decision,
                    current_reads.get(decision.instance.id),
                    not_after=not_after,
                    fence=fence,
                    history=history,
                    earlier=earlier,
                )
                for decision in pending
            )
        )
        waiting, pending = pending, []
        for decision, outcome in zip(waiting, outcomes, strict=True):
            if isinstance(outcome, Refused):
                dropped.append(_refused(decision, outcome))
            elif isinstance(outcome, NotSent):
                pending.append(decision)
            else:
                sent.append((decision, outcome))
        if not pending:
            break
    dropped += [
        result_of(d, reason=f"{d.reason}; not deleted: no fresh enough reading in this pass")
        for d in pending
    ]
    return sent, dropped, fresh


def _holds_lease(run: PassState) -> bool:
    """The fence's lease check: a pass that finds it lost says so (it needs attention)."""
    if run.still_leased():
        return True
    run.report.lease_lost = True
    return False


def _refused(decision: Decision, refused: Refused) -> ActionResult:
    """A delete the gate refused: left alone (`hold`, an exemption when nobody chose it), or,
    still due for a later pass, a termination not done."""
    if refused.kind == "later":
        return result_of(decision, reason=f"{decision.reason}; not deleted: {refused.why}")
    held = result_of(decision, action="hold", reason=f"not terminated: {refused.why}")
    return held.model_copy(update={"exempt": refused.exempt})


async def confirm_account(
    run: PassState, client: ProviderClient, records: list[AuditRecord], witnesses: set[str]
) -> set[str]:
    """Re-list the account until every id is proven gone, or the wait runs out."""
    pending = {r.id for r in records}
    confirmed: set[str] = set()
    delay = run.confirm.first_delay
    for attempt in range(run.confirm.attempts):
        if not run.time_for_a_step(delay):
            # Left unconfirmed: the next pass's reconciliation settles it.
            break
        if delay > 0:
            await run.sleep(delay)
        if not run.still_leased():
            run.report.lease_lost = True
            break
        delay = min(run.confirm.backoff * 2**attempt, run.confirm.max_delay)
        try:
            listed = await _relist(run, client, pending, witnesses)
        except Exception as exc:  # an incomplete listing proves nothing
            log.event(
                "confirm",
                provider=client.provider,
                account=client.account,
                result="list_failed",
                error=error_text(exc),
            )
            continue
        expected = _expected(listed, witnesses, pending)
        proven = await gone(run, client, listed, pending, expected)
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


def _expected(listed: Mapping[str, Instance], witnesses: set[str], pending: set[str]) -> set[str]:
    """The witnesses a re-list must show: for one narrowed to the pending ids (it holds
    nothing else but the witness that was asked for), that witness; for anything else — a
    whole listing, or a filter the provider ignored — every witness."""
    asked = {min(witnesses)} if witnesses else set()
    narrowed = set(listed) <= asked | pending
    return asked if narrowed else witnesses


async def _relist(
    run: PassState, client: ProviderClient, pending: set[str], witnesses: set[str]
) -> dict[str, Instance]:
    """A complete listing for confirmation: narrowed to the pending ids and one witness
    where the provider can filter; the whole account when the witness does not come back
    (a filter ignored, or the witness went away)."""
    witness = min(witnesses) if witnesses else None
    if witness is not None:
        narrowed = {i.id: i for i in await client.list_instances(only_ids={*pending, witness})}
        if witness in narrowed:
            return narrowed
        log.event("confirm", provider=client.provider, account=client.account, result="full_relist")
    return {i.id: i for i in await client.list_instances()}


async def terminate_account(
    run: PassState, client: ProviderClient, decisions: list[Decision]
) -> list[ActionResult]:
    """Read fresh, delete what is still due, then prove it by re-listing. Each account runs
    its own pipeline, so a slow provider never delays another's proof."""
    sent, results, _fresh = await delete_fresh(run, client, decisions)
    if not run.ctx.effects.live:
        return results + [result_of(d) for d, _record in sent]
    requested = [r for _d, r in sent if r.result in ("deleted", "not_found", "requested")]
    account_now = {
        i.id: i for i in run.seen.of(client.provider, client.account) if i.id not in _fresh
    } | _fresh
    witnesses = witnesses_of(list(account_now.values()), {r.id for r in requested})
    confirmations = await confirm_account(run, client, requested, witnesses) if requested else set()
    for decision, record in sent:
        inst = decision.instance
        asked = record.result in ("deleted", "not_found", "requested")
        confirmed = asked and record.id in confirmations
        if confirmed:
            update: dict[str, object] = {
                "confirmed": True,
                "confirmed_at": run.ctx.clock.now(),
            }
            if record.result == "requested":
                update["result"] = "deleted"
            record = record.model_copy(update=update)
            run.store.record_termination(record)
            run.store.reset_stopped_clock(inst.key)
            await announce(run, record)
            reason = decision.reason
        else:
            await run.alert(messages.termination_unconfirmed(inst))
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
        results.append(result_of(decision, done=asked, confirmed=confirmed, reason=reason))
    return results


async def terminate_all(run: PassState, decisions: list[Decision]) -> list[ActionResult]:
    grouped = by_account(decisions, key=lambda d: (d.instance.provider, d.instance.account))
    jobs = []
    for (provider, account), ds in grouped.items():
        client = run.ctx.client(provider, account)
        assert client is not None
        jobs.append(terminate_account(run, client, ds))
    per_account = await asyncio.gather(*jobs, return_exceptions=True)
    results: list[ActionResult] = []
    for (_acct, ds), outcome in zip(grouped.items(), per_account, strict=True):
        if isinstance(outcome, LeaseLost):
            lost = "not deleted: the lease was lost"
            results += [result_of(d, reason=f"{d.reason}; {lost}") for d in ds]
        elif isinstance(outcome, BaseException):
            raise outcome
        else:
            results += outcome
    return results
