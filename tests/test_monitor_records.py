"""`Monitor` and `PingEvent` are plain dataclasses (a cold ping imports no pydantic), and their
JSON is the JSON the pydantic models wrote: a state written before reads the same, and what
is written now reads back equal. A stored record that cannot be read is one ValueError naming
the field, never a half-read monitor."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reaper.core.records import Monitor, PingEvent, RecordError
from tests.store_contract.records import full_monitor

T0 = datetime(2026, 1, 1, tzinfo=UTC)

# Written by the pydantic models these records replaced (pydantic 2.14, exclude_defaults).
PYDANTIC_WROTE = (
    '{"host":"a","created_at":"2026-01-01T00:00:00Z","last_ping_at":'
    '"2026-01-01T01:02:03.000456Z","timeout":"PT2H","grace":"P1DT10M1.5S"}'
)


def test_what_pydantic_wrote_reads_the_same() -> None:
    monitor = Monitor.model_validate_json(PYDANTIC_WROTE)
    assert monitor == Monitor(
        host="a",
        created_at=T0,
        last_ping_at=datetime(2026, 1, 1, 1, 2, 3, 456, tzinfo=UTC),
        timeout=timedelta(hours=2),
        grace=timedelta(days=1, minutes=10, seconds=1.5),
    )
    # And it is written back in the same form, key for key.
    assert monitor.model_dump_json(exclude_defaults=True) == PYDANTIC_WROTE


@pytest.mark.parametrize(
    ("length", "text"),
    [
        (timedelta(0), "PT0S"),
        (timedelta(seconds=-5), "-PT5S"),
        (timedelta(days=400), "P1Y35D"),
        (timedelta(days=365), "P1Y"),
        (timedelta(microseconds=1), "PT0.000001S"),
        (timedelta(minutes=10), "PT10M"),
        (timedelta(days=2, hours=3), "P2DT3H"),
    ],
)
def test_durations_are_written_as_pydantic_wrote_them(length: timedelta, text: str) -> None:
    monitor = Monitor(host="h", created_at=T0, timeout=length)
    assert f'"timeout":"{text}"' in monitor.model_dump_json()
    assert Monitor.model_validate_json(monitor.model_dump_json()).timeout == length


@given(st.timedeltas(min_value=-timedelta(days=800), max_value=timedelta(days=800)))
def test_every_duration_round_trips(length: timedelta) -> None:
    monitor = Monitor(host="h", created_at=T0, grace=length)
    assert Monitor.model_validate_json(monitor.model_dump_json()).grace == length


def test_every_field_round_trips_and_defaults_are_left_out() -> None:
    monitor = full_monitor()
    assert Monitor.model_validate_json(monitor.model_dump_json()) == monitor
    assert Monitor.model_validate_json(monitor.model_dump_json(exclude_defaults=True)) == monitor
    fresh = Monitor(host="fresh", created_at=T0)
    assert fresh.model_dump_json(exclude_defaults=True) == (
        '{"host":"fresh","created_at":"2026-01-01T00:00:00Z"}'
    )


def test_times_keep_their_zone_and_a_naive_one_reads_as_utc() -> None:
    plus_two = timezone(timedelta(hours=2))
    event = PingEvent(seq=1, at=datetime(2026, 1, 1, 2, tzinfo=plus_two), kind="ping")
    back = PingEvent.model_validate_json(event.model_dump_json())
    assert back.at == T0 and back.at.utcoffset() == timedelta(hours=2)
    naive = PingEvent.model_validate_json('{"seq":1,"at":"2026-01-01T00:00:00","kind":"ping"}')
    assert naive.at == T0 and naive.at.tzinfo is not None


def test_a_field_a_later_version_adds_is_ignored() -> None:
    event = PingEvent.model_validate_json(
        '{"seq":3,"at":"2026-01-01T00:00:00Z","kind":"exit","exit_status":1,"future":true}'
    )
    assert event == PingEvent(seq=3, at=T0, kind="exit", exit_status=1)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ('{"host":"a","created_at":"yesterday"}', "created_at"),
        ('{"host":"a","created_at":"2026-01-01T00:00:00Z","status":"sleeping"}', "status"),
        ('{"host":"a","created_at":"2026-01-01T00:00:00Z","events":"7"}', "events"),
        ('{"host":"a","created_at":"2026-01-01T00:00:00Z","paused":"no"}', "paused"),
        ('{"host":"a","created_at":"2026-01-01T00:00:00Z","timeout":"2 hours"}', "timeout"),
        ('{"host":"a","created_at":"2026-01-01T00:00:00Z","grace":"PT"}', "grace"),
        ('{"host":"a","created_at":"2026-01-01T00:00:00Z","grace":"P99999999Y"}', "grace"),
        ('{"host":"a","created_at":"2026-01-01T00:00:00Z","grace":"PT\u0663S"}', "grace"),
        ('{"host":"a","created_at":null}', "created_at"),
        ('{"host":"a"}', "created_at"),
        ('{"host": 7, "created_at":"2026-01-01T00:00:00Z"}', "host"),
        ("[1, 2]", "not an object"),
        ("{not json", "not JSON"),
    ],
)
def test_an_unreadable_record_is_one_line_naming_the_field(text: str, named: str) -> None:
    with pytest.raises(RecordError) as raised:
        Monitor.model_validate_json(text)
    assert named in str(raised.value) and "\n" not in str(raised.value)
    assert isinstance(raised.value, ValueError)


def test_model_copy_changes_only_what_it_names() -> None:
    monitor = full_monitor()
    copied = monitor.model_copy(update={"events": 43})
    assert copied.events == 43 and copied.model_copy(update={"events": 42}) == monitor
    assert monitor.model_copy() is monitor
