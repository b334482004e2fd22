"""The pure reap policy: fleet + history + now + settings → decisions.

No I/O happens here, and nothing here reads a clock: that is what lets the property tests
throw thousands of generated fleets and histories at it and check that the safety rules hold
for every one (docs/safety.md). The reap pass does the listing, the recording and the
acting — and the one gate (`passes.reap.gate`) asks this module again, with a fresh reading, right
before each delete (`recheck`).

The rules, in the order they are applied to each instance:
1. The stopped clock. Running or starting resets it (and voids the stretch's warnings); stopped
   starts it at first sight, and starts it anew when the provider's start time shows a restart
   between two passes; everything else (unknown, ERROR, frozen, offline...) keeps it as it is.
   A stretch never starts before the instance's own creation or start time; a start time in
   the future is unreadable (the recorded stretch is kept), never a restart.
2. Only a stopped instance can be acted on. Everything else is left alone ("can't read it →
   assume busy").
3. Protected (the marker in its name/label or one of its tags, the provider's lock, `reaper
   keep`, or a protection field the provider's answer does not let us read) → `protect`. Past
   its deadline with only an unreadable field protecting it, that is an exemption a person
   must hear of.
4. Asked from the phone ("terminate now", a request bound to this stretch, in this mode) →
   `terminate` without waiting for the deadline: the person who asked read the warning.
   Everything else still holds (stopped, unprotected, not kept, cluster members and observe
   mode `hold`, the cap counts it, and the gate asks again right before the delete).
5. A cluster member is never warned (the pod endpoints cannot delete it); past its deadline it
   is `hold`, an exemption.
6. Without a license (`core.license`) → `warn` once within REAPER_WARN_BEFORE +
   REAPER_REAP_EVERY of the deadline, announcing a deadline at least the full notice away. A
   warning written only to the log, with REAPER_REQUIRE_CHANNEL=true and no channel that
   reaches a person, is not repeated: past the deadline the instance is `hold`, an exemption.
7. Licensed and at or past the license's deadline → `terminate`; observe mode → `hold`.
8. More terminations due than the cap (over all accounts) → every one of them `hold` (an
   exemption, unless the cap is 0: a person turned terminations off).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from reaper.core.license import License, Void, license_for
from reaper.core.models import (
    ClockChange,
    Decision,
    Exemption,
    History,
    Instance,
    Plan,
    TerminationRequest,
)
from reaper.core.units import humanize, utc
from reaper.settings.model import Settings

# States that mean "it runs again": only these reset the stopped clock.
RESETTING_STATES = frozenset({"running", "starting"})

NO_CHANNEL_REASON = "no warning reached a person: no alert channel is configured"
CLUSTER_REASON = (
    "the pod endpoints cannot delete a cluster member: terminate the cluster in the console"
)


def held_for_channel(settings: Settings) -> bool:
    """No channel reaches a person and REAPER_REQUIRE_CHANNEL holds: a warning goes only to
    the log and licenses nothing, so no termination can follow until a channel is set (in
    enforce mode; observe mode terminates nothing anyway)."""
    return settings.mode == "enforce" and settings.require_channel and not settings.human_channel


def no_channel_reason(settings: Settings) -> str:
    """Why a due instance waits, and how to fix it (the channels' variables, as configured)."""
    return (
        f"{NO_CHANNEL_REASON} (set {settings.channel_hint}), or set REAPER_REQUIRE_CHANNEL=false"
        " to accept a warning written only to the log"
    )


def held_reason(due_at: datetime, settings: Settings) -> str:
    """What comes at the deadline while `held_for_channel`: a hold, from the stretch's own
    deadline (a warning written only to the log announces nothing that counts)."""
    return f"due {utc(due_at)}, but held: {no_channel_reason(settings)}"


def no_channel_note(settings: Settings) -> str:
    """What a pass says, in its output and its log, while no channel reaches a person ("" once
    one does): where its warnings go, and whether anything can be terminated."""
    if settings.human_channel:
        return ""
    if held_for_channel(settings):
        return (
            "no alert channel reaches a person: warnings go only to the log, and nothing will be"
            f" terminated until one is set (set {settings.channel_hint}; or set"
            " REAPER_REQUIRE_CHANNEL=false to accept a warning written only to the log)"
        )
    accepted = "" if settings.require_channel else " (REAPER_REQUIRE_CHANNEL=false accepts them)"
    return (
        f"no alert channel reaches a person (set {settings.channel_hint}): warnings go only to"
        f" the log{accepted}"
    )


def protection_reason(inst: Instance, history: History, now: datetime, marker: str) -> str | None:
    """Why this instance must never be touched, or None if nothing protects it."""
    if inst.protection_unreadable:
        return f"protection cannot be read ({inst.protection_unreadable}): counts as protected"
    if inst.locked:
        return f"locked on {inst.provider_label or inst.provider}"
    if marker and marker in inst.name:
        return f"name contains the protect marker {marker!r}"
    if _tagged(inst, marker):
        return f"a tag contains the protect marker {marker!r}"
    kept = history.kept.get(inst.key)
    if kept is not None and kept.active(now):
        until = f" until {utc(kept.until)}" if kept.until else ""
        return f"kept by `reaper keep`{until}"
    return None


def unreadable_exemption(inst: Instance, history: History, now: datetime, marker: str) -> bool:
    """Protected only because a protection field cannot be read: not also by the lock, the
    marker or an active keep (a deliberate protection is no exemption)."""
    kept = history.kept.get(inst.key)
    deliberate = (
        inst.locked
        or (bool(marker) and marker in inst.name)
        or _tagged(inst, marker)
        or (kept is not None and kept.active(now))
    )
    return inst.protection_unreadable is not None and not deliberate


def _tagged(inst: Instance, marker: str) -> bool:
    """One of the provider's tags carries the protect marker (tags protect like the name)."""
    return bool(marker) and any(marker in tag for tag in inst.tags)


def stretch_request(
    inst_key: str, stopped_since: datetime, history: History, now: datetime, settings: Settings
) -> TerminationRequest | None:
    """The "terminate now" bound to this stretch and mode that has not expired, or None. A
    request issued with a warning of an earlier stretch (before a restart), from the other
    mode, past its expiry, or followed by a keep (the person changed their mind) asks
    nothing."""
    request = history.requests.get(inst_key)
    if request is None or request.stretch != stopped_since or request.mode != settings.mode:
        return None
    kept = history.kept.get(inst_key)
    if kept is not None and kept.since >= request.requested_at:
        return None
    return request if now < request.expires_at else None


def _requested(
    inst: Instance, request: TerminationRequest, stopped_for: str, settings: Settings, past: bool
) -> Decision:
    asked = f"terminate now asked by {request.by} at {utc(request.requested_at)}"
    if inst.cluster_id is not None:
        return Decision(
            instance=inst,
            action="hold",
            reason=f"{asked}, but a member of cluster {inst.cluster_id!r}: {CLUSTER_REASON}",
            due_at=request.requested_at,
            exempt="cluster" if past else None,
        )
    if settings.mode == "observe":
        return Decision(
            instance=inst,
            action="hold",
            reason=f"observe mode: would terminate ({asked}; stopped for {stopped_for})",
            due_at=request.requested_at,
        )
    return Decision(
        instance=inst,
        action="terminate",
        reason=f"{asked} (stopped for {stopped_for})",
        due_at=request.requested_at,
    )


def future_start(inst: Instance, now: datetime) -> bool:
    """A provider start or creation time after `now` cannot be read as a restart."""
    return any(t is not None and t > now for t in (inst.started_at, inst.created_at))


def _floor(inst: Instance, now: datetime) -> datetime | None:
    """The earliest a stopped stretch can have begun: its creation or last start, of those
    that are not in the future."""
    times = [t for t in (inst.created_at, inst.started_at) if t is not None and t <= now]
    return max(times) if times else None


def _clock(
    inst: Instance, history: History, now: datetime
) -> tuple[datetime | None, ClockChange | None]:
    """The stretch start to use for this instance, and the change to record, if any."""
    recorded = history.first_seen_stopped.get(inst.key)
    if inst.state in RESETTING_STATES:
        dirty = recorded is not None or inst.key in history.warnings
        return None, ClockChange(key=inst.key, change="reset", at=now) if dirty else None
    if inst.state != "stopped":
        # unknown, terminated: keep whatever is recorded, change nothing.
        return recorded, None
    if recorded is None:
        return now, ClockChange(key=inst.key, change="start", at=now, started_at=inst.started_at)
    started = inst.started_at
    seen_then = history.stretch_started.get(inst.key)
    restarted = (
        # The start time moved since the stretch was recorded, whatever the two clocks say:
        # the provider's may be ahead of ours by a few minutes.
        started != seen_then
        if seen_then is not None and started is not None
        else started is not None and recorded < started <= now
    )
    if restarted:
        # Started and stopped again between two passes: a restart the reaper never saw
        # running still voids the old stretch's warnings (the user may have rescued data).
        return now, ClockChange(key=inst.key, change="restart", at=now, started_at=started)
    floor = _floor(inst, now)
    # A pass with a clock behind may have recorded a start before the instance existed.
    return (max(recorded, floor) if floor is not None else recorded), None


def _decide_stopped(
    inst: Instance, history: History, now: datetime, settings: Settings
) -> Decision | None:
    assert inst.stopped_since is not None
    stopped_for = humanize(now - inst.stopped_since)
    due_at = inst.stopped_since + settings.stopped_ttl
    past = due_at <= now

    reason = protection_reason(inst, history, now, settings.protect_marker)
    if reason is not None:
        exempt: Exemption | None = None
        if past and unreadable_exemption(inst, history, now, settings.protect_marker):
            exempt = "unreadable_protection"
        return Decision(
            instance=inst, action="protect", reason=reason, due_at=due_at, exempt=exempt
        )

    request = stretch_request(inst.key, inst.stopped_since, history, now, settings)
    if request is not None:
        return _requested(inst, request, stopped_for, settings, past)

    if inst.cluster_id is not None:
        # Never warned: no warning may promise what the pod endpoints cannot do.
        if not past:
            return None
        return Decision(
            instance=inst,
            action="hold",
            reason=f"stopped for {stopped_for}, past its deadline, but a member of cluster"
            f" {inst.cluster_id!r}: {CLUSTER_REASON}",
            due_at=due_at,
            exempt="cluster",
        )

    found = license_for(inst.key, inst.stopped_since, history, now, settings)
    if isinstance(found, Void):
        return _unlicensed(inst, found, now, settings, due_at, stopped_for)
    return _licensed(inst, found, now, settings, stopped_for)


def _unlicensed(
    inst: Instance,
    void: Void,
    now: datetime,
    settings: Settings,
    due_at: datetime,
    stopped_for: str,
) -> Decision | None:
    """No license: a warning once within reach of the deadline — or, when the warning already
    went to the log and nobody can be reached, nothing until the deadline, then `hold`."""
    if now < due_at - settings.warn_before - settings.reap_every:
        return None
    if void.kind == "unheard" and not settings.human_channel:
        if now < due_at:
            return None
        return Decision(
            instance=inst,
            action="hold",
            reason=f"stopped for {stopped_for}, due, but {no_channel_reason(settings)}",
            due_at=due_at,
            exempt="no_channel",
        )
    # Early enough that the termination lands on the first pass at or after the deadline; a
    # late warning (the reaper was down, or just deployed, or the old warning is void) still
    # gives the full notice. The pass computes the deadline it announces again right before
    # sending (`license.announced_deadline`); this is the one it expects.
    terminate_at = max(due_at, now + settings.warn_before)
    anew = "" if void.kind == "none" else f" ({void.why}: warned anew)"
    if held_for_channel(settings):
        # This warning reaches only the log and licenses nothing: no promise of a termination.
        return Decision(
            instance=inst,
            action="warn",
            reason=f"stopped for {stopped_for}; {held_reason(due_at, settings)}{anew}",
            due_at=due_at,
        )
    verb = "would be terminated" if settings.mode == "observe" else "will be terminated"
    # A channel that reaches a person is configured, but the last warning reached nobody (a
    # revoked token): warned again every pass, so that a channel that recovers warns at once;
    # past the deadline that is the no-channel exemption.
    unheard = void.kind == "unheard" and now >= due_at
    return Decision(
        instance=inst,
        action="warn",
        reason=f"stopped for {stopped_for}; {verb} at {utc(terminate_at)}{anew}",
        due_at=terminate_at,
        exempt="no_channel" if unheard else None,
    )


def _licensed(
    inst: Instance, found: License, now: datetime, settings: Settings, stopped_for: str
) -> Decision | None:
    if now < found.deadline:
        return None
    ttl = humanize(settings.stopped_ttl)
    warned = utc(found.warning.at)
    if settings.mode == "observe":
        return Decision(
            instance=inst,
            action="hold",
            reason=f"observe mode: would terminate (stopped for {stopped_for}, limit {ttl}, "
            f"warned {warned})",
            due_at=found.deadline,
            licensed_by=found.warning.at,
        )
    return Decision(
        instance=inst,
        action="terminate",
        reason=f"stopped for {stopped_for}, limit {ttl}, warned {warned}",
        due_at=found.deadline,
        licensed_by=found.warning.at,
    )


def _apply_cap(
    decisions: list[Decision], cap: int, source: str
) -> tuple[list[Decision], int, bool]:
    """`source` names where the cap came from, so the reason points at what to change. A cap
    of 0 is a person turning terminations off: held, but no exemption."""
    due = sum(1 for d in decisions if d.action == "terminate")
    if due <= cap:
        return decisions, due, False
    held_reason = (
        f"held by the cap: {due} terminations due, {source}={cap}"
        if cap
        else f"held: {source}=0 turns terminations off"
    )
    exempt: Exemption | None = "cap" if cap else None
    capped = [
        d.model_copy(
            update={"action": "hold", "reason": f"{held_reason} ({d.reason})", "exempt": exempt}
        )
        if d.action == "terminate"
        else d
        for d in decisions
    ]
    return capped, due, True


def _decide_one(
    raw: Instance, history: History, now: datetime, settings: Settings
) -> tuple[Instance, ClockChange | None, Decision | None]:
    stopped_since, change = _clock(raw, history, now)
    inst = raw.model_copy(update={"stopped_since": stopped_since})
    decision = _decide_stopped(inst, history, now, settings) if inst.state == "stopped" else None
    return inst, change, decision


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
        inst, change, decision = _decide_one(raw, history, now, settings)
        seen.append(inst)
        if change is not None:
            changes.append(change)
        if decision is not None:
            decisions.append(decision)

    cap = settings.max_terminations if max_terminations is None else max_terminations
    source = "REAPER_MAX_TERMINATIONS" if max_terminations is None else "--max-terminations"
    held = [d for d in decisions if d.action == "terminate"]
    decisions, due, exceeded = _apply_cap(decisions, cap, source)
    return Plan(
        decisions=decisions,
        clock_changes=changes,
        instances=seen,
        cap_exceeded=exceeded,
        due_count=due,
        capped=[d.instance.key for d in held] if exceeded else [],
    )


@dataclass(frozen=True)
class Recheck:
    """Why a planned termination must not go out after all. `exempt`: nobody chose it — the
    fresh reading does not show the instance, shows a state it cannot read, or cannot read
    its protection — so, past its deadline, a person must hear of it (an exemption) instead
    of a hold in silence, pass after pass."""

    why: str
    exempt: Exemption | None = None


def recheck(
    planned: Decision,
    fresh: Instance | None,
    history: History,
    now: datetime,
    settings: Settings,
) -> Recheck | None:
    """Why a planned termination must not go out after all, from a reading taken right before
    the delete (and the history as it stands then), or None when it is still due.

    Still due means: still listed, still stopped, in the same stretch, unprotected, not kept,
    and a termination by the same rules as the plan. Unlisted is not proof of anything here:
    the instance may have moved, so it is left alone.
    """
    if fresh is None:
        return Recheck(
            "not in the fresh reading right before the delete; left for the next pass",
            "fresh_read",
        )
    if fresh.state != "stopped":
        unreadable = fresh.state not in RESETTING_STATES and fresh.state != "terminated"
        return Recheck(
            f"the fresh reading right before the delete shows it {fresh.state}"
            f" ({fresh.raw_status})",
            "fresh_read" if unreadable else None,
        )
    inst, _change, decision = _decide_one(fresh, history, now, settings)
    if inst.stopped_since != planned.instance.stopped_since:
        return Recheck("the fresh reading shows a new stopped stretch (it was started meanwhile)")
    if decision is None or decision.action != "terminate":
        why = decision.reason if decision is not None else "no longer due"
        unreadable = decision is not None and unreadable_exemption(
            inst, history, now, settings.protect_marker
        )
        exempt: Exemption | None = "unreadable_protection" if unreadable else None
        return Recheck(f"the fresh reading right before the delete: {why}", exempt)
    return None


# --- the outlook: when each stopped instance goes, or why not (the status page) ----------

OutlookKind = Literal["terminate", "warn", "protect", "hold", "scheduled"]


class Outlook(BaseModel):
    """What the policy says of one stopped instance now, for people: `terminate_at` is when
    the first pass at or after it terminates the instance if nothing changes (None when
    nothing will: protected or held); `reason` says why, in the policy's words."""

    model_config = ConfigDict(frozen=True)

    instance: Instance
    kind: OutlookKind
    terminate_at: datetime | None
    reason: str
    # Past its deadline and left alone for a reason a person may not intend ("needs you").
    exempt: Exemption | None = None


def outlook(
    instances: Sequence[Instance], history: History, now: datetime, settings: Settings
) -> list[Outlook]:
    """The stopped instances of `instances`, each with the policy's answer at `now` — the same
    `decide` a pass runs — and, where it decides nothing yet, the time it will: the deadline,
    or (licensed already) the license's deadline, or (late) the full notice from now."""
    plan = decide(instances, history, now, settings)
    decided = {d.instance.key: d for d in plan.decisions}
    found: list[Outlook] = []
    for inst in plan.instances:
        if inst.state != "stopped" or inst.stopped_since is None:
            continue
        decision = decided.get(inst.key)
        if decision is not None:
            # A warning that can reach only the log promises nothing: held, as it will be.
            held = decision.action == "warn" and held_for_channel(settings)
            at = None if held or decision.action in ("protect", "hold") else decision.due_at
            found.append(
                Outlook(
                    instance=inst,
                    kind="hold" if held else decision.action,
                    terminate_at=at,
                    reason=decision.reason,
                    exempt=decision.exempt,
                )
            )
            continue
        if inst.cluster_id is not None:
            found.append(
                Outlook(instance=inst, kind="hold", terminate_at=None, reason=CLUSTER_REASON)
            )
            continue
        due_at = inst.stopped_since + settings.stopped_ttl
        licensed = license_for(inst.key, inst.stopped_since, history, now, settings)
        if isinstance(licensed, License):
            at = licensed.deadline
            reason = f"warned {utc(licensed.warning.at)}"
        else:
            at = max(due_at, now + settings.warn_before)
            reason = f"a warning goes out {humanize(settings.warn_before)} before"
            if held_for_channel(settings):
                reason = held_reason(due_at, settings)
                found.append(Outlook(instance=inst, kind="hold", terminate_at=None, reason=reason))
                continue
        if settings.mode == "observe":
            reason = f"observe mode: would be terminated; {reason}"
        found.append(Outlook(instance=inst, kind="scheduled", terminate_at=at, reason=reason))
    return found


__all__ = [
    "CLUSTER_REASON",
    "NO_CHANNEL_REASON",
    "RESETTING_STATES",
    "Recheck",
    "decide",
    "future_start",
    "outlook",
    "protection_reason",
    "recheck",
    "stretch_request",
    "unreadable_exemption",
]
