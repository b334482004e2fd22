"""With terminations turned off by a cap of 0 (REAPER_MAX_TERMINATIONS=0 or
--max-terminations 0) a warning promises no termination — alone or folded — says what turned
terminations off, and offers no "terminate now", as observe mode's do."""

from __future__ import annotations

from datetime import timedelta

from reaper.core import messages
from tests.test_notify_messages import NOW, RUNPOD, VAST


def test_a_warning_under_a_cap_of_zero_promises_nothing() -> None:
    alert = messages.termination_warning(
        RUNPOD, NOW + timedelta(hours=1), NOW, "reaper:keep", next_check=NOW,
        off="REAPER_MAX_TERMINATIONS=0",
    )  # fmt: skip
    assert "would be terminated" in alert.title and "terminations are off" in alert.title
    assert "REAPER_MAX_TERMINATIONS=0 turns terminations off" in alert.body
    assert "terminate" not in [a.kind for a in alert.actions]


def test_a_folded_warning_under_a_cap_of_zero_promises_nothing() -> None:
    [(_keys, alert)] = messages.fold_warnings(
        [(RUNPOD, NOW + timedelta(hours=1)), (VAST, NOW + timedelta(hours=2))],
        NOW,
        "reaper:keep",
        next_check=NOW,
        off="--max-terminations=0",
    )
    assert "will be terminated" not in alert.title and "terminations are off" in alert.title
    assert "--max-terminations=0 turns terminations off" in alert.body
    assert "terminate" not in [a.kind for a in alert.actions]
