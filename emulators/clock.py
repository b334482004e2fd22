"""A clock that only moves when told to: the tests and `reaper demo` move time by injection
instead of sleeping. It satisfies `reaper.clock.Clock`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


class FakeClock:
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
