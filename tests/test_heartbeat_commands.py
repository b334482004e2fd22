"""`reaper watch [--json]` and `reaper status [--json]` from the command line."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from reaper.core.models import Monitor
from reaper.interfaces.cli import main
from reaper.store.sqlite import SQLiteStore


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name in ("RUNPOD_API_KEY", "VAST_API_KEY", "TELEGRAM_BOT_TOKEN", "BARK_URL"):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "state.db"
    monkeypatch.setenv("REAPER_STATE", f"sqlite:///{path}")
    return path


def _seed(path: Path) -> None:
    now = datetime.now(UTC)
    store = SQLiteStore(str(path))
    store.put_monitor(
        Monitor(host="alive", status="up", created_at=now, last_ping_at=now - timedelta(minutes=1))
    )
    store.put_monitor(
        Monitor(host="quiet", status="up", created_at=now, last_ping_at=now - timedelta(hours=1))
    )
    store.put_monitor(
        Monitor(
            host="trainer",
            status="up",
            created_at=now,
            last_ping_at=now,
            last_ping_kind="start",
            job_started_at=now,
        )
    )
    store.close()


def test_watch_json_reports_what_went_down(state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _seed(state)
    assert main(["watch", "--json"]) == 1  # a monitor is down: needs attention
    report = json.loads(capsys.readouterr().out)
    assert report["went_down"] == ["quiet"] and report["down"] == ["quiet"]
    assert report["alerts"][0]["event"] == "monitor_down"
    assert set(report) >= {"at", "monitors", "reaping", "reaper_silent", "errors", "exit_code"}
    # The second pass alerts no more.
    assert main(["watch", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["alerts"] == []


def test_watch_on_an_empty_state_is_fine(state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["watch"]) == 0
    assert "watched 0 monitors" in capsys.readouterr().out


def test_status_json_lists_monitors_and_the_last_reap(
    state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _seed(state)
    assert main(["status", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {"at", "counts", "monitors", "reaping", "last_reap", "fleet", "actions"} <= set(data)
    # The status page's data by name, as `GET /status` answers it: one report, two ways.
    assert {"running", "stopped", "balances", "terminations", "snapshots", "listed_at"} <= set(data)
    by_host = {m["host"]: m for m in data["monitors"]}
    assert by_host["quiet"]["overdue"] is True and by_host["alive"]["overdue"] is False
    assert by_host["trainer"]["job_running"] is True
    assert data["last_reap"] is None and data["reaping"] is False


def test_status_text_and_no_database_created(
    state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    SQLiteStore(str(state)).close()
    before = state.read_bytes()
    assert main(["status"]) == 0
    out = capsys.readouterr().out
    assert "monitors 0 up" in out and "reaping is off" in out
    assert state.read_bytes() == before  # status only reads


def test_status_without_a_database_is_one_line_and_exit_2(
    state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["status"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1
    assert "REAPER_STATE" in err and str(state) in err
    assert not state.exists()  # and creates none
