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
