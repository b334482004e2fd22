"""`reaper reap`, `keep` and `audit` as a user runs them, and `invoke reap --dry-run`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from tests.reap_support import RUNPOD_KEY, VAST_KEY, cli, world

REPO = Path(__file__).resolve().parents[1]


def test_reap_json_follows_the_contract(tmp_path: Path) -> None:
    with world(tmp_path, start=datetime.now(UTC)) as w:
        pod = w.runpod.add_pod(status="EXITED", name="p", cost=0.5, volume_gb=100)
        w.vast.add_instance(actual_status="running", dph_total=0.9)
        result = cli(w, "reap", "--json")
        assert result.returncode == 0, result.stderr
        out = json.loads(result.stdout)
        assert {"dry_run", "mode", "at", "instances", "actions", "errors"} <= set(out)
        assert out["dry_run"] is False and out["mode"] == "enforce"
        assert out["at"].endswith("Z")
        by_id = {i["id"]: i for i in out["instances"]}
        assert set(by_id[pod]) >= {
            "provider",
            "account",
            "id",
            "name",
            "state",
            "raw_status",
            "stopped_since",
            "cost_per_hour",
        }
        assert by_id[pod]["state"] == "stopped" and by_id[pod]["raw_status"] == "EXITED"
        assert by_id[pod]["stopped_since"] == out["at"]
        assert by_id[pod]["cost_per_hour"] > 0
        assert out["actions"] == [] and out["errors"] == []
        assert RUNPOD_KEY not in result.stdout + result.stderr
        assert VAST_KEY not in result.stdout + result.stderr


def test_dry_run_json_creates_no_state_and_exits_0(tmp_path: Path) -> None:
    with world(tmp_path, start=datetime.now(UTC)) as w:
        w.runpod.add_pod(status="EXITED")
        result = cli(w, "reap", "--dry-run", "--json")
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["dry_run"] is True
        assert not w.state_path.exists()
        assert w.runpod.mutations == []


def test_the_readable_table_names_every_column(tmp_path: Path) -> None:
    with world(tmp_path, start=datetime.now(UTC)) as w:
        w.runpod.add_pod(status="EXITED", name="visible-pod")
        result = cli(w, "reap")
        assert result.returncode == 0, result.stderr
        header = next(line for line in result.stdout.splitlines() if line.startswith("provider"))
        for column in (
            "provider",
            "account",
            "id",
            "name",
            "state",
            "stopped for",
            "$/h",
            "action",
            "reason",
        ):
            assert column in header
        assert "visible-pod" in result.stdout


def test_a_provider_failing_exits_1_with_the_error_listed(tmp_path: Path) -> None:
    with world(tmp_path, start=datetime.now(UTC)) as w:
        w.vast.set_down("503")
        result = cli(w, "reap", "--json")
        assert result.returncode == 1
        errors = json.loads(result.stdout)["errors"]
        assert [(e["provider"], e["account"]) for e in errors] == [("vast", "main")]
        assert "Traceback" not in result.stderr


def test_keep_then_audit(tmp_path: Path) -> None:
    with world(tmp_path, start=datetime.now(UTC)) as w:
        pod = w.runpod.add_pod(status="EXITED")
        kept = cli(w, "keep", f"runpod:{pod}", "--for", "3d", "--force")  # not listed yet
        assert kept.returncode == 0, kept.stderr
        assert f"runpod:{pod}" in kept.stdout
        result = cli(w, "reap", "--json")
        # Kept and stopped: reported as protected from the first pass on.
        actions = json.loads(result.stdout)["actions"]
        assert [(a["id"], a["action"]) for a in actions] == [(pod, "protect")]
        audit = cli(w, "audit", "--json")
        assert audit.returncode == 0
        recorded = json.loads(audit.stdout)
        assert recorded["terminations"] == []
        # The keep itself is on the record, naming the command line.
        [keep] = recorded["actions"]
        assert (keep["kind"], keep["targets"], keep["via"]) == (
            "keep",
            [f"runpod:{pod}"],
            "command line",
        )


def test_keep_rejects_a_bad_target_with_one_line_and_exit_2(tmp_path: Path) -> None:
    with world(tmp_path, start=datetime.now(UTC)) as w:
        for target in ("aws:i-123", "runpod:", "nocolon", "vast:../../etc"):
            result = cli(w, "keep", target)
            assert result.returncode == 2, target
            assert len(result.stderr.strip().splitlines()) == 1
        bad_duration = cli(w, "keep", "runpod:abc", "--for", "3")
        assert bad_duration.returncode == 2


def test_audit_lists_a_termination_with_why_and_confirmation(tmp_path: Path) -> None:
    with world(tmp_path, start=datetime.now(UTC)) as w:
        pod = w.runpod.add_pod(status="EXITED", name="old-run")
        w.reach_deadline()
        w.run()
        audit = cli(w, "audit", "--json")
        (record,) = json.loads(audit.stdout)["terminations"]
        assert (record["id"], record["result"], record["confirmed"]) == (pod, "deleted", True)
        assert "stopped for" in record["reason"]
        table = cli(w, "audit")
        assert "old-run" in table.stdout and "yes" in table.stdout


def test_invoke_reap_dry_run_does_what_reaper_reap_dry_run_does(tmp_path: Path) -> None:
    with world(tmp_path, start=datetime.now(UTC)) as w:
        w.runpod.add_pod(status="EXITED", name="seen-by-both")
        env = {
            "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
            "HOME": str(tmp_path),
            **w.env(),
        }
        invoked = subprocess.run(
            [
                str(Path(sys.executable).parent / "invoke"),
                "--search-root",
                str(REPO),
                "reap",
                "--dry-run",
            ],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        direct = cli(w, "reap", "--dry-run")
        assert invoked.returncode == direct.returncode == 0, invoked.stderr
        # Same table, apart from the first line's timestamp.
        assert invoked.stdout.splitlines()[1:] == direct.stdout.splitlines()[1:]
        assert "seen-by-both" in invoked.stdout and "dry run" in invoked.stdout
        assert not w.state_path.exists() and w.runpod.mutations == []


def test_a_state_file_that_is_not_a_database_is_a_config_error(tmp_path: Path) -> None:
    with world(tmp_path, start=datetime.now(UTC)) as w:
        w.state_path.parent.mkdir(parents=True)
        w.state_path.write_bytes(b"\x89this is not sqlite" * 20)
        for command in (["reap"], ["audit"], ["keep", "runpod:abc"]):
            result = cli(w, *command)
            assert result.returncode == 2, (command, result.stderr)
            assert "Traceback" not in result.stderr
            (line,) = result.stderr.strip().splitlines()
            assert "REAPER_STATE" in line


def test_a_state_path_that_cannot_be_created_is_a_config_error(tmp_path: Path) -> None:
    with world(tmp_path, start=datetime.now(UTC)) as w:
        blocker = tmp_path / "blocker"
        blocker.write_text("a file, not a directory")
        result = cli(w, "reap", extra_env={"REAPER_STATE": f"sqlite:///{blocker}/state.db"})
        assert result.returncode == 2 and "Traceback" not in result.stderr
        assert "REAPER_STATE" in result.stderr


def test_status_shows_the_stopped_fleet_as_the_state_knows_it(tmp_path: Path) -> None:
    with world(tmp_path, start=datetime.now(UTC)) as w:
        pod = w.runpod.add_pod(status="EXITED")
        w.run()
        assert cli(w, "keep", "vast:77", "--for", "3d", "--force").returncode == 0
        result = cli(w, "status", "--json")
        assert result.returncode == 0, result.stderr
        fleet = json.loads(result.stdout)["fleet"]
        (stopped,) = fleet["stopped"]
        assert stopped["instance"] == f"runpod:{pod}" and stopped["warned_at"] is None
        assert stopped["stopped_since"] < stopped["due_at"]
        assert [k["instance"] for k in fleet["kept"]] == ["vast:77"]
        table = cli(w, "status")
        assert f"runpod:{pod}" in table.stdout and "vast:77" in table.stdout
