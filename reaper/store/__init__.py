"""State: `open_store(settings.state)` picks the backend named by `REAPER_STATE`."""

from __future__ import annotations

from reaper.config import ConfigError, StateURL
from reaper.store.base import ReadOnlyStoreError, Store


def open_store(url: StateURL, *, read_only: bool = False) -> Store:
    """Open the configured backend. `read_only` (dry runs) creates nothing and writes nothing."""
    if url.kind == "sqlite":
        import sqlite3

        from reaper.store.sqlite import SQLiteStore

        try:
            return SQLiteStore(url.location, read_only=read_only)
        except (sqlite3.Error, OSError, RuntimeError) as exc:
            # Not a database, a path that cannot be created, a newer schema: a config error,
            # one line naming the variable, like every other bad setting.
            reason = " ".join(str(exc).split()) or type(exc).__name__
            raise ConfigError("REAPER_STATE", f"cannot open {url.location}: {reason}") from None
    from reaper.store.dynamodb import DynamoDBStore  # type: ignore[import-not-found,unused-ignore]

    store: Store = DynamoDBStore(url.location, read_only=read_only)
    return store


__all__ = ["ReadOnlyStoreError", "Store", "open_store"]
