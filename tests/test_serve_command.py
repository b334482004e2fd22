"""`reaper serve` as a user runs it: a real process, real signals. It refuses DynamoDB state,
says when reaping is off, reaps on schedule when keys are set, shuts down cleanly on SIGTERM,
and never prints a key."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from emulators import RunPodEmulator
from reaper.interfaces.serve import serve_command
from reaper.settings.model import Settings, StateURL
from reaper.settings.parse import ConfigError
from reaper.store.sqlite import SQLiteStore
from tests.serve_support import KEY, reaper_serve

RUNPOD_KEY = "rp-serve-key-13579"


def test_serve_refuses_dynamodb_state() -> None:
    settings = Settings(state=StateURL("dynamodb", "reaper-table"))
    with pytest.raises(ConfigError) as raised:
        serve_command(settings, host="127.0.0.1", port=0)
    assert raised.value.variable == "REAPER_STATE"


def test_dynamodb_state_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "reaper", "serve", "--port", "0"],
        cwd=tmp_path,
        env={"PATH": os.environ.get("PATH", ""), "REAPER_STATE": "dynamodb://reaper-table"},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "REAPER_STATE" in result.stderr


def test_without_keys_it_serves_with_reaping_off_and_stops_on_sigterm(tmp_path: Path) -> None:
    with reaper_serve(tmp_path) as serve:
        url = f"http://127.0.0.1:{serve.port}"
        assert httpx.get(f"{url}/ping/{KEY}/box").status_code == 200
        assert httpx.get(f"{url}/ping/wrong/box").status_code == 404
        serve.proc.send_signal(signal.SIGTERM)
        assert serve.proc.wait(timeout=20) == 0
        output = serve.output()
    assert "reaping=off" in output
    assert KEY not in output
    store = SQLiteStore(str(tmp_path / "state.db"), read_only=True)
    assert [m.host for m in store.list_monitors()] == ["box"]
    store.close()


def test_with_keys_it_reaps_on_schedule(tmp_path: Path) -> None:
    with RunPodEmulator({"main": RUNPOD_KEY}) as runpod:
        runpod.add_pod(name="busy")
        env = {
            "RUNPOD_API_KEY": f"main={RUNPOD_KEY}",
            "RUNPOD_API_URL": runpod.rest_url,
            "RUNPOD_GRAPHQL_URL": runpod.graphql_url,
        }
        with reaper_serve(tmp_path, **env) as serve:
            serve.wait_for(r"pass_done\s+job=reap")
            serve.proc.send_signal(signal.SIGINT)
            assert serve.proc.wait(timeout=20) == 0
            output = serve.output()
        assert runpod.count("list") >= 1
    assert "reaping=every" in output
    assert RUNPOD_KEY not in output and KEY not in output
    store = SQLiteStore(str(tmp_path / "state.db"), read_only=True)
    last = store.last_reap()
    store.close()
    assert last is not None and last.instances == 1


def test_an_unusable_state_path_is_one_line_and_exit_2(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    result = subprocess.run(
        [sys.executable, "-m", "reaper", "serve", "--port", "0"],
        cwd=tmp_path,
        env={
            "PATH": os.environ.get("PATH", ""),
            "REAPER_STATE": f"sqlite:///{blocker}/state.db",
        },
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("reaper: REAPER_STATE")
