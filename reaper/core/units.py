"""Units: money, durations, times and the month, each written one way everywhere.

One duration formatter (`humanize`: at most two adjacent units, truncated, "1h30m", "2d3h",
"23h", "45s") for every table, alert and reason; one spelling of an instant for machines
(`iso`) and one for people (`utc`: to the minute, UTC stated; `ago` and `when` put it beside
now); one month of hours for $/h → $/month.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

# A month of hours for $/h → $/month: 730 = 8760 / 12, the month providers price by. (A
# provider that divides by another month for its own figures says so in its own package.)
HOURS_PER_MONTH = 730.0


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
        # In UTC at once: a time at the edge of the calendar ("9999-12-31T23:59:59-05:00")
        # overflows here, not later in a message that renders it.
        return moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)
    except (ValueError, OverflowError):
        return None


def as_utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def humanize(delta: timedelta) -> str:
    """A duration in at most two units: 45s, 7m, 1h30m, 23h, 2d3h."""
    seconds = int(abs(delta).total_seconds())
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d{hours}h" if hours else f"{days}d"
    if hours:
        return f"{hours}h{minutes}m" if minutes else f"{hours}h"
    if minutes:
        return f"{minutes}m"
    return f"{secs}s"


def utc(moment: datetime) -> str:
    """An instant for people: to the minute (no seconds, no microseconds), UTC stated."""
    return as_utc(moment).strftime("%Y-%m-%d %H:%M UTC")


# An ISO 8601 instant inside free text: what records written before every reader's time was
# `utc` carry in their words ("kept until 2026-12-09T21:32:07.120031Z").
_ISO_IN_TEXT = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:\d\d)?")


def readable_times(text: str) -> str:
    """Free text for people with every ISO 8601 instant in it written as `utc` writes it."""

    def one(found: re.Match[str]) -> str:
        moment = parse_time(found.group(0))
        return found.group(0) if moment is None else utc(moment)

    return _ISO_IN_TEXT.sub(one, text)


def ago(moment: datetime, now: datetime) -> str:
    """How far an instant is from now, in `humanize`'s units: "20m ago", "in 3h", "now"."""
    delta = as_utc(moment) - as_utc(now)
    if abs(delta) < timedelta(minutes=1):
        return "now"
    return f"in {humanize(delta)}" if delta > timedelta(0) else f"{humanize(delta)} ago"


def when(moment: datetime | None, now: datetime, *, never: str = "never") -> str:
    """`utc` and `ago` together, for tables: "2026-11-28 17:00 UTC (20m ago)"."""
    if moment is None:
        return never
    return f"{utc(moment)} ({ago(moment, now)})"


def money(amount: float) -> str:
    """Dollars; cents are too coarse for storage, which bills fractions of a cent an hour."""
    if 0 < abs(amount) < 0.1:
        return f"${amount:.3f}"
    return f"${amount:,.2f}"
