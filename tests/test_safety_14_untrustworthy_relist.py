"""Issue 12.14: a confirmation re-list that cannot show it is trustworthy proves nothing."""

from __future__ import annotations

from pathlib import Path

from tests.reap_support import action_of, world


def test_empty_relists_after_a_delete_that_did_nothing_confirm_nothing(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        w.runpod.delete_never_confirms = True
        pod = w.runpod.add_pod(status="EXITED")
        w.runpod.add_pod(status="RUNNING", name="witness")
        w.reach_deadline()
        # The pass's listing and its fresh read answer; every re-list after the delete is empty.
        w.runpod.after_next("delete", lambda: w.runpod.empty_next("list", count=20))
        report = w.run()
        (action,) = [a for a in report.actions if a.id == pod]
        assert action.done and not action.confirmed
        assert report.exit_code == 1
        # The stopped clock was not reset: the next pass does not start a new 24h stretch.
        store = w.store(read_only=True)
        assert f"runpod:{pod}" in store.history().first_seen_stopped
        store.close()
        w.runpod.clear_faults()
        assert action_of(w.run(), pod) == "terminate"


def test_the_only_pod_of_an_account_is_confirmed_by_its_own_endpoint(tmp_path: Path) -> None:
    """No other instance to check an empty re-list against: the pod's own GET decides."""
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED")
        w.reach_deadline()
        report = w.run()
        (action,) = [a for a in report.actions if a.id == pod]
        assert action.confirmed
        assert w.runpod.count("get") >= 1


def test_the_only_pod_still_there_by_its_own_endpoint_is_not_confirmed(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        w.runpod.delete_never_confirms = True
        pod = w.runpod.add_pod(status="EXITED")
        w.reach_deadline()
        w.runpod.after_next("delete", lambda: w.runpod.empty_next("list", count=20))
        report = w.run()
        (action,) = [a for a in report.actions if a.id == pod]
        assert action.done and not action.confirmed


def test_a_re_list_that_lost_a_witness_proves_nothing(tmp_path: Path) -> None:
    """Review finding: a re-list missing the deleted pod and one of two witnesses must not
    confirm anything — it may be missing the deleted pod for the same reason."""
    with world(tmp_path) as w:
        w.runpod.delete_never_confirms = True
        pod = w.runpod.add_pod(status="EXITED")
        kept = w.runpod.add_pod(status="RUNNING", name="witness-1")
        hidden = w.runpod.add_pod(status="RUNNING", name="witness-2")
        w.reach_deadline()

        def lose_two() -> None:
            w.runpod.remove_pod(hidden)
            w.runpod.modify_pod(pod, status="EXITED")

        w.runpod.after_next("delete", lose_two)
        report = w.run()
        (action,) = [a for a in report.actions if a.id == pod]
        assert action.done and not action.confirmed
        assert kept
