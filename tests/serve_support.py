"""`reaper serve` as a user runs it, for the tests: a real process on an ephemeral port, its
output read line by line (a test waits for a line, never sleeps)."""

from __future__ import annotations

import os
import queue
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

KEY = "serve-ping-key-98765"


@dataclass
class Process:
    proc: subprocess.Popen[str]
    lines: queue.Queue[str]
    seen: list[str]
    port: int = 0

    def wait_for(self, pattern: str, timeout: float = 20) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.2)
            except queue.Empty:
                if self.proc.poll() is not None:
                    break
                continue
            self.seen.append(line)
            if re.search(pattern, line):
                return line
        raise AssertionError(f"never saw {pattern!r}; got:\n" + "".join(self.seen))

    def output(self) -> str:
        while not self.lines.empty():
            self.seen.append(self.lines.get())
        return "".join(self.seen)


@contextmanager
def reaper_serve(tmp_path: Path, **env: str) -> Iterator[Process]:
    """`reaper serve --port 0` in `tmp_path` with a clean environment plus `env`, until it has
    said where it listens; killed at the end of the block if still running."""
    environ = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "XDG_STATE_HOME": str(tmp_path / "xdg"),
        "REAPER_STATE": f"sqlite:///{tmp_path / 'state.db'}",
        "REAPER_PING_KEY": KEY,
        **env,
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "reaper", "serve", "--port", "0"],
        cwd=tmp_path,
        env=environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    process = Process(proc, lines, [])
    try:
        listening = process.wait_for(r"listening=http://127\.0\.0\.1:\d+")
        match = re.search(r"127\.0\.0\.1:(\d+)", listening)
        assert match is not None
        process.port = int(match.group(1))
        yield process
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def closed_by_server(sock: socket.socket) -> bool:
    """Whether the server closed this client socket (reads end or fail), without waiting."""
    sock.settimeout(0.01)
    try:
        return sock.recv(1) == b""
    except TimeoutError:
        return False
    except OSError:
        return True


def wait_until(condition: Callable[[], bool], seconds: float) -> bool:
    """Poll `condition` until it holds or `seconds` pass; whether it held."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False
