"""The read models a pass leaves for people: each complete account's listing (for `keep`,
`status` and the status page) and one snapshot row per pass (the spend chart and runway).
Neither ever fails the pass."""

from __future__ import annotations

from reaper import log
from reaper.core.models import Instance, Listing
from reaper.core.snapshot import take_snapshot
from reaper.passes.reap.state import PassState, by_account
from reaper.providers.base import error_text


def record_listings(run: PassState, instances: list[Instance]) -> None:
    """Each complete account's listing, for `keep`, `status` and the status page."""
    grouped = by_account(instances)
    for provider, account in sorted(run.seen.complete):
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


def record_snapshot(run: PassState) -> None:
    """One small row per pass — $/h running and stored, counts per state, balances, per
    account — for the status page's spend chart and runway. A read model for people: it never
    fails the pass (and a dry run's store only records that it would write it)."""
    report = run.report
    guards = report.guards
    snapshot = take_snapshot(
        run.started,
        run.seen.listed,
        report.instances,
        guards.balances if guards is not None else [],
        report.errors,
        billed=guards.billed if guards is not None else {},
        billed_instances=guards.billed_instances if guards is not None else {},
    )
    try:
        run.store.record_snapshot(snapshot)
    except Exception as exc:
        log.event("snapshot", result="error", error=error_text(exc))
