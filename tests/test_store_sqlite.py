"""The SQLite store: the shared contract, plus what only a file on disk can get wrong."""

from __future__ import annotations

import sqlite3
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from reaper.core.models import KeptInstance, Monitor
from reaper.store.ports import ReadOnlyStoreError, Store
from reaper.store.sqlite import SQLiteStore, StoreSchemaError, connection, coordination, ledger
from reaper.store.sqlite.schema import SCHEMA_VERSION
from tests.store_contract import StoreContract
from tests.store_contract.records import (
    HOUR,
    MINUTE,
    T0,
    WRITES,
    audit_record,
    full_monitor,
    reap_run,
    warning,
)


class TestSQLiteStore(StoreContract):
    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[Store]:
        store = SQLiteStore(str(tmp_path / "state.db"))
        yield store
        store.close()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "nested" / "deeper" / "state.db"


def fill(store: SQLiteStore) -> None:
    """One of everything, so reopening can be checked for losses."""
    store.start_stopped_clock("runpod:a", T0)
    store.record_warning("runpod:a", warning(T0 + HOUR))
    store.keep(KeptInstance(key="vast:7", since=T0, until=T0 + 2 * HOUR))
    store.acquire_lease("reap", "alice", T0, HOUR)
    store.record_termination(audit_record("pod-1", T0, confirmed=True))
    store.record_reap(reap_run(T0, T0 + MINUTE))
    store.put_monitor(full_monitor("trainer-1"))
    store.put_monitor(Monitor(host="trainer-2", status="up", created_at=T0))
    store.claim_alert("down:trainer-1", T0, HOUR)
    store.open_episode("balance:runpod:main", T0, "low")


def assert_reads_empty(store: SQLiteStore) -> None:
    history = store.history()
    assert (history.first_seen_stopped, history.warnings, history.kept) == ({}, {}, {})
    assert store.listings() == []
    assert store.audit_log() == []
    assert store.last_reap() is None
    assert store.list_monitors() == []
    assert store.get_monitor("trainer-1") is None
    assert store.open_episodes() == []


# --- read-only (dry runs) -------------------------------------------------------------------
def test_read_only_on_a_missing_file_creates_nothing_and_reads_empty(db_path: Path) -> None:
    store = SQLiteStore(str(db_path), read_only=True)
    assert store.read_only is True
    assert_reads_empty(store)
    store.close()
    assert not db_path.exists()
    assert not db_path.parent.parent.exists(), "no directory may be created either"


@pytest.mark.parametrize("write", WRITES.values(), ids=WRITES.keys())
def test_read_only_refuses_every_write_on_a_missing_file(
    db_path: Path, write: Callable[[SQLiteStore], object]
) -> None:
    store = SQLiteStore(str(db_path), read_only=True)
    with pytest.raises(ReadOnlyStoreError):
        write(store)
    store.close()
    assert not db_path.parent.parent.exists()


@pytest.mark.parametrize("write", WRITES.values(), ids=WRITES.keys())
def test_read_only_refuses_every_write_on_an_existing_file(
    db_path: Path, write: Callable[[SQLiteStore], object]
) -> None:
    writer = SQLiteStore(str(db_path))
    fill(writer)
    reader = SQLiteStore(str(db_path), read_only=True)
    with pytest.raises(ReadOnlyStoreError):
        write(reader)
    reader.close()
    # Nothing changed behind the refusal.
    assert writer.history().first_seen_stopped == {"runpod:a": T0}
    assert writer.get_monitor("h") is None
    assert len(writer.open_episodes()) == 1
    writer.close()


def test_read_only_sees_what_a_writer_wrote_and_keeps_writing(db_path: Path) -> None:
    writer = SQLiteStore(str(db_path))
    fill(writer)
    reader = SQLiteStore(str(db_path), read_only=True)
    assert reader.history().first_seen_stopped == {"runpod:a": T0}
    assert reader.get_monitor("trainer-1") == full_monitor("trainer-1")
    assert [r.id for r in reader.audit_log()] == ["pod-1"]
    # The writer goes on while the reader is open (WAL): the reader sees new commits.
    writer.put_monitor(Monitor(host="trainer-3", created_at=T0))
    writer.start_stopped_clock("runpod:b", T0 + HOUR)
    assert [m.host for m in reader.list_monitors()] == ["trainer-1", "trainer-2", "trainer-3"]
    assert reader.history().first_seen_stopped == {"runpod:a": T0, "runpod:b": T0 + HOUR}
    reader.close()
    writer.close()


