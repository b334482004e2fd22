"""The pure reap policy: fleet + history + now + settings → decisions.

No I/O happens here, and nothing here reads a clock: that is what lets the property tests
throw thousands of generated fleets and histories at it and check that the safety rules of
DESIGN.md hold for every one. The reap pass does the listing, the recording and the acting.

The rules, in the order they are applied to each instance:
1. The stopped clock. Running or starting resets it (and voids the stretch's warnings); stopped
   starts it at first sight, and starts it anew when the provider's start time shows a restart
   between two passes; everything else (unknown, ERROR, frozen, offline...) keeps it as it is.
2. Only a stopped instance can be acted on. Everything else is left alone ("can't read it →
   assume busy").
3. Protected (the marker in its name/label, RunPod `locked`, `reaper keep`) → `protect`.
4. Within REAPER_WARN_BEFORE of its deadline, without a warning in this stretch → `warn`.
5. Due → `terminate`, but only after a warning sent by an earlier pass of the same stretch, and
   never sooner than REAPER_WARN_BEFORE after that warning (a reaper that was down for days warns
   first and still gives the full notice). Cluster members and observe mode → `hold`.
6. More terminations due than the cap (over all accounts) → every one of them `hold`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from reaper.clock import human_duration, iso
from reaper.config import Settings
from reaper.models import ClockChange, Decision, History, Instance, Plan

# States that mean "it runs again": only these reset the stopped clock.
RESETTING_STATES = frozenset({"running", "starting"})


def protection_reason(inst: Instance, history: History, now: datetime, marker: str) -> str | None:
    """Why this instance must never be touched, or None if nothing protects it."""
    if inst.locked:
        return "locked on RunPod"
    if marker and marker in inst.name:
        return f"name contains the protect marker {marker!r}"
    kept = history.kept.get(inst.key)
    if kept is not None and kept.active(now):
        until = f" until {iso(kept.until)}" if kept.until else ""
        return f"kept by `reaper keep`{until}"
    return None


def stretch_warning(inst_key: str, stopped_since: datetime, history: History) -> datetime | None:
    """The warning of this stretch: sent at or after the stretch began. Warnings from an earlier
    stretch (before a restart) are void."""
    warned = history.warned_at.get(inst_key)
    if warned is None or warned < stopped_since:
        return None
    return warned


def _clock(
    inst: Instance, history: History, now: datetime
) -> tuple[datetime | None, ClockChange | None]:
    """The stretch start to use for this instance, and the change to record, if any."""
    recorded = history.first_seen_stopped.get(inst.key)
    if inst.state in RESETTING_STATES:
        dirty = recorded is not None or inst.key in history.warned_at
        return None, ClockChange(key=inst.key, change="reset", at=now) if dirty else None
    if inst.state == "stopped":
        if recorded is None:
            return now, ClockChange(key=inst.key, change="start", at=now)
        if inst.started_at is not None and inst.started_at > recorded:
            # Started and stopped again between two passes: a restart the reaper never saw
            # running still voids the old stretch's warnings (the user may have rescued data).
            return now, ClockChange(key=inst.key, change="restart", at=now)
        return recorded, None
    # unknown, terminated: keep whatever is recorded, change nothing.
    return recorded, None


def _decide_stopped(
    inst: Instance, history: History, now: datetime, settings: Settings
) -> Decision | None:
    assert inst.stopped_since is not None
    stopped_for = human_duration(now - inst.stopped_since)
    due_at = inst.stopped_since + settings.stopped_ttl

    reason = protection_reason(inst, history, now, settings.protect_marker)
    if reason is not None:
        return Decision(instance=inst, action="protect", reason=reason, due_at=due_at)

    warned = stretch_warning(inst.key, inst.stopped_since, history)
    if warned is None:
        if now < due_at - settings.warn_before:
            return None
        # Late warnings (the reaper was down, or just deployed) still give the full notice.
        terminate_at = max(due_at, now + settings.warn_before)
        return Decision(
            instance=inst,
            action="warn",
            reason=f"stopped for {stopped_for}; will be terminated at {iso(terminate_at)}",
            due_at=terminate_at,
        )

    # A warning counts only once an earlier pass sent it (never the pass now running), and the
    # full notice runs from when it was sent.
    terminate_at = max(due_at, warned + settings.warn_before)
    if warned >= now or now < terminate_at:
        return None
    ttl = human_duration(settings.stopped_ttl)
    if inst.cluster_id is not None:
        return Decision(
            instance=inst,
            action="hold",
            reason=f"stopped for {stopped_for}, but a member of cluster {inst.cluster_id!r}: "
            "the pod endpoints cannot delete it; delete its cluster instead",
            due_at=terminate_at,
        )
    if settings.mode == "observe":
        return Decision(
            instance=inst,
            action="hold",
            reason=f"observe mode: would terminate (stopped for {stopped_for}, limit {ttl}, "
            f"warned {iso(warned)})",
            due_at=terminate_at,
        )
    return Decision(
        instance=inst,
        action="terminate",
        reason=f"stopped for {stopped_for}, limit {ttl}, warned {iso(warned)}",
        due_at=terminate_at,
    )


def _apply_cap(
    decisions: list[Decision], cap: int, source: str
) -> tuple[list[Decision], int, bool]:
    """`source` names where the cap came from, so the reason points at what to change."""
    due = sum(1 for d in decisions if d.action == "terminate")
    if due <= cap:
        return decisions, due, False
    held_reason = (
        f"held by the cap: {due} terminations due, {source}={cap}"
        if cap
        else f"held: {source}=0 turns terminations off"
    )
    capped = [
        d.model_copy(update={"action": "hold", "reason": f"{held_reason} ({d.reason})"})
        if d.action == "terminate"
        else d
        for d in decisions
    ]
    return capped, due, True


def decide(
    instances: Sequence[Instance],
    history: History,
    now: datetime,
    settings: Settings,
    *,
    max_terminations: int | None = None,
) -> Plan:
    """Decide the whole pass. `max_terminations` overrides the setting for one run."""
    seen: list[Instance] = []
    decisions: list[Decision] = []
    changes: list[ClockChange] = []
    for raw in instances:
        stopped_since, change = _clock(raw, history, now)
        inst = raw.model_copy(update={"stopped_since": stopped_since})
        seen.append(inst)
        if change is not None:
            changes.append(change)
        if inst.state == "stopped":
            decision = _decide_stopped(inst, history, now, settings)
            if decision is not None:
                decisions.append(decision)

    cap = settings.max_terminations if max_terminations is None else max_terminations
    source = "REAPER_MAX_TERMINATIONS" if max_terminations is None else "--max-terminations"
    decisions, due, exceeded = _apply_cap(decisions, cap, source)
    return Plan(
        decisions=decisions,
        clock_changes=changes,
        instances=seen,
        cap_exceeded=exceeded,
        due_count=due,
    )


__all__ = ["RESETTING_STATES", "decide", "protection_reason", "stretch_warning"]
