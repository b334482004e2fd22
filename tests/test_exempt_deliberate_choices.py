"""Issue 24 ("No silent exemption"): the cap holding due terminations back is an exemption a
person may not intend — exit 1 while it lasts, its alert naming each held instance with what it
bills — while REAPER_MAX_TERMINATIONS=0 and observe mode are a person's own choice: reported
(`hold` with the reason), exit 0."""

from __future__ import annotations

from pathlib import Path

from tests.reap_support import action_of, events, world


def test_a_cap_that_holds_due_terminations_exits_1_and_names_each(tmp_path: Path) -> None:
    with world(tmp_path, max_terminations=1) as w:
        pods = [w.runpod.add_pod(status="EXITED", name=f"job-{n}", volume_gb=50) for n in (1, 2)]
        w.reach_deadline()
        report = w.run()
        assert all(action_of(report, p) == "hold" for p in pods)
        assert {a.exempt for a in report.actions} == {"cap"}
        assert report.exit_code == 1
        (alert,) = [a for a in w.notifier.alerts if a.event == "cap_exceeded"]
        for pod in pods:
            assert f"(runpod:{pod}): bills $0.014/h ($10.00/month)" in alert.body
        assert w.runpod.mutations == []


def test_a_cap_of_zero_is_a_choice_reported_with_exit_0(tmp_path: Path) -> None:
    with world(tmp_path, max_terminations=0) as w:
        pod = w.runpod.add_pod(status="EXITED")
        w.reach_deadline()
        report = w.run()
        assert action_of(report, pod) == "hold"
        (held,) = report.actions
        assert "REAPER_MAX_TERMINATIONS=0" in held.reason and held.exempt is None
        assert report.exit_code == 0
        assert w.runpod.mutations == []


def test_observe_mode_is_a_choice_reported_with_exit_0(tmp_path: Path) -> None:
    with world(tmp_path, mode="observe") as w:
        pod = w.runpod.add_pod(status="EXITED")
        w.reach_deadline()
        report = w.run()
        assert action_of(report, pod) == "hold" and report.exit_code == 0
        assert "needs_you" not in events(w.notifier)
