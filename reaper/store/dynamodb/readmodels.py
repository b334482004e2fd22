"""The DynamoDB store's listings and snapshots (`reaper.store.ports.ReadModels`)."""

from __future__ import annotations

import time
import zlib
from datetime import datetime
from typing import TYPE_CHECKING

from reaper.store.dynamodb.connection import TTL_ATTRIBUTE, DynamoDBTable, _epoch, _key, _n, _s
from reaper.store.rows import SNAPSHOT_RETENTION, time_text, utc_record

if TYPE_CHECKING:  # pydantic models, imported where used: a cold ping needs none of them
    from reaper.core.models import (
        Listing,
    )
    from reaper.core.snapshot import Snapshot


class ReadModelStore(DynamoDBTable):
    """What people read: each account's last listing and the passes' snapshots (`ReadModels`)."""

    def record_listing(self, listing: Listing) -> None:
        """One item per account, its JSON compressed: a thousand instances fit one item well
        under DynamoDB's 400 KB, and a status read stays one Query."""
        self._writable()
        listing = utc_record(listing)
        body = zlib.compress(listing.model_dump_json(exclude_defaults=True).encode(), 6)
        self._client.put_item(
            TableName=self.table_name,
            Item={
                **_key("listing", f"{listing.provider}#{listing.account}"),
                "at": _s(time_text(listing.at)),
                "listing": {"B": body},
            },
        )

    def listings(self) -> list[Listing]:
        from reaper.core.models import Listing

        return [
            Listing.model_validate_json(zlib.decompress(bytes(item["listing"]["B"])))
            for item in self._query("listing")
        ]

    def record_snapshot(self, snapshot: Snapshot) -> None:
        """One item; TTL drops it SNAPSHOT_RETENTION after it was taken. The counter after the
        time keeps two snapshots of the same microsecond apart."""
        self._writable()
        snapshot = utc_record(snapshot)
        self._client.put_item(
            TableName=self.table_name,
            Item={
                **_key("snapshot", f"{time_text(snapshot.at)}#{time.time_ns():020d}"),
                "snapshot": _s(snapshot.model_dump_json()),
                TTL_ATTRIBUTE: _n(_epoch(snapshot.at + SNAPSHOT_RETENTION)),
            },
        )

    def snapshots(self, since: datetime) -> list[Snapshot]:
        """One Query from `since` on (the sort key starts with the time)."""
        from reaper.core.snapshot import Snapshot

        return [
            Snapshot.model_validate_json(item["snapshot"]["S"])
            for item in self._query("snapshot", sk_from=time_text(since))
        ]
