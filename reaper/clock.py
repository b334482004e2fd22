"""The one place "now" comes from.

Every decision about time (TTLs, warnings, heartbeat timeouts) reads a `Clock` passed in, so that
tests and `reaper demo` move time forward by injection (`emulators.clock.FakeClock`) instead of
sleeping.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware, in UTC."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)
