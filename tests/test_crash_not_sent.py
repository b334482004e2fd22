"""Issue 24.11: a `requested` audit record whose DELETE may never have left (the pass died
between writing it and sending) is settled by the next pass as `not_sent` when the listing
still shows the instance stopped in the same stretch; `reaper audit` never shows two
terminations of one instance."""

from __future__ import annotations

import json
from collections import Counter
from datetime import timedelta
from pathlib import Path

from reaper.core.models import AuditRecord
from tests.reap_support import World, action_of, cli, world


def _died_before_sending(w: World, pod: str) -> None:
    """What a pass killed right after writing its `requested` record leaves behind."""
    store = w.store()
    stretch = store.history().first_seen_stopped[f"runpod:{pod}"]
    store.record_termination(
        AuditRecord(
            provider="runpod",
            account="main",
            id=pod,
            name="never-sent",
            reason="stopped for 1d, limit 1d",
            requested_at=w.clock.now() - timedelta(minutes=55),
            stopped_since=stretch,
            cost_per_hour=0.0055,
            result="requested",
        )
    )
    store.close()


def test_a_delete_that_never_left_is_settled_as_not_sent(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED", name="never-sent")
        w.runpod.add_pod(status="RUNNING", name="witness")
        w.reach_deadline()
        _died_before_sending(w, pod)

        report = w.run()

        assert action_of(report, pod) == "terminate" and report.actions[0].confirmed
        audit = json.loads(cli(w, "audit", "--json").stdout)
        per_instance = Counter(r["id"] for r in audit["terminations"])
        assert per_instance[pod] == 1, "one termination of one instance"
        [done] = [r for r in audit["terminations"] if r["id"] == pod]
        assert done["result"] == "deleted" and done["confirmed"] is True
        [settled] = audit["not_sent"]
        assert settled["id"] == pod and settled["result"] == "not_sent"
        text = cli(w, "audit").stdout
        assert "1 terminations: 1 confirmed" in text
        assert "NOT confirmed" not in text


def test_a_not_sent_record_is_settled_once_and_stays_so(tmp_path: Path) -> None:
    with world(tmp_path, mode="observe") as w:
        pod = w.runpod.add_pod(status="EXITED", name="never-sent")
        w.runpod.add_pod(status="RUNNING", name="witness")
        w.reach_deadline()
        _died_before_sending(w, pod)
        w.run()
        w.advance(1)
        w.run()
        store = w.store(read_only=True)
        [record] = store.audit_log()
        store.close()
        assert record.result == "not_sent" and not record.confirmed
        assert "still listed" in record.detail
