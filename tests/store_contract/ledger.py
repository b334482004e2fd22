"""The reap ledger: stopped clocks, warnings, keeps, absences, audit records, reap runs and
"terminate now" requests (`reaper.store.ports.ReapLedger`)."""

from __future__ import annotations

from datetime import datetime

from emulators.clock import FakeClock
from reaper.core.models import KeptInstance, WarningRecord
from reaper.store.ports import Store
from tests.store_contract.records import (
    HOUR,
    MINUTE,
    PLUS_TWO,
    SECOND,
    T0,
    assert_utc,
    audit_record,
    reap_run,
    termination_request,
    warning,
)


class LedgerContract:
    """Every test here must pass for every backend (the `store` fixture is the
    subclass's)."""

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

    def test_history_of_one_instance_reads_what_history_holds_of_it(self, store: Store) -> None:
        """The gate's last look right before a DELETE leaves (point reads of one key)."""
        for key in ("runpod:a", "runpod:b"):
            store.start_stopped_clock(key, T0, started_at=T0 - HOUR)
            store.record_warning(key, warning(T0 + HOUR))
            store.request_termination(termination_request(key, expires_at=T0 + 3 * HOUR))
        store.keep(KeptInstance(key="runpod:b", since=T0 + 2 * HOUR, until=None, by="me"))
        store.request_termination(termination_request("runpod:b", expires_at=T0 + 3 * HOUR))
        now = T0 + 2 * HOUR
        whole = store.history()
        for key in ("runpod:a", "runpod:b"):
            one = store.history_of(key, now)
            assert one.first_seen_stopped == {key: T0}
            assert one.stretch_started == {key: T0 - HOUR}
            assert one.warnings == ({key: whole.warnings[key]} if key in whole.warnings else {})
            assert one.kept == ({key: whole.kept[key]} if key in whole.kept else {})
            [request] = [r for r in store.termination_requests(now) if r.key == key]
            assert one.requests == {key: request}
        assert store.history_of("runpod:a", T0 + 3 * HOUR).requests == {}, "expired"
        assert store.history_of("runpod:none", now) == type(whole)()
