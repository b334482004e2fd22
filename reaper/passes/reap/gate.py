"""The one gate every DELETE passes through.

A reap pass's due terminations and a "terminate now" — from a chat button, an action link,
the status page or the admin API, all carried out by `reap.request_pass` — end here, and only
here: this is the one caller of `Effects.delete`, which is the one caller of a provider
client's `terminate` (`tests/test_layout.py` checks both with grep). For each delete the gate
takes the fresh reading of the instance (read right before, by the caller), asks the pure
policy again with the history as the store holds it *now* (`policy.recheck`: still stopped, in
the same stretch, unprotected, not kept, and licensed — a warning that reached a person for
this stretch, announcing a deadline that has come and whose window is open — or asked for by a
"terminate now" bound to this very stretch), writes the `requested` audit record right before
the request leaves, sends it, and records what it answered.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from reaper import log
from reaper.core.models import AuditRecord, Decision, History, Instance
from reaper.core.policy import recheck
from reaper.passes.context import Context
from reaper.providers.base import ProviderClient, ProviderError, StaleReading, error_text
from reaper.store.ports import Store


@dataclass(frozen=True)
class Refused:
    """The pure check said no on the fresh reading: nothing was sent."""

    why: str


@dataclass(frozen=True)
class NotSent:
    """The reading grew too old before the delete could go out: nothing was sent, and the
    caller may read again."""

    why: str


def pass_history(store: Store, now: datetime) -> History:
    """The store's history with the open "terminate now" requests in it, as the policy reads
    it (in the plan, and again at the gate right before each delete)."""
    history = store.history()
    requests = {r.key: r for r in store.termination_requests(now)}
    return history.model_copy(update={"requests": requests}) if requests else history


async def delete(
    ctx: Context,
    client: ProviderClient,
    planned: Decision,
    fresh: Instance | None,
    *,
    not_after: float,
    history: History | None = None,
) -> AuditRecord | Refused | NotSent:
    """One DELETE through the gate (module docstring). `fresh`: the instance as the reading
    taken right before shows it (None: not in it); `not_after`: the `time.monotonic()` instant
    after which that reading is too old for the request to leave; `history`: the store's
    history read with that reading (one read for a round of deletes: a hundred reads, one per
    delete, would age the reading past `not_after` before the last one leaves), else read now."""
    inst = planned.instance
    now = ctx.clock.now()
    if history is None:
        history = pass_history(ctx.store, now)
    why = recheck(planned, fresh, history, now, ctx.settings)
    if why is not None:
        log.event("terminate", provider=inst.provider, id=inst.id, result="skipped", reason=why)
        return Refused(why)
    record = AuditRecord(
        provider=inst.provider,
        account=inst.account,
        id=inst.id,
        name=inst.name,
        reason=planned.reason,
        requested_at=ctx.clock.now(),
        stopped_since=inst.stopped_since,
        cost_per_hour=inst.cost_per_hour,
        result="requested",
        announced=False,
    )
    sent = False

    def write_requested() -> None:
        # Right before the request goes out, so a pass that dies mid-call still leaves a
        # record that the next pass settles, and a delete never sent leaves none.
        nonlocal sent
        sent = True
        ctx.store.record_termination(record)

    try:
        outcome = await ctx.effects.delete(
            client, inst.id, not_after=not_after, before_send=write_requested
        )
    except StaleReading as exc:
        if not sent:
            log.event(
                "terminate",
                provider=inst.provider,
                id=inst.id,
                result="not_sent",
                detail=error_text(exc),
            )
            return NotSent(error_text(exc))
        # A first attempt went out; what it did is unknown: confirmed (or not) by re-listing.
        record = record.model_copy(update={"detail": f"answer unknown: {error_text(exc)}"})
    except Exception as exc:  # any failure is recorded, never raised
        detail = error_text(exc)
        refused = isinstance(exc, ProviderError) and exc.status is not None
        if sent and not refused:
            # It went out and no answer said what it did (a time-out, a 5xx after every
            # retry): only a re-listing can tell whether it took effect.
            record = record.model_copy(update={"detail": f"answer unknown: {detail}"})
        else:
            record = record.model_copy(update={"result": "failed", "detail": detail})
    else:
        if outcome == "dry_run":
            return record
        record = record.model_copy(update={"result": outcome})
    ctx.store.record_termination(record)
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


__all__ = ["NotSent", "Refused", "delete", "pass_history"]
