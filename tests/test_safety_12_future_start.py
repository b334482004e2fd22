"""Issue 12.12: a start time in the future is unreadable: the recorded stretch is kept (the pod
is still warned and reaped on time) and an alert names it."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from tests.reap_support import action_of, events, world


def test_an_exited_pod_with_a_start_in_the_future_is_still_reaped_and_alerted(
    tmp_path: Path,
) -> None:
    with world(tmp_path) as w:
        future = (w.clock.now() + timedelta(days=30)).isoformat()
        pod = w.runpod.add_pod(status="EXITED", startedAt=future)
        w.run()
        assert events(w.notifier).count("future_start") == 1
        w.advance(23)
        assert action_of(w.run(), pod) == "warn"
        w.advance(1)
        assert action_of(w.run(), pod) == "terminate"
        assert events(w.notifier).count("future_start") == 1, "one alert per episode"


def test_a_start_time_at_the_edge_of_the_calendar_is_unreadable_not_a_crash(
    tmp_path: Path,
) -> None:
    """Review finding: `9999-12-31T23:59:59-05:00` parses, then overflows in UTC; it must read
    as no start time at all, and the guards and the report must go on."""
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED", startedAt="9999-12-31T23:59:59-05:00")
        report = w.run()
        (listed,) = [i for i in report.instances if i.id == pod]
        assert listed.started_at is None
        assert report.guards is not None and report.guards.warnings == []
