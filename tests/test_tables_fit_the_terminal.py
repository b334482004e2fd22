"""Tables cut cells only to fit a terminal: on a terminal they fit its width (`COLUMNS` when
set, else the terminal's own), and piped or redirected output keeps every cell whole, whatever
`COLUMNS` says — the part a fixed cut took off a reason was the part that mattered. The
terminal is a real pseudo-terminal, so the command decides as it would for a person."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.reap_support import World, cli, world

LONG_NAME = "a-pod-whose-name-goes-on-and-on-" + "x" * 60


def _fleet(w: World) -> None:
    for n in range(3):
        w.runpod.add_pod(f"busy-{n}", name=f"trainer-{n}", status="RUNNING", cost=1.0)
    w.runpod.add_pod("old-p1", name=LONG_NAME, status="EXITED", volume_gb=100)
    w.runpod.add_pod("safe-p2", name="prod", status="EXITED", locked=True)


def _on_a_terminal(w: World, *args: str, columns: int, env: dict[str, str]) -> str:
    """`reaper <args>` with its output on a pseudo-terminal `columns` wide: what it printed."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    full_env = {"PATH": os.environ["PATH"], "HOME": str(w.state_path.parent.parent), **w.env()}
    process = subprocess.Popen(
        [sys.executable, "-m", "reaper", *args],
        env={**full_env, **env},
        cwd=w.state_path.parent.parent,
        stdout=follower,
        stderr=subprocess.DEVNULL,
    )
    os.close(follower)
    chunks: list[bytes] = []
    try:
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the command closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(leader)
        process.wait(timeout=120)
    return b"".join(chunks).decode().replace("\r\n", "\n")


def _table(text: str) -> list[str]:
    return [line for line in text.splitlines() if not line.startswith(("reap ", "5 ", "("))]


@pytest.mark.parametrize("env", [{}, {"COLUMNS": "80"}, {"COLUMNS": "250"}])
def test_piped_output_keeps_every_cell_whole(tmp_path: Path, env: dict[str, str]) -> None:
    with world(tmp_path, start=datetime.now(UTC)) as w:
        _fleet(w)
        done = cli(w, "reap", "--dry-run", extra_env=env)
    assert done.returncode == 0, done.stderr
    assert LONG_NAME in done.stdout and "…" not in done.stdout, done.stdout


@pytest.mark.parametrize("columns", [80, 120])
def test_a_terminal_is_fitted_to_its_own_width(tmp_path: Path, columns: int) -> None:
    with world(tmp_path, start=datetime.now(UTC)) as w:
        _fleet(w)
        text = _on_a_terminal(w, "reap", "--dry-run", "--all", columns=columns, env={})
    table = _table(text)
    assert len(table) > 3 and all(len(line) <= columns for line in table), text
    assert "…" in text  # the long name was cut, not the layout


def test_columns_is_honoured_on_a_terminal(tmp_path: Path) -> None:
    with world(tmp_path, start=datetime.now(UTC)) as w:
        _fleet(w)
        text = _on_a_terminal(w, "reap", "--dry-run", columns=80, env={"COLUMNS": "250"})
    assert LONG_NAME in text and "…" not in text, text
    assert max(len(line) for line in _table(text)) > 80
