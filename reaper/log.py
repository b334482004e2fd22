"""Structured events: one JSON object per event on Lambda, a readable line in a terminal.

Every part of reaper logs through `event()`, which scrubs every registered secret (provider
keys, the ping key, channel tokens) from every value, so a key that slipped into an error
message from a provider still never reaches a log.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from datetime import UTC, datetime
from typing import Any, TextIO

_lock = threading.Lock()
_secrets: set[str] = set()
_json_mode: bool | None = None
_stream: TextIO | None = None
_quiet = False

REDACTED = "[redacted]"


def register_secrets(values: list[str] | set[str] | tuple[str, ...]) -> None:
    """Add values that must never appear in a log line. Very short ones are ignored (they would
    redact ordinary words) — configuration makes keys long enough for that to be safe."""
    with _lock:
        _secrets.update(v for v in values if v and len(v) >= 4)


def forget_secrets() -> None:
    """Drop every registered secret (tests: one test's keys must not redact another's text)."""
    with _lock:
        _secrets.clear()


def redact(text: str) -> str:
    for secret in sorted(_secrets, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def configure(
    *, json_lines: bool | None = None, stream: TextIO | None = None, quiet: bool = False
) -> None:
    """Choose the format: JSON lines when asked, or by default when running on Lambda."""
    global _json_mode, _stream, _quiet
    _json_mode = json_lines
    _stream = stream
    _quiet = quiet


def _use_json() -> bool:
    if _json_mode is not None:
        return _json_mode
    return bool(os.environ.get("AWS_LAMBDA_FUNCTION_NAME"))


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat().replace("+00:00", "Z")
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    if value is None or isinstance(value, bool | int | float):
        return value
    return redact(str(value))


def event(name: str, /, **fields: Any) -> None:
    """Log one event. Fields with None values are left out of the readable form."""
    if _quiet:
        return
    record = {"event": name, **{k: _clean(v) for k, v in fields.items()}}
    stream = _stream or sys.stderr
    if _use_json():
        record = {"ts": datetime.now(UTC).isoformat().replace("+00:00", "Z"), **record}
        line = json.dumps(record, ensure_ascii=False, default=str)
    else:
        parts = [f"{k}={v}" for k, v in record.items() if k != "event" and v is not None]
        line = f"{name:<22} " + " ".join(parts)
    with _lock:
        try:
            stream.write(line + "\n")
            stream.flush()
        except (OSError, ValueError):
            pass
