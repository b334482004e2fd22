"""The SQLite store's reap ledger (`reaper.store.ports.ReapLedger`)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from reaper.store.rows import text_time, time_text, utc_record
from reaper.store.sqlite.connection import (
    GRANT_RETENTION,
    SQLiteConnection,
    _opt_delta,
    _opt_dt,
    _opt_seconds,
    _opt_text,
)

if TYPE_CHECKING:  # pydantic models, imported where used: a cold ping needs none of them
    from reaper.core.models import (
        AuditRecord,
        History,
        KeptInstance,
        ReapRun,
        TerminationRequest,
        WarningRecord,
    )


# Reap runs are only read for "the last one"; a bounded tail keeps the file small.
REAP_RUNS_KEPT = 1000
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


class LedgerStore(SQLiteConnection):
    """The reap ledger (`ReapLedger`): stopped clocks, warnings, keeps, terminate-now requests,
    audit records and reap runs."""

    def history(self) -> History:
        with self._read() as conn:
            stopped = conn.execute(
                "SELECT key, since, started, missing_since FROM stopped_clock"
            ).fetchall()
            warnings = conn.execute(_SELECT_WARNINGS).fetchall()
            kept = conn.execute("SELECT key, since, until, kept_by FROM kept").fetchall()
        return self._history(stopped, warnings, kept)

    def history_of(self, key: str, now: datetime) -> History:
        where = (key,)
        with self._read() as conn:
            stopped = conn.execute(
                "SELECT key, since, started, missing_since FROM stopped_clock WHERE key = ?", where
            ).fetchall()
            warnings = conn.execute(_SELECT_WARNINGS + " WHERE key = ?", where).fetchall()
            kept = conn.execute(
                "SELECT key, since, until, kept_by FROM kept WHERE key = ?", where
            ).fetchall()
            requests = conn.execute(
                "SELECT request FROM termination_requests WHERE key = ? AND expires_at > ?",
                (key, time_text(now)),
            ).fetchall()
        from reaper.core.models import TerminationRequest

        history = self._history(stopped, warnings, kept)
        found = [TerminationRequest.model_validate_json(request) for (request,) in requests]
        return history.model_copy(update={"requests": {r.key: r for r in found}})

    @staticmethod
    def _history(stopped: list[Any], warnings: list[Any], kept: list[Any]) -> History:
        from reaper.core.models import History, KeptInstance

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
