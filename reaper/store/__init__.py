"""State: `open_store(settings.state)` picks the backend named by `REAPER_STATE`."""

from __future__ import annotations

from reaper.config import StateURL
from reaper.store.base import ReadOnlyStoreError, Store


def open_store(url: StateURL, *, read_only: bool = False) -> Store:
    """Open the configured backend. `read_only` (dry runs) creates nothing and writes nothing."""
    if url.kind == "sqlite":
        from reaper.store.sqlite import SQLiteStore

        return SQLiteStore(url.location, read_only=read_only)
    from reaper.store.dynamodb import DynamoDBStore  # type: ignore[import-not-found,unused-ignore]

    store: Store = DynamoDBStore(url.location, read_only=read_only)
    return store


__all__ = ["ReadOnlyStoreError", "Store", "open_store"]
