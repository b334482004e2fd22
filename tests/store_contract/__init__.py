"""The contract every store backend keeps, as one reusable test suite: one class per port
(`ledger`, `leases`, `episodes`, `monitors`, `phone`, `readmodels`), `StoreContract` their
union.

A backend's test module subclasses `StoreContract` and provides a `store` fixture that yields a
fresh, empty, read-write store (and closes it afterwards):

    class TestSQLiteStore(StoreContract):
        @pytest.fixture
        def store(self, tmp_path: Path) -> Iterator[Store]:
            store = SQLiteStore(str(tmp_path / "state.db"))
            yield store
            store.close()

Times are built from the fixed `T0`, never from the wall clock, so the suite needs no sleeping
and runs the same against a real DynamoDB table as against SQLite. Boundaries (a lease at its
exact expiry, a claim at its exact window end) are pinned so that both backends agree on them.
"""

from __future__ import annotations

import pytest

from emulators.clock import FakeClock
from reaper.store.ports import Store
from tests.store_contract.episodes import EpisodesContract
from tests.store_contract.leases import LeasesContract
from tests.store_contract.ledger import LedgerContract
from tests.store_contract.monitors import MonitorsContract
from tests.store_contract.phone import PhoneAuthContract
from tests.store_contract.readmodels import ReadModelsContract
from tests.store_contract.records import T0


class StoreContract(
    LedgerContract,
    LeasesContract,
    EpisodesContract,
    MonitorsContract,
    PhoneAuthContract,
    ReadModelsContract,
):
    """Subclasses provide the `store` fixture; every test here must pass for every backend."""

    @pytest.fixture
    def clock(self) -> FakeClock:
        return FakeClock(T0)

    def test_a_fresh_store_is_writable_and_empty(self, store: Store) -> None:
        assert store.read_only is False
        history = store.history()
        assert history.first_seen_stopped == {}
        assert history.warnings == {}
        assert store.listings() == []
        assert history.kept == {}
        assert store.audit_log() == []
        assert store.last_reap() is None
        assert store.list_monitors() == []
        assert store.open_episodes() == []
