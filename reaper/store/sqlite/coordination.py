"""The SQLite store's leases, alert claims and episodes (`Leases`, `Episodes`)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from reaper.store.ports import Lease
from reaper.store.rows import text_time, time_text
from reaper.store.sqlite.connection import SQLiteConnection, _opt_dt

if TYPE_CHECKING:  # pydantic models, imported where used: a cold ping needs none of them
    from reaper.core.models import (
        Episode,
    )


# Claims are pruned every this many claim_alert calls, in the calling transaction.
CLAIM_PRUNE_EVERY = 100
# A claim is pruned once older than this (or than the claiming call's window, if longer), so
# that a caller using a longer window than the one that pruned never sees a duplicate.
CLAIM_RETENTION = timedelta(days=7)


class CoordinationStore(SQLiteConnection):
    """Leases (`Leases`), alert claims and episodes (`Episodes`)."""

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
