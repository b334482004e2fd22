"""The SQLite store's listings and snapshots (`reaper.store.ports.ReadModels`)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from reaper.store.rows import SNAPSHOT_RETENTION, time_text, utc_record
from reaper.store.sqlite.connection import SQLiteConnection

if TYPE_CHECKING:  # pydantic models, imported where used: a cold ping needs none of them
    from reaper.core.models import (
        Listing,
    )
    from reaper.core.snapshot import Snapshot


class ReadModelStore(SQLiteConnection):
    """What people read: each account's last listing and the passes' snapshots (`ReadModels`)."""

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
