"""A store that cannot be written is said out loud: what failed, in a person's words, and the
episode it opens.

Without this a full disk answered every ping 500 with only an exception's class in an INFO line,
`/healthz` kept saying ok, and `LOG_LEVEL=warning` hid it all. Now `store_failure` reads the
cause out of whatever a backend raised (SQLite's result code — through the chain, since a failed
ROLLBACK can hide the SQLITE_FULL that caused it —, an OSError's errno, DynamoDB's error code),
and a `StoreHealth` per process keeps the episode: opened once (one ERROR line, whatever
LOG_LEVEL, and one alert that needs no store to send), its cause shown by `/healthz` while it
lasts, closed with one line by the first write that succeeds again.

A cold ping imports nothing here but this module: backends' errors are recognised by their
attributes, not by importing sqlite3 or botocore.
"""

from __future__ import annotations

import errno
from dataclasses import dataclass
from typing import TYPE_CHECKING

from reaper import log

if TYPE_CHECKING:
    from reaper.core.models import Alert

# What a request that could not be stored is told to wait before trying again (`Retry-After`).
RETRY_AFTER_SECONDS = 30


@dataclass(frozen=True)
class StoreFailure:
    """`cause`: a few words (`/healthz` shows them); `detail`: the backend's own words, one
    line; `advice`: what a person does about it."""

    backend: str
    cause: str
    detail: str
    advice: str


# SQLite's primary result codes (the low byte of an extended code) -> (cause, advice).
_SQLITE: dict[int, tuple[str, str]] = {
    13: ("disk full", "free space on the disk that holds REAPER_STATE"),
    8: (
        "read-only",
        "make the state database and its directory writable for the user reaper runs as",
    ),
    3: (
        "permission denied",
        "make the state database and its directory writable for the user reaper runs as",
    ),
    10: ("disk I/O error", "the disk that holds REAPER_STATE may be full or failing"),
    14: ("cannot open", "check that REAPER_STATE's directory exists and is writable"),
    5: ("locked", "another process holds the state database locked"),
    6: ("locked", "another process holds the state database locked"),
    11: ("corrupt", "restore the state database from a copy (or move it aside to start over)"),
    26: ("corrupt", "REAPER_STATE does not point at a SQLite database"),
    7: ("out of memory", "the machine is out of memory"),
}
_ERRNO: dict[int, tuple[str, str]] = {
    errno.ENOSPC: _SQLITE[13],
    errno.EDQUOT: ("disk full", "the user's disk quota is spent: free space or raise it"),
    errno.EROFS: _SQLITE[8],
    errno.EACCES: _SQLITE[3],
    errno.EPERM: _SQLITE[3],
    errno.EIO: _SQLITE[10],
}
_THROTTLED = (
    "throttled",
    "DynamoDB is throttling the table: it passes by itself; raise the table's capacity if it lasts",
)
_DYNAMODB: dict[str, tuple[str, str]] = {
    "ProvisionedThroughputExceededException": _THROTTLED,
    "ThrottlingException": _THROTTLED,
    "RequestLimitExceeded": _THROTTLED,
    "ConditionalCheckFailedException": (
        "write conflict",
        "a conditional write was refused: another invocation changed the same item",
    ),
    "TransactionConflictException": (
        "write conflict",
        "another invocation was writing the same items: it passes by itself",
    ),
    "TransactionCanceledException": (
        "write conflict",
        "a transaction was refused: another invocation changed the same items",
    ),
    "ResourceNotFoundException": (
        "table missing",
        "the DynamoDB table in REAPER_STATE does not exist in this account and region",
    ),
    "AccessDeniedException": (
        "access denied",
        "the function's role may not use the DynamoDB table in REAPER_STATE",
    ),
    "UnrecognizedClientException": ("access denied", "the AWS credentials are not valid"),
    "ExpiredTokenException": ("access denied", "the AWS credentials have expired"),
    "InternalServerError": ("unavailable", "DynamoDB failed on its side: it passes by itself"),
    "ServiceUnavailable": ("unavailable", "DynamoDB failed on its side: it passes by itself"),
}


def _one_line(exc: BaseException) -> str:
    return log.redact(" ".join(str(exc).split()))[:200] or type(exc).__name__


def _classify(exc: BaseException) -> StoreFailure | None:
    """One exception on its own, without its chain."""
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        known = _SQLITE.get(code & 0xFF)
        if known is None:
            return None
        return StoreFailure("sqlite", known[0], f"SQLite: {_one_line(exc)}", known[1])
    module = type(exc).__module__
    if module.startswith("botocore"):
        response = getattr(exc, "response", None)
        error = response.get("Error", {}) if isinstance(response, dict) else {}
        name = str(error.get("Code") or "")
        detail = f"DynamoDB: {name + ': ' if name else ''}{_one_line(exc)}"
        if not name:  # no answer at all: a connection or a timeout
            return StoreFailure("dynamodb", "unreachable", detail, "DynamoDB could not be reached")
        cause, advice = _DYNAMODB.get(name, (f"error {name}", "see the detail"))
        return StoreFailure("dynamodb", cause, detail, advice)
    if isinstance(exc, OSError) and exc.errno in _ERRNO:
        cause, advice = _ERRNO[exc.errno]
        return StoreFailure("disk", cause, _one_line(exc), advice)
    return None


def store_failure(exc: BaseException) -> StoreFailure | None:
    """What a store failure is, or None when `exc` is no store failure (a bug is a bug). The
    exception's chain is read too: SQLite rolls a transaction back itself on SQLITE_FULL, and
    the ROLLBACK that follows then fails with a generic error whose context holds the cause."""
    seen: set[int] = set()
    pending: list[BaseException] = [exc]
    while pending:
        current = pending.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        found = _classify(current)
        if found is not None:
            return found
        pending += [e for e in (current.__cause__, current.__context__) if e is not None]
    return None


def failure_alert(failure: StoreFailure) -> Alert:
    """The alert of an episode: sent through the notifier alone (the store cannot help)."""
    from reaper.core.models import Alert

    return Alert(
        title=f"reaper's state store is failing: {failure.cause}",
        body=(
            f"{failure.advice}. Until it recovers, pings and requests are answered 503 (the"
            f" instances' kit retries) and nothing new is recorded. {failure.detail}"
        ),
        level="critical",
        event="store_failing",
        dedup_key="store_failing",
    )


class StoreHealth:
    """One process's view of its store: the failure episode it is in, if any.

    It only remembers what the process's own requests and passes saw: it never asks the store
    (a health check that needs the store would fail the same way, or worse, hang)."""

    def __init__(self) -> None:
        self.failure: StoreFailure | None = None

    @property
    def cause(self) -> str | None:
        return None if self.failure is None else self.failure.cause

    def failed(self, failure: StoreFailure) -> bool:
        """Note a failure; True when it opens an episode (the caller sends `failure_alert`).
        The opening is logged at ERROR once; a later cause replaces the one shown."""
        opened = self.failure is None
        self.failure = failure
        if opened:
            log.event(
                "store_failing",
                backend=failure.backend,
                cause=failure.cause,
                error=failure.detail,
                advice=failure.advice,
            )
        return opened

    def recovered(self) -> None:
        """A write succeeded: the episode, if one is open, closes with one line."""
        if self.failure is not None:
            log.event("store_recovered", backend=self.failure.backend, cause=self.failure.cause)
            self.failure = None
