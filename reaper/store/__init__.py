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
    return _open_dynamodb(url, read_only=read_only)


def _open_dynamodb(url: StateURL, *, read_only: bool) -> Store:
    """The AWS backend, or one line naming what is missing: boto3 (an extra), a region."""
    try:
        import boto3  # type: ignore[import-untyped,unused-ignore]  # noqa: F401
    except ImportError:
        raise ConfigError(
            "REAPER_STATE",
            "dynamodb:// needs boto3, which is not installed: pip install 'reaper[aws]'",
        ) from None
    from botocore.exceptions import (  # type: ignore[import-untyped,unused-ignore]
        BotoCoreError,
        NoRegionError,
    )

    from reaper.store.dynamodb import DynamoDBStore, make_client

    try:
        client = make_client(url.region)
    except NoRegionError:
        raise ConfigError(
            "REAPER_STATE",
            "dynamodb:// needs an AWS region: set AWS_REGION (or AWS_DEFAULT_REGION), or use "
            "dynamodb://<table>?region=<region>",
        ) from None
    except BotoCoreError as exc:
        raise ConfigError("REAPER_STATE", f"cannot reach DynamoDB ({type(exc).__name__})") from None
    store: Store = DynamoDBStore(url.location, read_only=read_only, client=client)
    return store


__all__ = ["ReadOnlyStoreError", "Store", "open_store"]
