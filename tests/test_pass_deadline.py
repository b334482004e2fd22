"""A reap pass's time: REAPER_PASS_DEADLINE (10m), on Lambda no later than the invocation's
remaining time less a margin; the listing's cutoff at half of it; "is there time for this step?"
asked of what is left. Monotonic time: a wall clock that jumps changes nothing."""

from __future__ import annotations

from datetime import timedelta

import pytest

from reaper.app.settings import load_settings
from reaper.passes.deadline import LAMBDA_MARGIN, PassDeadline, pass_seconds
from reaper.settings.model import Settings
from reaper.settings.parse import ConfigError


class Ticks:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_setting_defaults_to_ten_minutes_and_reads_a_duration() -> None:
    assert Settings().pass_deadline == timedelta(minutes=10)
    env = {"REAPER_PASS_DEADLINE": "90s"}
    assert load_settings(env, dotenv=None).pass_deadline == timedelta(seconds=90)


@pytest.mark.parametrize("value", ["0s", "10", "-5m", "soon"])
def test_a_bad_value_names_the_variable(value: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load_settings({"REAPER_PASS_DEADLINE": value}, dotenv=None)
    assert raised.value.variable == "REAPER_PASS_DEADLINE"


def test_on_lambda_the_invocations_remaining_time_less_a_margin_bounds_it() -> None:
    ten_minutes = timedelta(minutes=10)
    assert pass_seconds(ten_minutes) == 600
    # A 300 s function with 299 s left: its own time decides.
    assert pass_seconds(ten_minutes, remaining=299) == 299 - LAMBDA_MARGIN
    # A short setting decides when it is the smaller.
    assert pass_seconds(timedelta(minutes=2), remaining=299) == 120
    # Started with almost nothing left: a second, never an unbounded or negative pass.
    assert pass_seconds(ten_minutes, remaining=5) == 1.0


def test_the_listing_ends_at_half_and_the_pass_at_its_end() -> None:
    clock = Ticks()
    deadline = PassDeadline.start(600, now=clock)
    assert deadline.listing_left() == 300
    assert deadline.left() == 600
    clock.now += 299
    assert deadline.listing_left() == 1
    clock.now += 2
    assert deadline.listing_left() == 0
    assert deadline.left() == 299


def test_time_for_a_step_is_what_is_left() -> None:
    clock = Ticks()
    deadline = PassDeadline.start(60, now=clock)
    assert deadline.time_for(45)
    clock.now += 20
    assert not deadline.time_for(45)
    assert deadline.time_for(40)
    clock.now += 100
    assert deadline.left() == 0
    assert not deadline.time_for(0.001)


def test_the_cutoffs_reason_names_its_length_and_the_setting() -> None:
    assert PassDeadline.start(600).listing_late() == (
        "the listing did not finish in 5m (half of the pass's REAPER_PASS_DEADLINE): "
        "nothing on this account is decided this pass"
    )
    assert "in 0.25 s (half" in PassDeadline.start(0.5).listing_late()


def test_work_that_can_be_cut_leaves_the_wrap_up_its_time() -> None:
    clock = Ticks()
    long = PassDeadline.start(600, now=clock)
    assert long.wrap_up == 5
    assert long.working_left() == 595
    short = PassDeadline.start(20, now=clock)
    assert short.wrap_up == 2
    clock.now += 19
    assert short.working_left() == 0
