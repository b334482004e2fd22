"""The SQLite store's connection: opening (private files, WAL, the schema migrated), one
connection per store guarded by a lock, its transactions, and the checkpoints apart from the
requests (`checkpoint_apart`). Each port's methods are a mixin over this (`ledger`,
`coordination`, `monitors`, `phone`, `readmodels`)."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from reaper import log
from reaper.core.records import Monitor
from reaper.store.ports import ReadOnlyStoreError
from reaper.store.rows import text_time, time_text
from reaper.store.sqlite.schema import _MIGRATIONS, _SCHEMA, SCHEMA_VERSION

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
# Grants and termination requests are dropped this long after they expired (when a new one is
# written), so that "expired" can still be told from "unknown" for a while.
GRANT_RETENTION = timedelta(days=1)


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


def _wal_holds_nothing(path: Path) -> bool:
    """True when the file alone holds every commit: its WAL is absent or empty (the last
    connection to close checkpoints and removes it)."""
    try:
        return path.with_name(path.name + "-wal").stat().st_size == 0
    except FileNotFoundError:
        return True


def connect_read_only(path: Path) -> sqlite3.Connection:
    """A connection that reads `path` and writes nothing, not even beside it.

    Reading a WAL database needs its shared-memory file (`-shm`), which SQLite creates even for
    a read-only connection: in a directory that takes no writes (read-only, or a full disk) the
    read-outs (`status`, `audit`, `report`, `monitor list`) would fail on a good file. When the
    WAL holds nothing, the file is the whole database and no writer can be at work (it would
    have a WAL), so it is read as immutable: no shared memory, no lock. A WAL with commits in it
    is never skipped: then the first error stands."""
    uri = f"{path.resolve().as_uri()}?mode=ro"
    try:
        return _probed(uri)
    except sqlite3.OperationalError as error:
        if not _wal_holds_nothing(path):
            raise
        first = error
    try:
        return _probed(f"{uri}&immutable=1")
    except sqlite3.Error:
        raise first from None


def _probed(uri: str) -> sqlite3.Connection:
    """A connection that has read the file once (the first read opens the shared memory)."""
    conn = SQLiteConnection._connect(uri, uri=True)
    try:
        conn.execute("PRAGMA user_version").fetchone()
    except BaseException:
        conn.close()
        raise
    return conn


class SQLiteConnection:
    """One SQLite file: the connection, its lock and its transactions, under every port's
    methods."""

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
            version = SQLiteConnection._schema_version(conn)
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
            conn = connect_read_only(path)
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

    def close(self) -> None:
        self._checkpoints_stop.set()
        if self._checkpointer is not None:
            self._checkpointer.join(timeout=BUSY_TIMEOUT_SECONDS * 2)
            self._checkpointer = None
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

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
