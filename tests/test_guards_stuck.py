"""What bills and may never become usable is named in an alert, with what it bills, once it
has lasted REAPER_STUCK_AFTER: a Vast instance waiting for its GPU, a RunPod pod RUNNING whose
container never came up, a start that never finishes."""

from __future__ import annotations

from pathlib import Path

from tests.reap_support import events, world


def stuck_alerts(w) -> list[str]:  # type: ignore[no-untyped-def]
    return [f"{a.title} | {a.body}" for a in w.notifier.alerts if a.event == "stuck"]


def test_a_vast_instance_scheduling_for_six_hours_is_alerted_with_what_it_bills(
    tmp_path: Path,
) -> None:
    with world(tmp_path) as w:
        inst = w.vast.add_instance(label="waiting", storage_cost=0.2, disk_space=100.0)
        w.vast.set_scheduling(inst)
        w.run()
        w.advance(5)
        w.run()
        assert stuck_alerts(w) == []
        w.advance(1)
        w.run()
        (alert,) = stuck_alerts(w)
        assert f"vast:{inst}" in alert and "scheduling" in alert and "$0.028/h" in alert
        w.advance(1)
        w.run()
        assert len(stuck_alerts(w)) == 1, "once per episode"
        assert [m for m in w.vast.mutations if m.kind == "delete"] == []


def test_a_runpod_pod_running_without_a_container_is_alerted_with_its_price(
    tmp_path: Path,
) -> None:
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="RUNNING", cost=2.39)
        w.runpod.set_container_up(pod, False)
        w.run()
        w.advance(6)
        w.run()
        (alert,) = stuck_alerts(w)
        assert pod in alert and "container never came up" in alert and "$2.39/h" in alert


def test_stuck_after_off_turns_the_alert_off(tmp_path: Path) -> None:
    with world(tmp_path, stuck_after=None) as w:
        pod = w.runpod.add_pod(status="PROVISIONING")
        w.run()
        w.advance(30)
        w.run()
        assert "stuck" not in events(w.notifier)
        assert pod
