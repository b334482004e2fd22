"""A warning sent while a cap of 0 turned terminations off said "would be terminated": when
the cap is raised, it licenses nothing. The instance is warned anew, with a deadline a full
notice away, and terminated only after that warning — never at once on the old one. The same
holds for a pass run with `--max-terminations 0`."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from tests.reap_support import World, action_of, world


def deletes(w: World) -> int:
    return sum(1 for r in w.runpod.mutations if r.method == "DELETE")


def test_a_raised_cap_warns_anew_before_terminating(tmp_path: Path) -> None:
    with world(tmp_path, max_terminations=0) as w:
        pod = w.runpod.add_pod(status="EXITED", name="forgotten")
        w.run()  # first sight
        w.advance(23)
        assert action_of(w.run(), pod) == "warn"  # "would be terminated (terminations are off)"
        w.advance(1)
        assert action_of(w.run(), pod) != "terminate"  # held back by the cap, not re-warned
        w.advance(0.5)
        w.notifier.alerts.clear()

        raised = replace(w.settings, max_terminations=10)
        report = w.run(settings=raised)

        assert action_of(report, pod) == "warn", report.actions
        assert deletes(w) == 0
        [warning] = [a for a in w.notifier.alerts if "will be terminated" in a.title]
        assert "terminations are off" not in warning.title
        w.advance(1)
        assert action_of(w.run(settings=raised), pod) == "terminate"
        assert deletes(w) == 1


def test_a_pass_with_max_terminations_0_licenses_nothing_for_a_later_pass(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED", name="forgotten")
        w.run(max_terminations=0)
        w.advance(23)
        assert action_of(w.run(max_terminations=0), pod) == "warn"
        w.advance(1)
        assert action_of(w.run(max_terminations=0), pod) != "terminate"
        assert action_of(w.run(max_terminations=0), pod) != "warn"  # warned once, not each pass

        report = w.run()

        assert action_of(report, pod) == "warn", report.actions
        assert deletes(w) == 0
