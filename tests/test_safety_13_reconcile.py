"""Issue 13 of the safety list (12.13): audit records left `requested` by a pass that died
are settled by the next pass against its complete listing."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

from reaper.core.models import AuditRecord
from tests.reap_support import World, action_of, cli, events, world


def _requested(w: World, instance_id: str, provider: str = "runpod") -> AuditRecord:
    record = AuditRecord.model_validate(
        {
            "provider": provider,
            "account": "main",
            "id": instance_id,
            "name": "lost-answer",
            "reason": "stopped for 1d, limit 1d",
            "requested_at": w.clock.now() - timedelta(minutes=5),
            "stopped_since": w.clock.now() - timedelta(days=1),
            "cost_per_hour": 0.0137,
            "result": "requested",
        }
    )
    store = w.store()
    store.record_termination(record)
    store.close()
    return record


def test_a_delete_whose_answer_was_lost_is_confirmed_by_the_next_pass(tmp_path: Path) -> None:
    """The provider deleted the pod, the pass died before the answer came: the record stays
    `requested`. The next complete listing no longer shows it: confirmed, and alerted."""
    with world(tmp_path) as w:
        w.runpod.add_pod(status="RUNNING")  # the account is not empty: a trustworthy listing
        _requested(w, "gonepod1")
        report = w.run()
        assert report.reconciled == ["runpod:gonepod1"]
        assert events(w.notifier).count("terminated") == 1
        audit = json.loads(cli(w, "audit", "--json").stdout)["terminations"]
        (record,) = audit
        assert record["confirmed"] is True and record["result"] == "deleted"
        w.run()
        assert events(w.notifier).count("terminated") == 1, "settled once"


def test_a_requested_record_whose_pod_is_still_stopped_is_left_to_be_retried(
    tmp_path: Path,
) -> None:
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED")
        w.reach_deadline()
        _requested(w, pod)
        report = w.run()
        assert report.reconciled == []
        assert action_of(report, pod) == "terminate"  # the policy decided again


def test_a_requested_record_whose_pod_runs_again_did_not_happen(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="RUNNING")
        _requested(w, pod)
        w.run()
        store = w.store(read_only=True)
        (record,) = store.audit_log()
        store.close()
        assert record.result == "failed" and not record.confirmed
        assert "did not happen" in record.detail


def test_an_empty_listing_settles_nothing(tmp_path: Path) -> None:
    """Reconciliation trusts a listing only as the confirmation does: an account whose last
    listing had other instances and now lists none proves nothing."""
    with world(tmp_path) as w:
        w.runpod.add_pod(status="RUNNING")
        w.run()
        _requested(w, "gonepod2")
        w.runpod.empty_next("list", count=5)
        assert w.run().reconciled == []
