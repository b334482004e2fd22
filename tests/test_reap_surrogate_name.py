"""A pod name with a lone UTF-16 surrogate (valid JSON text: `"\\ud800"`) no longer takes down
the pass or the CLI: the name is cleaned before the audit record, the store and the output
see it, and the pod is reaped like any other."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from tests.reap_support import cli, world


def test_reap_json_prints_a_pod_name_with_a_lone_surrogate(tmp_path: Path) -> None:
    with world(tmp_path, start=datetime.now(UTC)) as w:
        pod = w.runpod.add_pod(status="EXITED", name="job-\ud800")
        result = cli(w, "reap", "--json")
    assert "Traceback" not in result.stderr, result.stderr[-600:]
    assert result.returncode == 0, result.stderr[-600:]
    listed = json.dumps(json.loads(result.stdout), ensure_ascii=False)
    assert pod in listed
    assert "job-\ufffd" in listed


def test_a_pod_with_a_lone_surrogate_in_its_name_is_terminated_and_audited(
    tmp_path: Path,
) -> None:
    with world(tmp_path, start=datetime.now(UTC)) as w:
        pod = w.runpod.add_pod(status="EXITED", name="job-\ud800")
        other = str(w.vast.add_instance(actual_status="stopped", label="fine"))
        w.reach_deadline()
        report = w.run()
    actions = {a.id: a for a in report.actions}
    assert set(actions) == {pod, other}
    assert all(a.action == "terminate" and a.confirmed for a in actions.values())
    assert actions[pod].name == "job-\ufffd"
    assert report.errors == []
