"""The lease: one holder at a time, fenced (`reaper.store.ports.Leases`)."""

from __future__ import annotations

from reaper.store.ports import Store
from tests.store_contract.records import HOUR, MINUTE, SECOND, T0, assert_utc


class LeasesContract:
    """Every test here must pass for every backend (the `store` fixture is the
    subclass's)."""

    def test_a_free_lease_is_taken(self, store: Store) -> None:
        assert store.acquire_lease("reap", "alice", T0, 10 * MINUTE) is True

    def test_a_held_lease_is_refused_to_another_owner(self, store: Store) -> None:
        assert store.acquire_lease("reap", "alice", T0, 10 * MINUTE)
        assert store.acquire_lease("reap", "bob", T0 + MINUTE, 10 * MINUTE) is False
        assert store.acquire_lease("reap", "bob", T0 + 10 * MINUTE - SECOND, HOUR) is False

    def test_an_expired_lease_is_taken_over(self, store: Store) -> None:
        assert store.acquire_lease("reap", "alice", T0, 10 * MINUTE)
        assert store.acquire_lease("reap", "bob", T0 + 10 * MINUTE, 10 * MINUTE) is True
        # Bob holds it now: Alice, coming back late, is refused.
        assert store.acquire_lease("reap", "alice", T0 + 11 * MINUTE, 10 * MINUTE) is False

    def test_renew_extends_only_a_lease_the_owner_still_holds(self, store: Store) -> None:
        assert store.acquire_lease("reap", "alice", T0, 10 * MINUTE)
        assert store.renew_lease("reap", "alice", T0 + 5 * MINUTE, 10 * MINUTE) is True
        assert store.acquire_lease("reap", "bob", T0 + 12 * MINUTE, 10 * MINUTE) is False
        assert store.renew_lease("reap", "bob", T0 + 12 * MINUTE, 10 * MINUTE) is False

    def test_renew_never_takes_back_an_expired_lease(self, store: Store) -> None:
        """A pass that stalled past its lease cannot renew it, even when nobody took it."""
        assert store.acquire_lease("reap", "alice", T0, 10 * MINUTE)
        assert store.renew_lease("reap", "alice", T0 + 10 * MINUTE, 10 * MINUTE) is False
        assert store.acquire_lease("reap", "bob", T0 + 10 * MINUTE, 10 * MINUTE) is True

    def test_renew_never_takes_back_a_lease_released_after_another_held_it(
        self, store: Store
    ) -> None:
        assert store.acquire_lease("reap", "alice", T0, 10 * MINUTE)
        assert store.acquire_lease("reap", "bob", T0 + 11 * MINUTE, 10 * MINUTE)
        store.release_lease("reap", "bob")
        assert store.renew_lease("reap", "alice", T0 + 12 * MINUTE, 10 * MINUTE) is False
        assert store.renew_lease("reap", "alice", T0 + 5 * MINUTE, 10 * MINUTE) is False

    def test_renew_of_a_free_lease_fails(self, store: Store) -> None:
        assert store.renew_lease("reap", "alice", T0, 10 * MINUTE) is False

    def test_the_owner_renews_and_extends(self, store: Store) -> None:
        assert store.acquire_lease("reap", "alice", T0, 10 * MINUTE)
        assert store.acquire_lease("reap", "alice", T0 + 5 * MINUTE, 10 * MINUTE) is True
        # The renewal moved the expiry to T0+15m: the original expiry no longer frees it.
        assert store.acquire_lease("reap", "bob", T0 + 12 * MINUTE, 10 * MINUTE) is False
        assert store.acquire_lease("reap", "bob", T0 + 15 * MINUTE, 10 * MINUTE) is True

    def test_release_by_another_owner_is_ignored(self, store: Store) -> None:
        assert store.acquire_lease("reap", "alice", T0, 10 * MINUTE)
        store.release_lease("reap", "bob")
        assert store.acquire_lease("reap", "bob", T0 + MINUTE, 10 * MINUTE) is False

    def test_release_by_the_owner_frees_it(self, store: Store) -> None:
        assert store.acquire_lease("reap", "alice", T0, 10 * MINUTE)
        store.release_lease("reap", "alice")
        assert store.acquire_lease("reap", "bob", T0 + MINUTE, 10 * MINUTE) is True

    def test_release_of_a_free_lease_is_harmless(self, store: Store) -> None:
        store.release_lease("reap", "alice")
        assert store.acquire_lease("reap", "bob", T0, 10 * MINUTE) is True

    def test_the_lease_holder_says_whose_and_until_when(self, store: Store) -> None:
        assert store.lease_holder("reap") is None
        assert store.acquire_lease("reap", "host-a:42:tok", T0, 2 * MINUTE)
        holder = store.lease_holder("reap")
        assert holder is not None
        assert (holder.owner, holder.expires_at) == ("host-a:42:tok", T0 + 2 * MINUTE)
        assert_utc(holder.expires_at)
        assert store.lease_holder("other") is None
        assert store.renew_lease("reap", "host-a:42:tok", T0 + MINUTE, 2 * MINUTE)
        renewed = store.lease_holder("reap")
        assert renewed is not None and renewed.expires_at == T0 + 3 * MINUTE
        store.release_lease("reap", "host-a:42:tok")
        assert store.lease_holder("reap") is None

    def test_leases_are_per_name(self, store: Store) -> None:
        assert store.acquire_lease("reap", "alice", T0, 10 * MINUTE)
        assert store.acquire_lease("watch", "bob", T0, 10 * MINUTE) is True
        assert store.acquire_lease("watch", "alice", T0, 10 * MINUTE) is False
