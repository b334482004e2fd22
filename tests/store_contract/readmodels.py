"""Listings and snapshots (`reaper.store.ports.ReadModels`)."""

from __future__ import annotations

from datetime import datetime

from reaper.core.models import Instance, Listing
from reaper.core.snapshot import AccountSnapshot, Snapshot
from reaper.store.ports import Store
from tests.store_contract.records import HOUR, PLUS_TWO, T0, assert_utc


class ReadModelsContract:
    """Every test here must pass for every backend (the `store` fixture is the
    subclass's)."""

    def test_a_listing_per_account_replaces_the_one_before(self, store: Store) -> None:
        pod = Instance(
            provider="runpod",
            account="main",
            id="abc",
            name="train <1>",
            state="stopped",
            raw_status="EXITED",
            stopped_since=T0,
            cost_per_hour=0.0123,
        )
        store.record_listing(Listing(provider="runpod", account="main", at=T0, instances=[pod]))
        store.record_listing(Listing(provider="vast", account="main", at=T0, instances=[]))
        newer = Listing(provider="runpod", account="main", at=T0 + HOUR, instances=[])
        store.record_listing(newer)
        listings = store.listings()
        assert [(x.provider, x.account) for x in listings] == [("runpod", "main"), ("vast", "main")]
        assert listings[0] == newer
        store.record_listing(Listing(provider="runpod", account="main", at=T0, instances=[pod]))
        (again, _vast) = store.listings()
        assert again.instances == [pod]
        assert_utc(again.at)

    def test_snapshots_come_back_oldest_first_from_since(self, store: Store) -> None:
        def snap(at: datetime, running: float) -> Snapshot:
            account = AccountSnapshot(
                provider="runpod",
                account="main",
                running_per_hour=running,
                storage_per_hour=0.05,
                counts={"running": 2, "stopped": 1},
                balance=12.5,
                spend_per_hour=None,
            )
            failed = AccountSnapshot(
                provider="vast",
                account="b",
                complete=False,
                running_per_hour=None,
                storage_per_hour=None,
                other_per_hour=None,
            )
            return Snapshot(at=at, accounts=[account, failed])

        assert store.snapshots(T0 - HOUR) == []
        for hours in (2, 0, 1):
            store.record_snapshot(snap(T0 + hours * HOUR, float(hours)))
        # The same instant twice is two snapshots.
        store.record_snapshot(snap(T0 + HOUR, 9.0))
        got = store.snapshots(T0)
        assert [s.at for s in got] == [T0, T0 + HOUR, T0 + HOUR, T0 + 2 * HOUR]
        assert sorted(s.running_per_hour for s in got[1:3]) == [1.0, 9.0]
        assert got[0] == snap(T0, 0.0)
        assert got[0].accounts[1].per_hour is None
        for s in got:
            assert_utc(s.at)
        assert [s.at for s in store.snapshots(T0 + HOUR)] == [T0 + HOUR, T0 + HOUR, T0 + 2 * HOUR]
        assert store.snapshots(T0 + 3 * HOUR) == []
        # A time in another zone is the same instant.
        store.record_snapshot(Snapshot(at=(T0 + 3 * HOUR).astimezone(PLUS_TWO)))
        [last] = store.snapshots(T0 + 3 * HOUR)
        assert last.at == T0 + 3 * HOUR
        assert_utc(last.at)
