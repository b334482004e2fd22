"""The process that `tests/cli_process.py` forks a `reaper` command from: a Python that has
already imported reaper, so that a command run by a test costs its own work and not the
interpreter's start and ~0.5 s of imports again (the suite runs hundreds of them).

Run as a script (`python tests/cli_zygote.py <socket>`). It imports every module of `reaper`,
then answers requests on a Unix socket and nothing else: it never runs reaper code itself, so
every command starts from modules just imported, as a fresh process does. A request is one
message (the command's arguments, environment, working directory) carrying the command's
stdin, stdout and stderr as file descriptors. For each, a first fork waits for a second, which
becomes the command: it takes the three descriptors, the environment and the directory, builds
`sys.stdin/stdout/stderr` over them as Python's start would, and runs `python -m reaper`'s
module. The first fork sends the command's pid (a test that times out kills it) and then its
exit status, as `subprocess` would report it (negative: killed by that signal).

The zygote stays single-threaded (forking a threaded process can copy a held lock) and ends
when its parent closes its stdin."""

from __future__ import annotations

import atexit
import contextlib
import importlib
import io
import json
import locale
import os
import pkgutil
import resource
import runpy
import selectors
import signal
import socket
import sys
import threading
import time
import traceback
from typing import Any

# Modules whose import does something beyond defining names: the entry point runs the command.
_NOT_IMPORTED = ("reaper.__main__",)
# What reaper imports only where it needs it (a DynamoDB state), and costs ~1 s to import.
_LAZY_DEPENDENCIES = ("boto3", "botocore.session")


def prewarm() -> None:
    import reaper

    for module in pkgutil.walk_packages(reaper.__path__, "reaper."):
        if module.name in _NOT_IMPORTED:
            continue
        with contextlib.suppress(Exception):
            importlib.import_module(module.name)
    for name in _LAZY_DEPENDENCIES:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)


def serve(path: str) -> None:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path)
    listener.listen(64)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the first forks are reaped by the kernel
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    selector.register(sys.stdin, selectors.EVENT_READ)
    print("ready", flush=True)
    while True:
        for key, _ in selector.select():
            if key.fileobj is sys.stdin:
                return  # the parent closed our stdin: it is done, or gone
            conn, _ = listener.accept()
            message, fds, _flags, _addr = socket.recv_fds(conn, 1 << 20, 3)
            if os.fork() == 0:
                listener.close()
                _waiter(conn, json.loads(message), fds)
            conn.close()
            for fd in fds:
                os.close(fd)


def _waiter(conn: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
    """The first fork: starts the command, says its pid, waits, says how it ended."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    pid = os.fork()
    if pid == 0:
        conn.close()
        _command(request, fds)
    for fd in fds:
        os.close(fd)
    try:
        conn.send(json.dumps({"pid": pid}).encode())
        _, status = os.waitpid(pid, 0)
        conn.send(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}).encode())
    finally:
        os._exit(0)


def _command(request: dict[str, Any], fds: list[int]) -> None:
    """The second fork: becomes `python -m reaper <args>` in the request's world, never returns."""
    code = 1
    try:
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        time.tzset()
        with contextlib.suppress(locale.Error):
            locale.setlocale(locale.LC_CTYPE, "")
        if request.get("file_size_limit") is not None:
            limit = request["file_size_limit"]
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
        _standard_streams(request["env"])
        sys.argv = ["reaper", *request["args"]]
        sys.path[0] = os.getcwd()  # as `python -m` does
        code = _run_module()
    except BaseException:  # anything before the command ran: say it as Python would
        with contextlib.suppress(BaseException):
            traceback.print_exc()
    finally:
        os._exit(_finish(code))


def _standard_streams(env: dict[str, str]) -> None:
    """stdin/stdout/stderr as a fresh interpreter builds them for pipes: UTF-8 (or
    PYTHONIOENCODING), stdout block-buffered, stderr line-buffered."""
    encoding = env.get("PYTHONIOENCODING") or "utf-8"
    sys.stdin = io.TextIOWrapper(_binary(0, "rb"), encoding=encoding)
    sys.stdout = io.TextIOWrapper(_binary(1, "wb"), encoding=encoding)
    sys.stderr = io.TextIOWrapper(
        _binary(2, "wb"), encoding=encoding, errors="backslashreplace", line_buffering=True
    )
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr


def _binary(fd: int, mode: str) -> io.BufferedIOBase:
    """A buffered stream over `fd` that lives as long as the process (never closed)."""
    return open(fd, mode, closefd=False)


def _run_module() -> int:
    try:
        runpy.run_module("reaper", run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        if exc.code is None:
            return 0
        if isinstance(exc.code, int):
            return exc.code
        print(exc.code, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        traceback.print_exc()
        return 128 + signal.SIGINT
    except BaseException:
        traceback.print_exc()
        return 1
    return 0


def _finish(code: int) -> int:
    """What the interpreter does at exit: wait for threads, run atexit, flush the streams."""
    with contextlib.suppress(BaseException):
        threading._shutdown()  # type: ignore[attr-defined]
    with contextlib.suppress(BaseException):
        atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            return 120
    return code


if __name__ == "__main__":
    prewarm()
    serve(sys.argv[1])
