"""A RunPod cluster member whose `cluster` object has no readable id is held when due, like
any member, and no DELETE is sent for it (the pod endpoints cannot delete a member)."""

from __future__ import annotations

from pathlib import Path

from tests.reap_support import world


def test_a_due_member_with_a_null_cluster_id_is_held_not_deleted(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        member = w.runpod.add_pod(status="EXITED", cluster_id="cl_1")
        w.runpod.modify_pod(member, cluster={"rank": 1})
        alone = w.runpod.add_pod(status="EXITED")
        w.reach_deadline()
        report = w.run()
        deleted = [r.path for r in w.runpod.mutations]
    actions = {a.id: a for a in report.actions}
    assert actions[member].action == "hold"
    assert "cluster" in actions[member].reason
    assert actions[alone].action == "terminate" and actions[alone].confirmed
    assert deleted == [f"/v2/pods/{alone}"]
