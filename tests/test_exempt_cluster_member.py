"""Issue 24.4: a RunPod cluster member cannot be deleted through the pod endpoints. It is never
warned "will be terminated" nor offered a Terminate button (no warning promises what cannot be
done); at its deadline it is `hold` with what to do, named once per episode in an alert with
what it bills, and every pass exits 1 while it lasts."""

from __future__ import annotations

from pathlib import Path

from tests.phone_support import phone
from tests.reap_support import action_of, events, world

CONSOLE = "terminate the cluster in the console"


def test_a_cluster_member_is_never_warned_and_is_named_at_its_deadline(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        member = w.runpod.add_pod(status="EXITED", name="node-1", cluster_id="cl_7", volume_gb=50)
        w.run()
        w.advance(23)
        warned = w.run()
        assert action_of(warned, member) is None, "no warning promises what cannot be done"
        assert "termination_warning" not in events(w.notifier)
        assert warned.exit_code == 0

        w.advance(1)
        due = w.run()
        assert action_of(due, member) == "hold"
        (held,) = [a for a in due.actions if a.id == member]
        assert CONSOLE in held.reason and "cluster" in held.reason
        assert held.exempt == "cluster"
        assert due.exit_code == 1
        (alert,) = [a for a in w.notifier.alerts if a.event == "needs_you"]
        assert f"runpod:{member}" in alert.title or f"runpod:{member}" in alert.body
        assert CONSOLE in alert.body
        assert "$0.014/h" in alert.body and "$10.00/month" in alert.body
        assert "will be terminated" not in alert.title + alert.body

        for _ in range(3):
            w.advance(1)
            again = w.run()
            assert action_of(again, member) == "hold" and again.exit_code == 1
        assert events(w.notifier).count("needs_you") == 1, "once per episode"
        assert w.runpod.mutations == []


def test_the_episode_closes_when_the_member_goes_and_opens_anew_for_another(
    tmp_path: Path,
) -> None:
    with world(tmp_path) as w:
        first = w.runpod.add_pod(status="EXITED", cluster_id="cl_7")
        w.runpod.add_pod(status="RUNNING", name="witness")
        w.reach_deadline()
        assert w.run().exit_code == 1
        w.runpod.remove_pod(first)
        w.advance(1)
        w.run()
        w.advance(1)
        assert w.run().exit_code == 0, "it was terminated in the console: nothing needs you"
        second = w.runpod.add_pod(status="EXITED", cluster_id="cl_8")
        w.reach_deadline()
        w.run()
        named = [a for a in w.notifier.alerts if a.event == "needs_you"]
        assert len(named) == 2 and f"runpod:{second}" in named[-1].body


def test_a_warning_of_many_offers_no_terminate_button_for_a_member(tmp_path: Path) -> None:
    """Members are left out of warnings altogether, folded ones included."""
    with phone(tmp_path) as p:
        assert p.telegram is not None
        member = p.w.runpod.add_pod(status="EXITED", name="node-1", cluster_id="cl_7")
        p.w.runpod.add_pod(status="EXITED", name="plain")
        p.warn()
        texts = [m.text for m in p.telegram.messages]
        assert not any(member in t for t in texts)
        labels = [label for m in p.telegram.messages for label in m.labels]
        assert "Terminate now" in labels  # the plain pod's
        assert not any("node-1" in label for label in labels)
