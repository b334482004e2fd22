"""A ping reads its monitor from what the store last wrote, never from a stale copy.

The SQLite store keeps the monitors it wrote in memory, for the next ping of the same host
(`reaper serve`'s hot path). Whatever else changes the file must show through at once: another
connection, another process (`reaper monitor pause` beside a running `serve`), and this
store's own writes of any other kind. A write that failed must leave nothing behind.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, timedelta
from pathlib import Path

import pytest

from reaper.core.records import Monitor, PingEvent
from reaper.store.sqlite import SQLiteStore
from tests.store_contract.records import MINUTE, T0


def up(host: str, minute: int = 0) -> Monitor:
    return Monitor(host=host, status="up", created_at=T0, last_ping_at=T0 + minute * MINUTE)


def event(seq: int) -> PingEvent:
    return PingEvent(seq=seq, at=T0 + seq * MINUTE, kind="ping")


@pytest.fixture
def path(tmp_path: Path) -> str:
    return str(tmp_path / "state.db")


@pytest.fixture
def store(path: str) -> Iterator[SQLiteStore]:
    opened = SQLiteStore(path)
    yield opened
    opened.close()


@pytest.fixture
def other(path: str, store: SQLiteStore) -> Iterator[SQLiteStore]:
    """A second connection on the same file, opened after the first."""
    opened = SQLiteStore(path)
    yield opened
    opened.close()


def test_the_monitor_just_written_is_what_the_next_read_returns(store: SQLiteStore) -> None:
    store.put_monitor_logged(up("a", 1), event(1))
    store.put_monitor_logged(up("a", 2), event(2))
    assert store.get_monitor("a") == up("a", 2)


def test_another_connections_write_is_read_not_the_remembered_one(
    store: SQLiteStore, other: SQLiteStore
) -> None:
    store.put_monitor_logged(up("a", 1), event(1))
    assert other.pause_monitor("a", True, T0 + 2 * MINUTE)
    monitor = store.get_monitor("a")
    assert monitor is not None and monitor.paused


def test_another_connections_write_between_two_of_ours_drops_what_we_remembered(
    store: SQLiteStore, other: SQLiteStore
) -> None:
    """The race that matters: b changed by another process while this store goes on writing
    a. Its next write of a must not make its old copy of b look current again."""
    store.put_monitor_logged(up("a", 1), event(1))
    store.put_monitor_logged(up("b", 1), event(1))
    other.put_monitor(up("b", 9))
    store.put_monitor_logged(up("a", 2), event(2))
    assert store.get_monitor("b") == up("b", 9)
    assert store.get_monitor("a") == up("a", 2)


def test_another_process_pausing_a_monitor_is_read_at_once(store: SQLiteStore, path: str) -> None:
    store.put_monitor_logged(up("a", 1), event(1))
    assert store.get_monitor("a") == up("a", 1)
    code = (
        "import sys; from datetime import datetime, UTC; "
        "from reaper.store.sqlite import SQLiteStore; "
        "s = SQLiteStore(sys.argv[1]); "
        "assert s.pause_monitor('a', True, datetime(2026, 3, 1, 13, tzinfo=UTC)); s.close()"
    )
    subprocess.run([sys.executable, "-c", code, path], check=True, timeout=60)
    monitor = store.get_monitor("a")
    assert monitor is not None and monitor.paused


@pytest.mark.parametrize(
    "change",
    ["pause", "mute", "settings", "delete", "delete_retired", "log_event"],
)
def test_this_stores_own_other_writes_are_read(store: SQLiteStore, change: str) -> None:
    from reaper.core.monitors import SettingsChange

    store.put_monitor_logged(up("a", 1), event(1))
    store.put_monitor_logged(Monitor(host="r", status="retired", created_at=T0), event(1))
    assert store.get_monitor("a") == up("a", 1)
    if change == "pause":
        store.pause_monitor("a", True, T0 + 2 * MINUTE)
        expected = store.list_monitors()[0]
        assert expected.paused
    elif change == "mute":
        store.mute_monitor("a", T0 + 60 * MINUTE)
        expected = store.list_monitors()[0]
        assert expected.muted_until == T0 + 60 * MINUTE
    elif change == "settings":
        given = frozenset({"timeout"})
        store.set_monitor_settings(
            "a", SettingsChange(at=T0, given=given, timeout=timedelta(hours=3))
        )
        expected = store.list_monitors()[0]
        assert expected.timeout == timedelta(hours=3)
    elif change == "delete":
        store.delete_monitor("a")
        assert store.get_monitor("a") is None
        return
    elif change == "delete_retired":
        assert store.delete_retired(T0 + 24 * 60 * MINUTE, keep=0) == 1
        assert store.get_monitor("r") is None
        return
    else:
        store.log_event("a", event(2))
        expected = up("a", 1)
    assert store.get_monitor("a") == expected


def test_a_write_that_failed_leaves_the_stored_monitor(store: SQLiteStore) -> None:
    store.put_monitor_logged(up("a", 1), event(1))
    unwritable = event(2).model_copy(update={"body": object()})  # no JSON for it
    with pytest.raises(TypeError):
        store.put_monitor_logged(up("a", 2), unwritable)
    assert store.get_monitor("a") == up("a", 1)
    assert [e.seq for e in store.monitor_log("a")] == [1]


def test_the_next_ping_reads_no_row_back(store: SQLiteStore) -> None:
    """What all this is for: a ping of a host this store wrote last reads nothing from the
    file but SQLite's change counter."""
    store.put_monitor_logged(up("a", 1), event(1))
    statements: list[str] = []
    store._connection().set_trace_callback(statements.append)
    try:
        assert store.get_monitor("a") == up("a", 1)
    finally:
        store._connection().set_trace_callback(None)
    assert statements == ["PRAGMA data_version"]


def test_a_time_in_another_zone_at_offset_zero_comes_back_in_utc(store: SQLiteStore) -> None:
    """What the store hands back from memory is what it would read from the file: a zone at
    offset 0 today (GMT, London in winter) is not UTC six months on."""
    from datetime import timezone

    gmt = timezone(timedelta(0), "GMT")
    store.put_monitor_logged(Monitor(host="a", created_at=T0.astimezone(gmt)), event(1))
    remembered = store.get_monitor("a")
    assert remembered is not None and remembered.created_at.tzinfo is UTC
