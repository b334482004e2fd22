"""A "terminate now" from the phone, carried out at once: one instance's pass, with every
check of a reap pass and its one delete path."""

from __future__ import annotations

import asyncio
import dataclasses

from reaper import log
from reaper.core.models import Decision, Instance
from reaper.core.policy import decide
from reaper.core.terminated import already_terminated
from reaper.core.units import utc
from reaper.passes.context import Context
from reaper.passes.reap.gate import pass_history
from reaper.passes.reap.report import ActOptions, ConfirmOptions, ReapReport, RequestOutcome
from reaper.passes.reap.run import apply_clock_changes
from reaper.passes.reap.state import (
    LEASE_NAME,
    LeaseLost,
    PassState,
    Sleep,
    clock_problem,
    lease_owner,
    list_all,
    set_aside_skewed,
    take_lease,
)
from reaper.passes.reap.terminate import reconcile, terminate_all
from reaper.settings.model import Settings

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
    unprotected, not locked or kept, the cap, observe mode and clusters `hold`) after settling
    what an earlier pass left unconfirmed, then the fresh
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
    if not take_lease(store, owner, now):
        log.event("request", id=key, result="lease_taken")
        return RequestOutcome("later", "a reap pass is running now")
    run = PassState(
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


async def _request(run: PassState, key: str) -> RequestOutcome:
    await list_all(run)
    problem = clock_problem(run)
    if problem:
        return RequestOutcome("later", problem)
    await set_aside_skewed(run)
    # What an earlier pass left unsettled (it died as its DELETE left) is settled first, as a
    # reap pass does: an unsettled delete of this instance would keep the gate shut.
    await reconcile(run, run.seen.instances)
    listed = [i for i in run.seen.instances if i.key == key]
    if not listed:
        if run.seen.errors:
            return RequestOutcome("later", f"the listing failed ({run.seen.errors[0].message})")
        gone = already_terminated(key, run.store.audit_log(), run.store.listings())
        if gone is not None:
            return RequestOutcome("refused", f"it was already terminated at {utc(gone.at)}")
        return RequestOutcome("refused", "it is not listed any more (gone already?)")
    history = pass_history(run.store, run.started)
    plan = decide(listed, history, run.started, run.settings)
    apply_clock_changes(run.store, plan, history)
    [inst] = plan.instances
    request = history.requests.get(key)
    if inst.state == "stopped" and request is not None and request.stretch != inst.stopped_since:
        # Bound to the stretch of the warning it came with: a restart since voids it.
        return RequestOutcome("refused", STALE_REQUEST if request.stretch else UNBOUND_REQUEST)
    decision = plan.decisions[0] if plan.decisions else None
    if decision is None or decision.action != "terminate":
        return RequestOutcome("refused", _why_not(inst, decision, run.settings))
    [result] = await terminate_all(run, [decision])
    if not run.ctx.effects.live:
        return RequestOutcome("refused", "a dry run deletes nothing")
    if result.action == "hold":
        return RequestOutcome("refused", result.reason.removeprefix("not terminated: "))
    if not result.done:
        return RequestOutcome("later", result.reason)
    return RequestOutcome("terminated" if result.confirmed else "unconfirmed", result.reason)
