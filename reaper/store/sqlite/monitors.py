"""The SQLite store's monitors and ping logs (`reaper.store.ports.Monitors`).

A ping reads its monitor, and the monitor a store last wrote is usually the one it reads next:
the store keeps what it wrote in memory, trusted only while SQLite's `data_version` (moved by
any other connection's commit) and this connection's `total_changes` (moved by any write of
its own) are as they were after that write."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime

from reaper.core.monitors import SettingsChange, apply_change
from reaper.core.records import Monitor, PingEvent
from reaper.store.rows import log_slot, retired_to_delete, text_time, utc_record
from reaper.store.sqlite.connection import SQLiteConnection

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


class MonitorStore(SQLiteConnection):
    """Heartbeat monitors and their ping logs (`Monitors`)."""

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