def test_read_only_on_an_empty_file_reads_empty(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    db_path.touch()
    store = SQLiteStore(str(db_path), read_only=True)
    assert_reads_empty(store)
    store.close()
    assert db_path.stat().st_size == 0


# --- the file on disk -------------------------------------------------------------------------
def test_file_is_0600_and_new_directories_0700(db_path: Path) -> None:
    store = SQLiteStore(str(db_path))
    fill(store)
    assert stat.S_IMODE(db_path.stat().st_mode) == 0o600
    assert stat.S_IMODE(db_path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(db_path.parent.parent.stat().st_mode) == 0o700
    wal = db_path.with_name(db_path.name + "-wal")
    assert wal.exists()
    assert stat.S_IMODE(wal.stat().st_mode) == 0o600
    store.close()


def test_wal_mode_and_schema_version(db_path: Path) -> None:
    SQLiteStore(str(db_path)).close()
    conn = sqlite3.connect(db_path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    conn.close()


def test_a_new_file_has_small_pages_and_an_old_one_keeps_its_own(tmp_path: Path) -> None:
    """Every ping writes two pages (its monitor's, its log slot's): a new file's are 1 KB. A
    file made with 4 KB pages keeps them (SQLite fixes the size at creation) and checkpoints
    after the same amount of WAL, in its own pages."""
    new = tmp_path / "new.db"
    store = SQLiteStore(str(new))
    assert store._connection().execute("PRAGMA page_size").fetchone()[0] == connection.PAGE_SIZE
    checkpoint = store._connection().execute("PRAGMA wal_autocheckpoint").fetchone()[0]
    assert checkpoint == connection.WAL_CHECKPOINT_BYTES // connection.PAGE_SIZE
    store.close()

    old = tmp_path / "old.db"
    conn = sqlite3.connect(old)
    conn.execute("PRAGMA page_size = 4096")
    conn.execute("CREATE TABLE made_before (x)")  # the size is fixed from here on
    conn.close()
    store = SQLiteStore(str(old))
    assert store._connection().execute("PRAGMA page_size").fetchone()[0] == 4096
    checkpoint = store._connection().execute("PRAGMA wal_autocheckpoint").fetchone()[0]
    assert checkpoint == connection.WAL_CHECKPOINT_BYTES // 4096
    store.close()


def test_reopening_keeps_everything(db_path: Path) -> None:
    store = SQLiteStore(str(db_path))
    fill(store)
    before = (
        store.history(),
        store.audit_log(),
        store.last_reap(),
        store.list_monitors(),
        store.open_episodes(),
    )
    store.close()

    again = SQLiteStore(str(db_path))
    after = (
        again.history(),
        again.audit_log(),
        again.last_reap(),
        again.list_monitors(),
        again.open_episodes(),
    )
    assert after == before
    assert [m.host for m in again.list_monitors()] == ["trainer-1", "trainer-2"]
    assert again.get_monitor("trainer-1") == full_monitor("trainer-1")
    # Leases, warnings and claims survived too: they still refuse.
    assert again.acquire_lease("reap", "bob", T0 + MINUTE, HOUR) is False
    assert again.history().warnings["runpod:a"] == warning(T0 + HOUR)
    assert again.claim_alert("down:trainer-1", T0 + MINUTE, HOUR) is False
    again.close()


def test_a_newer_schema_is_refused_in_one_line(db_path: Path) -> None:
    SQLiteStore(str(db_path)).close()
    conn = sqlite3.connect(db_path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    for read_only in (False, True):
        with pytest.raises(StoreSchemaError, match="upgrade reaper") as raised:
            SQLiteStore(str(db_path), read_only=read_only)
        assert "\n" not in str(raised.value)


# The schema of version 1, as the first release wrote it.
VERSION_1_SCHEMA = """
CREATE TABLE stopped_clock (key TEXT PRIMARY KEY, since TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE warnings (key TEXT PRIMARY KEY, at TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE kept (
    key TEXT PRIMARY KEY, since TEXT NOT NULL, until TEXT
) WITHOUT ROWID;
CREATE TABLE leases (
    name TEXT PRIMARY KEY, owner TEXT NOT NULL, expires_at TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE audit (
    provider TEXT NOT NULL,
    id TEXT NOT NULL,
    requested_at TEXT NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (provider, id, requested_at)
) WITHOUT ROWID;
CREATE INDEX audit_by_time ON audit (requested_at);
CREATE TABLE reap_runs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, finished_at TEXT NOT NULL, run TEXT NOT NULL
);
CREATE INDEX reap_runs_by_finish ON reap_runs (finished_at);
CREATE TABLE monitors (host TEXT PRIMARY KEY, status TEXT NOT NULL, monitor TEXT NOT NULL);
CREATE INDEX monitors_by_status ON monitors (status);
CREATE TABLE alert_claims (key TEXT PRIMARY KEY, claimed_at TEXT NOT NULL) WITHOUT ROWID;
CREATE INDEX alert_claims_by_time ON alert_claims (claimed_at);
CREATE TABLE episodes (
    key TEXT PRIMARY KEY, opened_at TEXT NOT NULL, detail TEXT NOT NULL, alerted_at TEXT
) WITHOUT ROWID;
INSERT INTO stopped_clock VALUES ('runpod:a', '2026-03-01T12:00:00.000000Z');
INSERT INTO warnings VALUES ('runpod:a', '2026-03-01T13:00:00.000000Z');
PRAGMA user_version = 1;
"""


def test_a_version_1_file_is_migrated_and_its_warnings_license_nothing(db_path: Path) -> None:
    """A warning written before the store knew who heard it reads as an unheard observe
    warning: the first pass after the upgrade warns anew. A dry run reads the old file as it
    is, without writing to it."""
    db_path.parent.mkdir(parents=True)
    conn = sqlite3.connect(db_path)
    conn.executescript(VERSION_1_SCHEMA)
    conn.close()
    before = db_path.read_bytes()
    dry = SQLiteStore(str(db_path), read_only=True)
    assert dry.history().first_seen_stopped == {"runpod:a": T0}
    assert dry.history().warnings["runpod:a"].heard is False
    dry.close()
    assert db_path.read_bytes() == before
    store = SQLiteStore(str(db_path))
    old = store.history().warnings["runpod:a"]
    assert (old.at, old.heard, old.mode) == (T0 + HOUR, False, "observe")
    assert store.listings() == []
    store.close()
    conn = sqlite3.connect(db_path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    conn.close()


def test_a_version_2_file_is_migrated_and_its_warnings_license_nothing(db_path: Path) -> None:
    """A heard enforce warning written before the store kept its stretch cannot tell which
    stopped stretch it was for: after the upgrade it licenses nothing (the next pass warns
    anew), and the new columns are there to write."""
    from reaper.core.license import Void, license_for
    from reaper.settings.model import Settings

    SQLiteStore(str(db_path)).close()
    conn = sqlite3.connect(db_path)
    for table, column in (
        ("stopped_clock", "missing_since"),
        ("warnings", "stretch"),
        ("warnings", "issued_at"),
        ("warnings", "ttl"),
        ("warnings", "warn_before"),
        ("warnings", "held_at"),
    ):
        conn.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
    conn.execute("DROP TABLE sessions")  # version 4's
    conn.execute(
        "INSERT INTO stopped_clock VALUES ('runpod:a', '2026-03-01T12:00:00.000000Z', NULL)"
    )
    conn.execute(
        "INSERT INTO warnings VALUES ('runpod:a', '2026-03-02T11:00:00.000000Z', 1, 'enforce',"
        " '2026-03-02T12:00:00.000000Z')"
    )
    conn.execute("PRAGMA user_version = 2")
    conn.commit()
    conn.close()
    store = SQLiteStore(str(db_path))
    history = store.history()
    old = history.warnings["runpod:a"]
    assert (old.heard, old.mode, old.stretch, old.issued_at) == (True, "enforce", None, None)
    found = license_for("runpod:a", T0, history, T0 + 24 * HOUR, Settings())
    assert isinstance(found, Void) and found.kind == "legacy"
    store.mark_missing("runpod:a", T0 + HOUR)
    assert store.history().missing_since == {"runpod:a": T0 + HOUR}
    store.close()


def test_closed_store_refuses_use(tmp_path: Path) -> None:
    store = SQLiteStore(str(tmp_path / "s.db"))
    store.close()
    store.close()  # closing twice is harmless
    with pytest.raises(RuntimeError, match="closed"):
        store.list_monitors()


# --- bounded tables ---------------------------------------------------------------------------
def count_rows(path: Path, table: str) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])  # noqa: S608
    finally:
        conn.close()


def test_reap_runs_keep_only_the_latest(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ledger, "REAP_RUNS_KEPT", 5)
    store = SQLiteStore(str(db_path))
    for minutes in range(12):
        store.record_reap(reap_run(T0, T0 + minutes * MINUTE))
    assert count_rows(db_path, "reap_runs") == 5
    last = store.last_reap()
    assert last is not None
    assert last.finished_at == T0 + 11 * MINUTE
    store.close()


def test_old_alert_claims_are_pruned(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(coordination, "CLAIM_PRUNE_EVERY", 10)
    store = SQLiteStore(str(db_path))
    for i in range(5):
        assert store.claim_alert(f"old-{i}", T0, HOUR)
    later = T0 + coordination.CLAIM_RETENTION + HOUR
    for i in range(5):
        assert store.claim_alert(f"new-{i}", later, HOUR)
    assert count_rows(db_path, "alert_claims") == 5
    # A pruned claim was long expired anyway: claiming it again succeeds, as it would have.
    assert store.claim_alert("old-0", later, HOUR) is True
    assert store.claim_alert("new-0", later, HOUR) is False
    store.close()


# --- threads ----------------------------------------------------------------------------------
def test_threads_share_one_store_without_double_claims(tmp_path: Path) -> None:
    store = SQLiteStore(str(tmp_path / "threads.db"))
    keys = [f"k{i}" for i in range(50)]
    wins: list[str] = []
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def work() -> None:
        try:
            start.wait()
            for key in keys:
                if store.claim_alert(key, T0, HOUR):
                    wins.append(key)
                store.put_monitor(Monitor(host=key, created_at=T0))
                store.get_monitor(key)
        except BaseException as error:  # collected and asserted below
            errors.append(error)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sorted(wins) == sorted(keys)
    assert len(store.list_monitors()) == 50
    store.close()


# --- the status page -----------------------------------------------------------------------


def test_snapshots_older_than_the_retention_are_pruned(tmp_path: Path) -> None:
    from reaper.core.snapshot import Snapshot
    from reaper.store.rows import SNAPSHOT_RETENTION

    store = SQLiteStore(str(tmp_path / "state.db"))
    try:
        store.record_snapshot(Snapshot(at=T0))
        store.record_snapshot(Snapshot(at=T0 + HOUR))
        store.record_snapshot(Snapshot(at=T0 + SNAPSHOT_RETENTION + MINUTE))
        assert [s.at for s in store.snapshots(T0 - HOUR)] == [
            T0 + HOUR,
            T0 + SNAPSHOT_RETENTION + MINUTE,
        ]
    finally:
        store.close()


def test_a_changed_status_reaches_the_status_column(tmp_path: Path) -> None:
    """A ping that keeps the status writes only the JSON; one that changes it must move the
    row in the status index too, or the cap and the retired clean-up would count it wrong."""
    store = SQLiteStore(str(tmp_path / "state.db"))
    try:
        store.put_monitor(Monitor(host="a", status="up", created_at=T0))
        store.put_monitor(Monitor(host="a", status="up", created_at=T0, last_ping_at=T0 + HOUR))
        store.put_monitor(Monitor(host="a", status="retired", created_at=T0))
        assert store.create_monitor(Monitor(host="b", status="new", created_at=T0), limit=1)
        assert store.delete_retired(T0 + 48 * HOUR, keep=0) == 1
        assert [m.host for m in store.list_monitors()] == ["b"]
    finally:
        store.close()
