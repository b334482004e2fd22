"""`reaper emulate` on the real clock with stopped time: a fleet entry says how long it has been
stopped (`stopped_for`), and the emulated fleet's own state starts that instance's stopped
clock that long ago — so the first `reaper reap` warns an instance due within minutes instead
of "stopped for 0s". Only a stopped entry takes it; the hint names the reaper that runs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from emulators.fleet import EXAMPLE, FleetError, load_fleet, parse_fleet
from reaper.app.wiring import emulator
from reaper.providers.plugins import plugins
from tests.cli_process import run_reaper

ROOT = Path(__file__).resolve().parents[1]
EMULATORS = {provider.name: emulator(provider) for provider in plugins()}


@contextmanager
def emulating(cwd: Path, path: str, *args: str) -> Iterator[tuple[list[str], dict[str, str]]]:
    """`reaper emulate` running; its comment lines and its exports."""
    process = subprocess.Popen(
        [sys.executable, "-m", "reaper", "emulate", *args],
        cwd=cwd,
        env={"PATH": path, "HOME": str(cwd)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    comments: list[str] = []
    exports: dict[str, str] = {}
    try:
        assert process.stdout is not None
        for line in process.stdout:
            if line.startswith("export "):
                name, _, value = line[len("export ") :].strip().partition("=")
                exports[name] = value
            else:
                comments.append(line.rstrip("\n"))
            if line.startswith("# Ctrl-C"):
                break
        yield comments, exports
    finally:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=20)


def reap_json(cwd: Path, env: dict[str, str]) -> dict[str, Any]:
    done = run_reaper(
        ["reap", "--json"], cwd=cwd, env={"PATH": os.environ["PATH"], "HOME": str(cwd), **env}
    )
    assert done.returncode in (0, 1), done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def test_the_first_reap_sees_the_stopped_time_the_fleet_gives(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet.json"
    fleet.write_text(
        json.dumps(
            {
                "runpod": {
                    "pods": [
                        {"id": "old-1", "status": "EXITED", "stopped_for": "23h55m"},
                        {"id": "new-2", "status": "EXITED"},
                    ]
                },
                "digitalocean": {"droplets": [{"id": 7, "status": "off", "stopped_for": "2h"}]},
            }
        )
    )
    before = datetime.now(UTC)
    with emulating(tmp_path, os.environ["PATH"], "--fleet", str(fleet)) as (comments, exports):
        report = reap_json(tmp_path, exports)
        [phone] = [line.split(": ", 1)[1].split()[0] for line in comments if "phone" in line]
        messages = httpx.get(f"{phone}json", timeout=10).json()
    after = datetime.now(UTC)
    since = {i["id"]: datetime.fromisoformat(i["stopped_since"]) for i in report["instances"]}
    assert before - timedelta(hours=23, minutes=55) <= since["old-1"]
    assert since["old-1"] <= after - timedelta(hours=23, minutes=55)
    assert before - timedelta(hours=2) <= since["7"] <= after - timedelta(hours=2)
    assert before <= since["new-2"] <= after
    actions = {a["id"]: a["action"] for a in report["actions"]}
    assert actions == {"old-1": "warn"}
    # The warning reached the emulated phone, with its buttons linking to `reaper serve`.
    [warning] = [m for m in messages if "(runpod:old-1) will be terminated" in m["title"]]
    labels = [action["label"] for action in warning["actions"]]
    assert labels[:2] == ["Keep 1 day", "Keep 1 week"]
    assert all(
        a["url"].startswith(exports["REAPER_PUBLIC_URL"] + "/act/") for a in warning["actions"]
    )


def test_the_default_fleet_has_one_instance_due_within_minutes() -> None:
    fleet = load_fleet(EXAMPLE, EMULATORS)
    ages = [age for s in fleet.sections.values() for age in s.stopped_for if age is not None]
    assert len(ages) == 1
    assert timedelta(hours=23) < ages[0] < timedelta(hours=24)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"runpod": {"pods": [{"status": "RUNNING", "stopped_for": "2h"}]}},
            "runpod.pods[0].stopped_for: only a stopped one (status EXITED) has a stopped time",
        ),
        (
            {"vast": {"instances": [{"stopped_for": "2h"}]}},
            "vast.instances[0].stopped_for: only a stopped one (actual_status stopped or exited)",
        ),
        (
            {"digitalocean": {"droplets": [{"status": "off", "stopped_for": "2 hours"}]}},
            "digitalocean.droplets[0].stopped_for: expected a duration like 30m, 23h55m or 3d",
        ),
        (
            {"digitalocean": {"droplets": [{"status": "off", "stopped_for": 7200}]}},
            "digitalocean.droplets[0].stopped_for: expected a string",
        ),
    ],
)
def test_a_wrong_stopped_for_is_one_line_naming_its_place(data: Any, message: str) -> None:
    with pytest.raises(FleetError) as err:
        parse_fleet(data, EMULATORS)
    assert str(err.value).startswith(message), str(err.value)


def test_the_hint_names_the_reaper_of_this_installation(tmp_path: Path) -> None:
    """After `make demo` nothing is on PATH: the hint says `.venv/bin/reaper`."""
    venv_bin = str(Path(sys.executable).parent)
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if p != venv_bin)
    with emulating(ROOT, path) as (comments, _):
        [hint] = [line for line in comments if "then try:" in line]
    script = Path(sys.executable).parent / "reaper"
    assert hint.endswith(f"then try: {os.path.relpath(script, ROOT)} reap --dry-run"), hint
