"""The one place "now" comes from.

Every decision about time (TTLs, warnings, heartbeat timeouts) reads a `Clock` passed in, so that
tests and `reaper demo` move time forward by injection instead of sleeping.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware, in UTC."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class FakeClock:
    """A clock that only moves when told to; for tests and the demo."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 1, tzinfo=UTC)
        if self._now.tzinfo is None:
            raise ValueError("FakeClock needs a timezone-aware start")

    def now(self) -> datetime:
        return self._now

    def advance(self, by: timedelta) -> datetime:
        self._now += by
        return self._now

    def set(self, to: datetime) -> None:
        self._now = to


def iso(moment: datetime | None) -> str | None:
    """ISO 8601 in UTC with a `Z`, the only way times leave the program."""
    if moment is None:
        return None
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def parse_time(text: str | None) -> datetime | None:
    """Read a provider's or the store's timestamp; naive ones are taken as UTC; junk is None."""
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def as_utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def human_duration(span: timedelta) -> str:
    """A duration as people write it: "3d4h", "1h30m", "45s"; negative spans read as "0s"."""
    seconds = max(0, int(span.total_seconds()))
    parts: list[str] = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            parts.append(f"{seconds // size}{unit}")
            seconds %= size
        if len(parts) == 2:
            return "".join(parts)
    if seconds or not parts:
        parts.append(f"{seconds}s")
    return "".join(parts[:2])


__all__ = [
    "Clock",
    "FakeClock",
    "SystemClock",
    "as_utc",
    "human_duration",
    "iso",
    "parse_time",
    "timedelta",
]
