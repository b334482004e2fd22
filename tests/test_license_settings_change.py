"""Issue 24.3: a warning licenses a termination only near the deadline it announced, and only
while the settings still give that deadline. A TTL raised or lowered, or a REAPER_WARN_BEFORE
that moves the deadline, voids it; so does a reaper that comes back days after the deadline.
The pass then warns anew — with a deadline at least the full notice away — and terminates on a
later pass, at the new deadline."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from pathlib import Path

from tests.reap_support import START, action_of, events, world


def _warned_titles(w) -> list[str]:  # type: ignore[no-untyped-def]
    return [a.title for a in w.notifier.alerts if a.event == "termination_warning"]


def test_a_raised_ttl_warns_anew_at_the_new_deadline(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED")
        w.run()
        w.advance(23)
        assert action_of(w.run(), pod) == "warn"  # for START + 24h
        longer = replace(w.settings, stopped_ttl=timedelta(hours=72))
        w.clock.set(START + timedelta(hours=72))
        report = w.run(settings=longer)
        assert action_of(report, pod) == "warn", "49 hours after its only warning: warn anew"
        assert w.runpod.mutations == []
        assert "will be terminated in 1h" in _warned_titles(w)[-1]
        w.advance(0.5)
        assert action_of(w.run(settings=longer), pod) is None
        w.advance(0.5)
        assert action_of(w.run(settings=longer), pod) == "terminate"


def test_a_raised_ttl_before_the_deadline_waits_and_warns_in_time(tmp_path: Path) -> None:
    """Raised at START+23h30: nothing happens at the old deadline; the new deadline gets its
    own warning an hour or two ahead, and the termination lands on it."""
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED")
        w.run()
        w.advance(23)
        w.run()
        longer = replace(w.settings, stopped_ttl=timedelta(hours=30))
        w.advance(1)
        assert action_of(w.run(settings=longer), pod) is None
        w.clock.set(START + timedelta(hours=28))
        assert action_of(w.run(settings=longer), pod) == "warn"
        assert "(2026-03-03 15:00 UTC)" in _warned_titles(w)[-1]
        w.clock.set(START + timedelta(hours=30))
        assert action_of(w.run(settings=longer), pod) == "terminate"


def test_a_lowered_ttl_warns_anew_rather_than_terminating_early(tmp_path: Path) -> None:
    """Warned "at START+30h", then the TTL and notice were lowered: the next pass does not
    terminate on the old warning, and never before a new warning's full notice."""
    with world(tmp_path, stopped_ttl=timedelta(hours=30), warn_before=timedelta(hours=7)) as w:
        pod = w.runpod.add_pod(status="EXITED")
        w.run()
        w.advance(22)
        assert action_of(w.run(), pod) == "warn"  # announced for START + 30h
        shorter = replace(
            w.settings, stopped_ttl=timedelta(hours=24), warn_before=timedelta(hours=1)
        )
        w.advance(3)
        assert action_of(w.run(settings=shorter), pod) == "warn"
        assert w.runpod.mutations == []
        w.advance(0.5)
        assert action_of(w.run(settings=shorter), pod) is None
        w.advance(0.5)
        assert action_of(w.run(settings=shorter), pod) == "terminate"


def test_a_longer_warn_before_that_moves_the_deadline_warns_anew(tmp_path: Path) -> None:
    """Warned late (the reaper was just deployed): the deadline was "the full notice from
    now". A longer REAPER_WARN_BEFORE would have given a later one: that warning is void."""
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED")
        w.run()
        w.advance(30)
        assert action_of(w.run(), pod) == "warn"  # late: for START + 31h
        longer_notice = replace(w.settings, warn_before=timedelta(hours=3))
        w.advance(1)
        assert action_of(w.run(settings=longer_notice), pod) == "warn"
        assert w.runpod.mutations == []
        w.advance(3)
        assert action_of(w.run(settings=longer_notice), pod) == "terminate"


def test_a_warning_past_its_window_is_not_a_license(tmp_path: Path) -> None:
    """Warned, then the reaper was down for three days: it warns first when it comes back."""
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED")
        w.run()
        w.advance(23)
        assert action_of(w.run(), pod) == "warn"
        w.advance(1 + 72)
        report = w.run()
        assert action_of(report, pod) == "warn"
        assert w.runpod.mutations == []
        assert events(w.notifier).count("termination_warning") == 2
        w.advance(1)
        assert action_of(w.run(), pod) == "terminate"


def test_the_last_pass_inside_the_window_still_terminates(tmp_path: Path) -> None:
    """The window is the announced deadline + REAPER_WARN_BEFORE + REAPER_REAP_EVERY: a pass
    that comes late, but inside it (one missed pass), terminates."""
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED")
        w.run()
        w.advance(23)
        w.run()
        w.advance(1 + 2)  # the deadline + 1h notice + 1h period: the window's last instant
        assert action_of(w.run(), pod) == "terminate"
