"""Issue 12.4: a protection field that is missing, null or unreadable counts as protected."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.reap_support import action_of, world


@pytest.mark.parametrize(
    ("field", "how"),
    [("locked", "null"), ("locked", "missing"), ("name", "null"), ("name", "missing")],
)
def test_a_runpod_pod_whose_protection_cannot_be_read_is_never_touched(
    tmp_path: Path, field: str, how: str
) -> None:
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED")
        if how == "missing":
            w.runpod.drop_field(pod, field)
        else:
            w.runpod.modify_pod(pod, **{field: None if how == "null" else {"odd": 1}})
        w.reach_deadline()
        report = w.run()
        assert action_of(report, pod) == "protect"
        (action,) = [a for a in report.actions if a.id == pod]
        assert f"`{field}`" in action.reason and "protected" in action.reason
        assert w.runpod.mutations == []


def test_a_vast_instance_without_a_label_key_is_never_touched(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        inst = w.vast.add_instance(actual_status="stopped")
        w.vast.add_instance(actual_status="running")
        w.vast.drop_field(inst, "label")
        w.reach_deadline()
        report = w.run()
        assert action_of(report, str(inst)) == "protect"
        assert [m for m in w.vast.mutations if m.kind == "delete"] == []


def test_a_vast_label_of_null_is_the_documented_no_label(tmp_path: Path) -> None:
    """Vast's show-instances spec: `label` is nullable and unlabelled instances count under "".
    Null is read, not unreadable: such an instance is reaped like any other."""
    with world(tmp_path) as w:
        inst = w.vast.add_instance(actual_status="stopped", label=None)
        w.vast.add_instance(actual_status="running")
        w.reach_deadline()
        report = w.run()
        assert action_of(report, str(inst)) == "terminate"


def test_a_malformed_protection_field_makes_the_pod_unknown(tmp_path: Path) -> None:
    """`locked` that is not a boolean is a field that failed validation: the pod is unknown,
    which is never reaped either."""
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED")
        w.runpod.modify_pod(pod, locked={"odd": 1})
        w.reach_deadline()
        report = w.run()
        (listed,) = [i for i in report.instances if i.id == pod]
        assert listed.state == "unknown"
        assert action_of(report, pod) is None
        assert w.runpod.mutations == []
