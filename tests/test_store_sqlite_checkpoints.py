"""`reaper serve` copies SQLite's WAL into the database file from a thread of its own, so that
no request waits on a checkpoint's fsync.

Observed from outside: the database file itself (read with `immutable=1`, which consults no
WAL) holds what was written, although no commit wrote enough WAL to checkpoint it.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from reaper.core.records import Monitor, PingEvent
from reaper.store.sqlite import SQLiteStore, connection
from tests.heartbeat_support import make_settings, served
from tests.log_support import json_log
from tests.store_contract.records import MINUTE, T0

WRITES = 40
WAIT_SECONDS = 10.0


def in_the_file(path: Path) -> int:
    """How many monitors the database file holds, leaving the WAL out."""
    conn = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
    try:
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
        if "monitors" not in tables:  # not even the schema has left the WAL yet
            return 0
        return int(conn.execute("SELECT count(*) FROM monitors").fetchone()[0])
    finally:
        conn.close()


def write(store: SQLiteStore, count: int) -> None:
    for index in range(count):
        monitor = Monitor(host=f"h-{index}", status="up", created_at=T0, last_ping_at=T0)
        store.put_monitor_logged(monitor, PingEvent(seq=1, at=T0 + MINUTE, kind="ping"))


def wait_for_file(path: Path, count: int) -> int:
    deadline = time.monotonic() + WAIT_SECONDS
    while (found := in_the_file(path)) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


def checkpoint_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "sqlite-checkpoint"]


def test_without_it_small_writes_stay_in_the_wal(tmp_path: Path) -> None:
    """The control: what the other tests see is the thread's doing, not the commits'."""
    path = tmp_path / "state.db"
    store = SQLiteStore(str(path))
    try:
        write(store, WRITES)
        time.sleep(connection.CHECKPOINT_EVERY_SECONDS * 3)
        assert in_the_file(path) == 0
    finally:
        store.close()


def test_the_thread_copies_the_wal_into_the_file(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    store = SQLiteStore(str(path))
    try:
        store.checkpoint_apart()
        write(store, WRITES)
        assert wait_for_file(path, WRITES) == WRITES
    finally:
        store.close()


def wal_size(path: Path) -> int:
    wal = path.with_name(path.name + "-wal")
    return wal.stat().st_size if wal.exists() else 0


def ping_write(store: SQLiteStore, index: int) -> float:
    """One ping's write, as `reaper serve` makes it; its seconds."""
    monitor = Monitor(host=f"h-{index % 200}", status="up", created_at=T0)
    event = PingEvent(seq=index, at=T0, kind="ping", body="x" * 100)
    before = time.monotonic()
    store.put_monitor_logged(monitor, event)
    return time.monotonic() - before


def steady_writes(store: SQLiteStore, seconds: float, per_second: int = 1000) -> list[float]:
    """Pings at a steady rate for `seconds`; each write's seconds."""
    taken: list[float] = []
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        taken.append(ping_write(store, len(taken)))
        ahead = started + len(taken) / per_second - time.monotonic()
        if ahead > 0:
            time.sleep(ahead)
    return taken


def test_the_wal_starts_over_while_writes_go_on(tmp_path: Path) -> None:
    """A WAL always being appended to is never wholly copied by a checkpoint that runs beside
    the writes, and SQLite starts it over only once it is: without the thread's second step
    (the last frames copied with the writes held) it held every write, up to the backstop."""
    path = tmp_path / "state.db"
    store = SQLiteStore(str(path))
    try:
        # What a write of an existing monitor adds to the WAL, from an emptied WAL.
        for index in range(200):
            ping_write(store, index)
        store._connection().execute("PRAGMA wal_checkpoint(TRUNCATE)")
        for index in range(200, 300):
            ping_write(store, index)
        per_write = wal_size(path) / 100
        store.checkpoint_apart()
        writes = len(steady_writes(store, 4.0))
        written = writes * per_write
        assert wal_size(path) < written / 2, f"{wal_size(path)} bytes of WAL for {written:.0f}"
    finally:
        store.close()


def test_another_connection_reading_holds_no_write_back(tmp_path: Path) -> None:
    """The second step holds this store's writes: it must never wait on another connection
    (a `reaper status` reading), or every ping would wait with it."""
    path = tmp_path / "state.db"
    store = SQLiteStore(str(path))
    reader = sqlite3.connect(str(path), isolation_level=None)
    try:
        store.checkpoint_apart()
        write(store, 1)
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM monitors").fetchone()  # a read that stays open
        taken = steady_writes(store, 3.0)
        assert max(taken) < 1.0, f"a write waited {max(taken):.1f} s"
        assert store.get_monitor("h-1") is not None
    finally:
        reader.close()
        store.close()


def test_the_commits_keep_a_checkpoint_of_their_own_as_a_backstop(tmp_path: Path) -> None:
    store = SQLiteStore(str(tmp_path / "state.db"))
    try:
        store.checkpoint_apart()
        conn = store._connection()
        (pages,) = conn.execute("PRAGMA wal_autocheckpoint").fetchone()
        assert pages == connection.WAL_BACKSTOP_BYTES // connection.PAGE_SIZE
    finally:
        store.close()


def test_close_stops_the_thread_and_a_read_only_store_starts_none(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    store = SQLiteStore(str(path))
    store.checkpoint_apart()
    store.checkpoint_apart()  # a second call starts no second thread
    assert len(checkpoint_threads()) == 1
    store.close()
    assert checkpoint_threads() == []
    reader = SQLiteStore(str(path), read_only=True)
    reader.checkpoint_apart()
    assert checkpoint_threads() == []
    reader.close()


def test_serve_checkpoints_apart(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    with served(settings, dedicated=True) as app:
        for index in range(WRITES):
            assert app.ping(f"node-{index}").status_code == 200
        assert wait_for_file(Path(settings.state.location), WRITES) == WRITES


def test_a_failing_checkpoint_is_said_once_and_its_recovery_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not a line every half second while it fails: the commits' backstop goes on meanwhile."""
    rounds = {"n": 0}
    real = SQLiteStore._checkpoint_round

    def flaky(self: SQLiteStore, conn: sqlite3.Connection) -> None:
        rounds["n"] += 1
        if rounds["n"] <= 4:
            raise sqlite3.OperationalError("disk I/O error")
        real(self, conn)

    monkeypatch.setattr(SQLiteStore, "_checkpoint_round", flaky)
    monkeypatch.setattr(connection, "CHECKPOINT_EVERY_SECONDS", 0.02)
    store = SQLiteStore(str(tmp_path / "state.db"))
    with json_log() as stream:
        store.checkpoint_apart()
        deadline = time.monotonic() + WAIT_SECONDS
        while rounds["n"] < 8 and time.monotonic() < deadline:
            time.sleep(0.02)
        store.close()
    said = [json.loads(line) for line in stream.getvalue().splitlines()]
    checkpoints = [(e["result"], e.get("error")) for e in said if e["event"] == "checkpoint"]
    assert rounds["n"] >= 8
    assert checkpoints == [("failed", "OperationalError"), ("ok", None)]
