"""`reaper serve` copies SQLite's WAL into the database file from a thread of its own, so that
no request waits on a checkpoint's fsync.

Observed from outside: the database file itself (read with `immutable=1`, which consults no
WAL) holds what was written, although no commit wrote enough WAL to checkpoint it.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

from reaper.core.records import Monitor, PingEvent
from reaper.store import sqlite as sqlite_module
from reaper.store.sqlite import SQLiteStore
from tests.heartbeat_support import make_settings, served
from tests.store_contract import MINUTE, T0

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
        time.sleep(sqlite_module.CHECKPOINT_EVERY_SECONDS * 3)
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


def test_the_commits_keep_a_checkpoint_of_their_own_as_a_backstop(tmp_path: Path) -> None:
    store = SQLiteStore(str(tmp_path / "state.db"))
    try:
        store.checkpoint_apart()
        conn = store._connection()
        (pages,) = conn.execute("PRAGMA wal_autocheckpoint").fetchone()
        assert pages == sqlite_module.WAL_BACKSTOP_BYTES // sqlite_module.PAGE_SIZE
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
