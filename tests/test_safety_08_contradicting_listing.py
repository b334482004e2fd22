"""Issue 12.8: one id listed twice with different states is unknown, never reaped."""

from __future__ import annotations

from pathlib import Path

from tests.reap_support import action_of, world


def test_a_runpod_pod_listed_exited_and_running_is_unknown(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED")
        w.reach_deadline()
        running_copy = {**w.runpod.pod(pod), "status": "RUNNING"}  # type: ignore[dict-item]
        w.runpod.add_raw_pod(running_copy)
        report = w.run()
        (listed,) = [i for i in report.instances if i.id == pod]
        assert listed.state == "unknown"
        assert "conflicting" in listed.raw_status
        assert action_of(report, pod) is None
        assert w.runpod.mutations == []


def test_a_vast_instance_running_on_one_page_and_stopped_on_another_is_unknown(
    tmp_path: Path,
) -> None:
    with world(tmp_path) as w:
        inst = w.vast.add_instance(actual_status="running")
        for _ in range(30):  # two pages
            w.vast.add_instance(actual_status="running")
        w.reach_deadline()
        stopped_copy = {**w.vast.instance(inst), "actual_status": "stopped"}  # type: ignore[dict-item]
        w.vast.add_raw_instance(stopped_copy)  # listed at the end, on the last page
        w.reach_deadline()
        report = w.run()
        (listed,) = [i for i in report.instances if i.id == str(inst)]
        assert listed.state == "unknown"
        assert action_of(report, str(inst)) is None
        assert [m for m in w.vast.mutations if m.kind == "delete"] == []


def test_identical_copies_are_one_instance(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED")
        w.runpod.add_raw_pod(dict(w.runpod.pod(pod) or {}))
        w.reach_deadline()
        report = w.run()
        assert [i.id for i in report.instances if i.id == pod] == [pod]
        assert action_of(report, pod) == "terminate"


def test_copies_that_differ_in_protection_are_unknown(tmp_path: Path) -> None:
    """Review finding: one copy locked, the other not — the unprotected copy must not win."""
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED", locked=True)
        w.reach_deadline()
        w.runpod.add_raw_pod({**(w.runpod.pod(pod) or {}), "locked": False})
        report = w.run()
        (listed,) = [i for i in report.instances if i.id == pod]
        assert listed.state == "unknown"
        assert w.runpod.mutations == []


def test_a_vast_copy_carrying_the_marker_protects_the_instance(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        inst = w.vast.add_instance(actual_status="stopped", label="plain")
        w.vast.add_instance(actual_status="running")
        w.reach_deadline()
        w.vast.add_raw_instance({**(w.vast.instance(inst) or {}), "label": "plain reaper:keep"})
        report = w.run()
        assert [m for m in w.vast.mutations if m.kind == "delete"] == []
        assert action_of(report, str(inst)) is None
