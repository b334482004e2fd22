"""Issue 12.1: a delete goes out only on a reading taken right before it, never on the
pass's first listing — a pod the user starts while the warnings go out is not deleted."""

from __future__ import annotations

from pathlib import Path

import pytest

from reaper.core.models import Alert
from reaper.passes.reap import ActOptions
from reaper.providers.base import HttpOptions
from tests.reap_support import ActingNotifier, action_of, world


def test_a_pod_started_while_the_warnings_go_out_is_not_deleted(tmp_path: Path) -> None:
    """The pass lists, sends its warnings (slowly), then acts: the due pod was started by
    its user in between, as the warning advises. The fresh read shows it running."""
    with world(tmp_path) as w:
        due = w.runpod.add_pod(status="EXITED", name="due")
        w.run()
        w.advance(2)
        w.runpod.add_pod(status="EXITED", name="warned-in-the-same-pass")
        w.run()
        w.advance(20)
        w.run()  # warns the first
        w.advance(2)  # the first is due, the second is warned in this pass

        def user_starts_the_due_pod(alert: Alert) -> None:
            if alert.event == "termination_warning":
                w.runpod.set_status(due, "RUNNING")

        report = w.run(notifier=ActingNotifier(user_starts_the_due_pod))
        assert w.runpod.mutations == [], "nothing may be deleted on the old reading"
        assert w.runpod.pod(due)["status"] == "RUNNING"
        assert action_of(report, due) == "hold"
        (held,) = [a for a in report.actions if a.id == due]
        assert "running" in held.reason and not held.done
        assert report.exit_code == 0


def test_a_vast_instance_started_between_listing_and_delete_is_not_destroyed(
    tmp_path: Path,
) -> None:
    with world(tmp_path) as w:
        due = w.vast.add_instance(actual_status="stopped", label="due")
        w.vast.add_instance(actual_status="running")
        w.reach_deadline()

        def user_starts_it() -> None:
            w.vast.set_status(due, "running", intended_status="running")

        # Right after the pass's own listing, before anything else happens.
        w.vast.after_next("list", user_starts_it)
        report = w.run()
        assert [m for m in w.vast.mutations if m.kind == "delete"] == []
        assert action_of(report, str(due)) == "hold"


def test_no_delete_goes_out_on_a_reading_older_than_allowed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With one connection and a slow first delete, the second delete would go out seconds
    after its reading: it is not sent, the account is read again, then it goes out."""
    with world(tmp_path, max_terminations=10) as w:
        pods = [w.runpod.add_pod(status="EXITED") for _ in range(2)]
        w.reach_deadline()
        w.runpod.slow_next("delete", seconds=0.6)
        lists_before = w.runpod.count("list")
        one_at_a_time = HttpOptions(
            timeout=3, max_attempts=2, backoff_base=0.01, backoff_cap=0.02, max_concurrency=1
        )
        report = w.run(http=one_at_a_time, act=ActOptions(fresh_for=0.3, rounds=3))
        assert all(action_of(report, p) == "terminate" for p in pods)
        assert all(a.confirmed for a in report.actions)
        assert "result=not_sent" in capsys.readouterr().err, "held back, not sent late"
        store = w.store(read_only=True)
        records = store.audit_log()
        store.close()
        assert sorted(r.id for r in records) == sorted(pods), "no record of a delete not sent"
        assert all(r.confirmed for r in records)
        # The pass's listing; a fresh read of each due pod, and again of the held-back one
        # (RunPod: its own endpoint); then the confirmation's re-listing.
        assert w.runpod.count("get") >= 3
        assert w.runpod.count("list") - lists_before >= 2
        assert len([m for m in w.runpod.mutations if m.kind == "delete"]) == 2
