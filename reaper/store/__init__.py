"""State: `open_store(settings.state)` picks the backend named by `REAPER_STATE` from the
openers' table, one line per backend: `sqlite/` and `dynamodb/`, each the union of the ports
(`ports`); the dry run's store is `recording`."""

from __future__ import annotations

import os
from typing import Protocol

from reaper.settings.model import StateURL
from reaper.settings.parse import ConfigError
from reaper.store.failure import StoreFailure, store_failure
from reaper.store.ports import ReadOnlyStoreError, Store


def open_store(url: StateURL, *, read_only: bool = False, existing: bool = False) -> Store:
    """Open the configured backend. `read_only` (dry runs) creates nothing and writes nothing.
    `existing` (the read-outs: status, audit, report): a SQLite path that holds no reaper state
    is a config error, not an empty store — "none recorded" would hide a mistyped path."""
    return OPENERS[url.kind](url, read_only=read_only, existing=existing)


def _open_sqlite(url: StateURL, *, read_only: bool, existing: bool) -> Store:
    import sqlite3

    from reaper.store.sqlite import SQLiteStore

    if existing:
        _require_sqlite_state(url.location)

    try:
        return SQLiteStore(url.location, read_only=read_only)
    except (sqlite3.Error, OSError, RuntimeError) as exc:
        # Not a database, a path that cannot be created, a newer schema, a full or
        # read-only disk: one line naming the variable, like every other bad setting.
        raise ConfigError("REAPER_STATE", _cannot(url.location, "open", exc)) from None


def _disk_fault(exc: BaseException) -> StoreFailure | None:
    """The failure when the disk is at fault (full, read-only, failing, locked), not the file."""
    failure = store_failure(exc)
    return failure if failure is not None and failure.cause != "corrupt" else None


def _cannot(location: str, what: str, exc: BaseException) -> str:
    """Why `location` cannot be opened or read, in one line: the disk's fault said as such,
    anything else in SQLite's own words."""
    failure = _disk_fault(exc)
    if failure is not None:
        return f"cannot {what} {location}: {failure.cause}: {failure.advice} ({failure.detail})"
    reason = " ".join(str(exc).split()) or type(exc).__name__
    return f"cannot {what} {location}: {reason}"


def _require_sqlite_state(location: str) -> None:
    """One line for a path that cannot hold this store: missing, a directory, or a file that
    is not a SQLite database with reaper's tables."""
    import sqlite3
    from pathlib import Path

    from reaper.store.sqlite.connection import connect_read_only

    path = Path(location)
    hint = "check REAPER_STATE (a reap pass or `reaper serve` creates it)"
    if path.is_dir():
        raise ConfigError("REAPER_STATE", f"{location} is a directory, not a state database")
    if not path.exists():
        raise ConfigError("REAPER_STATE", f"no state database at {location}: {hint}")
    try:
        conn = connect_read_only(path)
        try:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        finally:
            conn.close()
    except sqlite3.Error as exc:
        if _disk_fault(exc) is not None:
            raise ConfigError("REAPER_STATE", _cannot(location, "read", exc)) from None
        reason = " ".join(str(exc).split()) or type(exc).__name__
        expected = f"{location} is not a state database ({reason})"
        raise ConfigError("REAPER_STATE", expected) from None
    if "audit" not in tables:
        raise ConfigError("REAPER_STATE", f"{location} holds no reaper state: {hint}")


def _open_dynamodb(url: StateURL, *, read_only: bool, existing: bool) -> Store:
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

    # `?region=` first, then AWS_REGION (boto3 itself reads only AWS_DEFAULT_REGION and the
    # profile's config, while Lambda and most AWS tooling set AWS_REGION), then boto3's own.
    region = url.region or (os.environ.get("AWS_REGION") or "").strip() or None
    try:
        client = make_client(region)
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


class Opener(Protocol):
    def __call__(self, url: StateURL, *, read_only: bool, existing: bool) -> Store: ...


# Each backend by the kind of REAPER_STATE that names it; its module is imported when opened.
OPENERS: dict[str, Opener] = {"sqlite": _open_sqlite, "dynamodb": _open_dynamodb}

__all__ = ["OPENERS", "ReadOnlyStoreError", "Store", "open_store"]
