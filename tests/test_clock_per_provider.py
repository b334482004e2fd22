"""Issue 24.7: a provider's clock is judged per provider. One provider whose `Date` is more
than 5 minutes from the pass's clock makes that provider's accounts errors for the pass (named,
with both times, alerted once per episode); the other providers go on. The pass's own clock is
blamed only when every provider that answered disagrees with it the same way."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from reaper.core.units import iso
from tests.reap_support import action_of, events, world


def test_one_provider_off_by_ten_minutes_stops_only_itself(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED")
        inst = w.vast.add_instance(actual_status="stopped", label="vast-one")
        w.vast.add_instance(actual_status="running")
        w.reach_deadline()
        w.vast._now = lambda: w.clock.now() + timedelta(minutes=10)

        report = w.run()

        assert not report.clock_behind, "reaper's own clock is not to blame"
        assert action_of(report, pod) == "terminate" and report.actions[0].confirmed
        assert action_of(report, str(inst)) is None, "Vast's accounts decide nothing"
        assert [m for m in w.vast.mutations if m.kind == "delete"] == []
        (error,) = report.errors
        assert error.provider == "vast"
        assert "Vast" in error.message and iso(w.clock.now()) in error.message
        assert iso(w.clock.now() + timedelta(minutes=10)) in error.message
        assert report.exit_code == 1
        assert events(w.notifier).count("provider_clock_off") == 1
        assert "clock_behind" not in events(w.notifier)

        w.advance(1)
        again = w.run()
        assert [e.provider for e in again.errors] == ["vast"]
        assert events(w.notifier).count("provider_clock_off") == 1, "once per episode"

        w.vast._now = w.clock.now
        w.advance(1)
        back = w.run()
        assert back.errors == [] and action_of(back, str(inst)) == "terminate"


def test_a_skewed_provider_does_not_end_its_instances_stretches(tmp_path: Path) -> None:
    """Its listing is not used at all: nothing it shows or misses changes a record."""
    with world(tmp_path) as w:
        inst = w.vast.add_instance(actual_status="stopped")
        w.vast.add_instance(actual_status="running")
        w.run()
        w.vast._now = lambda: w.clock.now() - timedelta(minutes=10)
        w.vast.remove_entry(inst)
        for _ in range(3):
            w.advance(1)
            w.run()
        store = w.store(read_only=True)
        assert f"vast:{inst}" in store.history().first_seen_stopped
        store.close()


def test_every_provider_off_the_same_way_blames_our_clock(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        w.runpod.add_pod(status="EXITED")
        w.vast.add_instance(actual_status="stopped")
        w.run()
        w.runpod._now = lambda: w.clock.now() - timedelta(hours=2)
        w.vast._now = lambda: w.clock.now() - timedelta(hours=2)
        w.advance(1)
        report = w.run()
        assert report.clock_behind and report.exit_code == 1
        assert report.actions == []
        assert events(w.notifier).count("clock_behind") == 1


def test_providers_off_in_opposite_directions_are_each_their_own_error(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        w.runpod.add_pod(status="EXITED")
        w.vast.add_instance(actual_status="stopped")
        w.run()
        w.runpod._now = lambda: w.clock.now() + timedelta(minutes=30)
        w.vast._now = lambda: w.clock.now() - timedelta(minutes=30)
        w.advance(1)
        report = w.run()
        assert not report.clock_behind
        assert sorted(e.provider for e in report.errors) == ["runpod", "vast"]
