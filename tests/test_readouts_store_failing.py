"""`reaper status` and `reaper report` on a disk that takes no writes say so in one line naming
REAPER_STATE and the cause — never "not a state database" about a good file, never a
traceback. A disk that takes no writes is made portably, even for root: the command runs with
a file-size limit of 0 (RLIMIT_FSIZE), so SQLite cannot create the shared-memory file a WAL
database needs to be read, exactly as on a full disk."""

from __future__ import annotations

import os
import resource
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from reaper.store.sqlite import SQLiteStore


def no_writes() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, resource.RLIM_INFINITY))


def reaper(tmp_path: Path, *args: str, limited: bool = True) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "REAPER_STATE": f"sqlite:///{tmp_path / 'state' / 'state.db'}",
        # `report` wants a key; the store fails before any provider is asked.
        "RUNPOD_API_KEY": "main=rp-readout-key-00001",
        "RUNPOD_API_URL": "http://127.0.0.1:9/v2",
    }
    return subprocess.run(
        [sys.executable, "-m", "reaper", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=no_writes if limited else None,
    )


@pytest.fixture
def state(tmp_path: Path) -> Path:
    """A good state database, closed (so its WAL side files are gone)."""
    path = tmp_path / "state" / "state.db"
    SQLiteStore(str(path)).close()
    assert not (tmp_path / "state" / "state.db-shm").exists()
    return path


@pytest.mark.parametrize("command", [["status"], ["report"], ["audit"]])
def test_a_readout_on_a_disk_that_takes_no_writes_says_so(
    tmp_path: Path, state: Path, command: list[str]
) -> None:
    result = reaper(tmp_path, *command)
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"reaper: REAPER_STATE: cannot read {state}: disk I/O error:")
    assert "may be full or failing" in lines[0]
    assert "not a state database" not in lines[0]


def test_the_same_readout_works_once_the_disk_does(tmp_path: Path, state: Path) -> None:
    result = reaper(tmp_path, "status", limited=False)
    assert result.returncode == 0, result.stderr


def test_a_write_command_on_that_disk_says_so_too(tmp_path: Path, state: Path) -> None:
    result = reaper(tmp_path, "monitor", "pause", "box")
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert line.startswith(f"reaper: REAPER_STATE: cannot open {state}: disk I/O error:")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes to read-only directories")
def test_a_read_only_directory_is_named_read_only(tmp_path: Path, state: Path) -> None:
    directory = state.parent
    directory.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        result = reaper(tmp_path, "status", limited=False)
    finally:
        directory.chmod(stat.S_IRWXU)
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert line.startswith(f"reaper: REAPER_STATE: cannot read {state}: read-only:")
