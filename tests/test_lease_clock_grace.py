"""The reap lease is honoured MAX_CLOCK_SKEW past its expiry: another process sharing the store
may run a clock that many minutes behind ours, and its live lease must not look expired to us.
A lease written still ends LEASE_TTL from its taker's now."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from reaper.passes.reap.state import LEASE_NAME, LEASE_TTL, MAX_CLOCK_SKEW, take_lease
from reaper.store.sqlite import SQLiteStore

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
SECOND = timedelta(seconds=1)


def test_a_lease_is_taken_over_only_past_its_expiry_and_the_clock_skew(tmp_path: Path) -> None:
    store = SQLiteStore(str(tmp_path / "state.db"))
    try:
        assert take_lease(store, "behind:1:a", T0)
        holder = store.lease_holder(LEASE_NAME)
        assert holder is not None and holder.expires_at == T0 + LEASE_TTL
        expiry = T0 + LEASE_TTL
        assert not take_lease(store, "ahead:2:b", expiry + MAX_CLOCK_SKEW - SECOND)
        assert take_lease(store, "ahead:2:b", expiry + MAX_CLOCK_SKEW)
        taken = store.lease_holder(LEASE_NAME)
        assert taken is not None and taken.owner == "ahead:2:b"
        assert taken.expires_at == expiry + MAX_CLOCK_SKEW + LEASE_TTL
    finally:
        store.close()
