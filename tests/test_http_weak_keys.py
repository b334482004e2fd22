"""REAPER_PING_KEY and REAPER_ADMIN_KEY under 16 characters: `reaper serve` refuses to start
(exit 2, one line naming the variable) and the Lambda HTTP function answers every request 503
with one line and an ERROR log line — never the key; the reap and watch functions, which use
neither key, keep running."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from handlers.http import handler as http_handler
from handlers.watch import handler as watch_handler
from reaper.settings.model import KEY_MIN_LENGTH, Settings, weak_key
from tests.aws_support import Account, aws_account, http_event, json_lines, scheduled_event

GOOD = "x" * KEY_MIN_LENGTH
SHORT = "abc-15-chars-xy"
assert len(SHORT) == KEY_MIN_LENGTH - 1


@pytest.mark.parametrize(
    ("ping", "admin", "refused"),
    [
        (SHORT, GOOD + "a", "REAPER_PING_KEY"),
        (GOOD, SHORT, "REAPER_ADMIN_KEY"),
        ("x", None, "REAPER_PING_KEY"),
        (None, "y", "REAPER_ADMIN_KEY"),
        (GOOD, GOOD + "a", None),
        (None, None, None),
    ],
)
def test_a_key_under_16_characters_is_named(
    ping: str | None, admin: str | None, refused: str | None
) -> None:
    weak = weak_key(Settings(ping_key=ping, admin_key=admin))
    assert (weak.variable if weak else None) == refused


@pytest.mark.parametrize("variable", ["REAPER_PING_KEY", "REAPER_ADMIN_KEY"])
def test_serve_refuses_to_start_with_one_line_naming_the_variable(
    tmp_path: Path, variable: str
) -> None:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "REAPER_STATE": f"sqlite:///{tmp_path / 'state.db'}",
        "REAPER_PING_KEY": "ping-key-long-enough-0123",
        "REAPER_ADMIN_KEY": "admin-key-long-enough-4567",
        variable: SHORT,
    }
    result = subprocess.run(
        [sys.executable, "-m", "reaper", "serve", "--port", "0"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and variable in result.stderr
    assert "at least 16 characters" in result.stderr
    assert SHORT not in result.stderr + result.stdout
    assert not (tmp_path / "state.db").exists(), "refused before anything was opened"


@pytest.fixture
def account(monkeypatch: pytest.MonkeyPatch) -> Iterator[Account]:
    with aws_account(monkeypatch) as account:
        account.put_secret("REAPER_PING_KEY", SHORT)
        account.put_secret("REAPER_ADMIN_KEY", "admin-key-long-enough-4567")
        yield account


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/healthz"), ("GET", f"/ping/{SHORT}/trainer-1"), ("POST", "/login"), ("GET", "/")],
)
def test_the_lambda_http_function_answers_every_request_503(
    account: Account, capsys: pytest.CaptureFixture[str], method: str, path: str
) -> None:
    result = http_handler(http_event(method, path), None)
    assert result["statusCode"] == 503
    assert (
        result["body"] == "service refused: REAPER_PING_KEY is too short; see the function's log\n"
    )
    [line] = [e for e in json_lines(capsys.readouterr().err) if e.get("event") == "weak_key"]
    assert line["level"] == "error" and line["variable"] == "REAPER_PING_KEY"
    assert SHORT not in json.dumps(line)
    assert account.store().get_monitor("trainer-1") is None, "no ping was recorded"


def test_the_watch_function_runs_with_a_short_key(account: Account) -> None:
    result = watch_handler(scheduled_event("reaper-prod-WatchEventsRuleSchedule1-XYZ"), None)
    assert result["exit_code"] == 0, result


def test_the_watch_command_runs_with_short_keys(tmp_path: Path) -> None:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "REAPER_STATE": f"sqlite:///{tmp_path / 'state.db'}",
        "REAPER_PING_KEY": "x",
        "REAPER_ADMIN_KEY": "y",
    }
    result = subprocess.run(
        [sys.executable, "-m", "reaper", "watch"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
