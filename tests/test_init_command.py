"""`reaper init` prints a `.env` skeleton with freshly generated ping and admin keys and the
lines for an instance template, and writes nothing: saved as `.env`, it is read as it is."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from reaper.app.settings import key_variables, load_settings, read_dotenv
from tests.cli_process import run_reaper


def _init(cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_reaper(["init"], env={"PATH": os.environ["PATH"], "HOME": str(cwd)}, cwd=cwd)


def test_init_prints_fresh_strong_keys_and_writes_nothing(tmp_path: Path) -> None:
    first, second = _init(tmp_path), _init(tmp_path)
    assert first.returncode == 0 and first.stderr == ""
    assert list(tmp_path.iterdir()) == []  # nothing written, not even a state
    keys = [
        dict(re.findall(r"^(REAPER_(?:PING|ADMIN)_KEY)=(\S+)$", run.stdout, re.M))
        for run in (first, second)
    ]
    for found in keys:
        assert len(found["REAPER_PING_KEY"]) >= 16 and len(found["REAPER_ADMIN_KEY"]) >= 16
        assert found["REAPER_PING_KEY"] != found["REAPER_ADMIN_KEY"]
    assert keys[0]["REAPER_PING_KEY"] != keys[1]["REAPER_PING_KEY"]
    ping = keys[0]["REAPER_PING_KEY"]
    assert f"HEARTBEAT_URL=https://<where reaper answers>/ping/{ping}" in first.stdout
    assert f"NOTIFY_URL=https://<where reaper answers>/alert/{ping}" in first.stdout
    for variable in key_variables():
        assert f"\n{variable}=\n" in first.stdout


def test_the_skeleton_saved_as_dotenv_is_valid_settings(tmp_path: Path) -> None:
    dotenv = tmp_path / ".env"
    dotenv.write_text(_init(tmp_path).stdout)
    values = read_dotenv(dotenv)
    settings = load_settings({}, dotenv=dotenv)
    assert settings.ping_key == values["REAPER_PING_KEY"]
    assert settings.admin_key == values["REAPER_ADMIN_KEY"]
    assert settings.mode == "observe" and settings.accounts == ()
