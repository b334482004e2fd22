"""The SQLite store's sign-in links, sessions, grants and phone actions (`PhoneAuth`)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from reaper.store.rows import time_text, utc_record
from reaper.store.sqlite.connection import GRANT_RETENTION, SQLiteConnection, _opt_dt

if TYPE_CHECKING:  # pydantic models, imported where used: a cold ping needs none of them
    from reaper.core.models import (
        ActionGrant,
        ActionRecord,
    )


class PhoneStore(SQLiteConnection):
    """Sign-in links, sessions, action grants and the actions taken from the phone (`PhoneAuth`)."""

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

    def release_grant(self, grant_id: str, used_at: datetime) -> bool:
        with self._write() as conn:
            cursor = conn.execute(
                "UPDATE action_grants SET used_at = NULL WHERE id = ? AND used_at = ?",
                (grant_id, time_text(used_at)),
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
