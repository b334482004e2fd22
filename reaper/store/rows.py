"""How both backends write what they store: times as fixed-width text (so that text order is
time order), every record in UTC, a ping log's ring of slots, and which retired monitors a
prune deletes. The interfaces themselves are `reaper.store.ports`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TypeVar

from reaper.core.monitors import PING_LOG_KEPT
from reaper.core.records import Monitor, PingEvent, Record
from reaper.core.units import as_utc

# Snapshots are kept at least this long (SQLite prunes older ones when it records one; DynamoDB
# lets its TTL collect them); the status page reads 30 days.
SNAPSHOT_RETENTION = timedelta(days=90)


_Record = TypeVar("_Record", bound=Record)


def time_text(moment: datetime) -> str:
    """How both backends store a time: fixed width, so text order is time order."""
    return as_utc(moment).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def text_time(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def utc_record(record: _Record) -> _Record:
    """The record with every time field in UTC (naive ones taken as UTC), before a backend
    stores it, so that what comes back out is always timezone-aware UTC."""
    update = {
        name: as_utc(value)
        for name, value in record.__dict__.items()
        # Any zone but UTC's own, even one at offset 0 today (Europe/London in winter): the
        # SQLite store hands back the record it wrote, which must be the one it would read.
        if isinstance(value, datetime) and value.tzinfo is not UTC
    }
    return record.model_copy(update=update) if update else record


def last_heard(monitor: Monitor) -> datetime:
    """When a monitor was last heard from: its last ping (a bye is one), else its creation."""
    return monitor.last_ping_at or monitor.created_at


def retired_to_delete(heard: dict[str, datetime], before: datetime, keep: int) -> list[str]:
    """Of retired monitors (host -> last heard), the hosts `delete_retired` deletes: those
    heard from before `before`, and all but the `keep` most recently heard. One rule for every
    backend."""
    newest_first = sorted(heard, key=lambda host: (heard[host], host), reverse=True)
    return [
        host
        for rank, host in enumerate(newest_first)
        if rank >= max(0, keep) or heard[host] < before
    ]


def log_slot(event: PingEvent) -> int:
    """Where an event lives in its monitor's ring of PING_LOG_KEPT slots."""
    return event.seq % PING_LOG_KEPT
