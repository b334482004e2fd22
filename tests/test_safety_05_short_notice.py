"""Issue 12.5: the notice runs from the warning's delivery, not from the pass's start; many
warnings go out at once so that a slow channel cannot eat one instance's notice."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from reaper.core.models import Alert
from tests.reap_support import ActingNotifier, action_of, world


def test_a_warning_delivered_late_gives_the_full_notice_from_its_delivery(
    tmp_path: Path,
) -> None:
    """The warning goes out an hour before the deadline and the channel takes 90 seconds to
    deliver it (back-offs, a time-out, a retry): the termination waits REAPER_WARN_BEFORE from
    when the phone actually got it, past the deadline. (A longer wait is the same rule; the
    fake clock jumps past the 2-minute lease, which a real pass renews while it waits.)"""
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED")
        w.run()
        w.advance(23)

        def slow_delivery(alert: Alert) -> None:
            w.clock.advance(timedelta(seconds=90))

        assert action_of(w.run(notifier=ActingNotifier(slow_delivery)), pod) == "warn"
        delivered = w.clock.now()
        store = w.store(read_only=True)
        assert store.history().warnings[f"runpod:{pod}"].at == delivered
        store.close()
        # The deadline (24h) has come, but the notice from the delivery has not run out.
        w.clock.set(delivered + timedelta(minutes=40))
        assert action_of(w.run(), pod) is None
        w.clock.set(delivered + timedelta(minutes=59))
        assert action_of(w.run(), pod) is None
        assert w.runpod.mutations == []
        w.clock.set(delivered + timedelta(hours=1))
        assert action_of(w.run(), pod) == "terminate"


def test_warnings_of_one_pass_go_out_at_once(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        pods = [w.runpod.add_pod(status="EXITED") for _ in range(3)]
        w.run()
        w.advance(22.5)
        notifier = ActingNotifier(delay=0.2)
        report = w.run(notifier=notifier)
        assert all(action_of(report, p) == "warn" for p in pods)
        assert notifier.peak_in_flight == 3, "one slow send must not hold back the others"


def test_the_warning_names_the_time_of_the_termination(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        w.runpod.add_pod(status="EXITED")
        w.run()
        w.advance(23)
        w.run()
        (warning,) = [a for a in w.notifier.alerts if a.event == "termination_warning"]
        # First seen at 09:00 on 2 March: the deadline is 09:00 on the 3rd.
        assert "2026-03-03 09:00 UTC" in warning.title
