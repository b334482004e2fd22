"""Ctrl-C at any moment is `reaper: interrupted` and exit 130 — never a traceback: while the
command's modules are still being imported (the first second), while the arguments and the
settings are read, and while the command talks to a provider.

The moment is chosen exactly, not by sleeping: a bootstrap sends SIGINT to its own process at
the N-th import, or the provider emulator sends it when the listing request arrives."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from emulators import RunPodEmulator

# Runs `reaper <args>` as `python -m reaper` does, after arranging for SIGINT to arrive at the
# N-th import reaper's code makes (N = argv[1]); the interrupt lands in whatever runs next,
# often deep inside a dependency's own imports.
_BOOTSTRAP = """
import builtins, os, runpy, signal, sys
at = int(sys.argv.pop(1))
# A background job of a shell without job control inherits SIGINT ignored: Ctrl-C is what a
# terminal's foreground process gets, so the test gives the child a terminal's disposition.
signal.signal(signal.SIGINT, signal.default_int_handler)
count = 0
real_import = builtins.__import__
def counting_import(name, globals=None, *args, **kwargs):
    global count
    # Only the imports reaper's own code makes: those of runpy finding the package come before
    # any code of reaper's runs (Python's own window, microseconds long).
    if (globals or {}).get("__name__", "").startswith(("reaper", "__main__")):
        count += 1
        if count == at:
            os.kill(os.getpid(), signal.SIGINT)
    return real_import(name, globals, *args, **kwargs)
builtins.__import__ = counting_import
sys.argv[0] = "reaper"
runpy.run_module("reaper", run_name="__main__", alter_sys=True)
"""


def _terminal_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "REAPER_STATE": f"sqlite:///{tmp_path / 'state.db'}",
        **extra,
    }


@pytest.mark.parametrize("at", [1, 2, 5, 10, 20, 40, 80, 160, 320])
def test_ctrl_c_while_starting_is_one_line_and_exit_130(tmp_path: Path, at: int) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _BOOTSTRAP, str(at), "status"],
        env=_env(tmp_path),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "Traceback" not in done.stderr, done.stderr
    if done.returncode != 0:  # interrupted (a late N: the command may have finished first)
        assert done.returncode == 130, done.stderr
        assert done.stderr.strip().splitlines()[-1] == "reaper: interrupted"


def test_ctrl_c_while_a_provider_answers_is_one_line_and_exit_130(tmp_path: Path) -> None:
    with RunPodEmulator({"main": "rp-interrupt-key-0123"}) as runpod:
        runpod.add_pod(status="RUNNING", name="trainer")
        proc = subprocess.Popen(
            [sys.executable, "-m", "reaper", "reap"],
            env=_env(
                tmp_path,
                RUNPOD_API_KEY="rp-interrupt-key-0123",
                RUNPOD_API_URL=runpod.rest_url,
                RUNPOD_GRAPHQL_URL=runpod.graphql_url,
            ),
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            # A terminal's disposition, as the bootstrap above gives it: a suite started in the
            # background (a shell without job control) hands its children SIGINT ignored.
            preexec_fn=_terminal_sigint,
        )
        # The listing's request is answered only after Ctrl-C reached the command.
        runpod.after_next("list", lambda: os.kill(proc.pid, signal.SIGINT))
        _out, err = proc.communicate(timeout=60)
    assert "Traceback" not in err, err
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "reaper: interrupted"
