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

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from reaper import log
from reaper.core.models import AuditRecord, Decision, Exemption, History, Instance
from reaper.core.policy import Recheck, recheck
from reaper.passes.context import Context
from reaper.providers.base import ProviderClient, ProviderError, StaleReading, error_text
from reaper.store.ports import Store

# Unconfirmed audit records older than this are no longer reconciled against listings.
RECONCILE_WINDOW = timedelta(days=30)
# The results of a delete that may have taken effect and that no listing has settled yet.
UNSETTLED_RESULTS = ("requested", "deleted", "not_found")
UNSETTLED_WHY = "an earlier delete of it is not settled yet: the next complete listing settles it"
# A delete whose answer may have been lost (left `requested`, or settled `not_sent` because a
# listing still showed it stopped) counts this long as a likely cause of the instance's absence.
LOST_ANSWER_WINDOW = timedelta(hours=6)
MAYBE_GONE_WHY = (
    "not in the fresh reading right before the delete, and an earlier delete of it may have"
    " taken effect: the next listings settle it"
)

# What a refusal means for the instance: `refused` — left alone (by a person's doing or the
# instance's own: started, kept, protected, no longer due; or, with `exempt`, for a reason
# nobody chose, which a person must hear of); `later` — it stays due and a later pass does it
# (an earlier delete of it is unsettled, the lease was lost).
RefusalKind = Literal["refused", "later"]


@dataclass(frozen=True)
class Refused:
    """The gate said no: nothing was sent."""

    why: str
    kind: RefusalKind = "refused"
    exempt: Exemption | None = None


class Changed(Exception):
    """Raised by the last look right before a request leaves: what the delete was decided on
    no longer holds (the gate turns it into `Refused`; nothing was sent or written)."""

    def __init__(self, why: str, kind: RefusalKind) -> None:
        super().__init__(why)
        self.why = why
        self.kind = kind


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


@dataclass(frozen=True)
class EarlierDeletes:
    """(instance key, stretch) of earlier deletes no listing has confirmed. `unsettled`: they
    may have taken effect and no listing has settled them (a pass died as one left, or its
    answer or confirmation was lost): another delete of the same stretch waits until the next
    complete listing settles it, so that `reaper audit` never shows one instance terminated
    twice. `answer_lost`: recent, left `requested` or settled `not_sent` — if the instance is
    now missing, that delete is the likely reason, not a reading gone wrong."""

    unsettled: frozenset[tuple[str, datetime | None]] = frozenset()
    answer_lost: frozenset[tuple[str, datetime | None]] = frozenset()


def earlier_deletes(store: Store, now: datetime) -> EarlierDeletes:
    records = [r for r in store.audit_log(since=now - RECONCILE_WINDOW) if not r.confirmed]
    return EarlierDeletes(
        unsettled=frozenset(
            (r.key, r.stopped_since) for r in records if r.result in UNSETTLED_RESULTS
        ),
        answer_lost=frozenset(
            (r.key, r.stopped_since)
            for r in records
            if r.result in ("requested", "not_sent") and now - r.requested_at <= LOST_ANSWER_WINDOW
        ),
    )


def _facts(history: History, key: str) -> tuple[object, ...]:
    """What of one instance's history a delete rests on."""
    return (
        history.first_seen_stopped.get(key),
        history.warnings.get(key),
        history.kept.get(key),
        history.requests.get(key),
    )


@dataclass(frozen=True)
class Fence:
    """The last look right before a request leaves (after its wait for a concurrency slot, a
    rate-limit pause or a retry): the pass still holds the reap lease — so two passes never
    both delete, whatever their clocks say — and the instance's stretch, warning, keep and
    "terminate now" read (point reads) as they did when the delete was decided."""

    store: Store
    holds_lease: Callable[[], bool]

    def check(self, key: str, decided_on: History, now: datetime) -> None:
        if not self.holds_lease():
            raise Changed("this pass no longer holds the reap lease", "later")
        if _facts(self.store.history_of(key, now), key) != _facts(decided_on, key):
            raise Changed(
                "its keep, warning or terminate-now request changed while its delete waited"
                " to leave",
                "refused",
            )


async def delete(
    ctx: Context,
    client: ProviderClient,
    planned: Decision,
    fresh: Instance | None,
    *,
    not_after: float,
    fence: Fence,
    history: History | None = None,
    earlier: EarlierDeletes | None = None,
) -> AuditRecord | Refused | NotSent:
    """One DELETE through the gate (module docstring). `fresh`: the instance as the reading
    taken right before shows it (None: not in it); `not_after`: the `time.monotonic()` instant
    after which that reading is too old for the request to leave; `history`: the store's
    history read with that reading (one read for a round of deletes: a hundred reads, one per
    delete, would age the reading past `not_after` before the last one leaves), else read now;
    `earlier`: `earlier_deletes`, read with it (else now); `fence`: the last look."""
    inst = planned.instance
    now = ctx.clock.now()
    if history is None:
        history = pass_history(ctx.store, now)
    if earlier is None:
        earlier = earlier_deletes(ctx.store, now)
    refusal = _refusal(planned, fresh, history, earlier, now, ctx)
    if refusal is not None:
        log.event(
            "terminate", provider=inst.provider, id=inst.id, result="skipped", reason=refusal.why
        )
        return refusal
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
        fence.check(inst.key, history, ctx.clock.now())
        sent = True
        ctx.store.record_termination(record)

    try:
        outcome = await ctx.effects.delete(
            client, inst.id, not_after=not_after, before_send=write_requested
        )
    except Changed as exc:
        log.event("terminate", provider=inst.provider, id=inst.id, result="skipped", reason=exc.why)
        return Refused(f"{exc.why}: nothing was sent", exc.kind)
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


def _refusal(
    planned: Decision,
    fresh: Instance | None,
    history: History,
    earlier: EarlierDeletes,
    now: datetime,
    ctx: Context,
) -> Refused | None:
    stretch = (planned.instance.key, planned.instance.stopped_since)
    said: Recheck | None = recheck(planned, fresh, history, now, ctx.settings)
    if said is not None:
        if fresh is None and stretch in earlier.answer_lost:
            # Gone, most likely by that delete: two listings that miss it confirm it.
            return Refused(MAYBE_GONE_WHY)
        return Refused(said.why, exempt=said.exempt)
    if stretch in earlier.unsettled:
        return Refused(UNSETTLED_WHY, "later")
    return None


__all__ = [
    "LOST_ANSWER_WINDOW",
    "RECONCILE_WINDOW",
    "Changed",
    "EarlierDeletes",
    "Fence",
    "NotSent",
    "Refused",
    "delete",
    "earlier_deletes",
    "pass_history",
]
