"""Issue 12.2: a pass that stalled past its lease never takes it back and never acts again."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from reaper.core.models import Alert
from reaper.passes.reap.state import LEASE_NAME, LEASE_TTL
from tests.reap_support import ActingNotifier, world


def test_a_pass_that_stalled_past_its_lease_stops_before_deleting(tmp_path: Path) -> None:
    """While its warnings go out the pass stalls past its lease; another pass takes the lease,
    finishes and releases it. The stalled pass must not renew (it would take the lease back)
    and must not delete the pod the other pass saw."""
    with world(tmp_path) as w:
        due = w.runpod.add_pod(status="EXITED", name="due")
        w.run()
        w.advance(2)
        w.runpod.add_pod(status="EXITED", name="warned-in-the-same-pass")
        w.run()
        w.advance(20)
        w.run()
        w.advance(2)
        other = w.store()

        def stall_while_another_pass_runs(alert: Alert) -> None:
            if alert.event != "termination_warning":
                return
            w.clock.advance(LEASE_TTL + timedelta(minutes=1))
            assert other.acquire_lease(LEASE_NAME, "another-pass", w.clock.now(), LEASE_TTL)
            other.release_lease(LEASE_NAME, "another-pass")

        report = w.run(notifier=ActingNotifier(stall_while_another_pass_runs))
        other.close()
        assert report.lease_lost and report.exit_code == 1
        assert w.runpod.mutations == []
        assert w.runpod.pod(due) is not None


def test_a_pass_whose_lease_was_taken_meanwhile_stops_at_once(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        w.runpod.add_pod(status="EXITED")
        w.reach_deadline()
        other = w.store()

        def taken(alert: Alert) -> None:
            w.clock.advance(LEASE_TTL)
            other.acquire_lease(LEASE_NAME, "another-pass", w.clock.now(), LEASE_TTL)

        # The provider-failing alert is the first alert of the pass: make one happen.
        w.vast.fail_next("list", 500, count=10)
        report = w.run(notifier=ActingNotifier(taken))
        other.close()
        assert report.lease_lost and report.exit_code == 1
        assert w.runpod.mutations == []
