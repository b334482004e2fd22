"""The license, one reason at a time (`reaper.core.license`): what makes a warning license a
termination, and each thing that voids it — pure, no store, no clock."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from reaper.core.license import License, Void, announced_deadline, license_for
from reaper.core.models import History, KeptInstance, WarningRecord
from reaper.settings.model import Settings

H = timedelta(hours=1)
STRETCH = datetime(2026, 6, 1, 0, 0, tzinfo=UTC)
KEY = "runpod:p"
SETTINGS = Settings(stopped_ttl=24 * H, warn_before=H, reap_every=H)
ISSUED = STRETCH + 23 * H


def warned(**changes: object) -> WarningRecord:
    """The warning a pass at STRETCH+23h sends and records, changed by `changes`."""
    fields: dict[str, object] = {
        "at": ISSUED + timedelta(seconds=5),
        "heard": True,
        "mode": "enforce",
        "stretch": STRETCH,
        "issued_at": ISSUED,
        "terminate_at": announced_deadline(STRETCH, ISSUED, SETTINGS),
        "ttl": SETTINGS.stopped_ttl,
        "warn_before": SETTINGS.warn_before,
    }
    return WarningRecord.model_validate(fields | changes)


def check(
    warning: WarningRecord | None,
    now: datetime,
    settings: Settings = SETTINGS,
    kept: KeptInstance | None = None,
) -> License | Void:
    history = History(
        first_seen_stopped={KEY: STRETCH},
        warnings={} if warning is None else {KEY: warning},
        kept={} if kept is None else {KEY: kept},
    )
    return license_for(KEY, STRETCH, history, now, settings)


def void_kind(found: License | Void) -> str:
    assert isinstance(found, Void), found
    return found.kind


def test_a_warning_for_this_stretch_licenses_from_the_full_notice_to_its_window_end() -> None:
    found = check(warned(), STRETCH + 24 * H)
    assert isinstance(found, License)
    # Announced for the deadline, and never sooner than the full notice from delivery.
    assert found.deadline == ISSUED + timedelta(seconds=5) + H
    assert not found.due(STRETCH + 24 * H)
    assert found.due(found.deadline)
    assert found.window_end == found.deadline + SETTINGS.warn_before + SETTINGS.reap_every
    assert found.due(found.window_end)


def test_no_warning_and_an_old_record_license_nothing() -> None:
    assert void_kind(check(None, STRETCH + 25 * H)) == "none"
    old = WarningRecord(at=ISSUED, heard=True, mode="enforce", terminate_at=STRETCH + 24 * H)
    assert void_kind(check(old, STRETCH + 25 * H)) == "legacy"


def test_a_warning_issued_for_another_stretch_licenses_nothing() -> None:
    """Even one delivered inside the current stretch: it names another."""
    other = warned(stretch=STRETCH - 50 * H)
    assert void_kind(check(other, STRETCH + 25 * H)) == "stretch"
    before = warned(at=STRETCH - H)
    assert void_kind(check(before, STRETCH + 25 * H)) == "stretch"


def test_another_mode_or_nobody_reached_licenses_nothing() -> None:
    assert void_kind(check(warned(mode="observe"), STRETCH + 25 * H)) == "mode"
    assert void_kind(check(warned(heard=False), STRETCH + 25 * H)) == "unheard"
    log_ok = replace(SETTINGS, require_channel=False)
    assert isinstance(check(warned(heard=False), STRETCH + 25 * H, log_ok), License)


def test_a_keep_recorded_after_the_warning_voids_it() -> None:
    ended = KeptInstance(key=KEY, since=ISSUED + H / 2, until=ISSUED + H / 2)
    assert void_kind(check(warned(), STRETCH + 25 * H, kept=ended)) == "kept"
    earlier = KeptInstance(key=KEY, since=ISSUED - 5 * H, until=ISSUED - 4 * H)
    assert isinstance(check(warned(), STRETCH + 25 * H, kept=earlier), License)


@pytest.mark.parametrize(
    ("ttl", "warn_before", "moved"),
    [
        (72 * H, H, True),  # raised: a later deadline
        (30 * H, H, True),
        (20 * H, H, False),  # lowered, but a warning an hour ahead announced the same time
        (24 * H, 3 * H, True),  # a longer notice would have announced a later time
        (24 * H, 30 * timedelta(minutes=1), False),  # a shorter one the same
    ],
)
def test_settings_that_move_the_announced_deadline_void_it(
    ttl: timedelta, warn_before: timedelta, moved: bool
) -> None:
    changed = replace(SETTINGS, stopped_ttl=ttl, warn_before=warn_before)
    found = check(warned(), STRETCH + 24 * H + timedelta(minutes=30), changed)
    assert (void_kind(found) == "moved") if moved else isinstance(found, License)


def test_a_late_warning_is_void_once_a_longer_notice_would_move_its_deadline() -> None:
    late_issue = STRETCH + 30 * H
    late = warned(
        at=late_issue,
        issued_at=late_issue,
        terminate_at=announced_deadline(STRETCH, late_issue, SETTINGS),
    )
    assert isinstance(check(late, STRETCH + 31 * H), License)
    longer = replace(SETTINGS, warn_before=2 * H)
    assert void_kind(check(late, STRETCH + 31 * H, longer)) == "moved"


def test_past_its_window_a_warning_is_stale_unless_the_cap_held_it() -> None:
    found = check(warned(), STRETCH + 24 * H)
    assert isinstance(found, License)
    after = found.window_end + timedelta(seconds=1)
    assert void_kind(check(warned(), after)) == "stale"
    held = warned(held_at=after - H)
    assert isinstance(check(held, after), License)
    assert void_kind(check(held, after + 2 * H + timedelta(seconds=1))) == "stale"


def test_an_announced_deadline_is_never_already_past() -> None:
    for issued in (STRETCH, STRETCH + 23 * H, STRETCH + 100 * H):
        assert announced_deadline(STRETCH, issued, SETTINGS) >= issued + SETTINGS.warn_before
