"""`invoke reap` takes `--max-terminations` and works from outside the repository: the tasks run
in the repository, with its own virtualenv, wherever `invoke -r <repo>` is called from."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from tests.reap_support import world

ROOT = Path(__file__).resolve().parents[1]
INVOKE = Path(sys.executable).parent / "invoke"


def invoke(cwd: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(INVOKE), "-r", str(ROOT), *args],
        cwd=cwd,
        env={"PATH": os.environ["PATH"], "HOME": str(cwd), **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_invoke_reap_from_outside_the_repository(tmp_path: Path) -> None:
    elsewhere = tmp_path / "somewhere-else"
    elsewhere.mkdir()
    with world(tmp_path, start=datetime.now(UTC)) as w:
        w.runpod.add_pod("p1", name="sweep", status="EXITED")
        done = invoke(
            elsewhere, "reap", "--dry-run", "--json", "--max-terminations", "0", env=w.env()
        )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["dry_run"] is True
    assert [i["id"] for i in report["instances"]] == ["p1"]


def test_a_bad_max_terminations_is_the_cli_one_line_and_exit_2(tmp_path: Path) -> None:
    done = invoke(tmp_path, "reap", "--max-terminations", "-3", env={})
    assert done.returncode == 2
    assert "--max-terminations: expected a whole number >= 0" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_task_runs_in_process_too(tmp_path: Path, monkeypatch, capfd) -> None:  # type: ignore[no-untyped-def]
    """Called as a function (as a test or another task would), under a captured stdin."""
    from invoke.context import Context

    import tasks

    with world(tmp_path, start=datetime.now(UTC)) as w:
        w.runpod.add_pod("p1", name="sweep", status="EXITED")
        for name, value in w.env().items():
            monkeypatch.setenv(name, value)
        tasks.reap(Context(), dry_run=True, json=True)
    report = json.loads(capfd.readouterr().out)
    assert [i["id"] for i in report["instances"]] == ["p1"]
