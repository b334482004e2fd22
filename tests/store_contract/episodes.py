"""Alert claims and episodes (`reaper.store.ports.Episodes`)."""

from __future__ import annotations

from reaper.core.models import Episode
from reaper.store.ports import Store
from tests.store_contract.records import HOUR, MINUTE, SECOND, T0, assert_utc


class EpisodesContract:
    """Every test here must pass for every backend (the `store` fixture is the
    subclass's)."""

    def test_claim_alert_once_per_window(self, store: Store) -> None:
        assert store.claim_alert("down:h", T0, HOUR) is True
        assert store.claim_alert("down:h", T0, HOUR) is False
        assert store.claim_alert("down:h", T0 + HOUR - SECOND, HOUR) is False
        assert store.claim_alert("down:h", T0 + HOUR, HOUR) is True

    def test_a_new_claim_restarts_the_window(self, store: Store) -> None:
        assert store.claim_alert("k", T0, HOUR)
        assert store.claim_alert("k", T0 + 2 * HOUR, HOUR) is True
        assert store.claim_alert("k", T0 + 2 * HOUR + 30 * MINUTE, HOUR) is False
        assert store.claim_alert("k", T0 + 3 * HOUR, HOUR) is True

    def test_claims_are_per_key(self, store: Store) -> None:
        assert store.claim_alert("a", T0, HOUR)
        assert store.claim_alert("b", T0, HOUR) is True
        assert store.claim_alert("a", T0 + MINUTE, HOUR) is False

    def test_open_episode_returns_it(self, store: Store) -> None:
        episode = store.open_episode("balance:runpod:main", T0, "balance $3.10")
        assert episode == Episode(key="balance:runpod:main", opened_at=T0, detail="balance $3.10")
        assert_utc(episode.opened_at)
        assert store.open_episodes() == [episode]

    def test_open_twice_returns_the_older_one(self, store: Store) -> None:
        first = store.open_episode("leak:vol-1", T0, "first")
        again = store.open_episode("leak:vol-1", T0 + HOUR, "second")
        assert again == first
        assert store.open_episodes() == [first]

    def test_mark_alerted(self, store: Store) -> None:
        store.open_episode("idle:pod", T0, "0% for 1h")
        store.mark_episode_alerted("idle:pod", T0 + MINUTE)
        [episode] = store.open_episodes()
        assert episode.alerted_at == T0 + MINUTE
        assert_utc(episode.alerted_at)
        assert episode.detail == "0% for 1h", "detail=None keeps the detail"
        store.mark_episode_alerted("idle:pod", T0 + HOUR, "0% for 2h")
        [episode] = store.open_episodes()
        assert episode.alerted_at == T0 + HOUR
        assert episode.detail == "0% for 2h"
        assert episode.opened_at == T0

    def test_mark_alerted_of_a_closed_episode_opens_nothing(self, store: Store) -> None:
        store.mark_episode_alerted("nothing", T0)
        assert store.open_episodes() == []

    def test_open_again_after_marking_keeps_the_alert(self, store: Store) -> None:
        store.open_episode("k", T0)
        store.mark_episode_alerted("k", T0 + MINUTE)
        assert store.open_episode("k", T0 + HOUR).alerted_at == T0 + MINUTE

    def test_close_returns_what_was_open(self, store: Store) -> None:
        store.open_episode("reaper-silent", T0, "no pass for 3h")
        store.mark_episode_alerted("reaper-silent", T0 + MINUTE)
        closed = store.close_episode("reaper-silent")
        assert closed == Episode(
            key="reaper-silent", opened_at=T0, detail="no pass for 3h", alerted_at=T0 + MINUTE
        )
        assert closed is not None
        assert_utc(closed.opened_at)
        assert_utc(closed.alerted_at)
        assert store.close_episode("reaper-silent") is None
        assert store.close_episode("never-opened") is None
        assert store.open_episodes() == []

    def test_reopen_after_close_is_a_new_episode(self, store: Store) -> None:
        store.open_episode("k", T0, "old")
        store.mark_episode_alerted("k", T0 + MINUTE)
        store.close_episode("k")
        episode = store.open_episode("k", T0 + HOUR, "new")
        assert episode == Episode(key="k", opened_at=T0 + HOUR, detail="new", alerted_at=None)

    def test_open_episodes_by_prefix(self, store: Store) -> None:
        for key in ("balance:runpod:a", "balance:vast:b", "leak:vol-1", "idle:balance:x"):
            store.open_episode(key, T0)
        assert {e.key for e in store.open_episodes("balance:")} == {
            "balance:runpod:a",
            "balance:vast:b",
        }
        assert [e.key for e in store.open_episodes("leak:")] == ["leak:vol-1"]
        assert store.open_episodes("nothing:") == []
        assert len(store.open_episodes("")) == 4
        # A prefix is literal: no wildcards, and case matters.
        assert store.open_episodes("%") == []
        assert store.open_episodes("_") == []
        assert store.open_episodes("BALANCE:") == []
