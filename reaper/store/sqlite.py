"""The SQLite backend of the store: the embedded default for `reaper serve` and local runs.

One connection per store, guarded by a lock, so that the event loop and worker threads of
`reaper serve` can share it. Two processes (a `serve` and a manual `reaper reap`) may share one
file: the database runs in WAL mode (readers never block the writer), every write takes the
write lock up front (`BEGIN IMMEDIATE`) so that a read-modify-write never works on a stale
snapshot, and a busy timeout makes a contended writer wait instead of failing.

Times are stored as fixed-width ISO 8601 UTC text (`2026-01-01T00:00:00.000000Z`), so that
comparing the text compares the instants and indexes on time columns work.

The ping log is a ring of 100 rows per host (`ping_log`, keyed by host and slot = event number
% 100): never trimmed, one row written per ping in the ping's own transaction. Monitors and
events are stored without their default values: a smaller row is a cheaper page to write on
every ping and a cheaper read for every watch pass.

A ping reads its monitor, and the monitor a store last wrote is usually the one it reads next:
the store keeps what it wrote in memory, trusted only while SQLite's `data_version` (moved by
any other connection's commit) and this connection's `total_changes` (moved by any write of
its own) are as they were after that write. Under `reaper serve` the WAL is copied into the
file by a thread of its own (`checkpoint_apart`), not by the commit of whichever ping crosses
the checkpoint size.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reaper import log
from reaper.core.monitors import SettingsChange, apply_change
from reaper.core.records import Monitor, PingEvent
from reaper.store.base import (
    SNAPSHOT_RETENTION,
    Lease,
    ReadOnlyStoreError,
    log_slot,
    retired_to_delete,
    text_time,
    time_text,
    utc_record,
)

if TYPE_CHECKING:  # pydantic models, imported where used: a cold ping needs none of them
    from reaper.core.models import (
        ActionGrant,
        ActionRecord,
        AuditRecord,
        Episode,
        History,
        KeptInstance,
        Listing,
        ReapRun,
        TerminationRequest,
        WarningRecord,
    )
    from reaper.core.snapshot import Snapshot

SCHEMA_VERSION = 4
BUSY_TIMEOUT_SECONDS = 5.0
# A checkpoint (copying the WAL into the file, then fsync) runs inside the commit that crosses
# this much WAL, on the request that made it. Since every ping also writes its log row (a page
# of its own), SQLite's default (1000 pages of 4 KB) made each such stall long enough to show in
# the p99 of `reaper serve`; a quarter of it keeps each one short (bench.heartbeat).
WAL_CHECKPOINT_BYTES = 1024 * 1024
# `reaper serve` checkpoints from a thread of its own this often (`checkpoint_apart`), and its
# commits only once the WAL has grown past the second figure: should that thread fall behind.
CHECKPOINT_EVERY_SECONDS = 0.5
WAL_BACKSTOP_BYTES = 16 * 1024 * 1024
# The page size of a new database. Every ping's commit writes its monitor's page and its log
# slot's page to the WAL: at 1 KB a commit costs about 60% of what it does at 4 KB (33 against
# 55 µs, measured alone), and a monitor or an event row still fits a page. A file created
# before keeps its own page size (SQLite fixes it at creation).
PAGE_SIZE = 1024
WAL_SWITCH_RETRY_SECONDS = 0.005
# Reap runs are only read for "the last one"; a bounded tail keeps the file small.
REAP_RUNS_KEPT = 1000
# Claims are pruned every this many claim_alert calls, in the calling transaction.
CLAIM_PRUNE_EVERY = 100
# A claim is pruned once older than this (or than the claiming call's window, if longer), so
# that a caller using a longer window than the one that pruned never sees a duplicate.
CLAIM_RETENTION = timedelta(days=7)
# Grants and termination requests are dropped this long after they expired (when a new one is
# written), so that "expired" can still be told from "unknown" for a while.
GRANT_RETENTION = timedelta(days=1)

# The tables version 2 added: created alike in a new database and by the upgrade from 1.
_TABLES_OF_2 = """
CREATE TABLE listings (
    provider TEXT NOT NULL, account TEXT NOT NULL, at TEXT NOT NULL, listing TEXT NOT NULL,
    PRIMARY KEY (provider, account)
) WITHOUT ROWID;
-- The status page: the reap passes' snapshots, the hashes of one-time sign-in links.
CREATE TABLE snapshots (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, at TEXT NOT NULL, snapshot TEXT NOT NULL
);
CREATE INDEX snapshots_by_time ON snapshots (at);
CREATE TABLE login_tokens (hash TEXT PRIMARY KEY, expires_at TEXT NOT NULL) WITHOUT ROWID;
-- Actions from the phone: one-time handles, what people did, "terminate now" requests.
CREATE TABLE action_grants (
    id TEXT PRIMARY KEY, expires_at TEXT NOT NULL, used_at TEXT, body TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX action_grants_by_expiry ON action_grants (expires_at);
CREATE TABLE phone_actions (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, at TEXT NOT NULL, record TEXT NOT NULL
);
CREATE INDEX phone_actions_by_time ON phone_actions (at);
CREATE TABLE termination_requests (
    key TEXT PRIMARY KEY, expires_at TEXT NOT NULL, request TEXT NOT NULL
) WITHOUT ROWID;
-- Each monitor's ping log: a ring of slots.
CREATE TABLE ping_log (
    host TEXT NOT NULL, slot INTEGER NOT NULL, seq INTEGER NOT NULL, event TEXT NOT NULL,
    PRIMARY KEY (host, slot)
) WITHOUT ROWID;
"""

# The table version 4 added: the status page's sessions, so that signing out ends one.
_TABLES_OF_4 = """
CREATE TABLE sessions (id TEXT PRIMARY KEY, expires_at TEXT NOT NULL) WITHOUT ROWID;
"""

_SCHEMA = (
    """
CREATE TABLE stopped_clock (
    key TEXT PRIMARY KEY, since TEXT NOT NULL, started TEXT, missing_since TEXT
) WITHOUT ROWID;
CREATE TABLE warnings (
    key TEXT PRIMARY KEY, at TEXT NOT NULL,
    heard INTEGER NOT NULL DEFAULT 0, mode TEXT NOT NULL DEFAULT 'observe', terminate_at TEXT,
    stretch TEXT, issued_at TEXT, ttl REAL, warn_before REAL, held_at TEXT
) WITHOUT ROWID;
CREATE TABLE kept (
    key TEXT PRIMARY KEY, since TEXT NOT NULL, until TEXT, kept_by TEXT
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
"""
    + _TABLES_OF_2
    + _TABLES_OF_4
)

# The columns version 3 added: a warning's license facts (its stretch, when and under which
# settings its deadline was computed, the last pass the cap held it) and the first miss of a
# recorded stretch.
_COLUMNS_OF_3 = """
ALTER TABLE stopped_clock ADD COLUMN missing_since TEXT;
ALTER TABLE warnings ADD COLUMN stretch TEXT;
ALTER TABLE warnings ADD COLUMN issued_at TEXT;
ALTER TABLE warnings ADD COLUMN ttl REAL;
ALTER TABLE warnings ADD COLUMN warn_before REAL;
ALTER TABLE warnings ADD COLUMN held_at TEXT;
"""

# Each step takes a database of the version before it to the version after it. A warning
# written before version 2 knew neither whether a person heard it nor its mode; one written
# before version 3 does not say which stretch it was for: either licenses nothing, so the
# first pass after the upgrade warns anew with the full notice.
_MIGRATIONS: dict[int, str] = {
    2: """
ALTER TABLE stopped_clock ADD COLUMN started TEXT;
ALTER TABLE warnings ADD COLUMN heard INTEGER NOT NULL DEFAULT 0;
ALTER TABLE warnings ADD COLUMN mode TEXT NOT NULL DEFAULT 'observe';
ALTER TABLE warnings ADD COLUMN terminate_at TEXT;
ALTER TABLE kept ADD COLUMN kept_by TEXT;
"""
    + _TABLES_OF_2,
    3: _COLUMNS_OF_3,
    4: _TABLES_OF_4,
}

# A mute changes no pause, so the time of its change dates nothing.
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# An event into its slot of the host's ring.
_LOG_EVENT = (
    "INSERT INTO ping_log (host, slot, seq, event) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (host, slot) DO UPDATE SET seq = excluded.seq, event = excluded.event"
)


def _event_row(host: str, event: PingEvent) -> tuple[str, int, int, str]:
    """The parameters of `_LOG_EVENT`: the event into its slot of the host's ring."""
    return (host, log_slot(event), event.seq, event.model_dump_json(exclude_defaults=True))


# The most monitors kept in memory from their last write (a cap far above any fleet's).
_WRITTEN_KEPT = 50_000


def _stamp(conn: sqlite3.Connection) -> tuple[int, int]:
    """What changes whenever the file's contents may have changed: SQLite's `data_version`
    moves with every commit of another connection (another process: `reaper monitor set`
    while `serve` runs), `total_changes` with every row this connection changed, rolled back
    or not. Read inside a write transaction, no other connection can commit in between."""
    (version,) = conn.execute("PRAGMA data_version").fetchone()
    return int(version), conn.total_changes


def _write_monitor(conn: sqlite3.Connection, monitor: Monitor) -> None:
    """Insert or replace the monitor's row.

    Nearly every ping leaves the status as it was, and then only the JSON is written: SQLite
    rewrites an index entry whenever an UPDATE sets its column, changed or not, so naming
    `status` would rewrite `monitors_by_status` on every ping (a third of a ping's SQL time,
    bench.heartbeat). A changed status, or a new host, takes the full upsert."""
    text = monitor.model_dump_json(exclude_defaults=True)
    same_status = conn.execute(
        "UPDATE monitors SET monitor = ? WHERE host = ? AND status = ?",
        (text, monitor.host, monitor.status),
    )
    if same_status.rowcount == 0:
        conn.execute(
            "INSERT INTO monitors (host, status, monitor) VALUES (?, ?, ?) "
            "ON CONFLICT (host) DO UPDATE SET status = excluded.status, monitor = excluded.monitor",
            (monitor.host, monitor.status, text),
        )


class StoreSchemaError(RuntimeError):
    """The database file was written by a newer reaper, whose schema this one cannot read."""


def _opt_dt(text: str | None) -> datetime | None:
    return None if text is None else text_time(text)


def _opt_text(moment: datetime | None) -> str | None:
    return None if moment is None else time_text(moment)


def _opt_seconds(delta: timedelta | None) -> float | None:
    return None if delta is None else delta.total_seconds()


def _opt_delta(seconds: float | None) -> timedelta | None:
    return None if seconds is None else timedelta(seconds=seconds)


# A warning's columns, in the order `_warning_row` writes and `_warning` reads them.
_SELECT_WARNINGS = (
    "SELECT key, at, heard, mode, terminate_at, stretch, issued_at, ttl, warn_before, held_at"
    " FROM warnings"
)
_UPSERT_WARNING = (
    "INSERT INTO warnings"
    " (key, at, heard, mode, terminate_at, stretch, issued_at, ttl, warn_before, held_at)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET"
    " at = excluded.at, heard = excluded.heard, mode = excluded.mode,"
    " terminate_at = excluded.terminate_at, stretch = excluded.stretch,"
    " issued_at = excluded.issued_at, ttl = excluded.ttl, warn_before = excluded.warn_before,"
    " held_at = excluded.held_at"
)


def _warning_row(warning: WarningRecord) -> tuple[Any, ...]:
    return (
        time_text(warning.at),
        int(warning.heard),
        warning.mode,
        _opt_text(warning.terminate_at),
        _opt_text(warning.stretch),
        _opt_text(warning.issued_at),
        _opt_seconds(warning.ttl),
        _opt_seconds(warning.warn_before),
        _opt_text(warning.held_at),
    )


def _warning(row: tuple[Any, ...]) -> WarningRecord:
    """A warning as `_warning_row` wrote it. One written before version 2 knew neither whether
    a person heard it nor its mode; one before version 3 not its stretch: both license nothing
    (`reaper.core.license`)."""
    from reaper.core.models import WarningRecord

    at, heard, mode, terminate_at, stretch, issued_at, ttl, warn_before, held_at = row
    return WarningRecord(
        at=text_time(at),
        heard=bool(heard),
        mode="enforce" if mode == "enforce" else "observe",
        terminate_at=_opt_dt(terminate_at),
        stretch=_opt_dt(stretch),
        issued_at=_opt_dt(issued_at),
        ttl=_opt_delta(ttl),
        warn_before=_opt_delta(warn_before),
        held_at=_opt_dt(held_at),
    )


def _make_private_dirs(directory: Path) -> None:
    """Create the missing directories down to `directory`, each 0700: state may be sensitive."""
    missing: list[Path] = []
    while not directory.exists():
        missing.append(directory)
        directory = directory.parent
    for path in reversed(missing):
        # Another process may create it between our check and now.
        with suppress(FileExistsError):
            path.mkdir(mode=0o700)


def _create_private_file(path: Path) -> None:
    """Create the database file 0600 before SQLite opens it, so it is never world-readable."""
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    os.close(fd)


def _enable_wal(conn: sqlite3.Connection) -> None:
    """Switch the file to WAL, retrying while another process holds it.

    Switching needs the file to itself and SQLite does not wait for that (the busy timeout
    does not apply), so processes opening a fresh file together would otherwise fail with
    "database is locked". Once the file is in WAL the pragma is a no-op.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_SECONDS
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as error:
            if error.sqlite_errorcode != sqlite3.SQLITE_BUSY or time.monotonic() >= deadline:
                raise
            time.sleep(WAL_SWITCH_RETRY_SECONDS)


def _run_script(conn: sqlite3.Connection, script: str) -> None:
    """Each statement on its own (executescript would commit the open transaction)."""
    for statement in script.split(";"):
        if statement.strip():
            conn.execute(statement)


class SQLiteStore:
    """The `Store` protocol on one SQLite file; see `reaper.store.base` for the contract."""

    def __init__(self, path: str, *, read_only: bool = False) -> None:
        self.read_only = read_only
        self.path = path
        # For the checkpoint thread's connection: the same file even if the working directory
        # changes after the store was opened.
        self._file = os.path.abspath(path)
        self._lock = threading.Lock()
        self._claims_since_prune = 0
        # The monitors this connection last wrote, and the stamp they are true at (see
        # `_stamp`): a ping reads its monitor from here instead of the file.
        self._written: dict[str, Monitor] = {}
        self._written_at: tuple[int, int] | None = None
        self._checkpointer: threading.Thread | None = None
        self._page_size = PAGE_SIZE
        self._checkpoints_stop = threading.Event()
        self._conn: sqlite3.Connection | None = (
            self._open_read_only(Path(path)) if read_only else self._open_read_write(Path(path))
        )

    # --- opening --------------------------------------------------------------------------
    @staticmethod
    def _connect(target: str, *, uri: bool = False) -> sqlite3.Connection:
        conn = sqlite3.connect(
            target,
            timeout=BUSY_TIMEOUT_SECONDS,
            isolation_level=None,  # transactions are explicit: BEGIN / BEGIN IMMEDIATE
            check_same_thread=False,  # shared by threads; every use holds self._lock
            uri=uri,
        )
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000)}")
        return conn

    def _open_read_write(self, path: Path) -> sqlite3.Connection:
        _make_private_dirs(path.parent)
        _create_private_file(path)
        conn = self._connect(str(path))
        try:
            conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")  # a no-op on an existing file
            _enable_wal(conn)
            conn.execute("PRAGMA synchronous = NORMAL")
            (page_size,) = conn.execute("PRAGMA page_size").fetchone()
            self._page_size = int(page_size)
            pages = max(1, WAL_CHECKPOINT_BYTES // self._page_size)
            conn.execute(f"PRAGMA wal_autocheckpoint = {pages}")
            self._migrate(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    @staticmethod
    def _migrate(conn: sqlite3.Connection) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = SQLiteStore._schema_version(conn)
            if version == 0:
                _run_script(conn, _SCHEMA)
            else:
                for step in range(version + 1, SCHEMA_VERSION + 1):
                    _run_script(conn, _MIGRATIONS[step])
            if version != SCHEMA_VERSION:
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    @staticmethod
    def _schema_version(conn: sqlite3.Connection) -> int:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:
            raise StoreSchemaError(
                f"the state database has schema version {version}, newer than this reaper's "
                f"{SCHEMA_VERSION}: upgrade reaper"
            )
        return version

    def _open_read_only(self, path: Path) -> sqlite3.Connection:
        """A read-only view; a missing or not yet initialised file reads as an empty store.

        The empty store is an in-memory database with the schema, so that every read method
        has one code path whether the file exists or not, and nothing is created on disk. A
        file of an older schema is copied into memory and migrated there: a dry run reads what
        it holds without writing to it.
        """
        if path.is_file():
            conn = self._connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
            try:
                version = self._schema_version(conn)
                if version == SCHEMA_VERSION:
                    return conn
                if version > 0:
                    copy = self._connect(":memory:")
                    conn.backup(copy)
                    conn.close()
                    self._migrate(copy)
                    return copy
            except BaseException:
                conn.close()
                raise
            conn.close()
        empty = self._connect(":memory:")
        self._migrate(empty)
        return empty

    # --- transactions -----------------------------------------------------------------------
    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RuntimeError("the store is closed")
        return self._conn

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """One consistent snapshot for reads that span several statements."""
        with self._lock:
            conn = self._connection()
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                conn.execute("COMMIT")

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction holding the write lock from its start.

        `BEGIN IMMEDIATE` waits (busy timeout) for another process's writer; a deferred
        transaction would instead fail with "database is locked" when it tried to upgrade a
        stale read snapshot.
        """
        if self.read_only:
            raise ReadOnlyStoreError("the store is open read-only (a dry run writes nothing)")
        with self._lock:
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def _query_one(self, sql: str, params: tuple[Any, ...]) -> Any:
        with self._lock:
            return self._connection().execute(sql, params).fetchone()

    def _query_all(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        with self._lock:
            return self._connection().execute(sql, params).fetchall()

    # --- the reap history ----------------------------------------------------------------
    def history(self) -> History:
        from reaper.core.models import History, KeptInstance

        with self._read() as conn:
            stopped = conn.execute(
                "SELECT key, since, started, missing_since FROM stopped_clock"
            ).fetchall()
            warnings = conn.execute(_SELECT_WARNINGS).fetchall()
            kept = conn.execute("SELECT key, since, until, kept_by FROM kept").fetchall()
        return History(
            first_seen_stopped={key: text_time(since) for key, since, *_ in stopped},
            stretch_started={
                key: text_time(started) for key, _since, started, _missing in stopped if started
            },
            missing_since={
                key: text_time(missing) for key, _since, _started, missing in stopped if missing
            },
            warnings={key: _warning(row) for key, *row in warnings},
            kept={
                key: KeptInstance(
                    key=key, since=text_time(since), until=_opt_dt(until), by=by or ""
                )
                for key, since, until, by in kept
            },
        )

    def start_stopped_clock(
        self, key: str, at: datetime, *, started_at: datetime | None = None
    ) -> None:
        started = None if started_at is None else time_text(started_at)
        with self._write() as conn:
            conn.execute(
                "INSERT INTO stopped_clock (key, since, started) VALUES (?, ?, ?) "
                "ON CONFLICT DO NOTHING",
                (key, time_text(at), started),
            )

    def reset_stopped_clock(self, key: str) -> None:
        with self._write() as conn:
            conn.execute("DELETE FROM stopped_clock WHERE key = ?", (key,))
            conn.execute("DELETE FROM warnings WHERE key = ?", (key,))

    def mark_missing(self, key: str, at: datetime) -> None:
        with self._write() as conn:
            conn.execute(
                "UPDATE stopped_clock SET missing_since = ? "
                "WHERE key = ? AND missing_since IS NULL",
                (time_text(at), key),
            )

    def clear_missing(self, key: str) -> None:
        with self._write() as conn:
            conn.execute("UPDATE stopped_clock SET missing_since = NULL WHERE key = ?", (key,))

    def record_warning(self, key: str, warning: WarningRecord) -> None:
        with self._write() as conn:
            conn.execute(_UPSERT_WARNING, (key, *_warning_row(warning)))

    def mark_warning_held(self, key: str, warned_at: datetime, at: datetime) -> bool:
        """Conditional on the warning delivered at `warned_at` still being recorded: a keep
        that dropped it meanwhile is never undone."""
        with self._write() as conn:
            cursor = conn.execute(
                "UPDATE warnings SET held_at = ? WHERE key = ? AND at = ?",
                (time_text(at), key, time_text(warned_at)),
            )
            return cursor.rowcount == 1

    def keep(self, kept: KeptInstance) -> None:
        """The keep, and the key's warning and "terminate now" request dropped, in one
        transaction: a warning (or a press) answered with a keep never leads to a termination
        after the keep ends."""
        until = None if kept.until is None else time_text(kept.until)
        with self._write() as conn:
            conn.execute("DELETE FROM warnings WHERE key = ?", (kept.key,))
            conn.execute("DELETE FROM termination_requests WHERE key = ?", (kept.key,))
            conn.execute(
                "INSERT INTO kept (key, since, until, kept_by) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (key) DO UPDATE SET since = excluded.since, until = excluded.until, "
                "kept_by = excluded.kept_by",
                (kept.key, time_text(kept.since), until, kept.by or None),
            )

    def unkeep(self, key: str) -> bool:
        """The keep ended and the key's warning and request dropped, in one transaction."""
        with self._write() as conn:
            conn.execute("DELETE FROM warnings WHERE key = ?", (key,))
            conn.execute("DELETE FROM termination_requests WHERE key = ?", (key,))
            return conn.execute("DELETE FROM kept WHERE key = ?", (key,)).rowcount == 1

    # --- the reap lease ---------------------------------------------------------------------
    def acquire_lease(self, name: str, owner: str, now: datetime, ttl: timedelta) -> bool:
        """Free, expired (`now` at or past its expiry) or already ours: take it until now+ttl."""
        with self._write() as conn:
            cursor = conn.execute(
                "INSERT INTO leases (name, owner, expires_at) VALUES (?, ?, ?) "
                "ON CONFLICT (name) DO UPDATE SET "
                "owner = excluded.owner, expires_at = excluded.expires_at "
                "WHERE leases.owner = excluded.owner OR leases.expires_at <= ?",
                (name, owner, time_text(now + ttl), time_text(now)),
            )
            return cursor.rowcount == 1

    def renew_lease(self, name: str, owner: str, now: datetime, ttl: timedelta) -> bool:
        """Extend only a lease `owner` still holds and that has not expired: a pass that
        stalled past its lease never takes it back from under another one."""
        with self._write() as conn:
            cursor = conn.execute(
                "UPDATE leases SET expires_at = ? WHERE name = ? AND owner = ? AND expires_at > ?",
                (time_text(now + ttl), name, owner, time_text(now)),
            )
            return cursor.rowcount == 1

    def release_lease(self, name: str, owner: str) -> None:
        with self._write() as conn:
            conn.execute("DELETE FROM leases WHERE name = ? AND owner = ?", (name, owner))

    def lease_holder(self, name: str) -> Lease | None:
        row = self._query_one("SELECT owner, expires_at FROM leases WHERE name = ?", (name,))
        return None if row is None else Lease(owner=row[0], expires_at=text_time(row[1]))

    # --- audit and runs ---------------------------------------------------------------------
    def record_termination(self, record: AuditRecord) -> None:
        record = utc_record(record)
        with self._write() as conn:
            conn.execute(
                "INSERT INTO audit (provider, id, requested_at, record) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (provider, id, requested_at) DO UPDATE SET record = excluded.record",
                (
                    record.provider,
                    record.id,
                    time_text(record.requested_at),
                    record.model_dump_json(),
                ),
            )

    def audit_log(self, since: datetime | None = None) -> list[AuditRecord]:
        from reaper.core.models import AuditRecord

        rows = self._query_all(
            "SELECT record FROM audit WHERE requested_at >= ? ORDER BY requested_at, provider, id",
            ("" if since is None else time_text(since),),
        )
        return [AuditRecord.model_validate_json(record) for (record,) in rows]

    def record_reap(self, run: ReapRun) -> None:
        run = utc_record(run)
        with self._write() as conn:
            conn.execute(
                "INSERT INTO reap_runs (finished_at, run) VALUES (?, ?)",
                (time_text(run.finished_at), run.model_dump_json()),
            )
            conn.execute(
                "DELETE FROM reap_runs WHERE seq NOT IN "
                "(SELECT seq FROM reap_runs ORDER BY finished_at DESC, seq DESC LIMIT ?)",
                (REAP_RUNS_KEPT,),
            )

    def last_reap(self) -> ReapRun | None:
        from reaper.core.models import ReapRun

        row = self._query_one(
            "SELECT run FROM reap_runs ORDER BY finished_at DESC, seq DESC LIMIT 1", ()
        )
        return None if row is None else ReapRun.model_validate_json(row[0])

    # --- last listings ----------------------------------------------------------------------
    def record_listing(self, listing: Listing) -> None:
        listing = utc_record(listing)
        with self._write() as conn:
            conn.execute(
                "INSERT INTO listings (provider, account, at, listing) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (provider, account) DO UPDATE SET "
                "at = excluded.at, listing = excluded.listing",
                (
                    listing.provider,
                    listing.account,
                    time_text(listing.at),
                    listing.model_dump_json(exclude_defaults=True),
                ),
            )

    def listings(self) -> list[Listing]:
        from reaper.core.models import Listing

        rows = self._query_all("SELECT listing FROM listings ORDER BY provider, account")
        return [Listing.model_validate_json(listing) for (listing,) in rows]

    # --- heartbeat monitors -----------------------------------------------------------------
    def get_monitor(self, host: str) -> Monitor | None:
        with self._lock:
            conn = self._connection()
            if self._written:
                if _stamp(conn) == self._written_at:
                    found = self._written.get(host)
                    if found is not None:
                        return found
                else:
                    self._written.clear()
            row = conn.execute("SELECT monitor FROM monitors WHERE host = ?", (host,)).fetchone()
        return None if row is None else Monitor.model_validate_json(row[0])

    def _remember(self, monitor: Monitor, stamp: tuple[int, int], before: tuple[int, int]) -> None:
        """Keep the monitor just written for the next `get_monitor`.

        What is kept stays true while the stamp stays as it was after this write: the kept ones
        are kept only if nothing changed between the last remembered write and this one
        (`before`), else they are dropped. Called after the commit, so that a transaction
        that failed leaves nothing kept."""
        with self._lock:
            if before != self._written_at or len(self._written) >= _WRITTEN_KEPT:
                self._written.clear()
            self._written[monitor.host] = monitor
            self._written_at = stamp

    def put_monitor(self, monitor: Monitor) -> None:
        self._put_monitor(utc_record(monitor), None)

    def _put_monitor(self, monitor: Monitor, event: PingEvent | None) -> None:
        """The monitor's row, and its event's slot when there is one, in one transaction;
        then the monitor kept for the next `get_monitor`."""
        with self._write() as conn:
            before = _stamp(conn)
            _write_monitor(conn, monitor)
            if event is not None:
                conn.execute(_LOG_EVENT, _event_row(monitor.host, event))
            stamp = (before[0], conn.total_changes)
        self._remember(monitor, stamp, before)

    def create_monitor(self, monitor: Monitor, limit: int) -> bool:
        monitor = utc_record(monitor)
        with self._write() as conn:
            (active,) = conn.execute(
                "SELECT count(*) FROM monitors WHERE status != 'retired'"
            ).fetchone()
            if active >= limit:
                return False
            cursor = conn.execute(
                "INSERT INTO monitors (host, status, monitor) VALUES (?, ?, ?) "
                "ON CONFLICT DO NOTHING",
                (monitor.host, monitor.status, monitor.model_dump_json(exclude_defaults=True)),
            )
            return cursor.rowcount == 1

    def list_monitors(self) -> list[Monitor]:
        rows = self._query_all("SELECT monitor FROM monitors ORDER BY host")
        return [Monitor.model_validate_json(monitor) for (monitor,) in rows]

    def delete_monitor(self, host: str) -> None:
        with self._write() as conn:
            conn.execute("DELETE FROM monitors WHERE host = ?", (host,))
            conn.execute("DELETE FROM ping_log WHERE host = ?", (host,))

    def delete_retired(self, before: datetime, keep: int) -> int:
        """One transaction: read the retired monitors' times, delete the chosen ones."""
        with self._write() as conn:
            rows = conn.execute(
                "SELECT host, coalesce(json_extract(monitor, '$.last_ping_at'), "
                "json_extract(monitor, '$.created_at')) FROM monitors WHERE status = 'retired'"
            ).fetchall()
            heard = {host: text_time(at) for host, at in rows}
            doomed = retired_to_delete(heard, before, keep)
            conn.executemany(
                "DELETE FROM monitors WHERE host = ? AND status = 'retired'",
                [(host,) for host in doomed],
            )
            conn.executemany("DELETE FROM ping_log WHERE host = ?", [(h,) for h in doomed])
        return len(doomed)

    # --- alert de-duplication and episodes ------------------------------------------------
    def claim_alert(self, key: str, now: datetime, window: timedelta) -> bool:
        """A claim stands for `window` from its time: `now` at or past claim + window claims
        anew and restarts the window."""
        with self._write() as conn:
            cursor = conn.execute(
                "INSERT INTO alert_claims (key, claimed_at) VALUES (?, ?) "
                "ON CONFLICT (key) DO UPDATE SET claimed_at = excluded.claimed_at "
                "WHERE alert_claims.claimed_at <= ?",
                (key, time_text(now), time_text(now - window)),
            )
            self._claims_since_prune += 1
            if self._claims_since_prune >= CLAIM_PRUNE_EVERY:
                self._claims_since_prune = 0
                horizon = now - max(window, CLAIM_RETENTION)
                conn.execute("DELETE FROM alert_claims WHERE claimed_at < ?", (time_text(horizon),))
            return cursor.rowcount == 1

    def open_episode(self, key: str, at: datetime, detail: str = "") -> Episode:
        with self._write() as conn:
            conn.execute(
                "INSERT INTO episodes (key, opened_at, detail) VALUES (?, ?, ?) "
                "ON CONFLICT DO NOTHING",
                (key, time_text(at), detail),
            )
            row = conn.execute(
                "SELECT key, opened_at, detail, alerted_at FROM episodes WHERE key = ?", (key,)
            ).fetchone()
        return self._episode(row)

    def mark_episode_alerted(self, key: str, at: datetime, detail: str | None = None) -> None:
        with self._write() as conn:
            conn.execute(
                "UPDATE episodes SET alerted_at = ?, detail = COALESCE(?, detail) WHERE key = ?",
                (time_text(at), detail, key),
            )

    def close_episode(self, key: str) -> Episode | None:
        with self._write() as conn:
            rows = conn.execute(
                "DELETE FROM episodes WHERE key = ? RETURNING key, opened_at, detail, alerted_at",
                (key,),
            ).fetchall()
        return self._episode(rows[0]) if rows else None

    def open_episodes(self, prefix: str = "") -> list[Episode]:
        rows = self._query_all(
            "SELECT key, opened_at, detail, alerted_at FROM episodes "
            "WHERE substr(key, 1, length(?1)) = ?1 ORDER BY key",
            (prefix,),
        )
        return [self._episode(row) for row in rows]

    @staticmethod
    def _episode(row: tuple[str, str, str, str | None]) -> Episode:
        from reaper.core.models import Episode

        key, opened_at, detail, alerted_at = row
        return Episode(
            key=key, opened_at=text_time(opened_at), detail=detail, alerted_at=_opt_dt(alerted_at)
        )

    def close(self) -> None:
        self._checkpoints_stop.set()
        if self._checkpointer is not None:
            self._checkpointer.join(timeout=BUSY_TIMEOUT_SECONDS * 2)
            self._checkpointer = None
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    # --- checkpoints apart from the requests ---------------------------------------------
    def checkpoint_apart(self) -> None:
        """From now on a thread of its own copies the WAL into the file every
        CHECKPOINT_EVERY_SECONDS, on its own connection, until `close`.

        For `reaper serve`. A checkpoint ends in an fsync, and in a commit it holds up the
        request that made that commit: at 1,000 pings/s the p99 was 5.5 ms with checkpoints in
        the commits and 2-4 ms apart (bench.heartbeat). The bulk of each round is a PASSIVE
        checkpoint, which takes no lock a writer waits for (sqlite3 releases the GIL while it
        runs); only its last few frames are copied with this store's writes held (see
        `_checkpoint_round`). Under a steady load the WAL then holds about one round's writes
        (9 MB at 3,400 pings/s, 2 MB at 1,000). The commits keep a checkpoint of their own,
        at WAL_BACKSTOP_BYTES, in case this thread falls behind or fails."""
        if self.read_only or self._checkpointer is not None:
            return
        with self._lock:
            backstop = WAL_BACKSTOP_BYTES // self._page_size
            self._connection().execute(f"PRAGMA wal_autocheckpoint = {backstop}")
        self._checkpoints_stop.clear()
        self._checkpointer = threading.Thread(
            target=self._checkpoint_loop, name="sqlite-checkpoint", daemon=True
        )
        self._checkpointer.start()

    def _checkpoint_loop(self) -> None:
        """Until `close`: a checkpoint every CHECKPOINT_EVERY_SECONDS. A failure is logged
        once, and once more when checkpoints work again; meanwhile the commits' backstop
        checkpoints alone, as it would if this thread had never started."""
        try:
            conn = self._connect(self._file)
            # A RESTART must not wait on another process (below): it holds this store's lock.
            conn.execute("PRAGMA busy_timeout = 0")
        except sqlite3.Error as exc:
            log.event("checkpoint", result="failed", error=exc.__class__.__name__)
            return
        failing = False
        try:
            while not self._checkpoints_stop.wait(CHECKPOINT_EVERY_SECONDS):
                try:
                    self._checkpoint_round(conn)
                except Exception as exc:
                    if not failing:
                        log.event("checkpoint", result="failed", error=exc.__class__.__name__)
                    failing = True
                    continue
                if failing:
                    log.event("checkpoint", result="ok")
                    failing = False
        finally:
            conn.close()

    def _checkpoint_round(self, conn: sqlite3.Connection) -> None:
        """Copy the WAL while the pings go on; then, if it has grown past
        WAL_CHECKPOINT_BYTES, copy the few frames written meanwhile with this store's writes
        held, so that the WAL starts over. Without that second step a WAL always being
        appended to is never wholly copied, and SQLite only starts it over once it is: it
        grew to the backstop's 16 MB under a steady 1,000 pings/s."""
        (_busy, frames, _copied) = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        if frames * self._page_size > WAL_CHECKPOINT_BYTES:
            with self._lock:
                conn.execute("PRAGMA wal_checkpoint(RESTART)").fetchone()

    # --- the status page: snapshots and sign-in links ------------------------------------
    def record_snapshot(self, snapshot: Snapshot) -> None:
        """Insert, and prune what is older than SNAPSHOT_RETENTION before this one."""
        snapshot = utc_record(snapshot)
        with self._write() as conn:
            conn.execute(
                "INSERT INTO snapshots (at, snapshot) VALUES (?, ?)",
                (time_text(snapshot.at), snapshot.model_dump_json()),
            )
            conn.execute(
                "DELETE FROM snapshots WHERE at < ?", (time_text(snapshot.at - SNAPSHOT_RETENTION),)
            )

    def snapshots(self, since: datetime) -> list[Snapshot]:
        from reaper.core.snapshot import Snapshot

        rows = self._query_all(
            "SELECT snapshot FROM snapshots WHERE at >= ? ORDER BY at, seq", (time_text(since),)
        )
        return [Snapshot.model_validate_json(snapshot) for (snapshot,) in rows]

    def record_login_token(self, token_hash: str, expires_at: datetime) -> None:
        """Insert; tokens expired before this one's expiry minus a day go (they are useless)."""
        with self._write() as conn:
            conn.execute(
                "INSERT INTO login_tokens (hash, expires_at) VALUES (?, ?) "
                "ON CONFLICT (hash) DO UPDATE SET expires_at = excluded.expires_at",
                (token_hash, time_text(expires_at)),
            )
            conn.execute(
                "DELETE FROM login_tokens WHERE expires_at < ?",
                (time_text(expires_at - timedelta(days=1)),),
            )

    def use_login_token(self, token_hash: str, now: datetime) -> bool:
        """One DELETE under the write lock: of two uses, only the one that deletes wins."""
        with self._write() as conn:
            cursor = conn.execute(
                "DELETE FROM login_tokens WHERE hash = ? AND expires_at > ?",
                (token_hash, time_text(now)),
            )
            return cursor.rowcount == 1

    # --- actions from the phone -----------------------------------------------------------
    def add_grant(self, grant: ActionGrant) -> None:
        grant = utc_record(grant)
        with self._write() as conn:
            conn.execute(
                "DELETE FROM action_grants WHERE expires_at < ?",
                (time_text(grant.created_at - GRANT_RETENTION),),
            )
            conn.execute(
                "INSERT INTO action_grants (id, expires_at, used_at, body) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (id) DO UPDATE SET expires_at = excluded.expires_at, "
                "used_at = excluded.used_at, body = excluded.body",
                (
                    grant.id,
                    time_text(grant.expires_at),
                    None if grant.used_at is None else time_text(grant.used_at),
                    grant.model_dump_json(exclude={"used_at"}),
                ),
            )

    def get_grant(self, grant_id: str) -> ActionGrant | None:
        from reaper.core.models import ActionGrant

        row = self._query_one("SELECT used_at, body FROM action_grants WHERE id = ?", (grant_id,))
        if row is None:
            return None
        used_at, body = row
        grant = ActionGrant.model_validate_json(body)
        return grant.model_copy(update={"used_at": _opt_dt(used_at)})

    def use_grant(self, grant_id: str, now: datetime) -> bool:
        """One UPDATE under the write lock: the row changes only while it is unused."""
        with self._write() as conn:
            cursor = conn.execute(
                "UPDATE action_grants SET used_at = ? "
                "WHERE id = ? AND used_at IS NULL AND expires_at > ?",
                (time_text(now), grant_id, time_text(now)),
            )
            return cursor.rowcount == 1

    def record_action(self, record: ActionRecord) -> None:
        record = utc_record(record)
        with self._write() as conn:
            conn.execute(
                "INSERT INTO phone_actions (at, record) VALUES (?, ?)",
                (time_text(record.at), record.model_dump_json()),
            )

    def action_log(self, since: datetime | None = None) -> list[ActionRecord]:
        from reaper.core.models import ActionRecord

        rows = self._query_all(
            "SELECT record FROM phone_actions WHERE at >= ? ORDER BY at, seq",
            ("" if since is None else time_text(since),),
        )
        return [ActionRecord.model_validate_json(record) for (record,) in rows]

    def request_termination(self, request: TerminationRequest) -> None:
        request = utc_record(request)
        with self._write() as conn:
            conn.execute(
                "DELETE FROM termination_requests WHERE expires_at < ?",
                (time_text(request.requested_at - GRANT_RETENTION),),
            )
            conn.execute(
                "INSERT INTO termination_requests (key, expires_at, request) VALUES (?, ?, ?) "
                "ON CONFLICT (key) DO UPDATE SET "
                "expires_at = excluded.expires_at, request = excluded.request",
                (request.key, time_text(request.expires_at), request.model_dump_json()),
            )

    def termination_requests(self, now: datetime) -> list[TerminationRequest]:
        from reaper.core.models import TerminationRequest

        rows = self._query_all(
            "SELECT request FROM termination_requests WHERE expires_at > ? ORDER BY key",
            (time_text(now),),
        )
        return [TerminationRequest.model_validate_json(request) for (request,) in rows]

    def end_termination_request(self, key: str) -> None:
        with self._write() as conn:
            conn.execute("DELETE FROM termination_requests WHERE key = ?", (key,))

    # --- monitor settings, pause, mute and the ping log -----------------------------------
    def set_monitor_settings(self, host: str, change: SettingsChange) -> Monitor | None:
        """Read and write in one transaction that holds the write lock: no ping in between."""
        with self._write() as conn:
            row = conn.execute("SELECT monitor FROM monitors WHERE host = ?", (host,)).fetchone()
            if row is None:
                return None
            monitor = utc_record(apply_change(Monitor.model_validate_json(row[0]), change))
            conn.execute(
                "UPDATE monitors SET monitor = ? WHERE host = ?",
                (monitor.model_dump_json(exclude_defaults=True), host),
            )
        return monitor

    def pause_monitor(self, host: str, paused: bool, at: datetime) -> bool:
        change = SettingsChange(at=at, given=frozenset({"paused"}), paused=paused)
        return self.set_monitor_settings(host, change) is not None

    def mute_monitor(self, host: str, until: datetime | None) -> bool:
        change = SettingsChange(at=_EPOCH, given=frozenset({"muted_until"}), muted_until=until)
        return self.set_monitor_settings(host, change) is not None

    def log_event(self, host: str, event: PingEvent) -> None:
        event = utc_record(event)
        with self._write() as conn:
            conn.execute(_LOG_EVENT, _event_row(host, event))

    def monitor_log(self, host: str) -> list[PingEvent]:
        rows = self._query_all("SELECT event FROM ping_log WHERE host = ? ORDER BY seq", (host,))
        return [PingEvent.model_validate_json(event) for (event,) in rows]

    def put_monitor_logged(self, monitor: Monitor, event: PingEvent) -> None:
        """One transaction, one commit. The event's row is on another page than the
        monitor's, so a ping writes two pages where it wrote one (bench.heartbeat)."""
        if event.at.tzinfo is not UTC:
            event = utc_record(event)
        self._put_monitor(utc_record(monitor), event)

    # --- sessions of the status page ------------------------------------------------------
    def start_session(self, session_id: str, started_at: datetime, expires_at: datetime) -> None:
        """Insert; the sessions expired by now go in the same transaction."""
        with self._write() as conn:
            conn.execute("DELETE FROM sessions WHERE expires_at <= ?", (time_text(started_at),))
            conn.execute(
                "INSERT INTO sessions (id, expires_at) VALUES (?, ?) "
                "ON CONFLICT (id) DO UPDATE SET expires_at = excluded.expires_at",
                (session_id, time_text(expires_at)),
            )

    def session_active(self, session_id: str, now: datetime) -> bool:
        found = self._query_one(
            "SELECT 1 FROM sessions WHERE id = ? AND expires_at > ?",
            (session_id, time_text(now)),
        )
        return found is not None

    def end_session(self, session_id: str) -> None:
        with self._write() as conn:
            conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))


__all__ = ["SCHEMA_VERSION", "SQLiteStore", "StoreSchemaError"]
