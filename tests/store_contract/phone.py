"""Sign-in links, sessions, action grants and actions (`reaper.store.ports.PhoneAuth`)."""

from __future__ import annotations

from reaper.core.models import PhoneAction
from reaper.store.ports import Store
from tests.store_contract.records import (
    HOUR,
    KEEP_A_DAY,
    MINUTE,
    PLUS_TWO,
    SECOND,
    T0,
    action_record,
    assert_utc,
    grant,
)


class PhoneAuthContract:
    """Every test here must pass for every backend (the `store` fixture is the
    subclass's)."""

    def test_a_login_token_works_once(self, store: Store) -> None:
        store.record_login_token("hash-a", T0 + 15 * MINUTE)
        assert store.use_login_token("hash-b", T0) is False
        assert store.use_login_token("hash-a", T0) is True
        assert store.use_login_token("hash-a", T0) is False

    def test_a_login_token_expires(self, store: Store) -> None:
        store.record_login_token("hash-a", T0 + 15 * MINUTE)
        store.record_login_token("hash-b", T0 + 15 * MINUTE)
        assert store.use_login_token("hash-a", T0 + 15 * MINUTE) is False, "at its expiry: gone"
        assert store.use_login_token("hash-b", T0 + 15 * MINUTE - SECOND) is True

    def test_of_concurrent_uses_of_one_token_exactly_one_wins(self, store: Store) -> None:
        import threading

        store.record_login_token("raced", T0 + HOUR)
        results: list[bool] = []
        lock = threading.Lock()
        start = threading.Barrier(8)

        def use() -> None:
            start.wait()
            won = store.use_login_token("raced", T0)
            with lock:
                results.append(won)

        threads = [threading.Thread(target=use) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        assert sorted(results) == [False] * 7 + [True]

    def test_a_grant_round_trips_in_utc(self, store: Store) -> None:
        terminate = PhoneAction(kind="terminate", label="Terminate now", targets=("vast:7",))
        stored = grant(
            "a" * 64,
            expires_at=(T0 + 2 * HOUR).astimezone(PLUS_TWO),
            choices=(KEEP_A_DAY, terminate),
            ask_first=True,
            parent="b" * 64,
        )
        store.add_grant(stored)
        found = store.get_grant("a" * 64)
        assert found == stored.model_copy(update={"expires_at": T0 + 2 * HOUR})
        assert found is not None
        assert_utc(found.created_at)
        assert_utc(found.expires_at)
        assert found.used_at is None
        assert store.get_grant("b" * 64) is None

    def test_a_grant_is_used_once(self, store: Store) -> None:
        store.add_grant(grant("g"))
        assert store.use_grant("g", T0 + MINUTE) is True
        assert store.use_grant("g", T0 + 2 * MINUTE) is False
        found = store.get_grant("g")
        assert found is not None and found.used_at == T0 + MINUTE
        assert_utc(found.used_at)

    def test_a_released_grant_can_be_used_again(self, store: Store) -> None:
        store.add_grant(grant("g"))
        assert store.use_grant("g", T0 + MINUTE)
        assert store.release_grant("g", T0 + 2 * MINUTE) is False, "used at another time"
        assert store.release_grant("nobody", T0 + MINUTE) is False
        assert store.release_grant("g", T0 + MINUTE) is True
        found = store.get_grant("g")
        assert found is not None and found.used_at is None
        assert store.release_grant("g", T0 + MINUTE) is False, "not used now"
        assert store.use_grant("g", T0 + 3 * MINUTE) is True
        assert store.use_grant("g", T0 + 4 * MINUTE) is False

    def test_an_expired_or_unknown_grant_is_never_used(self, store: Store) -> None:
        store.add_grant(grant("g", expires_at=T0 + HOUR))
        assert store.use_grant("g", T0 + HOUR) is False, "at its expiry it is expired"
        assert store.use_grant("nobody", T0) is False
        found = store.get_grant("g")
        assert found is not None and found.used_at is None
        assert store.use_grant("g", T0 + HOUR - SECOND) is True

    def test_of_concurrent_uses_exactly_one_wins(self, store: Store) -> None:
        import threading

        store.add_grant(grant("g"))
        results: list[bool] = []
        lock = threading.Lock()
        start = threading.Barrier(8)

        def press() -> None:
            start.wait()
            won = store.use_grant("g", T0 + MINUTE)
            with lock:
                results.append(won)

        threads = [threading.Thread(target=press) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(results) == [False] * 7 + [True]

    def test_actions_are_kept_oldest_first(self, store: Store) -> None:
        store.record_action(action_record(T0 + HOUR, label="second"))
        store.record_action(action_record(T0, label="first"))
        store.record_action(action_record(T0 + HOUR, label="third"))
        assert [a.label for a in store.action_log()] == ["first", "second", "third"]
        assert [a.label for a in store.action_log(since=T0 + HOUR)] == ["second", "third"]
        [first, *_] = store.action_log()
        assert first == action_record(T0, label="first")
        assert_utc(first.at)

    def test_a_session_is_active_until_it_expires(self, store: Store) -> None:
        store.start_session("session-a", T0, T0 + HOUR)
        assert store.session_active("session-a", T0) is True
        assert store.session_active("session-a", T0 + HOUR - SECOND) is True
        assert store.session_active("session-a", T0 + HOUR) is False, "at its expiry: over"
        assert store.session_active("session-b", T0) is False, "never started"

    def test_a_session_ended_is_over_and_others_go_on(self, store: Store) -> None:
        store.start_session("session-a", T0, T0 + HOUR)
        store.start_session("session-b", T0, T0 + HOUR)
        store.end_session("session-a")
        assert store.session_active("session-a", T0) is False
        assert store.session_active("session-b", T0) is True
        store.end_session("session-a")
        store.end_session("never-started")

    def test_a_new_session_leaves_the_live_ones_alone(self, store: Store) -> None:
        store.start_session("old", T0, T0 + MINUTE)
        store.start_session("live", T0, T0 + 7 * 24 * HOUR)
        store.start_session("new", T0 + HOUR, T0 + HOUR + 7 * 24 * HOUR)
        assert store.session_active("old", T0 + HOUR) is False
        assert store.session_active("live", T0 + HOUR) is True
        assert store.session_active("new", T0 + HOUR) is True
