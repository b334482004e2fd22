"""Structured events through the standard `logging` module: one JSON object per line on Lambda
(and with `LOG_FORMAT=json`), a readable line with its time and level in a terminal.

Every part of reaper logs through `event()`, which scrubs every registered secret (provider
keys, the ping key, channel tokens) from every value, so a key that slipped into an error
message from a provider still never reaches a log; and shows every value as text
(`reaper.text.shown`), so a bidi override in a name or a message cannot reorder a log line. The
events go to the `reaper` logger, which does not propagate (the Lambda runtime's root handler
would print each line twice); `serve` routes uvicorn's own `uvicorn.error` lines through the
same handler, so that every line of the process has one shape. `LOG_LEVEL` sets the lowest
level written.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from datetime import UTC, datetime
from typing import Any, TextIO

from reaper.text import shown

_lock = threading.Lock()
_secrets: set[str] = set()
# The same, longest first (a secret inside a longer one is scrubbed after it): sorted once per
# change rather than for every value of every line.
_by_length: tuple[str, ...] = ()
_json_mode: bool | None = None
_stream: TextIO | None = None
_quiet = False

REDACTED = "[redacted]"
LOGGER = "reaper"
# Outcomes that are worth a WARNING line rather than an INFO one.
_WARNING_RESULTS = frozenset({"error", "failed", "config_error", "bad_event", "undelivered"})
# A failing store is said whatever LOG_LEVEL, and so is its end (one line each per episode).
_ERROR_EVENTS = frozenset(
    {"schedule_error", "close_error", "store_failing", "store_recovered", "weak_key"}
)
_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}


def register_secrets(values: list[str] | set[str] | tuple[str, ...]) -> None:
    """Add values that must never appear in a log line. Very short ones are ignored (they would
    redact ordinary words) — configuration makes keys long enough for that to be safe."""
    global _by_length
    with _lock:
        _secrets.update(v for v in values if v and len(v) >= 4)
        _by_length = tuple(sorted(_secrets, key=len, reverse=True))


def forget_secrets() -> None:
    """Drop every registered secret (tests: one test's keys must not redact another's text)."""
    global _by_length
    with _lock:
        _secrets.clear()
        _by_length = ()


def redact(text: str) -> str:
    for secret in _by_length:
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def _timestamp() -> str:
    """The wall clock to the millisecond, UTC: when the line was written."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _use_json() -> bool:
    if _json_mode is not None:
        return _json_mode
    return bool(os.environ.get("AWS_LAMBDA_FUNCTION_NAME"))


class _Handler(logging.Handler):
    """Writes to the configured stream, or to whatever `sys.stderr` is at the time of the
    write (a test's captured one included)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record)
        except Exception:
            return
        stream = _stream or sys.stderr
        with _lock:
            try:
                stream.write(line + "\n")
                stream.flush()
            except (OSError, ValueError):
                pass


class _Formatter(logging.Formatter):
    """reaper's events carry their fields (`record.fields`); any other record (uvicorn's) is
    an event named by its logger with the message as a field. Both are redacted."""

    def format(self, record: logging.LogRecord) -> str:
        fields: dict[str, Any] | None = getattr(record, "fields", None)
        if fields is None:
            name = record.name
            fields = {"message": redact(record.getMessage())}
        else:
            name = record.getMessage()
        level = record.levelname.lower()
        if _use_json():
            data = {"ts": _timestamp(), "level": level, "event": name, **fields}
            return json.dumps(data, ensure_ascii=False, default=str)
        parts = [f"{k}={v}" for k, v in fields.items() if v is not None]
        return f"{_timestamp()} {level.upper():<7} {name:<22} " + " ".join(parts)


_handler = _Handler()
_handler.setFormatter(_Formatter())


def _install(name: str, *, propagate: bool) -> logging.Logger:
    logger = logging.getLogger(name)
    if _handler not in logger.handlers:
        logger.addHandler(_handler)
    logger.propagate = propagate
    return logger


_logger = _install(LOGGER, propagate=False)
_logger.setLevel(logging.INFO)


def configure(
    *,
    json_lines: bool | None = None,
    stream: TextIO | None = None,
    quiet: bool = False,
    level: str = "info",
) -> None:
    """Choose the format (JSON lines when asked, or by default when running on Lambda), the
    stream (stderr by default) and the lowest level written."""
    global _json_mode, _stream, _quiet
    _json_mode = json_lines
    _stream = stream
    _quiet = quiet
    _logger.setLevel(_LEVELS.get(level, logging.INFO))


def apply_settings(level: str, log_format: str | None) -> None:
    """`LOG_LEVEL` and `LOG_FORMAT` from the settings; an unset format keeps the current one
    (JSON on Lambda, text elsewhere), and the stream stays where it is."""
    global _json_mode
    _logger.setLevel(_LEVELS.get(level, logging.INFO))
    if log_format is not None:
        _json_mode = log_format == "json"


def route_uvicorn() -> None:
    """uvicorn's own lines (`uvicorn.error`: start-up failures, warnings) through the same
    handler and format. Its access log stays off: it would write the ping key."""
    _install("uvicorn", propagate=True)


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        return redact(shown(value, lines=True))
    # Numbers before the containers: most fields of the line logged for every request.
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat().replace("+00:00", "Z")
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return redact(shown(str(value), lines=True))


def _level_of(name: str, fields: dict[str, Any]) -> int:
    if name in _ERROR_EVENTS:
        return logging.ERROR
    if fields.get("result") in _WARNING_RESULTS:
        return logging.WARNING
    return logging.INFO


def event(name: str, /, **fields: Any) -> None:
    """Log one event, at INFO (WARNING for a failed outcome, ERROR for a pass that raised).
    Fields with None values are left out of the readable form."""
    if _quiet:
        return
    level = _level_of(name, fields)
    if not _logger.isEnabledFor(level):
        return
    _emit(level, name, fields)


def debug(name: str, /, **fields: Any) -> None:
    """An event only `LOG_LEVEL=debug` writes."""
    if _quiet or not _logger.isEnabledFor(logging.DEBUG):
        return
    _emit(logging.DEBUG, name, fields)


def _emit(level: int, name: str, fields: dict[str, Any]) -> None:
    """The record handed to the logger's handlers as `Logger.log` would, less its search of
    the call stack for the caller's file and line, which no line of reaper's shows: a third
    of the cost of the line `serve` writes for every request (bench.heartbeat)."""
    cleaned = {k: _clean(v) for k, v in fields.items()}
    _logger.handle(
        _logger.makeRecord(LOGGER, level, "(reaper)", 0, name, (), None, extra={"fields": cleaned})
    )
