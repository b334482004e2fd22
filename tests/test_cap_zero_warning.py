"""With terminations turned off by a cap of 0 (REAPER_MAX_TERMINATIONS=0 or
--max-terminations 0) a warning promises no termination — alone or folded — says what turned
terminations off, and offers no "terminate now", as observe mode's do."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from reaper.core import messages
from reaper.core.models import Instance

NOW = datetime(2026, 3, 4, 12, 0, tzinfo=UTC)
RUNPOD = Instance(
    provider="runpod", account="main", id="abc123xyz", name="llama-finetune", state="stopped",
    raw_status="EXITED", stopped_since=NOW - timedelta(hours=23), cost_per_hour=0.04,
)  # fmt: skip
VAST = Instance(
    provider="vast", account="2", id="987654", name="sd-batch", state="stopped",
    raw_status="stopped", stopped_since=NOW - timedelta(hours=23), cost_per_hour=0.35,
)  # fmt: skip


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
