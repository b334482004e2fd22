"""`reaper monitor list|log|set|pause|resume|mute|unmute|delete` in a subprocess, on the same
state the pings write: one line per change, one line and exit 2 for bad input — a host without
a monitor too, named with the nearest hosts that have one."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from reaper.core.models import Monitor, PingEvent
from tests.reap_support import World, cli, world


@pytest.fixture
def w(tmp_path: Path) -> Iterator[World]:
    with world(tmp_path, start=datetime.now(UTC)) as w:
        yield w


def _seed(w: World, host: str = "trainer") -> None:
    store = w.store()
    now = datetime.now(UTC)
    store.create_monitor(Monitor(host=host, status="up", created_at=now, last_ping_at=now), 10)
    store.log_event(host, PingEvent(seq=1, at=now, kind="start", body="run 1", client="10.0.0.9"))
    store.log_event(host, PingEvent(seq=2, at=now, kind="exit", exit_status=3, body="boom"))
    store.close()


def _monitor(w: World, host: str = "trainer") -> Monitor:
    store = w.store(read_only=True)
    try:
        monitor = store.get_monitor(host)
    finally:
        store.close()
    assert monitor is not None
    return monitor


def test_set_creates_and_changes_a_monitor(w: World) -> None:
    created = cli(w, "monitor", "set", "nightly", "--timeout", "1d", "--grace", "2h")
    assert created.returncode == 0, created.stderr
    assert created.stdout == "created nightly: timeout 1d, grace 2h\n"
    changed = cli(w, "monitor", "set", "nightly", "--timeout", "default")
    assert changed.stdout == "set nightly: timeout 5m (HEARTBEAT_TIMEOUT), grace 2h\n"
    monitor = _monitor(w, "nightly")
    assert (monitor.timeout, monitor.grace) == (None, timedelta(hours=2))


def test_list_shows_every_monitor_with_its_settings(w: World) -> None:
    _seed(w)
    cli(w, "monitor", "set", "trainer", "--timeout", "2h")
    cli(w, "monitor", "pause", "trainer")
    text = cli(w, "monitor", "list")
    assert text.returncode == 0
    header, row = text.stdout.splitlines()
    assert header.split() == [
        *("host", "state", "last", "ping", "timeout", "grace", "muted", "until", "kept", "idle")
    ]
    assert row.split()[:2] == ["trainer", "paused"] and "2h (own)" in row
    data = json.loads(cli(w, "monitor", "list", "--json").stdout)
    [monitor] = data["monitors"]
    assert (monitor["timeout"], monitor["paused"]) == (7200, True)


def test_log_prints_the_events(w: World) -> None:
    _seed(w)
    text = cli(w, "monitor", "log", "trainer")
    assert text.returncode == 0
    lines = text.stdout.splitlines()
    assert lines[0] == "trainer: 2 events (all; the log keeps 100)"
    assert "start" in lines[1] and "10.0.0.9" in lines[1] and "run 1" in lines[1]
    assert "exit 3" in lines[2] and "boom" in lines[2]
    data = json.loads(cli(w, "monitor", "log", "trainer", "--json").stdout)
    assert [e["kind"] for e in data["events"]] == ["start", "exit"]


def test_pause_resume_mute_unmute(w: World) -> None:
    _seed(w)
    assert cli(w, "monitor", "pause", "trainer").stdout.startswith("paused trainer")
    assert _monitor(w).paused
    assert cli(w, "monitor", "resume", "trainer").stdout.startswith("resumed trainer")
    resumed = _monitor(w)
    assert not resumed.paused and resumed.resumed_at is not None
    muted = cli(w, "monitor", "mute", "trainer", "--for", "3h")
    assert muted.returncode == 0 and muted.stdout.startswith("muted trainer until ")
    until = _monitor(w).muted_until
    assert until is not None
    assert timedelta(hours=2, minutes=59) < until - datetime.now(UTC) <= timedelta(hours=3)
    assert cli(w, "monitor", "mute", "trainer").returncode == 0  # a day by default
    assert cli(w, "monitor", "unmute", "trainer").stdout == "unmuted trainer\n"
    assert _monitor(w).muted_until is None


def test_delete_removes_the_monitor_and_its_log(w: World) -> None:
    _seed(w)
    deleted = cli(w, "monitor", "delete", "trainer")
    assert deleted.returncode == 0 and deleted.stdout.startswith("deleted trainer")
    store = w.store(read_only=True)
    try:
        assert store.get_monitor("trainer") is None and store.monitor_log("trainer") == []
    finally:
        store.close()
    again = cli(w, "monitor", "delete", "trainer")
    assert (again.returncode, again.stderr.splitlines()[-1]) == (
        2,
        "reaper: <host>: no monitor trainer; nearest: none (no monitors)",
    )


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (("set", "x", "--timeout", "30s"), "expected 1m to 365d"),
        (("set", "x", "--grace", "400d"), "expected 0 to 365d"),
        (("set", "x", "--timeout", "soon"), "expected a duration"),
        (("set", "bad/host"), "<host>: expected 1-100"),
        (("log", ".."), "<host>: expected 1-100"),
        (("mute", "x", "--for", "400d"), "expected at most 365d"),
        (("frobnicate", "x"), "invalid choice"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(w: World, args: tuple[str, ...], reason: str) -> None:
    result = cli(w, "monitor", *args)
    assert result.returncode == 2
    assert reason in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr
    assert not w.state_path.exists(), "nothing was written"


@pytest.mark.parametrize("action", ["log", "pause", "resume", "mute", "unmute", "delete"])
def test_a_host_without_a_monitor_is_a_bad_argument(w: World, action: str) -> None:
    for host in ("trainer-1", "trainer-2", "eval"):
        _seed(w, host)
    result = cli(w, "monitor", action, "trainer-3")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "reaper: <host>: no monitor trainer-3; nearest: trainer-1, trainer-2, eval"
    ]
