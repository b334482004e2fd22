"""Logs through the standard `logging` module: every line has a timestamp and a level (LOG_LEVEL
picks the lowest written), JSON lines on Lambda and with LOG_FORMAT=json, secrets scrubbed."""

from __future__ import annotations

import io
import json
import logging
import re
import subprocess
import sys
from pathlib import Path

import pytest

from reaper import log

TEXT_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (DEBUG|INFO|WARNING|ERROR) +\S+ ")


def test_a_text_line_has_its_time_and_level() -> None:
    stream = io.StringIO()
    log.configure(json_lines=False, stream=stream)
    log.event("reap", result="done", instances=3)
    log.event("listing", result="error", error="timeout")
    first, second = stream.getvalue().splitlines()
    assert TEXT_LINE.match(first) and " INFO " in first and "result=done instances=3" in first
    assert TEXT_LINE.match(second) and " WARNING " in second  # a failed outcome


def test_json_lines_carry_ts_level_and_event() -> None:
    stream = io.StringIO()
    log.configure(json_lines=True, stream=stream)
    log.event("schedule_error", job="reap", error="RuntimeError")
    record = json.loads(stream.getvalue())
    assert record["level"] == "error" and record["event"] == "schedule_error"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", record["ts"])


def test_log_level_hides_what_is_below_it() -> None:
    stream = io.StringIO()
    log.configure(json_lines=True, stream=stream)
    log.apply_settings("warning", None)
    log.event("reap", result="done")
    log.event("listing", result="error")
    log.debug("detail", n=1)
    assert [json.loads(line)["event"] for line in stream.getvalue().splitlines()] == ["listing"]
    log.apply_settings("debug", None)
    log.debug("detail", n=1)
    assert json.loads(stream.getvalue().splitlines()[-1])["level"] == "debug"


def test_log_format_json_switches_a_terminal_to_json_lines() -> None:
    stream = io.StringIO()
    log.configure(json_lines=False, stream=stream)
    log.apply_settings("info", "json")
    log.event("reap", result="done")
    assert json.loads(stream.getvalue())["event"] == "reap"


def test_on_lambda_lines_are_json_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "reaper-prod-watch")
    stream = io.StringIO()
    log.configure(stream=stream)
    log.event("watch", result="done")
    assert json.loads(stream.getvalue())["level"] == "info"


def test_secrets_are_scrubbed_from_every_line() -> None:
    stream = io.StringIO()
    log.configure(json_lines=False, stream=stream)
    log.register_secrets(["rp-secret-key-12345"])
    log.event(
        "provider", error="401 for key rp-secret-key-12345", nested={"k": "rp-secret-key-12345"}
    )
    logging.getLogger("uvicorn.error").warning("bad request with rp-secret-key-12345")
    text = stream.getvalue()
    assert "rp-secret-key-12345" not in text and text.count(log.REDACTED) == 2


def test_uvicorn_lines_share_the_format(capsys: pytest.CaptureFixture[str]) -> None:
    log.configure(json_lines=False)
    log.route_uvicorn()
    logging.getLogger("uvicorn.error").warning("Invalid HTTP request received.")
    [line] = capsys.readouterr().err.splitlines()
    assert TEXT_LINE.match(line) and "uvicorn.error" in line and "Invalid HTTP request" in line


def test_the_cli_writes_timed_leveled_lines_and_json_on_request(tmp_path: Path) -> None:
    base = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "REAPER_STATE": f"sqlite:///{tmp_path / 'state.db'}",
    }

    def watch(**extra: str) -> list[str]:
        done = subprocess.run(
            [sys.executable, "-m", "reaper", "watch"],
            env={**base, **extra},
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return done.stderr.splitlines()

    text = watch()
    assert text and all(TEXT_LINE.match(line) for line in text)
    assert all(json.loads(line)["level"] for line in watch(LOG_FORMAT="json"))
    assert watch(LOG_LEVEL="warning") == []
