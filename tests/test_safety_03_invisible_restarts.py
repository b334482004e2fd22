"""Issue 12.3: where the provider cannot show a start between two checks, the warning does not
promise that starting the instance saves it."""

from __future__ import annotations

from pathlib import Path

from tests.reap_support import action_of, world


def _warning_body(w, instance_id: str) -> str:  # type: ignore[no-untyped-def]
    (alert,) = [
        a for a in w.notifier.alerts if a.event == "termination_warning" and instance_id in a.title
    ]
    return str(alert.body)


def test_a_vast_warning_asks_to_leave_it_running_past_the_next_check(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        inst = w.vast.add_instance(actual_status="stopped", label="job")
        w.run()
        w.advance(23)
        w.run()
        body = _warning_body(w, f"vast:{inst}")
        assert "To keep it: start it" not in body
        assert "leave it running past the next check" in body
        assert f"reaper keep vast:{inst}" in body


def test_a_runpod_pod_without_a_start_time_is_warned_the_same_way(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED", startedAt=None)
        w.run()
        w.advance(23)
        w.run()
        assert "leave it running past the next check" in _warning_body(w, pod)


def test_a_runpod_restart_between_passes_voids_the_warning(tmp_path: Path) -> None:
    """With `startedAt`, a start the reaper never saw running still shows, and saves it."""
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED")
        w.run()
        w.advance(23)
        w.run()
        assert "To keep it: start it" in _warning_body(w, pod)
        w.advance(0.5)
        w.runpod.modify_pod(pod, startedAt=w.clock.now().isoformat())
        w.advance(0.5)
        report = w.run()
        assert action_of(report, pod) is None
        assert w.runpod.mutations == []
