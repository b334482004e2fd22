"""Review ("A warning never promises a termination the reaper cannot make").

With REAPER_MAX_TERMINATIONS=0 a person turned terminations off: every due instance is `hold`
("turns terminations off"). Its warning still says "will be terminated in 1h" and offers
"Terminate now" — a promise the pass then does not keep, and a button that cannot act. Observe
mode, the other deliberate "destroy nothing", words its warning "would be terminated" and
offers no such button; a cap of 0 must not promise more than observe mode does.
"""

from __future__ import annotations

from pathlib import Path

from tests.reap_support import action_of, world


def test_a_cap_of_zero_does_not_announce_a_termination(tmp_path: Path) -> None:
    with world(tmp_path, max_terminations=0) as w:
        pod = w.runpod.add_pod(status="EXITED", name="trainer")
        w.run()
        w.advance(23)
        assert action_of(w.run(), pod) == "warn"
        w.advance(1)
        held = w.run()
        assert action_of(held, pod) == "hold" and w.runpod.mutations == []  # as configured

        [warning] = [a for a in w.notifier.alerts if a.event == "termination_warning"]
        assert "will be terminated" not in warning.title, warning.title
        assert "terminate" not in [a.kind for a in warning.actions]
