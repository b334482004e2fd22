"""The reap pass end to end against the emulators, clock injected."""

from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta
from pathlib import Path

from emulators.clock import FakeClock
from reaper.core.models import Alert, Delivery, History
from reaper.core.units import iso
from tests.fakes.notifiers import StandIn
from tests.reap_support import action_of, world
from tests.settings_support import replaced


def test_first_deploy_with_pods_stopped_for_a_week_warns_before_it_terminates(
    tmp_path: Path,
) -> None:
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED", name="forgotten")
        inst = str(w.vast.add_instance(actual_status="stopped", label="also-forgotten"))

        first = w.run()
        assert first.actions == [] and first.exit_code == 0
        assert w.runpod.mutations == [] and w.vast.mutations == []
        stopped = {i.id: i.stopped_since for i in first.instances}
        assert stopped[pod] == w.clock.now() and stopped[inst] == w.clock.now()

        w.advance(23)
        second = w.run()
        assert action_of(second, pod) == "warn" and action_of(second, inst) == "warn"
        assert all(a.done for a in second.actions)
        assert w.runpod.mutations == [] and w.vast.mutations == []
        assert [a.event for a in w.notifier.alerts].count("termination_warning") == 2

        w.advance(1)
        third = w.run()
        assert action_of(third, pod) == "terminate" and action_of(third, inst) == "terminate"
        assert all(a.done and a.confirmed for a in third.actions)
        assert third.exit_code == 0
        assert [r.method for r in w.runpod.mutations] == ["DELETE"]
        assert [r.method for r in w.vast.mutations] == ["DELETE"]
        assert w.runpod.pod_ids() == [] or w.runpod.pod(pod)["status"] == "TERMINATED"

        store = w.store()
        records = store.audit_log()
        store.close()
        assert {(r.provider, r.id, r.confirmed) for r in records} == {
            ("runpod", pod, True),
            ("vast", inst, True),
        }


