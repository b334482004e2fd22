"""Warnings: sent at once (folded when many), each announcing its deadline and recorded at
its own delivery; what is held back (the cap, observe mode) keeps its license; what a person
may not intend to be spared is named once per episode."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

from reaper import log
from reaper.core import messages
from reaper.core.license import announced_deadline
from reaper.core.models import (
    Alert,
    Decision,
    Delivery,
    Exemption,
    History,
    Instance,
    WarningRecord,
)
from reaper.core.units import iso
from reaper.passes.reap.report import ActionResult, result_of
from reaper.passes.reap.state import PassState

# More warnings than this in one pass are folded into as few messages as hold them (see
# `messages.fold`): a chat's per-minute limit must not delay the notice of the last one.
FOLD_WARNINGS_AFTER = 5
# One episode per instance and exemption kind.
EXEMPT_EPISODE = "exempt:"
# The exemptions alerted per instance; the cap's and no-channel's alerts are one each, naming
# every instance they hold.
PER_INSTANCE_EXEMPTIONS: tuple[Exemption, ...] = ("unreadable_protection", "cluster", "fresh_read")


async def warn_all(
    run: PassState, decisions: list[Decision], *, off: str = ""
) -> list[ActionResult]:
    """Send this pass's warnings at once: alone and concurrently when few, folded into as
    few messages as hold them when many, so a slow channel cannot eat one instance's
    notice. Each announces the deadline computed from the clock right before sending
    (never one already past), and is recorded at its own delivery time, with whether a
    person could read it; an instance counts as warned only if a message naming it was
    delivered. `off`: what turns terminations off (a cap of 0): the warnings promise none."""
    if not decisions:
        return []
    run.require_lease("before warning")
    observe_mode = run.settings.mode == "observe"
    next_check = run.started + run.settings.reap_every
    marker = run.settings.protect_marker
    issued = run.ctx.clock.now()
    deadline = {d.instance.key: _announced(run, d, issued) for d in decisions}
    groups: list[tuple[list[Decision], Alert]]
    if len(decisions) > FOLD_WARNINGS_AFTER:
        chunks = messages.fold_warnings(
            [(d.instance, deadline[d.instance.key]) for d in decisions],
            issued,
            marker,
            next_check=next_check,
            observe=observe_mode,
            off=off,
            budget=fold_budget(run),
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
                    off=off,
                ),
            )
            for d in decisions
        ]
    sent = await asyncio.gather(*(_deliver(run, alert) for _group, alert in groups))
    run.require_lease("after warning")
    history = run.store.history()
    results: list[ActionResult] = []
    for (group, _alert), (deliveries, delivered_at) in zip(groups, sent, strict=True):
        heard = any(d.ok and d.heard for d in deliveries)
        logged = any(d.ok for d in deliveries)
        for decision in group:
            warning = WarningRecord(
                at=delivered_at,
                heard=heard,
                mode=run.settings.warning_mode,
                terminate_at=deadline[decision.instance.key],
                stretch=decision.instance.stopped_since,
                issued_at=issued,
                ttl=run.settings.stopped_ttl,
                warn_before=run.settings.warn_before,
            )
            results.append(_record_warning(run, decision, warning, logged, history))
    return results


def _announced(run: PassState, decision: Decision, issued: datetime) -> datetime:
    stretch = decision.instance.stopped_since
    assert stretch is not None
    return announced_deadline(stretch, issued, run.settings)


def fold_budget(run: PassState) -> int:
    """What one folded message may carry: the smallest of the configured channels."""
    return run.ctx.notifier.body_budget


async def _deliver(run: PassState, alert: Alert) -> tuple[list[Delivery], datetime]:
    deliveries = await run.alert(alert)
    return deliveries, run.ctx.clock.now()


def _record_warning(
    run: PassState, decision: Decision, warning: WarningRecord, logged: bool, history: History
) -> ActionResult:
    inst = decision.instance
    if not logged:
        # No warning reached anyone: do not record it, so no termination can follow from it.
        log.event("warn", provider=inst.provider, id=inst.id, result="undelivered")
        return result_of(
            decision, reason=f"{decision.reason} (warning not delivered; retried next pass)"
        )
    kept = history.kept.get(inst.key)
    planned = run.planned.kept.get(inst.key) if run.planned is not None else kept
    if kept != planned or (kept is not None and kept.since >= run.started):
        # Kept (or unkept) while the warning was on its way: the person answered already,
        # and a warning recorded now would outlive the keep. A later pass warns anew.
        log.event("warn", provider=inst.provider, id=inst.id, result="kept_meanwhile")
        return result_of(
            decision,
            done=run.ctx.effects.live,
            reason=f"{decision.reason} (kept meanwhile: not recorded)",
        )
    run.store.record_warning(inst.key, warning)
    log.event(
        "warn",
        provider=inst.provider,
        id=inst.id,
        name=inst.name,
        result=run.ctx.effects.sent if warning.heard else "logged",
        due=warning.terminate_at,
    )
    live = run.ctx.effects.live
    if warning.heard:
        # Heard: whatever no-channel exemption the plan expected is over.
        return result_of(decision, done=live).model_copy(update={"exempt": None})
    # A channel that reaches a person is configured and failed: the warning licenses nothing
    # (REAPER_REQUIRE_CHANNEL=true) and is not done — the pass exits 1 while that lasts.
    failed = run.settings.require_channel and run.settings.human_channel
    # With no channel configured the decision's reason already says what follows (held, or
    # accepted by REAPER_REQUIRE_CHANNEL=false).
    why = (
        ": no configured channel took it (the log says why); nothing is terminated until a"
        " warning reaches a person"
        if failed
        else ""
    )
    return result_of(
        decision,
        done=live and not failed,
        reason=f"{decision.reason} (written to the log only{why})",
    )


def mark_held(run: PassState, decisions: list[Decision]) -> None:
    """A licensed termination held back (the cap, observe mode, the gate for a reason nobody
    chose): its license does not go stale while that lasts — the next pass that may terminate
    does not warn again."""
    for decision in decisions:
        if decision.licensed_by is not None:
            run.store.mark_warning_held(decision.instance.key, decision.licensed_by, run.started)


async def alert_exemptions(run: PassState, decisions: list[Decision]) -> None:
    """Each instance past its deadline that an unreadable protection, its cluster or the read
    right before its delete keeps from termination: one episode per instance and kind, its
    first pass named in one alert per kind (with what each bills); an episode closes once it
    no longer applies to an instance its provider listed completely."""
    current = {(d.exempt, d.instance.key): d.instance for d in decisions if d.exempt}
    for kind in PER_INSTANCE_EXEMPTIONS:
        fresh: list[tuple[Instance, str]] = []
        for (exempt, key), inst in sorted(current.items(), key=lambda kv: kv[0][1]):
            if exempt != kind:
                continue
            opened = run.store.open_episode(f"{EXEMPT_EPISODE}{kind}:{key}", run.started)
            if opened.alerted_at is None:
                reason = next(d.reason for d in decisions if d.instance.key == key)
                fresh.append((inst, reason))
        if fresh:
            await run.alert(messages.needs_you(kind, fresh))
            for inst, _reason in fresh:
                run.store.mark_episode_alerted(f"{EXEMPT_EPISODE}{kind}:{inst.key}", run.started)
    trusted = run.seen.complete_providers
    for open_one in run.store.open_episodes(EXEMPT_EPISODE):
        named, _, key = open_one.key.removeprefix(EXEMPT_EPISODE).partition(":")
        if (named, key) not in current and key.split(":", 1)[0] in trusted:
            run.store.close_episode(open_one.key)


async def observe_holds(run: PassState, decisions: list[Decision]) -> None:
    """Observe mode: "would terminate" once per instance and stretch, folded when many."""
    if run.settings.mode != "observe":
        return
    fresh = [
        d.instance
        for d in decisions
        if d.instance.cluster_id is None
        and run.store.claim_alert(
            f"observe:{d.instance.key}:{iso(d.instance.stopped_since) or ''}",
            run.ctx.clock.now(),
            timedelta(days=365),
        )
    ]
    if len(fresh) > FOLD_WARNINGS_AFTER:
        for alert in messages.fold_would_terminate(fresh, run.started, budget=fold_budget(run)):
            await run.alert(alert)
    else:
        for inst in fresh:
            await run.alert(messages.would_terminate(inst))
