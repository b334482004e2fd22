"""`reaper emulate`: the RunPod and Vast emulators as servers on loopback with a fleet from a
JSON file, the `export` lines that point reaper at them, until Ctrl-C — so `reap`, `status`,
`keep` work against a fake cloud without writing Python."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.cli_process import run_reaper

ROOT = Path(__file__).resolve().parents[1]


@contextmanager
def emulating(tmp_path: Path, *args: str) -> Iterator[tuple[subprocess.Popen[str], dict[str, str]]]:
    process = subprocess.Popen(
        [sys.executable, "-m", "reaper", "emulate", *args],
        cwd=tmp_path,
        env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        exports: dict[str, str] = {}
        assert process.stdout is not None
        for line in process.stdout:
            if line.startswith("export "):
                name, _, value = line[len("export ") :].strip().partition("=")
                exports[name] = value
            if line.startswith("# Ctrl-C"):
                break
        yield process, exports
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)


def reaper(tmp_path: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return run_reaper(
        args, cwd=tmp_path, env={"PATH": os.environ["PATH"], "HOME": str(tmp_path), **env}
    )


def test_emulate_prints_the_exports_and_reaper_works_against_them(tmp_path: Path) -> None:
    with emulating(tmp_path) as (process, exports):
        assert set(exports) == {
            "RUNPOD_API_URL",
            "RUNPOD_GRAPHQL_URL",
            "RUNPOD_API_KEY",
            "VAST_API_URL",
            "VAST_API_KEY",
            "DIGITALOCEAN_API_URL",
            "DIGITALOCEAN_TOKEN",
            "REAPER_STATE",
            "NTFY_URL",
            "REAPER_PUBLIC_URL",
        }
        assert exports["RUNPOD_API_URL"].startswith("http://127.0.0.1:")
        assert exports["RUNPOD_API_URL"].endswith("/v2")
        assert exports["VAST_API_URL"].startswith("http://127.0.0.1:")
        state = Path(exports["REAPER_STATE"].removeprefix("sqlite:///"))

        dry = reaper(tmp_path, exports, "reap", "--dry-run", "--all")
        assert dry.returncode == 0, dry.stderr
        assert "llm-finetune" in dry.stdout and "bid-a100-sweep" in dry.stdout
        assert "l40s-render" in dry.stdout
        assert reaper(tmp_path, exports, "reap").returncode == 0
        kept = reaper(tmp_path, exports, "keep", "runpod:sweep-lr-3e4-b2", "--for", "2w")
        assert kept.returncode == 0 and "sweep-lr-3e-4" in kept.stdout
        status = reaper(tmp_path, exports, "status")
        assert "protected: kept by `reaper keep`" in status.stdout
        assert state.exists()

        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=20)
    assert process.returncode == 0
    assert err.strip().splitlines()[-1] == "reaper: emulators stopped"
    assert not state.exists()  # its state went with it


def test_sigterm_stops_it_cleanly(tmp_path: Path) -> None:
    with emulating(tmp_path) as (process, _):
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=20)
    assert process.returncode == 0


def test_a_fleet_file_of_ones_own(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet.json"
    fleet.write_text(
        '{"runpod": {"accounts": {"work": "rp-work-key-123"},'
        ' "pods": [{"id": "mine-1", "name": "my-pod", "status": "EXITED"}]},'
        ' "vast": {"instances": []}}'
    )
    with emulating(tmp_path, "--fleet", str(fleet)) as (process, exports):
        assert exports["RUNPOD_API_KEY"] == "work=rp-work-key-123"
        dry = reaper(tmp_path, exports, "reap", "--dry-run", "--json")
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=20)
    assert dry.returncode == 0, dry.stderr
    assert '"id": "mine-1"' in dry.stdout and '"account": "work"' in dry.stdout


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"runpod": {"pods": [{"status": "RUNNIN"}]}}', "runpod.pods[0].status: expected one of"),
        ("{not json", "not JSON: "),
        (None, "no such file"),
    ],
)
def test_a_bad_fleet_file_is_one_line_and_exit_2(
    tmp_path: Path, content: str | None, message: str
) -> None:
    fleet = tmp_path / "fleet.json"
    if content is not None:
        fleet.write_text(content)
    done = reaper(tmp_path, {}, "emulate", "--fleet", str(fleet))
    assert done.returncode == 2 and done.stdout == ""
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"reaper: {fleet}: {message}"), line


def test_a_taken_port_is_one_line_and_exit_1(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = reaper(tmp_path, {}, "emulate", "--vast-port", str(port))
    assert done.returncode == 1
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .startswith(f"reaper: cannot listen on 127.0.0.1:{port}")
    )


def test_without_the_emulators_installed_it_is_one_line(tmp_path: Path) -> None:
    """The `reaper` package never depends on the emulators: the command imports them when it
    runs, and says how to install them when they are not there."""
    code = (
        "import sys; sys.modules['emulators'] = None; sys.modules['emulators.fleet'] = None\n"
        "from reaper.interfaces.cli import main\n"
        "raise SystemExit(main(['emulate']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("reaper: reaper emulate: needs the emulators, which are not installed")
