"""A read command (`status`, `audit`, `report`) on a state path that does not exist or is not
a database says so in one line and exits 2 — not "none recorded", exit 0, which would hide a
mistyped REAPER_STATE. It creates nothing; a dry run still reads a missing state as empty."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.reap_support import cli, world

READ_COMMANDS = [
    ("status",),
    ("audit",),
    ("report",),
    ("status", "--json"),
    ("audit", "--json"),
    ("monitor", "list"),
    ("monitor", "log", "trainer"),
]


@pytest.mark.parametrize("command", READ_COMMANDS)
def test_a_missing_state_is_one_line_and_exit_2(tmp_path: Path, command: tuple[str, ...]) -> None:
    with world(tmp_path, start=datetime.now(UTC)) as w:
        missing = tmp_path / "typo" / "state.db"
        done = cli(w, *command, extra_env={"REAPER_STATE": f"sqlite:///{missing}"})
    assert done.returncode == 2
    assert done.stdout == ""
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("reaper: REAPER_STATE: no state database at ") and str(missing) in line
    assert not missing.parent.exists()


@pytest.mark.parametrize("command", READ_COMMANDS)
@pytest.mark.parametrize("kind", ["directory", "text file", "empty file", "other database"])
def test_a_path_that_is_not_a_state_database_is_one_line_and_exit_2(
    tmp_path: Path, command: tuple[str, ...], kind: str
) -> None:
    import sqlite3

    path = tmp_path / "not-state"
    if kind == "directory":
        path.mkdir()
    elif kind == "text file":
        path.write_text("REAPER_MODE=observe\n" * 100)
    elif kind == "empty file":
        path.write_bytes(b"")
    else:
        conn = sqlite3.connect(path)
        conn.execute("CREATE TABLE photos (id INTEGER)")
        conn.close()
    before = path.read_bytes() if path.is_file() else None
    with world(tmp_path, start=datetime.now(UTC)) as w:
        done = cli(w, *command, extra_env={"REAPER_STATE": f"sqlite:///{path}"})
    assert done.returncode == 2, done.stdout + done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("reaper: REAPER_STATE: ") and str(path) in line
    assert "Traceback" not in done.stderr
    if before is not None:
        assert path.read_bytes() == before


def test_an_existing_state_reads_as_before(tmp_path: Path) -> None:
    with world(tmp_path, start=datetime.now(UTC)) as w:
        w.runpod.add_pod("p1", name="sweep", status="EXITED")
        assert cli(w, "reap").returncode == 0
        assert cli(w, "status").returncode == 0
        audit = cli(w, "audit")
    assert audit.returncode == 0 and audit.stdout.strip() == "no terminations recorded"


def test_a_dry_run_still_reads_a_missing_state_as_empty_and_creates_nothing(
    tmp_path: Path,
) -> None:
    with world(tmp_path, start=datetime.now(UTC)) as w:
        w.runpod.add_pod("p1", name="sweep", status="EXITED")
        missing = tmp_path / "fresh" / "state.db"
        done = cli(w, "reap", "--dry-run", extra_env={"REAPER_STATE": f"sqlite:///{missing}"})
    assert done.returncode == 0, done.stderr
    assert "sweep" in done.stdout
    assert not missing.parent.exists()
