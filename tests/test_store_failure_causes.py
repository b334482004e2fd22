"""What a store failure is, read from what the backend really raised: SQLite's result codes
(through the exception's chain: a failed ROLLBACK hides the SQLITE_FULL that caused it), an
OSError's errno, DynamoDB's error codes; anything else is no store failure (a bug stays a bug).
A process's episode opens once and closes once."""

from __future__ import annotations

import errno
import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from reaper import log
from reaper.core.records import Monitor
from reaper.store.failure import StoreHealth, failure_alert, store_failure
from reaper.store.sqlite import SQLiteStore
from tests.log_support import json_log


def raised(action: Any) -> BaseException:
    with pytest.raises(Exception) as caught:
        action()
    return caught.value


def monitor(host: str) -> Monitor:
    return Monitor(host=host, created_at=datetime(2026, 1, 1, tzinfo=UTC))


def test_sqlite_full_is_found_behind_the_failed_rollback(tmp_path: Path) -> None:
    store = SQLiteStore(str(tmp_path / "state.db"))
    conn = store._connection()
    (pages,) = conn.execute("PRAGMA page_count").fetchone()
    conn.execute(f"PRAGMA max_page_count = {pages}")

    def fill() -> None:
        for number in range(500):
            store.put_monitor(monitor(f"host-{number}-" + "x" * 80))

    error = raised(fill)
    store.close()
    failure = store_failure(error)
    assert failure is not None
    assert (failure.backend, failure.cause) == ("sqlite", "disk full")
    assert "database or disk is full" in failure.detail


def test_a_read_only_sqlite_write(tmp_path: Path) -> None:
    store = SQLiteStore(str(tmp_path / "state.db"))
    store._connection().execute("PRAGMA query_only = 1")
    error = raised(lambda: store.put_monitor(monitor("box")))
    store.close()
    failure = store_failure(error)
    assert failure is not None and failure.cause == "read-only"
    assert "readonly" in failure.detail


@pytest.mark.parametrize(
    ("code", "cause"),
    [
        (sqlite3.SQLITE_IOERR, "disk I/O error"),
        (4618, "disk I/O error"),  # SQLITE_IOERR_SHMOPEN
        (1544, "read-only"),  # SQLITE_READONLY_DIRECTORY
        (sqlite3.SQLITE_CANTOPEN, "cannot open"),
        (sqlite3.SQLITE_BUSY, "locked"),
        (sqlite3.SQLITE_NOTADB, "corrupt"),
    ],
)
def test_sqlite_result_codes(code: int, cause: str) -> None:
    error = sqlite3.OperationalError("as SQLite said it")
    error.sqlite_errorcode = code  # type: ignore[attr-defined]
    failure = store_failure(error)
    assert failure is not None and failure.cause == cause


def test_a_generic_sqlite_error_is_a_bug() -> None:
    conn = sqlite3.connect(":memory:")
    error = raised(lambda: conn.execute("SELECT * FROM no_such_table"))
    assert store_failure(error) is None
    assert store_failure(RuntimeError("the store is closed")) is None
    assert store_failure(ValueError("bad")) is None


@pytest.mark.parametrize(
    ("number", "cause"),
    [(errno.ENOSPC, "disk full"), (errno.EROFS, "read-only"), (errno.EACCES, "permission denied")],
)
def test_os_errors(number: int, cause: str) -> None:
    failure = store_failure(OSError(number, "as the kernel said it"))
    assert failure is not None and failure.cause == cause


def client_error(code: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "as DynamoDB said it"}}, "PutItem")


@pytest.mark.parametrize(
    ("code", "cause"),
    [
        ("ProvisionedThroughputExceededException", "throttled"),
        ("ThrottlingException", "throttled"),
        ("RequestLimitExceeded", "throttled"),
        ("ConditionalCheckFailedException", "write conflict"),
        ("TransactionCanceledException", "write conflict"),
        ("ResourceNotFoundException", "table missing"),
        ("AccessDeniedException", "access denied"),
        ("InternalServerError", "unavailable"),
        ("SomethingNew", "error SomethingNew"),
    ],
)
def test_dynamodb_error_codes(code: str, cause: str) -> None:
    failure = store_failure(client_error(code))
    assert failure is not None
    assert (failure.backend, failure.cause) == ("dynamodb", cause)
    assert code in failure.detail


def test_dynamodb_unreachable() -> None:
    error = EndpointConnectionError(endpoint_url="https://dynamodb.example")
    failure = store_failure(error)
    assert failure is not None and failure.cause == "unreachable"


def test_an_episode_opens_once_and_closes_once() -> None:
    health = StoreHealth()
    full = store_failure(OSError(errno.ENOSPC, "No space left on device"))
    io_error = store_failure(OSError(errno.EIO, "Input/output error"))
    assert full is not None and io_error is not None
    with json_log() as stream:
        log.configure(json_lines=True, stream=stream, level="error")
        health.recovered()  # nothing open: nothing said
        assert health.failed(full) is True
        assert health.failed(full) is False
        assert health.failed(io_error) is False  # the same episode; its latest cause shown
        assert health.cause == "disk I/O error"
        health.recovered()
        health.recovered()
        assert health.cause is None
    said = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [(e["event"], e["cause"]) for e in said] == [
        ("store_failing", "disk full"),
        ("store_recovered", "disk I/O error"),
    ]


def test_the_alert_says_what_to_do() -> None:
    failure = store_failure(OSError(errno.ENOSPC, "No space left on device"))
    assert failure is not None
    alert = failure_alert(failure)
    assert alert.title == "reaper's state store is failing: disk full"
    assert "free space on the disk that holds REAPER_STATE" in alert.body
    assert alert.level == "critical"


def test_no_secret_reaches_the_detail() -> None:
    log.register_secrets(["super-secret-value-0001"])
    failure = store_failure(OSError(errno.ENOSPC, "full at super-secret-value-0001"))
    assert failure is not None
    assert "super-secret-value-0001" not in failure.detail