def test_a_pod_started_and_stopped_again_restarts_its_clock(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED")
        w.run()
        w.advance(23)
        assert action_of(w.run(), pod) == "warn"

        w.runpod.set_status(pod, "RUNNING")
        w.advance(0.5)
        running = w.run()
        assert action_of(running, pod) is None
        assert next(i for i in running.instances if i.id == pod).stopped_since is None

        w.runpod.set_status(pod, "EXITED")
        w.advance(0.5)
        again = w.run()
        assert next(i for i in again.instances if i.id == pod).stopped_since == w.clock.now()
        # The old warning belonged to the old stretch: a full TTL and a new warning are needed.
        w.advance(2)
        assert action_of(w.run(), pod) is None
        assert w.runpod.mutations == []
        w.advance(21)
        assert action_of(w.run(), pod) == "warn"
        w.advance(1)
        assert action_of(w.run(), pod) == "terminate"


def test_unknown_statuses_are_reported_and_never_touched(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        odd = w.runpod.add_pod(status="ERROR")
        frozen = str(w.vast.add_instance(actual_status="frozen"))
        offline = str(w.vast.add_instance(actual_status="offline"))
        for _ in range(4):
            report = w.run()
            w.advance(24)
        states = {i.id: i.state for i in report.instances}
        assert states[odd] == states[frozen] == states[offline] == "unknown"
        assert report.actions == []
        assert w.runpod.mutations == [] and w.vast.mutations == []


def test_protected_locked_and_kept_instances_are_never_touched(tmp_path: Path) -> None:
    from datetime import timedelta

    from reaper.core.models import KeptInstance

    with world(tmp_path) as w:
        marked = w.runpod.add_pod(status="EXITED", name="cache reaper:keep")
        locked = w.runpod.add_pod(status="EXITED", locked=True)
        kept = str(w.vast.add_instance(actual_status="stopped"))
        store = w.store()
        store.keep(
            KeptInstance(
                key=f"vast:{kept}", since=w.clock.now(), until=w.clock.now() + timedelta(days=30)
            )
        )
        store.close()
        for _ in range(4):
            report = w.run()
            w.advance(24)
        assert {action_of(report, i) for i in (marked, locked, kept)} == {"protect"}
        assert w.runpod.mutations == [] and w.vast.mutations == []


def test_dry_run_makes_no_mutating_call_sends_no_alert_and_creates_no_state(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        w.runpod.add_pod(status="EXITED")
        report = w.run(dry_run=True)
        assert report.dry_run and report.exit_code == 0
        assert not w.state_path.exists() and not w.state_path.parent.exists()
        assert w.notifier.alerts == []
        assert w.runpod.mutations == [] and w.vast.mutations == []


def test_dry_run_lists_the_same_actions_a_real_pass_would_take(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED")
        w.reach_deadline()
        alerts_before = len(w.notifier.alerts)
        dry = w.run(dry_run=True)
        assert [(a.id, a.action, a.done, a.confirmed) for a in dry.actions] == [
            (pod, "terminate", False, False)
        ]
        assert w.runpod.mutations == [] and len(w.notifier.alerts) == alerts_before
        real = w.run()
        assert [(a.id, a.action) for a in real.actions] == [(pod, "terminate")]


def test_observe_mode_warns_and_reports_but_never_destroys(tmp_path: Path) -> None:
    with world(tmp_path, mode="observe") as w:
        pod = w.runpod.add_pod(status="EXITED")
        w.run()
        w.advance(23)
        assert action_of(w.run(), pod) == "warn"
        w.advance(1)
        held = w.run()
        assert action_of(held, pod) == "hold"
        assert "would terminate" in held.actions[0].reason
        w.advance(1)
        w.run()
        assert w.runpod.mutations == []
        events = [a.event for a in w.notifier.alerts]
        assert events.count("termination_warning") == 1
        assert events.count("would_terminate") == 1  # once per stretch, not every pass


def test_cap_exceeded_holds_everything_alerts_once_and_exits_1(tmp_path: Path) -> None:
    with world(tmp_path, max_terminations=2) as w:
        pods = [w.runpod.add_pod(status="EXITED") for _ in range(2)]
        inst = str(w.vast.add_instance(actual_status="exited"))
        w.reach_deadline()
        report = w.run()
        assert {action_of(report, i) for i in [*pods, inst]} == {"hold"}
        assert report.cap_exceeded and report.exit_code == 1
        assert w.runpod.mutations == [] and w.vast.mutations == []
        assert [a.event for a in w.notifier.alerts].count("cap_exceeded") == 1
        # The command-line override lets a human who checked the list go ahead.
        override = w.run(max_terminations=3)
        assert {action_of(override, i) for i in [*pods, inst]} == {"terminate"}


def test_one_provider_down_the_other_is_still_reaped_and_exit_is_1(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        inst = str(w.vast.add_instance(actual_status="stopped"))
        w.runpod.add_pod(status="EXITED")
        w.reach_deadline()
        w.runpod.set_down("503")
        report = w.run()
        assert action_of(report, inst) == "terminate" and report.actions[0].confirmed
        assert [(e.provider, e.account) for e in report.errors] == [("runpod", "main")]
        assert report.exit_code == 1
        assert all(i.provider == "vast" for i in report.instances)
        assert [a.event for a in w.notifier.alerts].count("provider_failing") == 1
        # Still down next pass: no second alert for the same outage.
        w.advance(1)
        w.run()
        assert [a.event for a in w.notifier.alerts].count("provider_failing") == 1


def test_a_listing_that_fails_part_way_decides_nothing_for_that_account(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        ids = [str(w.vast.add_instance(actual_status="stopped")) for _ in range(60)]
        w.reach_deadline()
        w.vast.fail_page(2, status=500, count=10)
        report = w.run()
        assert report.errors and report.errors[0].provider == "vast"
        assert not any(a.id in ids for a in report.actions)
        assert w.vast.mutations == []


def test_a_delete_that_never_confirms_alerts_and_exits_1(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        w.runpod.delete_never_confirms = True
        pod = w.runpod.add_pod(status="EXITED")
        w.reach_deadline()
        report = w.run()
        action = report.actions[0]
        assert (action.id, action.action, action.done, action.confirmed) == (
            pod,
            "terminate",
            True,
            False,
        )
        assert report.exit_code == 1
        assert [a.event for a in w.notifier.alerts].count("termination_unconfirmed") == 1
        store = w.store()
        (record,) = store.audit_log()
        store.close()
        assert record.result == "deleted" and not record.confirmed
        # Idempotent: the next pass tries again, and the audit keeps both attempts.
        w.runpod.delete_never_confirms = False
        w.advance(1)
        retry = w.run()
        assert retry.actions[0].confirmed and retry.exit_code == 0


def test_a_failed_delete_is_recorded_alerted_and_exits_1(tmp_path: Path) -> None:
    """A delete the provider refused outright (a 4xx) is `failed`, not done."""
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED")
        w.reach_deadline()
        w.runpod.fail_next("delete", 403, count=10)
        report = w.run()
        assert action_of(report, pod) == "terminate"
        assert not report.actions[0].done and report.exit_code == 1
        store = w.store()
        (record,) = store.audit_log()
        store.close()
        assert record.result == "failed" and record.detail


def test_a_delete_whose_answer_never_came_is_settled_by_re_listing(tmp_path: Path) -> None:
    """5xx on every attempt: the delete went out, what it did is unknown. It is kept as
    requested and confirmed (or not) by re-listing, never written off as failed."""
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED")
        w.reach_deadline()
        w.runpod.fail_next("delete", 500, count=10)
        report = w.run()
        (action,) = report.actions
        assert (action.id, action.done, action.confirmed) == (pod, True, False)
        assert report.exit_code == 1
        store = w.store()
        (record,) = store.audit_log()
        store.close()
        assert record.result == "requested" and "answer unknown" in record.detail


class FailingNotifier(StandIn):
    async def send(self, alert: Alert) -> list[Delivery]:
        return [Delivery(channel="telegram", ok=False, detail="down")]


def test_an_undelivered_warning_is_not_recorded_so_nothing_is_terminated(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED")
        w.run()
        w.advance(23)
        silent = w.run(notifier=FailingNotifier())
        assert action_of(silent, pod) == "warn" and not silent.actions[0].done
        w.advance(1)
        # The deadline passed, but nobody was told: warn (again) instead of terminating.
        assert action_of(w.run(), pod) == "warn"
        assert w.runpod.mutations == []


def test_two_passes_at_once_one_runs_and_the_other_says_the_lease_is_taken(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        w.runpod.add_pod(status="EXITED")
        w.runpod.set_latency(0.3)
        results = []

        def one() -> None:
            results.append(w.run())

        threads = [threading.Thread(target=one) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(r.lease_taken for r in results) == [False, True]
        assert all(r.exit_code == 0 for r in results)
        # The lease is released afterwards: the next pass runs.
        assert not w.run().lease_taken


def test_two_accounts_of_one_provider_are_both_listed(tmp_path: Path) -> None:
    from reaper.settings.parse import Account

    with world(tmp_path) as w:
        w.runpod.keys["second"] = "rp-second-key-0123456789"
        w.runpod.add_pod(status="RUNNING", account="main")
        w.runpod.add_pod(status="RUNNING", account="second")
        settings = replaced(
            w.settings,
            runpod_accounts=(
                *w.settings.accounts[:1],
                Account("runpod", "second", "rp-second-key-0123456789"),
            ),
        )
        report = w.run(settings=settings)
        assert sorted(i.account for i in report.instances if i.provider == "runpod") == [
            "main",
            "second",
        ]
        assert report.errors == []


def test_the_pass_lists_providers_concurrently(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        w.runpod.slow_next("list", seconds=1.0)
        w.vast.slow_next("list", seconds=1.0)
        started = time.perf_counter()
        w.run()
        elapsed = time.perf_counter() - started
        # One after the other would take at least 2 s; side by side, about 1 s.
        assert elapsed < 1.8, elapsed


def test_a_restart_no_pass_saw_voids_the_warning(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED", name="data")
        w.run()
        w.advance(23)
        assert action_of(w.run(), pod) == "warn"
        # Between passes the user starts it (RunPod records startedAt) and stops it again.
        w.runpod.set_status(pod, "RUNNING")
        w.runpod.modify_pod(pod, startedAt=iso(w.clock.now() + timedelta(minutes=20)))
        w.runpod.set_status(pod, "EXITED")
        w.advance(1)
        report = w.run()
        assert action_of(report, pod) is None
        assert next(i for i in report.instances if i.id == pod).stopped_since == w.clock.now()
        assert w.runpod.mutations == []


class TickingClock(FakeClock):
    """Like a real clock, time moves while a pass runs: every read is one second later."""

    def now(self) -> datetime:
        moment = super().now()
        self.advance(timedelta(seconds=1))
        return moment


def test_the_termination_happens_at_the_deadline_the_warning_announced(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        w.set_clock(TickingClock(w.clock.now()))
        pod = w.runpod.add_pod(status="EXITED")
        w.run()
        start = w.clock.now()
        # Hourly passes: the one within REAPER_WARN_BEFORE + REAPER_REAP_EVERY of the deadline
        # warns, so that the full notice has run from the warning's delivery by the first pass
        # at the deadline, which terminates.
        w.clock.set(start + timedelta(hours=22))
        assert action_of(w.run(), pod) == "warn"
        w.clock.set(start + timedelta(hours=23))
        assert action_of(w.run(), pod) is None
        w.clock.set(start + timedelta(hours=24))
        assert action_of(w.run(), pod) == "terminate"


def test_a_pass_that_lost_its_lease_stops_acting(tmp_path: Path) -> None:
    from reaper.passes.reap.state import LEASE_NAME, LEASE_TTL

    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED")
        w.reach_deadline()
        store = w.store()
        read_history = store.history

        def history_after_another_pass_took_the_lease() -> History:
            # As if this pass ran past its TTL while listing and a later pass took the lease.
            later = w.clock.now() + LEASE_TTL
            assert store.acquire_lease(LEASE_NAME, "a-later-pass", later, LEASE_TTL)
            return read_history()

        store.history = history_after_another_pass_took_the_lease  # type: ignore[method-assign]
        report = w.run(store=store)
        store.close()
        assert report.lease_lost and report.exit_code == 1
        assert action_of(report, pod) is None
        assert w.runpod.mutations == []


def test_records_of_instances_gone_from_a_complete_listing_are_forgotten(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        gone = w.runpod.add_pod(status="EXITED")
        kept = str(w.vast.add_instance(actual_status="stopped"))
        w.run()
        w.runpod.remove_pod(gone)
        w.vast.set_down("503")  # Vast listed nothing: its records must stay
        w.vast.remove_instance(int(kept))
        w.advance(1)
        w.run()
        # The RunPod account now lists nothing, while its last listing had the pod: one empty
        # answer proves nothing gone. The next complete listing is the first to miss it, and
        # one a full period later misses it again: forgotten (absence is not a restart).
        w.advance(1)
        w.run()
        w.advance(1)
        w.run()
        store = w.store()
        recorded = set(store.history().first_seen_stopped)
        store.close()
        assert recorded == {f"vast:{kept}"}


def test_a_pass_lists_runpod_pods_once_and_the_guards_reuse_it(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        w.runpod.add_network_volume("nv-used", name="data")
        w.runpod.add_network_volume("nv-orphan", name="old")
        w.runpod.add_pod(status="RUNNING", network_volume_id="nv-used")
        w.runpod.reset_log()
        report = w.run()
        assert w.runpod.count("list") == 1
        assert report.guards is not None
        attached = {v.id: v.attached for v in report.guards.volumes}
        assert attached == {"nv-used": True, "nv-orphan": False}
