"""One reap pass: observe, decide, apply — warn, terminate, confirm, record, alert.

The pass is the only place that acts on the policy's decisions, and it treats every provider
answer with suspicion: a listing that failed is an error for that account (no decisions for
it); right before a delete the instance is read again and the policy asked again (`gate`); a
delete that answered 2xx is only a request — the instance counts as terminated once a
complete, trustworthy re-listing of its account shows it gone or terminated (`terminate`).

Everything it changes goes through `ctx.effects` (see `reaper.passes.context`), so a dry run
is this same pass with effects that record instead of acting.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from reaper import log
from reaper.channels.base import Notifier
from reaper.clock import Clock
from reaper.core import messages
from reaper.core.models import Decision, History, Listing, Plan, ReapRun, instance_key
from reaper.core.policy import decide, no_channel_note
from reaper.core.witness import trustworthy_absence
from reaper.passes.context import Context
from reaper.passes.deadline import PassDeadline, pass_seconds
from reaper.passes.guards import GuardReport, guard_pass
from reaper.passes.observe import Observation
from reaper.passes.reap.gate import pass_history
from reaper.passes.reap.records import record_listings, record_snapshot
from reaper.passes.reap.report import (
    ActionResult,
    ActOptions,
    ConfirmOptions,
    ReapReport,
    result_of,
)
from reaper.passes.reap.state import (
    LEASE_NAME,
    LeaseLost,
    PassState,
    Sleep,
    clock_problem,
    lease_note,
    lease_owner,
    list_all,
    set_aside_skewed,
    take_lease,
)
from reaper.passes.reap.terminate import (
    announce_pending,
    confirm_lost_answers,
    reconcile,
    terminate_all,
)
from reaper.passes.reap.warn import alert_exemptions, mark_held, observe_holds, warn_all
from reaper.providers.base import UNREADABLE_ID_PREFIX, ProviderClient
from reaper.settings.model import Settings
from reaper.store.ports import Store

CAP_EPISODE = "reap:cap"
CLOCK_EPISODE = "reap:clock_behind"
NO_CHANNEL_EPISODE = "reap:no_channel"
UNKNOWN_EPISODE = "reap:unknown_settings"


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


def absences(
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
    `deadline`: the pass's time (by default REAPER_PASS_DEADLINE from now);
    `max_terminations`: this pass's cap (`--max-terminations`), which the policy, the warnings'
    words and records, the license and the gate all read from the pass's settings."""
    if max_terminations is not None:
        settings = replace(settings, max_terminations=max_terminations)
    ctx = Context.make(settings, store, clients, notifier, clock, dry_run=dry_run)
    now = clock.now()
    report = ReapReport(dry_run=dry_run, mode=settings.mode, at=now)
    owner = lease_owner()
    if not take_lease(ctx.store, owner, now):
        report.lease_taken = True
        report.lease_note = lease_note(ctx.store.lease_holder(LEASE_NAME))
        log.event("reap", result="lease_taken", holder=report.lease_note)
        return report
    run = PassState(
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


async def _guards_in_time(run: PassState) -> GuardReport | None:
    """The money guards' pass, cut at the pass's deadline less its wrap-up (their reads are
    what a slow provider makes long; nothing depends on them but alerts and the snapshot)."""
    left = run.deadline.working_left() if run.deadline is not None else None
    try:
        return await asyncio.wait_for(guard_pass(run.ctx, run.seen, run.report.instances), left)
    except TimeoutError:
        log.event("guards", result="error", error="cut at the pass's REAPER_PASS_DEADLINE")
        return None


async def _unknown_settings(run: PassState) -> None:
    """REAPER_* names reaper does not know (a typo whose default applies silently): the
    command line refuses them for `reap` and `serve` in enforce mode; where nobody reads a
    command's stderr (the Lambda functions, which never stop for it) the pass says so once."""
    names = run.settings.unknown_names
    if names and not run.settings.allow_unknown:
        await run.alert_once(UNKNOWN_EPISODE, messages.unknown_settings(names), ",".join(names))
    else:
        run.store.close_episode(UNKNOWN_EPISODE)


async def _run(run: PassState, max_terminations: int | None) -> None:
    settings, store, report, now = run.settings, run.store, run.report, run.started
    report.no_channel = not settings.human_channel
    report.no_channel_note = no_channel_note(settings)
    if report.no_channel:
        # Every pass says so: a warning nobody can read is no notice.
        log.event("no_alert_channel", message=report.no_channel_note)
    await _unknown_settings(run)
    await announce_pending(run)
    await list_all(run)
    problem = clock_problem(run)
    if problem:
        report.clock_behind, report.clock_problem = True, problem
        log.event("reap", result="clock_behind", problem=problem)
        await run.alert_once(CLOCK_EPISODE, messages.clock_behind(problem))
        return
    store.close_episode(CLOCK_EPISODE)
    await set_aside_skewed(run)
    fleet = run.seen.instances
    await reconcile(run, fleet)
    history = pass_history(store, now)
    run.planned = history
    plan = decide(fleet, history, now, settings, max_terminations=max_terminations)
    report.instances = plan.instances
    report.cap_exceeded = plan.cap_exceeded
    run.require_lease("after listing")
    apply_clock_changes(store, plan, history)
    previous = {(x.provider, x.account): x for x in store.listings()}
    ended, missed = absences(history, run.seen, previous, now, settings.reap_every)
    await confirm_lost_answers(run, ended, history.first_seen_stopped)
    for key in ended:
        store.reset_stopped_clock(key)
    for key in missed - set(history.missing_since):
        store.mark_missing(key, now)
    for key in set(history.missing_since) & {i.key for i in fleet}:
        store.clear_missing(key)
    record_listings(run, plan.instances)

    # The money guards reuse this listing and run beside the actions: they only alert, never
    # act, and never fail a pass.
    guards = asyncio.create_task(_guards_in_time(run))
    try:
        await _act(run, plan, max_terminations)
        _end_carried_out(store, history, report.actions)
    finally:
        report.guards = await guards

    record_snapshot(run)
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


def apply_clock_changes(store: Store, plan: Plan, history: History) -> None:
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


async def _act(run: PassState, plan: Plan, max_terminations: int | None) -> None:
    settings, report = run.settings, run.report
    warn = [d for d in plan.decisions if d.action == "warn"]
    due = [d for d in plan.decisions if d.action == "terminate"]
    held = [d for d in plan.decisions if d.action == "hold"]
    cap = settings.max_terminations  # the pass's cap: `reap_pass` put --max-terminations there
    source = "REAPER_MAX_TERMINATIONS" if max_terminations is None else "--max-terminations"
    report.cap, report.cap_source = cap, source
    # A cap of 0 turns terminations off: its warnings promise none (as in observe mode).
    report.actions += await warn_all(run, warn, off=f"{source}=0" if cap == 0 else "")
    await observe_holds(run, held)
    report.actions += [result_of(d) for d in plan.decisions if d.action in ("hold", "protect")]
    mark_held(run, held)

    if plan.cap_exceeded:
        capped = [d.instance for d in held if d.instance.key in plan.capped]
        await run.alert_once(
            CAP_EPISODE, messages.cap_exceeded(plan.due_count, cap, capped, source)
        )
    else:
        run.store.close_episode(CAP_EPISODE)

    unheard_keys = {
        instance_key(a.provider, a.id) for a in report.actions if a.exempt == "no_channel"
    }
    unheard = [d.instance for d in plan.decisions if d.instance.key in unheard_keys]
    if unheard:
        alert = messages.no_channel_hold(unheard, settings.channel_hint)
        await run.alert_once(NO_CHANNEL_EPISODE, alert)
    else:
        run.store.close_episode(NO_CHANNEL_EPISODE)
    if due:
        report.actions += await terminate_all(run, due)
    # What the gate left alone for a reason nobody chose is an exemption like the plan's: its
    # license held (not warned again while it lasts), named once per episode.
    refused = exempt_at_the_gate(due, report.actions)
    mark_held(run, refused)
    spared = {d.instance.key for d in refused}
    await alert_exemptions(
        run, [d for d in plan.decisions if d.instance.key not in spared] + refused
    )


def exempt_at_the_gate(due: Sequence[Decision], actions: Sequence[ActionResult]) -> list[Decision]:
    """The due terminations the gate refused for a reason nobody chose, as `hold` decisions
    with their exemption and the gate's reason."""
    by_key = {d.instance.key: d for d in due}
    return [
        by_key[key].model_copy(update={"action": "hold", "exempt": a.exempt, "reason": a.reason})
        for a in actions
        if a.exempt is not None
        and a.action == "hold"
        and (key := instance_key(a.provider, a.id)) in by_key
    ]
