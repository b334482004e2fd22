"""The contract every store backend keeps, as one reusable test suite.

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

from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone

import pytest

from emulators.clock import FakeClock
from reaper.core.models import (
    ActionGrant,
    ActionRecord,
    AuditRecord,
    Episode,
    Instance,
    KeptInstance,
    Listing,
    Monitor,
    PhoneAction,
    PingEvent,
    ReapRun,
    TerminationRequest,
    WarningRecord,
)
from reaper.core.monitors import PING_LOG_KEPT, SettingsChange
from reaper.core.snapshot import AccountSnapshot, Snapshot
from reaper.store.base import Store

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
# The same instant as T0 + 1h, spelled in another zone: stores must answer in UTC.
PLUS_TWO = timezone(timedelta(hours=2))
HOUR = timedelta(hours=1)
MINUTE = timedelta(minutes=1)
SECOND = timedelta(seconds=1)


def assert_utc(moment: datetime | None) -> None:
    assert moment is not None
    assert moment.tzinfo is not None, f"naive datetime {moment!r}"
    assert moment.utcoffset() == timedelta(0), f"not UTC: {moment!r}"


def audit_record(
    instance_id: str = "pod-1",
    requested_at: datetime = T0,
    *,
    provider: str = "runpod",
    result: str = "deleted",
    confirmed: bool = False,
) -> AuditRecord:
    return AuditRecord.model_validate(
        {
            "provider": provider,
            "account": "main",
            "id": instance_id,
            "name": f"name of {instance_id}",
            "reason": "stopped for 25h (limit 24h)",
            "requested_at": requested_at,
            "stopped_since": requested_at - timedelta(hours=25),
            "cost_per_hour": 0.012,
            "result": result,
            "detail": "" if result == "deleted" else "HTTP 500",
            "confirmed": confirmed,
            "confirmed_at": requested_at + MINUTE if confirmed else None,
        }
    )


def warning(at: datetime, *, heard: bool = True, mode: str = "enforce") -> WarningRecord:
    """A warning with every fact its license is checked against (`reaper.core.license`)."""
    return WarningRecord.model_validate(
        {
            "at": at,
            "heard": heard,
            "mode": mode,
            "terminate_at": at + HOUR,
            "stretch": at - 23 * HOUR,
            "issued_at": at - SECOND,
            "ttl": 24 * HOUR,
            "warn_before": HOUR,
        }
    )


def reap_run(at: datetime, finished_at: datetime, *, dry_run: bool = False) -> ReapRun:
    return ReapRun(
        at=at,
        finished_at=finished_at,
        dry_run=dry_run,
        mode="enforce",
        instances=3,
        terminated=1,
        warned=1,
        errors=0,
        exit_code=0,
    )


def full_monitor(host: str = "trainer-1") -> Monitor:
    """A monitor with every field set to a non-default value, for round trips."""
    return Monitor(
        host=host,
        status="down",
        created_at=T0,
        last_ping_at=T0 + MINUTE,
        last_ping_kind="fail",
        last_exit_status=3,
        last_message="Traceback: CUDA out of memory ✗ \n\t 'quotes' \"double\"",
        job_started_at=T0 + SECOND,
        down_since=T0 + 2 * MINUTE,
        last_alert_at=T0 + 3 * MINUTE,
        bye_at=T0 + 4 * MINUTE,
        stopped_noted=True,
        absent_since=T0 + 5 * MINUTE,
        # Its own settings, pause, mute and the ping log.
        timeout=timedelta(hours=2),
        grace=timedelta(minutes=10),
        paused=True,
        resumed_at=T0 + 6 * MINUTE,
        muted_until=T0 + 24 * HOUR,
        alert_held=True,
        events=42,
        notified_at=T0 + 7 * MINUTE,
    )


KEEP_A_DAY = PhoneAction(
    kind="keep",
    label="Keep 1 day",
    targets=("runpod:pod-1",),
    subject="trainer ✗ <b>&amp; (runpod:pod-1)",
    duration=timedelta(days=1),
)


def grant(
    grant_id: str = "g", *, expires_at: datetime = T0 + HOUR, **fields: object
) -> ActionGrant:
    return ActionGrant.model_validate(
        {
            "id": grant_id,
            "choices": (KEEP_A_DAY,),
            "created_at": T0,
            "expires_at": expires_at,
            **fields,
        }
    )


def action_record(at: datetime, *, label: str = "Keep 1 day") -> ActionRecord:
    return ActionRecord(
        at=at,
        kind="keep",
        label=label,
        targets=("runpod:pod-1",),
        subject="trainer (runpod:pod-1)",
        by="@alice (Telegram user 42)",
        via="chat button",
        done=True,
        result="Kept trainer (runpod:pod-1) until Tue 03 Mar 12:00 UTC by @alice.",
    )


def termination_request(
    key: str = "runpod:pod-1", *, at: datetime = T0, expires_at: datetime = T0 + HOUR
) -> TerminationRequest:
    return TerminationRequest(
        key=key,
        requested_at=at,
        by="action link",
        mode="enforce",
        expires_at=expires_at,
        stretch=at - 23 * HOUR,
    )


# Every write of the Store protocol, with harmless arguments: a read-only store refuses each.
WRITES: dict[str, Callable[[Store], object]] = {
    "start_stopped_clock": lambda s: s.start_stopped_clock("k", T0),
    "reset_stopped_clock": lambda s: s.reset_stopped_clock("k"),
    "record_warning": lambda s: s.record_warning("k", warning(T0)),
    "mark_warning_held": lambda s: s.mark_warning_held("k", T0, T0),
    "mark_missing": lambda s: s.mark_missing("k", T0),
    "clear_missing": lambda s: s.clear_missing("k"),
    "keep": lambda s: s.keep(KeptInstance(key="k", since=T0)),
    "unkeep": lambda s: s.unkeep("k"),
    "acquire_lease": lambda s: s.acquire_lease("reap", "me", T0, HOUR),
    "renew_lease": lambda s: s.renew_lease("reap", "me", T0, HOUR),
    "record_listing": lambda s: s.record_listing(Listing(provider="vast", account="a", at=T0)),
    "release_lease": lambda s: s.release_lease("reap", "me"),
    "record_termination": lambda s: s.record_termination(audit_record()),
    "record_reap": lambda s: s.record_reap(reap_run(T0, T0)),
    "put_monitor": lambda s: s.put_monitor(Monitor(host="h", created_at=T0)),
    "create_monitor": lambda s: s.create_monitor(Monitor(host="h", created_at=T0), 10),
    "delete_monitor": lambda s: s.delete_monitor("h"),
    "claim_alert": lambda s: s.claim_alert("k", T0, HOUR),
    "open_episode": lambda s: s.open_episode("k", T0),
    "mark_episode_alerted": lambda s: s.mark_episode_alerted("k", T0),
    "close_episode": lambda s: s.close_episode("k"),
    # --- the status page ---
    "record_snapshot": lambda s: s.record_snapshot(Snapshot(at=T0)),
    "record_login_token": lambda s: s.record_login_token("h", T0 + HOUR),
    "use_login_token": lambda s: s.use_login_token("h", T0),
    # --- actions from the phone
    "add_grant": lambda s: s.add_grant(grant()),
    "use_grant": lambda s: s.use_grant("g", T0),
    "record_action": lambda s: s.record_action(action_record(T0)),
    "request_termination": lambda s: s.request_termination(termination_request()),
    "end_termination_request": lambda s: s.end_termination_request("runpod:pod-1"),
    # Monitor settings, pause, mute and the ping log.
    "set_monitor_settings": lambda s: s.set_monitor_settings(
        "h", SettingsChange(at=T0, given=frozenset({"paused"}), paused=True)
    ),
    "pause_monitor": lambda s: s.pause_monitor("h", True, T0),
    "mute_monitor": lambda s: s.mute_monitor("h", T0 + HOUR),
    "log_event": lambda s: s.log_event("h", PingEvent(seq=1, at=T0, kind="ping")),
    "put_monitor_logged": lambda s: s.put_monitor_logged(
        Monitor(host="h", created_at=T0), PingEvent(seq=1, at=T0, kind="ping")
    ),
    # Sessions of the status page.
    "start_session": lambda s: s.start_session("s", T0, T0 + HOUR),
    "end_session": lambda s: s.end_session("s"),
}


class StoreContract:
    """Subclasses provide the `store` fixture; every test here must pass for every backend."""

    @pytest.fixture
    def clock(self) -> FakeClock:
        return FakeClock(T0)

    # --- basics --------------------------------------------------------------------------
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

    # --- the stopped clock -----------------------------------------------------------------
    def test_start_stopped_clock_records_the_start(self, store: Store, clock: FakeClock) -> None:
        store.start_stopped_clock("runpod:a", clock.now())
        since = store.history().first_seen_stopped["runpod:a"]
        assert since == T0
        assert_utc(since)

    def test_start_stopped_clock_is_idempotent(self, store: Store, clock: FakeClock) -> None:
        store.start_stopped_clock("runpod:a", clock.now())
        store.start_stopped_clock("runpod:a", clock.advance(HOUR))
        assert store.history().first_seen_stopped == {"runpod:a": T0}

    def test_times_in_other_zones_come_back_in_utc(self, store: Store) -> None:
        store.start_stopped_clock("vast:1", datetime(2026, 3, 1, 15, 0, tzinfo=PLUS_TWO))
        since = store.history().first_seen_stopped["vast:1"]
        assert since == T0 + HOUR
        assert_utc(since)

    def test_clocks_are_per_key(self, store: Store) -> None:
        store.start_stopped_clock("runpod:a", T0)
        store.start_stopped_clock("vast:a", T0 + HOUR)
        store.reset_stopped_clock("runpod:a")
        assert store.history().first_seen_stopped == {"vast:a": T0 + HOUR}

    def test_reset_forgets_the_stretch_and_its_warning(self, store: Store) -> None:
        store.start_stopped_clock("runpod:a", T0)
        store.record_warning("runpod:a", warning(T0 + HOUR))
        store.reset_stopped_clock("runpod:a")
        history = store.history()
        assert "runpod:a" not in history.first_seen_stopped
        assert "runpod:a" not in history.warnings

    def test_reset_of_an_unknown_key_changes_nothing(self, store: Store) -> None:
        store.start_stopped_clock("runpod:a", T0)
        store.reset_stopped_clock("runpod:zzz")
        assert store.history().first_seen_stopped == {"runpod:a": T0}

    def test_after_a_reset_the_clock_starts_anew(self, store: Store) -> None:
        store.start_stopped_clock("runpod:a", T0)
        store.reset_stopped_clock("runpod:a")
        store.start_stopped_clock("runpod:a", T0 + 5 * HOUR)
        assert store.history().first_seen_stopped["runpod:a"] == T0 + 5 * HOUR

    # --- warnings --------------------------------------------------------------------------
    def test_a_warning_round_trips_with_delivery_hearing_and_mode(self, store: Store) -> None:
        store.start_stopped_clock("runpod:a", T0)
        heard = warning(T0 + HOUR, heard=True, mode="enforce")
        store.record_warning("runpod:a", heard)
        stored = store.history().warnings["runpod:a"]
        assert stored == heard
        assert_utc(stored.at)
        assert_utc(stored.terminate_at)
        logged = warning(T0 + 2 * HOUR, heard=False, mode="observe")
        store.record_warning("vast:7", logged)
        assert store.history().warnings["vast:7"] == logged

    def test_a_new_warning_replaces_the_stretch_warning(self, store: Store) -> None:
        """An observe or log-only warning is replaced by the first one that can license a
        termination; a newer warning can only move a termination later."""
        store.start_stopped_clock("runpod:a", T0)
        store.record_warning("runpod:a", warning(T0 + HOUR, heard=False, mode="observe"))
        store.record_warning("runpod:a", warning(T0 + 2 * HOUR))
        assert store.history().warnings["runpod:a"] == warning(T0 + 2 * HOUR)

    def test_warnings_are_per_key(self, store: Store) -> None:
        store.start_stopped_clock("runpod:a", T0)
        store.start_stopped_clock("runpod:b", T0)
        store.record_warning("runpod:a", warning(T0 + HOUR))
        store.record_warning("runpod:b", warning(T0 + HOUR))
        assert set(store.history().warnings) == {"runpod:a", "runpod:b"}

    def test_a_warning_is_recorded_again_after_a_reset(self, store: Store) -> None:
        store.start_stopped_clock("runpod:a", T0)
        store.record_warning("runpod:a", warning(T0 + HOUR))
        store.reset_stopped_clock("runpod:a")
        assert "runpod:a" not in store.history().warnings
        store.start_stopped_clock("runpod:a", T0 + 10 * HOUR)
        store.record_warning("runpod:a", warning(T0 + 11 * HOUR))
        assert store.history().warnings["runpod:a"].at == T0 + 11 * HOUR

    def test_a_warning_keeps_its_license_facts(self, store: Store) -> None:
        store.start_stopped_clock("runpod:a", T0)
        full = warning(T0 + 23 * HOUR).model_copy(update={"held_at": T0 + 25 * HOUR})
        store.record_warning("runpod:a", full)
        stored = store.history().warnings["runpod:a"]
        assert stored == full
        for moment in (stored.stretch, stored.issued_at, stored.held_at):
            assert_utc(moment)

    def test_a_new_warning_leaves_nothing_of_the_old_one(self, store: Store) -> None:
        store.start_stopped_clock("runpod:a", T0)
        store.record_warning("runpod:a", warning(T0 + HOUR))
        assert store.mark_warning_held("runpod:a", T0 + HOUR, T0 + 2 * HOUR)
        store.record_warning("runpod:a", warning(T0 + 3 * HOUR))
        assert store.history().warnings["runpod:a"].held_at is None

    def test_a_warning_without_its_license_facts_round_trips_as_such(self, store: Store) -> None:
        """What an older reaper wrote: no stretch, no issue time. It licenses nothing."""
        store.start_stopped_clock("runpod:a", T0)
        old = WarningRecord(at=T0 + HOUR, heard=True, mode="enforce")
        store.record_warning("runpod:a", old)
        assert store.history().warnings["runpod:a"] == old

    def test_a_hold_is_marked_only_on_the_warning_it_rests_on(self, store: Store) -> None:
        store.start_stopped_clock("runpod:a", T0)
        store.record_warning("runpod:a", warning(T0 + HOUR))
        assert store.mark_warning_held("runpod:a", T0 + HOUR, T0 + 3 * HOUR) is True
        assert store.history().warnings["runpod:a"].held_at == T0 + 3 * HOUR
        assert store.mark_warning_held("runpod:a", T0 + 2 * HOUR, T0 + 4 * HOUR) is False
        assert store.history().warnings["runpod:a"].held_at == T0 + 3 * HOUR

    def test_a_hold_never_brings_back_a_dropped_warning(self, store: Store) -> None:
        store.start_stopped_clock("runpod:a", T0)
        store.record_warning("runpod:a", warning(T0 + HOUR))
        store.keep(KeptInstance(key="runpod:a", since=T0 + 2 * HOUR))
        assert store.mark_warning_held("runpod:a", T0 + HOUR, T0 + 3 * HOUR) is False
        assert store.mark_warning_held("runpod:never", T0 + HOUR, T0 + 3 * HOUR) is False
        assert store.history().warnings == {}

    # --- a keep or an unkeep voids the warning ----------------------------------------------
    def test_a_keep_drops_the_warning_of_its_instance_only(self, store: Store) -> None:
        for key in ("runpod:a", "runpod:b"):
            store.start_stopped_clock(key, T0)
            store.record_warning(key, warning(T0 + HOUR))
        store.keep(KeptInstance(key="runpod:a", since=T0 + 2 * HOUR, until=T0 + 3 * HOUR))
        history = store.history()
        assert set(history.warnings) == {"runpod:b"}
        assert history.first_seen_stopped == {"runpod:a": T0, "runpod:b": T0}, "the clock stays"

    def test_a_keep_or_an_unkeep_ends_a_terminate_now_request(self, store: Store) -> None:
        store.request_termination(termination_request("runpod:a", expires_at=T0 + 24 * HOUR))
        store.request_termination(termination_request("runpod:b", expires_at=T0 + 24 * HOUR))
        store.keep(KeptInstance(key="runpod:a", since=T0 + MINUTE))
        assert [r.key for r in store.termination_requests(T0)] == ["runpod:b"]
        store.unkeep("runpod:b")
        assert store.termination_requests(T0) == []

    def test_an_unkeep_drops_the_warning_too(self, store: Store) -> None:
        store.start_stopped_clock("runpod:a", T0)
        store.keep(KeptInstance(key="runpod:a", since=T0, until=T0 + HOUR))
        store.record_warning("runpod:a", warning(T0 + 2 * HOUR))
        assert store.unkeep("runpod:a") is True
        assert store.history().warnings == {}
        store.record_warning("runpod:a", warning(T0 + 3 * HOUR))
        assert store.unkeep("runpod:a") is False, "no keep to end"
        assert store.history().warnings == {}

    def test_a_keep_of_an_instance_without_a_stretch_records_only_the_keep(
        self, store: Store
    ) -> None:
        store.keep(KeptInstance(key="runpod:a", since=T0))
        history = store.history()
        assert history.first_seen_stopped == {} and history.warnings == {}
        assert set(history.kept) == {"runpod:a"}

    # --- absence is not a restart -----------------------------------------------------------
    def test_the_first_miss_is_kept_until_seen_again(self, store: Store) -> None:
        store.start_stopped_clock("runpod:a", T0)
        store.mark_missing("runpod:a", T0 + HOUR)
        store.mark_missing("runpod:a", T0 + 2 * HOUR)
        history = store.history()
        assert history.missing_since == {"runpod:a": T0 + HOUR}
        assert_utc(history.missing_since["runpod:a"])
        assert history.first_seen_stopped == {"runpod:a": T0}
        store.clear_missing("runpod:a")
        assert store.history().missing_since == {}
        store.mark_missing("runpod:a", T0 + 3 * HOUR)
        assert store.history().missing_since == {"runpod:a": T0 + 3 * HOUR}

    def test_a_miss_needs_a_recorded_stretch(self, store: Store) -> None:
        store.mark_missing("runpod:nothing", T0)
        store.clear_missing("runpod:nothing")
        history = store.history()
        assert history.missing_since == {} and history.first_seen_stopped == {}

    def test_a_reset_forgets_the_miss(self, store: Store) -> None:
        store.start_stopped_clock("runpod:a", T0)
        store.mark_missing("runpod:a", T0 + HOUR)
        store.reset_stopped_clock("runpod:a")
        store.start_stopped_clock("runpod:a", T0 + 5 * HOUR)
        assert store.history().missing_since == {}

    # --- last listings -----------------------------------------------------------------------
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

    # --- keep --------------------------------------------------------------------------------
    def test_keep_round_trip_with_and_without_until(self, store: Store) -> None:
        forever = KeptInstance(key="runpod:a", since=T0)
        until = KeptInstance(key="vast:7", since=T0, until=T0 + 24 * HOUR)
        store.keep(forever)
        store.keep(until)
        kept = store.history().kept
        assert kept == {"runpod:a": forever, "vast:7": until}
        assert kept["runpod:a"].until is None
        assert_utc(kept["vast:7"].since)
        assert_utc(kept["vast:7"].until)

    def test_keep_again_replaces(self, store: Store) -> None:
        store.keep(KeptInstance(key="runpod:a", since=T0, until=T0 + HOUR))
        store.keep(KeptInstance(key="runpod:a", since=T0 + MINUTE, until=None))
        assert store.history().kept == {
            "runpod:a": KeptInstance(key="runpod:a", since=T0 + MINUTE, until=None)
        }

    def test_unkeep(self, store: Store) -> None:
        store.keep(KeptInstance(key="runpod:a", since=T0))
        store.keep(KeptInstance(key="runpod:b", since=T0))
        assert store.unkeep("runpod:a") is True
        assert store.unkeep("runpod:a") is False
        assert store.unkeep("runpod:never") is False
        assert set(store.history().kept) == {"runpod:b"}

    # --- the lease -------------------------------------------------------------------------
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

    # --- audit -----------------------------------------------------------------------------
    def test_audit_round_trip(self, store: Store) -> None:
        record = audit_record(confirmed=True)
        store.record_termination(record)
        [stored] = store.audit_log()
        assert stored == record
        for moment in (stored.requested_at, stored.stopped_since, stored.confirmed_at):
            assert_utc(moment)

    def test_audit_upserts_by_provider_id_and_request_time(self, store: Store) -> None:
        store.record_termination(audit_record("pod-1", T0, confirmed=False))
        store.record_termination(audit_record("pod-1", T0, confirmed=True))
        assert store.audit_log() == [audit_record("pod-1", T0, confirmed=True)]

    def test_audit_keeps_distinct_records_apart(self, store: Store) -> None:
        records = [
            audit_record("pod-1", T0),
            audit_record("pod-1", T0 + HOUR),  # the same pod, a later request
            audit_record("pod-1", T0, provider="vast"),  # the same id at the other provider
            audit_record("pod-2", T0, result="failed"),
        ]
        for record in records:
            store.record_termination(record)
        assert len(store.audit_log()) == 4
        assert {(r.provider, r.id, r.requested_at) for r in store.audit_log()} == {
            (r.provider, r.id, r.requested_at) for r in records
        }

    def test_audit_upsert_matches_the_instant_not_its_spelling(self, store: Store) -> None:
        store.record_termination(audit_record("pod-1", T0 + HOUR))
        same_instant = datetime(2026, 3, 1, 15, 0, tzinfo=PLUS_TWO)
        store.record_termination(audit_record("pod-1", same_instant, confirmed=True))
        [stored] = store.audit_log()
        assert stored.confirmed is True
        assert stored.requested_at == T0 + HOUR
        assert_utc(stored.requested_at)

    def test_audit_keeps_whether_a_termination_was_announced(self, store: Store) -> None:
        record = audit_record(confirmed=True).model_copy(update={"announced": False})
        store.record_termination(record)
        assert store.audit_log() == [record]
        store.record_termination(record.model_copy(update={"announced": True}))
        [again] = store.audit_log()
        assert again.announced
        settled = audit_record("pod-2", T0 + HOUR, result="not_sent")
        store.record_termination(settled)
        assert store.audit_log()[-1].result == "not_sent"

    def test_audit_is_oldest_first(self, store: Store) -> None:
        for hours in (5, 1, 3, 2, 4):
            store.record_termination(audit_record(f"pod-{hours}", T0 + hours * HOUR))
        times = [record.requested_at for record in store.audit_log()]
        assert times == [T0 + h * HOUR for h in (1, 2, 3, 4, 5)]

    def test_audit_since_is_inclusive(self, store: Store) -> None:
        for hours in (1, 2, 3):
            store.record_termination(audit_record(f"pod-{hours}", T0 + hours * HOUR))
        assert [r.id for r in store.audit_log(since=T0 + 2 * HOUR)] == ["pod-2", "pod-3"]
        assert [r.id for r in store.audit_log(since=T0 + 2 * HOUR + SECOND)] == ["pod-3"]
        assert store.audit_log(since=T0 + 4 * HOUR) == []
        assert len(store.audit_log(since=T0)) == 3

    # --- reap runs -------------------------------------------------------------------------
    def test_last_reap_is_the_latest_finished(self, store: Store) -> None:
        late = reap_run(T0, T0 + 10 * MINUTE)
        early = reap_run(T0 + MINUTE, T0 + 2 * MINUTE)
        store.record_reap(late)
        store.record_reap(early)
        assert store.last_reap() == late

    def test_last_reap_counts_dry_runs(self, store: Store) -> None:
        store.record_reap(reap_run(T0, T0 + MINUTE))
        dry = reap_run(T0 + HOUR, T0 + HOUR + MINUTE, dry_run=True)
        store.record_reap(dry)
        last = store.last_reap()
        assert last == dry
        assert last is not None
        assert_utc(last.at)
        assert_utc(last.finished_at)

    # --- monitors --------------------------------------------------------------------------
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

    # --- alert claims ----------------------------------------------------------------------
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

    # --- episodes --------------------------------------------------------------------------
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

    # --- the status page: who kept, snapshots, sign-in tokens ------------------------------
    def test_a_keep_remembers_who_asked(self, store: Store) -> None:
        store.keep(KeptInstance(key="runpod:a", since=T0, until=T0 + HOUR, by="status page"))
        store.keep(KeptInstance(key="vast:1", since=T0))
        kept = store.history().kept
        assert kept["runpod:a"].by == "status page"
        assert kept["vast:1"].by == ""
        store.keep(KeptInstance(key="runpod:a", since=T0 + MINUTE, by="reaper keep"))
        assert store.history().kept["runpod:a"] == KeptInstance(
            key="runpod:a", since=T0 + MINUTE, by="reaper keep"
        )

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

    # --- actions from the phone ------------------------------------------------------------
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

    def test_termination_requests_until_they_expire_or_end(self, store: Store) -> None:
        store.request_termination(termination_request("vast:9", expires_at=T0 + 2 * HOUR))
        store.request_termination(termination_request("runpod:pod-1", expires_at=T0 + HOUR))
        assert [r.key for r in store.termination_requests(T0)] == ["runpod:pod-1", "vast:9"]
        assert [r.key for r in store.termination_requests(T0 + HOUR)] == ["vast:9"]
        [request] = store.termination_requests(T0 + HOUR)
        assert request == termination_request("vast:9", expires_at=T0 + 2 * HOUR)
        assert_utc(request.requested_at)
        store.end_termination_request("vast:9")
        store.end_termination_request("never-asked")
        assert store.termination_requests(T0) == [
            termination_request("runpod:pod-1", expires_at=T0 + HOUR)
        ]

    def test_a_newer_request_replaces_the_older(self, store: Store) -> None:
        store.request_termination(termination_request(at=T0, expires_at=T0 + HOUR))
        store.request_termination(termination_request(at=T0 + MINUTE, expires_at=T0 + 2 * HOUR))
        [request] = store.termination_requests(T0 + 90 * MINUTE)
        assert request.requested_at == T0 + MINUTE

    # --- monitor mutes ---------------------------------------------------------------------
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

    # --- monitor settings, pause, mute and the ping log ------------------------------------
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

    # --- sessions of the status page -------------------------------------------------------
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
