"""On a disk that takes no writes (full, or a read-only directory), the commands that only read
the state work: they open it read-only and need to write nothing, not even SQLite's side files.
A command that writes says so in one line naming REAPER_STATE and the cause, never a
traceback. A disk that takes no writes is made portably, even for
root: the command runs with a file-size limit of 0 (RLIMIT_FSIZE), so SQLite cannot create the
shared-memory file a WAL database needs, exactly as on a full disk."""

from __future__ import annotations

import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from reaper.store.sqlite import SQLiteStore
from tests.cli_process import run_reaper


def reaper(tmp_path: Path, *args: str, limited: bool = True) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "REAPER_STATE": f"sqlite:///{tmp_path / 'state' / 'state.db'}",
        # `report` wants a key; the store fails before any provider is asked.
        "RUNPOD_API_KEY": "main=rp-readout-key-00001",
        "RUNPOD_API_URL": "http://127.0.0.1:9/v2",
    }
    return run_reaper(args, cwd=tmp_path, env=env, file_size_limit=0 if limited else None)


@pytest.fixture
def state(tmp_path: Path) -> Path:
    """A good state database, closed (so its WAL side files are gone)."""
    path = tmp_path / "state" / "state.db"
    SQLiteStore(str(path)).close()
    assert not (tmp_path / "state" / "state.db-shm").exists()
    return path


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (["status"], "last reap: none recorded"),
        (["audit"], "no terminations recorded"),
        (["monitor", "list"], "no monitors"),
    ],
)
def test_a_readout_works_on_a_disk_that_takes_no_writes(
    tmp_path: Path, state: Path, command: list[str], expected: str
) -> None:
    result = reaper(tmp_path, *command)
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    assert expected in result.stdout


@pytest.mark.parametrize("command", [["report"], ["reap", "--dry-run"]])
def test_a_readout_that_asks_the_providers_gets_that_far(
    tmp_path: Path, state: Path, command: list[str]
) -> None:
    result = reaper(tmp_path, *command)
    assert result.returncode == 1, result.stderr  # the provider (nothing listens) did not answer
    assert "REAPER_STATE" not in result.stderr and "runpod" in result.stdout + result.stderr


def test_a_wal_with_commits_in_it_is_never_skipped(tmp_path: Path, state: Path) -> None:
    """A WAL that holds commits (a `reaper serve` at work) is part of the database: reading the
    file alone would show an older state, so the disk's fault is said instead."""
    writer = sqlite3.connect(state)
    try:
        writer.execute("PRAGMA wal_autocheckpoint = 0")  # the commit stays in the WAL
        writer.execute("CREATE TABLE written_meanwhile (x)")
        assert (state.parent / "state.db-wal").stat().st_size > 0
        (state.parent / "state.db-shm").unlink()  # and its shared memory cannot be made again
        result = reaper(tmp_path, "status")
    finally:
        writer.close()
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert line.startswith(f"reaper: REAPER_STATE: cannot read {state}: disk I/O error:")


@pytest.mark.parametrize(
    "command",
    [["monitor", "pause", "box"], ["keep", "runpod:abc", "--force"], ["unkeep", "runpod:abc"]],
)
def test_a_write_command_on_that_disk_says_so(
    tmp_path: Path, state: Path, command: list[str]
) -> None:
    result = reaper(tmp_path, *command)
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert line.startswith(f"reaper: REAPER_STATE: cannot open {state}: disk I/O error:")
