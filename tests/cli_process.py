"""`reaper <args>` as a separate process, for the tests that check what a command prints and
how it exits: `run_reaper` is `subprocess.run([python, "-m", "reaper", ...])` with its output
captured, and answers the same.

The process is forked from a zygote that has imported reaper once (`tests/cli_zygote.py`, one
per test worker): the command gets its own pid, environment, working directory, pipes and exit
status, and its modules fresh from their import — but not the interpreter's start and the
imports again, ~0.6 s of CPU per command on the suite's machine. `REAPER_TEST_CLI=fresh` runs
every command as a new interpreter instead (`tests/test_cli_process.py` runs the same commands
both ways and compares them). Tests of what only a new interpreter shows (Ctrl-C during the
imports, what a command imports, `serve` and its signals) start `python -m reaper` themselves.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ZYGOTE = Path(__file__).with_name("cli_zygote.py")
READ_SIZE = 65536
# In the zygote's own environment, never in a command's: an unknown REAPER_* name, which `reap`
# refuses, so a command that inherited the zygote's environment would fail loudly.
CANARY = "REAPER_ZYGOTE_ONLY"


class _Zygote:
    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="reaper-zygote-")
        self.path = os.path.join(self.dir, "socket")
        self.process = subprocess.Popen(
            [sys.executable, str(ZYGOTE), self.path],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=self.dir,
            env={**os.environ, CANARY: "a command must never see this"},
        )
        assert self.process.stdout is not None
        ready = self.process.stdout.readline()
        if ready != b"ready\n":
            raise RuntimeError(f"the CLI zygote did not start: {ready!r}")

    def close(self) -> None:
        with contextlib.suppress(OSError):
            assert self.process.stdin is not None
            self.process.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)
        with contextlib.suppress(OSError):
            os.unlink(self.path)
            os.rmdir(self.dir)


_zygote: _Zygote | None = None
_zygote_lock = threading.Lock()


def _the_zygote() -> _Zygote:
    global _zygote
    with _zygote_lock:
        if _zygote is None or _zygote.process.poll() is not None:
            _zygote = _Zygote()
            atexit.register(_zygote.close)
        return _zygote


def run_reaper(
    args: Sequence[str],
    *,
    env: dict[str, str],
    cwd: str | Path,
    timeout: float = 120,
    file_size_limit: int | None = None,
) -> subprocess.CompletedProcess[str]:
    """`python -m reaper <args>` with exactly `env`, in `cwd`, stdin empty, stdout and stderr
    captured as text; `file_size_limit` is RLIMIT_FSIZE in the command (0: a disk that takes
    no writes). A command still running at `timeout` is killed: `subprocess.TimeoutExpired`."""
    command = [sys.executable, "-m", "reaper", *args]
    if os.environ.get("REAPER_TEST_CLI") == "fresh":
        return _fresh(command, env, cwd, timeout, file_size_limit)
    request = {"args": list(args), "env": env, "cwd": str(cwd), "file_size_limit": file_size_limit}
    return _forked(command, request, timeout)


def _fresh(
    command: list[str],
    env: dict[str, str],
    cwd: str | Path,
    timeout: float,
    file_size_limit: int | None,
) -> subprocess.CompletedProcess[str]:
    def limit() -> None:
        import resource

        assert file_size_limit is not None
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_size_limit, resource.RLIM_INFINITY))

    return subprocess.run(
        command,
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        preexec_fn=limit if file_size_limit is not None else None,
    )


def _forked(
    command: list[str], request: dict[str, Any], timeout: float
) -> subprocess.CompletedProcess[str]:
    deadline = time.monotonic() + timeout
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    in_r = os.open(os.devnull, os.O_RDONLY)
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as conn:
        conn.connect(_the_zygote().path)
        try:
            socket.send_fds(conn, [json.dumps(request).encode()], [in_r, out_w, err_w])
        finally:
            for fd in (in_r, out_w, err_w):
                os.close(fd)
        conn.settimeout(max(deadline - time.monotonic(), 0.001))
        pid = json.loads(conn.recv(READ_SIZE))["pid"]
        out, err, finished = _collect(out_r, err_r, deadline)
        if not finished:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        conn.settimeout(max(deadline - time.monotonic(), 10))
        returncode = json.loads(conn.recv(READ_SIZE))["returncode"]
    stdout, stderr = _text(out), _text(err)
    if not finished:
        raise subprocess.TimeoutExpired(command, timeout, output=stdout, stderr=stderr)
    return subprocess.CompletedProcess(command, returncode, stdout, stderr)


def _collect(out_r: int, err_r: int, deadline: float) -> tuple[bytes, bytes, bool]:
    """Both pipes until their ends close (the command and anything it started exited), or the
    deadline; False for `finished` on the deadline."""
    chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
    with selectors.DefaultSelector() as selector:
        for fd in chunks:
            selector.register(fd, selectors.EVENT_READ)
        while selector.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                break
            for key, _ in selector.select(left):
                data = os.read(key.fd, READ_SIZE)
                if data:
                    chunks[key.fd].append(data)
                else:
                    selector.unregister(key.fd)
        finished = not selector.get_map()
    for fd in chunks:
        os.close(fd)
    return b"".join(chunks[out_r]), b"".join(chunks[err_r]), finished


def _text(data: bytes) -> str:
    """As `subprocess.run(text=True)` decodes: the locale's encoding, universal newlines."""
    return data.decode("utf-8", errors="strict").replace("\r\n", "\n").replace("\r", "\n")
