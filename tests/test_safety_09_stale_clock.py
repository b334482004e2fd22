"""Issue 12.9: a stopped stretch never starts before the instance existed, and a pass whose
clock reads earlier than the last completed pass decides nothing."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from tests.reap_support import action_of, world


def test_a_pass_with_a_clock_two_days_behind_cannot_shorten_the_ttl(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        created = w.clock.now()
        pod = w.runpod.add_pod(status="EXITED", created_at=created)
        w.clock.set(created - timedelta(days=2))  # one pass with a clock far behind
        w.run()
        store = w.store(read_only=True)
        assert store.history().first_seen_stopped[f"runpod:{pod}"] < created
        store.close()
        # Back on time, two hours later: the stretch counts from its start (newer than the
        # recorded stretch), not from 2 days ago.
        w.clock.set(created + timedelta(hours=2))
        report = w.run()
        (listed,) = [i for i in report.instances if i.id == pod]
        assert listed.stopped_since is not None and listed.stopped_since >= created
        assert action_of(report, pod) is None
        assert w.runpod.mutations == []


def test_a_vast_stretch_recorded_by_a_clock_behind_is_clamped_to_creation(
    tmp_path: Path,
) -> None:
    """Vast reports no start time, only `start_date` (creation): the stretch is clamped to it,
    and the instance is warned and reaped a full TTL after that, never 2 hours after."""
    with world(tmp_path) as w:
        created = w.clock.now()
        inst = w.vast.add_instance(actual_status="stopped", start_date=created.timestamp())
        w.vast.add_instance(actual_status="running")
        w.clock.set(created - timedelta(days=2))
        w.run()
        for hours in (2, 12, 21):
            w.clock.set(created + timedelta(hours=hours))
            report = w.run()
            (listed,) = [i for i in report.instances if i.id == str(inst)]
            assert listed.stopped_since == created
            assert action_of(report, str(inst)) is None
        assert [m for m in w.vast.mutations if m.kind == "delete"] == []


def test_a_pass_whose_clock_went_backwards_decides_nothing(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED")
        w.reach_deadline()
        w.clock.advance(-timedelta(hours=3))
        report = w.run()
        assert report.clock_behind and report.exit_code == 1
        assert report.actions == [] and report.instances == []
        assert w.runpod.mutations == []
        assert [a.event for a in w.notifier.alerts].count("clock_behind") == 1
        w.run()  # the same episode: no second alert
        assert [a.event for a in w.notifier.alerts].count("clock_behind") == 1
        w.clock.advance(timedelta(hours=3))
        assert action_of(w.run(), pod) == "terminate"


def test_a_clock_a_day_ahead_of_the_providers_decides_nothing(tmp_path: Path) -> None:
    """Review finding: a clock jumped forward a day would make a pod stopped two hours look
    due. The providers date their answers: far from all of their clocks the same way, the pass
    decides nothing (one provider alone off is that provider's error: test_clock_per_provider)."""
    with world(tmp_path) as w:
        w.runpod.add_pod(status="EXITED")
        w.run()
        w.runpod._now = lambda: w.clock.now() - timedelta(days=1)  # ours is a day ahead
        w.vast._now = lambda: w.clock.now() - timedelta(days=1)
        w.advance(2)
        report = w.run()
        assert report.clock_behind and report.exit_code == 1
        assert "away from RunPod's" in report.clock_problem
        assert report.actions == [] and w.runpod.mutations == []
