"""Issue 12.17: the cap alert is one alert per episode, and many warnings of one pass are one
message that names each instance and its deadline."""

from __future__ import annotations

from pathlib import Path

from tests.reap_support import events, world


def test_the_cap_alerts_once_per_episode(tmp_path: Path) -> None:
    with world(tmp_path, max_terminations=1) as w:
        pods = [w.runpod.add_pod(status="EXITED") for _ in range(3)]
        w.reach_deadline()
        for _ in range(3):
            report = w.run()
            assert report.cap_exceeded and report.exit_code == 1
            w.advance(1)
        assert events(w.notifier).count("cap_exceeded") == 1
        # The cap no longer holds (two were terminated by hand): the episode ends...
        for pod in pods[:2]:
            w.runpod.remove_pod(pod)
        assert not w.run().cap_exceeded
        # ... and a new one alerts again.
        for _ in range(2):
            w.runpod.add_pod(status="EXITED")
        w.reach_deadline()
        w.run()
        assert events(w.notifier).count("cap_exceeded") == 2


def test_three_hundred_warnings_are_one_message(tmp_path: Path) -> None:
    with world(tmp_path, max_terminations=1000) as w:
        pods = [w.runpod.add_pod(status="EXITED", name=f"job-{n}") for n in range(300)]
        w.run()
        w.advance(23)
        w.run()
        warnings = [a for a in w.notifier.alerts if a.event == "termination_warning"]
        assert len(warnings) == 1
        (folded,) = warnings
        assert folded.title.startswith("300 stopped instances will be terminated")
        lines = folded.body.splitlines()
        assert lines[0] == "At 2026-03-03 09:00 UTC:"  # every one's deadline, named once
        for pod in pods:
            assert sum(f"(runpod:{pod})" in line for line in lines) == 1
        store = w.store(read_only=True)
        assert len(store.history().warnings) == 300
        store.close()
