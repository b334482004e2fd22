"""A negative duration is a value with something wrong with it, not an option argparse cannot
find: `--for -1d` and `--for=-1d` both answer, in one line and exit 2, that a duration must be
positive — before anything is opened or stored."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.cli_process import run_reaper


@pytest.mark.parametrize(
    ("args", "flag", "value"),
    [
        (["keep", "runpod:abc", "--for", "-1d"], "--for", "-1d"),
        (["keep", "runpod:abc", "--for=-1d"], "--for", "-1d"),
        (["keep", "host:trainer", "--for", "-3h"], "--for", "-3h"),
        (["monitor", "mute", "trainer", "--for", "-2h"], "--for", "-2h"),
        (["idle", "trainer", "--after", "-30m"], "--after", "-30m"),
    ],
)
def test_a_negative_duration_is_one_line_saying_it_must_be_positive(
    tmp_path: Path, args: list[str], flag: str, value: str
) -> None:
    state = tmp_path / "state.db"
    done = run_reaper(
        args,
        env={
            "PATH": os.environ["PATH"],
            "HOME": str(tmp_path),
            "REAPER_STATE": f"sqlite:///{state}",
        },
        cwd=tmp_path,
    )
    assert done.returncode == 2
    [line] = done.stderr.splitlines()
    assert line.endswith(f"argument {flag}: a duration must be positive, got '{value}'"), line
    assert not state.exists()
