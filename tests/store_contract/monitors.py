"""Monitors, their settings, mutes and ping logs (`reaper.store.ports.Monitors`)."""

from __future__ import annotations

from datetime import datetime

from reaper.core.models import Monitor, PingEvent
from reaper.core.monitors import PING_LOG_KEPT, SettingsChange
from reaper.store.ports import Store
from tests.store_contract.records import (
    HOUR,
    MINUTE,
    PLUS_TWO,
    SECOND,
    T0,
    assert_utc,
    full_monitor,
)


class MonitorsContract:
    """Every test here must pass for every backend (the `store` fixture is the
    subclass's)."""

    def test_get_of_a_missing_monitor_is_none(self, store: Store) -> None:
        assert store.get_monitor("nobody") is None

    def test_monitor_round_trip_of_every_field(self, store: Store) -> None:
        monitor = full_monitor()
        store.put_monitor(monitor)
        stored = store.get_monitor("trainer-1")
        assert stored == monitor
        assert stored is not None
        for name, value in vars(monitor).items():
            assert getattr(stored, name) == value, name
            if isinstance(value, datetime):
                assert_utc(getattr(stored, name))

    def test_monitor_defaults_round_trip(self, store: Store) -> None:
        monitor = Monitor(host="fresh", created_at=T0)
        store.put_monitor(monitor)
        assert store.get_monitor("fresh") == monitor

    def test_put_monitor_replaces(self, store: Store) -> None:
        store.put_monitor(Monitor(host="h", created_at=T0))
        updated = Monitor(host="h", status="up", created_at=T0, last_ping_at=T0 + MINUTE)
        store.put_monitor(updated)
        assert store.get_monitor("h") == updated
        assert store.list_monitors() == [updated]

    def test_monitor_times_in_other_zones_come_back_in_utc(self, store: Store) -> None:
        store.put_monitor(
            Monitor(host="h", created_at=datetime(2026, 3, 1, 15, 0, tzinfo=PLUS_TWO))
        )
        stored = store.get_monitor("h")
        assert stored is not None
        assert stored.created_at == T0 + HOUR
        assert_utc(stored.created_at)

    def test_list_monitors_is_ordered_by_host(self, store: Store) -> None:
        for host in ("vast-9", "alpha", "runpod-abc", "beta"):
            store.put_monitor(Monitor(host=host, created_at=T0))
        assert [m.host for m in store.list_monitors()] == [
            "alpha",
            "beta",
            "runpod-abc",
            "vast-9",
        ]

    def test_delete_monitor(self, store: Store) -> None:
        store.put_monitor(Monitor(host="a", created_at=T0))
        store.put_monitor(Monitor(host="b", created_at=T0))
        store.delete_monitor("a")
        store.delete_monitor("never-existed")
        assert store.get_monitor("a") is None
        assert [m.host for m in store.list_monitors()] == ["b"]

    def test_delete_retired_drops_those_not_heard_from_since(self, store: Store) -> None:
        store.put_monitor(Monitor(host="old", status="retired", created_at=T0))
        store.put_monitor(
            Monitor(host="pinged", status="retired", created_at=T0, last_ping_at=T0 + HOUR)
        )
        store.put_monitor(Monitor(host="live-old", status="down", created_at=T0))
        assert store.delete_retired(before=T0 + MINUTE, keep=10) == 1
        assert [m.host for m in store.list_monitors()] == ["live-old", "pinged"]

    def test_delete_retired_keeps_the_most_recently_heard(self, store: Store) -> None:
        for i in range(5):
            heard = T0 + i * MINUTE
            store.put_monitor(
                Monitor(host=f"r{i}", status="retired", created_at=T0, last_ping_at=heard)
            )
        store.put_monitor(Monitor(host="live", status="up", created_at=T0))
        assert store.delete_retired(before=T0, keep=2) == 3
        assert [m.host for m in store.list_monitors()] == ["live", "r3", "r4"]
        assert store.delete_retired(before=T0, keep=0) == 2
        assert [m.host for m in store.list_monitors()] == ["live"]

    def test_delete_retired_leaves_the_active_count_alone(self, store: Store) -> None:
        assert store.create_monitor(Monitor(host="a", created_at=T0), limit=1)
        store.put_monitor(Monitor(host="gone", status="retired", created_at=T0))
        assert store.delete_retired(before=T0 + HOUR, keep=0) == 1
        assert store.create_monitor(Monitor(host="b", created_at=T0), limit=1) is False

    def test_create_monitor_inserts(self, store: Store) -> None:
        monitor = Monitor(host="new-host", created_at=T0)
        assert store.create_monitor(monitor, limit=10) is True
        assert store.get_monitor("new-host") == monitor

    def test_create_monitor_refuses_an_existing_host(self, store: Store) -> None:
        original = Monitor(host="h", status="up", created_at=T0, last_ping_at=T0)
        assert store.create_monitor(original, limit=10)
        assert store.create_monitor(Monitor(host="h", created_at=T0 + HOUR), limit=10) is False
        assert store.get_monitor("h") == original

    def test_create_monitor_stops_at_the_limit(self, store: Store) -> None:
        for i in range(3):
            assert store.create_monitor(Monitor(host=f"h{i}", created_at=T0), limit=3)
        assert store.create_monitor(Monitor(host="h3", created_at=T0), limit=3) is False
        assert store.get_monitor("h3") is None
        assert len(store.list_monitors()) == 3

    def test_retired_monitors_do_not_count_toward_the_limit(self, store: Store) -> None:
        store.put_monitor(Monitor(host="old-1", status="retired", created_at=T0))
        store.put_monitor(Monitor(host="old-2", status="retired", created_at=T0))
        store.put_monitor(Monitor(host="live", status="down", created_at=T0))
        assert store.create_monitor(Monitor(host="h1", created_at=T0), limit=2) is True
        assert store.create_monitor(Monitor(host="h2", created_at=T0), limit=2) is False

    def test_a_retired_host_still_exists_for_create(self, store: Store) -> None:
        retired = Monitor(host="h", status="retired", created_at=T0)
        store.put_monitor(retired)
        assert store.create_monitor(Monitor(host="h", created_at=T0 + HOUR), limit=10) is False
        assert store.get_monitor("h") == retired

    def test_retiring_with_put_frees_a_place(self, store: Store) -> None:
        assert store.create_monitor(Monitor(host="a", created_at=T0), limit=1)
        assert store.create_monitor(Monitor(host="b", created_at=T0), limit=1) is False
        store.put_monitor(Monitor(host="a", status="retired", created_at=T0))
        assert store.create_monitor(Monitor(host="b", created_at=T0), limit=1) is True

    def test_create_monitor_with_a_zero_limit_refuses(self, store: Store) -> None:
        assert store.create_monitor(Monitor(host="a", created_at=T0), limit=0) is False
        assert store.list_monitors() == []

    def test_mute_sets_only_the_mute(self, store: Store) -> None:
        store.put_monitor(full_monitor("trainer-1"))
        assert store.mute_monitor("trainer-1", (T0 + HOUR).astimezone(PLUS_TWO)) is True
        muted = store.get_monitor("trainer-1")
        assert muted == full_monitor("trainer-1").model_copy(update={"muted_until": T0 + HOUR})
        assert muted is not None
        assert_utc(muted.muted_until)
        assert store.mute_monitor("trainer-1", None) is True
        unmuted = full_monitor("trainer-1").model_copy(update={"muted_until": None})
        assert store.get_monitor("trainer-1") == unmuted

    def test_mute_of_an_unknown_monitor_is_false(self, store: Store) -> None:
        assert store.mute_monitor("nobody", T0 + HOUR) is False
        assert store.get_monitor("nobody") is None

    def test_settings_change_only_what_is_given_and_keep_the_state(self, store: Store) -> None:
        down = Monitor(host="h", status="down", created_at=T0, last_ping_at=T0, events=3)
        store.put_monitor(down)
        change = SettingsChange(at=T0 + HOUR, given=frozenset({"timeout"}), timeout=2 * HOUR)
        written = store.set_monitor_settings("h", change)
        stored = store.get_monitor("h")
        assert written == stored
        assert stored is not None
        assert stored.timeout == 2 * HOUR and stored.grace is None
        assert (stored.status, stored.last_ping_at, stored.events) == ("down", T0, 3)
        both = SettingsChange(
            at=T0, given=frozenset({"grace", "timeout"}), timeout=None, grace=10 * MINUTE
        )
        store.set_monitor_settings("h", both)
        again = store.get_monitor("h")
        assert again is not None
        assert (again.timeout, again.grace) == (None, 10 * MINUTE)

    def test_settings_of_a_missing_monitor_create_nothing(self, store: Store) -> None:
        change = SettingsChange(at=T0, given=frozenset({"paused"}), paused=True)
        assert store.set_monitor_settings("nobody", change) is None
        assert store.pause_monitor("nobody", True, T0) is False
        assert store.mute_monitor("nobody", T0 + HOUR) is False
        assert store.list_monitors() == []

    def test_pause_and_resume_from_a_time(self, store: Store) -> None:
        store.put_monitor(Monitor(host="h", status="up", created_at=T0, last_ping_at=T0))
        assert store.pause_monitor("h", True, T0 + HOUR) is True
        paused = store.get_monitor("h")
        assert paused is not None and paused.paused and paused.resumed_at is None
        assert store.pause_monitor("h", False, T0 + 2 * HOUR) is True
        resumed = store.get_monitor("h")
        assert resumed is not None and not resumed.paused
        assert resumed.resumed_at == T0 + 2 * HOUR
        assert_utc(resumed.resumed_at)
        assert resumed.status == "up"

    def test_mute_until_and_unmute(self, store: Store) -> None:
        store.put_monitor(Monitor(host="h", status="down", created_at=T0))
        until = datetime(2026, 3, 2, 14, 0, tzinfo=PLUS_TWO)
        assert store.mute_monitor("h", until) is True
        muted = store.get_monitor("h")
        assert muted is not None and muted.muted_until == T0 + 24 * HOUR
        assert_utc(muted.muted_until)
        assert muted.status == "down"
        assert store.mute_monitor("h", None) is True
        unmuted = store.get_monitor("h")
        assert unmuted is not None and unmuted.muted_until is None

    def test_the_ping_log_round_trips_oldest_first(self, store: Store) -> None:
        store.put_monitor(Monitor(host="h", created_at=T0))
        events = [
            PingEvent(seq=1, at=T0, kind="start", client="203.0.113.7", body="go ✓"),
            PingEvent(seq=2, at=T0 + MINUTE, kind="exit", exit_status=1, body="x" * 1024),
            PingEvent(seq=3, at=T0 + 2 * MINUTE, kind="log", note="a message"),
        ]
        for event in reversed(events):
            store.log_event("h", event)
        assert store.monitor_log("h") == events
        for event in store.monitor_log("h"):
            assert_utc(event.at)
        assert store.monitor_log("nobody") == []

    def test_the_log_keeps_the_last_hundred(self, store: Store) -> None:
        store.put_monitor(Monitor(host="h", created_at=T0))
        for seq in range(1, PING_LOG_KEPT + 31):
            store.log_event("h", PingEvent(seq=seq, at=T0 + seq * SECOND, kind="ping"))
        kept = [e.seq for e in store.monitor_log("h")]
        assert kept == list(range(31, PING_LOG_KEPT + 31))

    def test_logged_pings_keep_the_last_hundred_whole_and_in_order(self, store: Store) -> None:
        """Every ping's own write (`put_monitor_logged`), read back at every point of the way:
        whatever a backend keeps where (SQLite batches them into its ring), the log is the last
        PING_LOG_KEPT events, each as it was written."""

        def event(seq: int) -> PingEvent:
            return PingEvent(
                seq=seq,
                at=T0 + seq * SECOND,
                kind="exit",
                exit_status=seq % 256,
                body=f'body {seq} ✓ "quoted"',
                client="10.0.0.9",
                note="held" if seq % 7 == 0 else "",
            )

        store.create_monitor(Monitor(host="h", created_at=T0), limit=10)
        last = 2 * PING_LOG_KEPT + 37
        for seq in range(1, last + 1):
            monitor = Monitor(host="h", status="up", created_at=T0, events=seq)
            store.put_monitor_logged(monitor, event(seq))
            if seq in (1, 9, 10, 11, 99, 100, 101, 150, last):
                first = max(1, seq - PING_LOG_KEPT + 1)
                assert store.monitor_log("h") == [event(n) for n in range(first, seq + 1)], seq
        monitor = store.get_monitor("h")
        assert monitor is not None and monitor.events == last
        store.delete_monitor("h")
        assert store.monitor_log("h") == []

    def test_an_event_takes_its_slot(self, store: Store) -> None:
        store.log_event("h", PingEvent(seq=5, at=T0, kind="fail"))
        store.log_event("h", PingEvent(seq=105, at=T0 + HOUR, kind="ping"))
        assert [e.seq for e in store.monitor_log("h")] == [105]

    def test_logs_are_per_host_even_when_one_name_begins_another(self, store: Store) -> None:
        for host in ("a", "a.b", "ab", "b"):
            store.log_event(host, PingEvent(seq=1, at=T0, kind="ping", body=host))
        assert [e.body for e in store.monitor_log("a")] == ["a"]
        assert [e.body for e in store.monitor_log("a.b")] == ["a.b"]

    def test_put_monitor_logged_writes_both(self, store: Store) -> None:
        monitor = Monitor(host="h", status="up", created_at=T0, last_ping_at=T0, events=1)
        store.create_monitor(Monitor(host="h", created_at=T0), limit=10)
        store.put_monitor_logged(monitor, PingEvent(seq=1, at=T0, kind="ping"))
        assert store.get_monitor("h") == monitor
        assert [e.seq for e in store.monitor_log("h")] == [1]
        # The active count stays right: one active monitor, a limit of one.
        assert store.create_monitor(Monitor(host="other", created_at=T0), limit=1) is False

    def test_delete_removes_the_monitor_and_its_log(self, store: Store) -> None:
        for host in ("gone", "stays"):
            store.put_monitor(Monitor(host=host, created_at=T0))
            for seq in range(1, 4):
                store.log_event(host, PingEvent(seq=seq, at=T0, kind="ping"))
        store.delete_monitor("gone")
        assert store.get_monitor("gone") is None
        assert store.monitor_log("gone") == []
        assert len(store.monitor_log("stays")) == 3

    def test_pruning_retired_monitors_removes_their_logs(self, store: Store) -> None:
        store.put_monitor(Monitor(host="old", status="retired", created_at=T0))
        store.log_event("old", PingEvent(seq=1, at=T0, kind="bye"))
        store.put_monitor(Monitor(host="live", status="up", created_at=T0))
        store.log_event("live", PingEvent(seq=1, at=T0, kind="ping"))
        assert store.delete_retired(before=T0 + HOUR, keep=0) == 1
        assert store.monitor_log("old") == []
        assert len(store.monitor_log("live")) == 1
