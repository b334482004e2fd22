"""Issue 12.7: observe warnings say "would be terminated" and never license a termination."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from tests.reap_support import action_of, world


def test_observe_warns_would_and_the_first_enforce_pass_warns_anew(tmp_path: Path) -> None:
    with world(tmp_path, mode="observe") as w:
        pod = w.runpod.add_pod(status="EXITED")
        w.run()
        w.advance(23)
        assert action_of(w.run(), pod) == "warn"
        (observed,) = [a for a in w.notifier.alerts if a.event == "termination_warning"]
        assert "would be terminated" in observed.title
        assert "will be terminated" not in observed.title
        for _ in range(6):  # days of trust, pass after pass: held, never warned again
            w.advance(1)
            assert action_of(w.run(), pod) == "hold"
        assert [a.event for a in w.notifier.alerts].count("termination_warning") == 1

        enforce = replace(w.settings, mode="enforce")
        first = w.run(settings=enforce)
        assert action_of(first, pod) == "warn", "observe warnings license nothing in enforce"
        assert w.runpod.mutations == []
        warnings = [a for a in w.notifier.alerts if a.event == "termination_warning"]
        assert "will be terminated in 1h" in warnings[-1].title
        w.advance(0.5)
        assert action_of(w.run(settings=enforce), pod) is None
        w.advance(0.5)
        assert action_of(w.run(settings=enforce), pod) == "terminate"


def test_many_would_terminate_alerts_of_one_pass_are_folded(tmp_path: Path) -> None:
    with world(tmp_path, mode="observe", max_terminations=100) as w:
        for _ in range(30):
            w.runpod.add_pod(status="EXITED")
        w.reach_deadline()
        w.run()
        would = [a for a in w.notifier.alerts if a.event == "would_terminate"]
        assert len(would) == 1 and would[0].title.startswith("Would terminate 30")
