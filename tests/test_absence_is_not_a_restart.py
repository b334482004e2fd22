"""Issue 24.6: an instance missing from one complete listing keeps its stopped clock and its
warning. Only two complete listings at least REAPER_REAP_EVERY apart that both miss it (it is
gone), or a running/starting reading, end the stretch."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from tests.reap_support import World, action_of, world


def _missing_once(w: World, pod: str) -> None:
    """One pass whose (complete) listing does not show the pod; it is back for the next."""
    entry = w.runpod.entry(pod)
    assert entry is not None
    w.runpod.remove_entry(pod)
    w.run()
    w.runpod.add_pod_json(entry)


def _recorded(w: World, key: str) -> bool:
    store = w.store(read_only=True)
    try:
        return key in store.history().first_seen_stopped
    finally:
        store.close()


def test_a_pod_dropped_from_one_listing_a_day_is_still_reaped_on_time(tmp_path: Path) -> None:
    """Hourly passes; the pod is missing from one listing about once per TTL (before its
    warning, and between its warning and its deadline). It is warned at 22h (within
    REAPER_WARN_BEFORE + REAPER_REAP_EVERY of its deadline) and terminated at 24h, as if it had
    been listed every time."""
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED", name="flaky-listing")
        w.runpod.add_pod(status="RUNNING", name="witness")
        actions: dict[int, str | None] = {}
        for hour in range(0, 25):
            if hour == 12:
                _missing_once(w, pod)
            elif hour == 24:
                w.clock.advance(timedelta(minutes=-30))
                _missing_once(w, pod)  # at 23h30, between the warning and the deadline
                w.clock.advance(timedelta(minutes=30))
                actions[hour] = action_of(w.run(), pod)
            else:
                actions[hour] = action_of(w.run(), pod)
            w.advance(1)
        assert actions[22] == "warn" and actions[23] is None
        assert actions[24] == "terminate"
        assert [m.method for m in w.runpod.mutations] == ["DELETE"]


def test_two_listings_a_period_apart_that_miss_it_end_the_stretch(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED")
        w.runpod.add_pod(status="RUNNING", name="witness")
        w.run()
        entry = w.runpod.entry(pod)
        assert entry is not None
        w.runpod.remove_entry(pod)
        w.advance(0.5)
        w.run()
        assert _recorded(w, f"runpod:{pod}"), "one miss is not an end"
        w.advance(0.25)
        w.run()
        assert _recorded(w, f"runpod:{pod}"), "two misses less than a period apart neither"
        w.advance(0.75)
        w.run()
        assert not _recorded(w, f"runpod:{pod}"), "missed a full period apart: it is gone"
        # Back again later, it is a new stretch.
        w.runpod.add_pod_json(entry)
        w.advance(1)
        report = w.run()
        (listed,) = [i for i in report.instances if i.id == pod]
        assert listed.stopped_since == w.clock.now()


def test_a_miss_is_forgotten_once_it_is_seen_again(tmp_path: Path) -> None:
    """Missed, seen, missed again an hour later: two misses, but not two in a row."""
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED")
        w.runpod.add_pod(status="RUNNING", name="witness")
        w.run()
        w.advance(1)
        _missing_once(w, pod)
        w.advance(0.5)
        w.run()
        w.advance(0.5)
        _missing_once(w, pod)
        assert _recorded(w, f"runpod:{pod}")


def test_a_listing_that_fails_proves_nothing_either(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED")
        w.runpod.add_pod(status="RUNNING", name="witness")
        w.run()
        w.runpod.fail_next("list", 500, count=20)
        for _ in range(3):
            w.advance(1)
            w.run()
        assert _recorded(w, f"runpod:{pod}")
