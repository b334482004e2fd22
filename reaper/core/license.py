"""The license: whether the warning an instance got allows its termination, and when. Pure.

A license is the warning that reached a person for the instance's *current* stopped stretch,
with the deadline it announced. Every termination rests on one (a "terminate now" rests on a
request bound to the stretch instead: `policy.stretch_request`), and the one gate asks again
right before each DELETE (`passes.reap.gate`). A warning licenses nothing when:
- it was issued for another stretch (a restart the reaper saw, or an older record that does
  not say which stretch it was for);
- it was sent in the other mode: an observe warning, or one sent while a cap of 0 turned
  terminations off, said "would be terminated" and licenses nothing once terminations are on
  (`Settings.warning_mode`); an enforce warning licenses nothing in observe mode (a cap of 0
  only holds it back);
- it reached no person and REAPER_REQUIRE_CHANNEL is true;
- a keep or an unkeep was recorded after it (the store drops the warning then too; this is
  the second line: a keep record newer than the warning);
- the current settings would announce another deadline (a TTL raised or lowered, a
  REAPER_WARN_BEFORE that moves it): the person was told a time that no longer holds;
- its window is over: a termination goes no later than the announced deadline +
  REAPER_WARN_BEFORE + REAPER_REAP_EVERY (a reaper down for days warns again when it comes
  back), extended while the cap or observe mode holds the instance back (`held_at`).
Then the policy warns anew, with a deadline at least the full notice from the new warning's
delivery, so a re-warned instance is terminated on a later pass, never warned for ever.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from reaper.core.models import History, WarningRecord
from reaper.core.units import utc
from reaper.settings.model import Settings

VoidKind = Literal["none", "legacy", "stretch", "mode", "unheard", "kept", "moved", "stale"]


@dataclass(frozen=True)
class License:
    """A warning that licenses a termination: not before `deadline` (the announced time, and
    the full notice from its delivery), not after `window_end`."""

    warning: WarningRecord
    deadline: datetime
    window_end: datetime

    def due(self, now: datetime) -> bool:
        return self.deadline <= now <= self.window_end


@dataclass(frozen=True)
class Void:
    """No license, and why (`kind` for the policy, `why` for people)."""

    kind: VoidKind
    why: str


def announced_deadline(stretch: datetime, issued_at: datetime, settings: Settings) -> datetime:
    """The deadline a warning issued at `issued_at` announces under `settings`: the stretch's
    own deadline, or — warned late (the reaper was down, or just deployed) — the full notice
    from then. Never a deadline already past."""
    return max(stretch + settings.stopped_ttl, issued_at + settings.warn_before)


def license_deadline(announced: datetime, delivered: datetime, settings: Settings) -> datetime:
    """The earliest a licensed termination goes: the announced time, and never sooner than
    REAPER_WARN_BEFORE after the warning was delivered (a channel may be slow)."""
    return max(announced, delivered + settings.warn_before)


def license_for(
    key: str, stretch: datetime, history: History, now: datetime, settings: Settings
) -> License | Void:
    """The license of instance `key`, stopped since `stretch`, at `now` (module docstring)."""
    warning = history.warnings.get(key)
    if warning is None:
        return Void("none", "not warned")
    if warning.stretch is None or warning.issued_at is None or warning.terminate_at is None:
        return Void("legacy", "its warning was recorded by an older reaper")
    if warning.stretch != stretch or warning.at < stretch:
        return Void("stretch", "its warning belongs to an earlier stopped stretch")
    if warning.mode == "observe" and settings.warning_mode == "enforce":
        return Void("mode", "its warning promised no termination (observe mode or a cap of 0)")
    if warning.mode == "enforce" and settings.mode == "observe":
        return Void("mode", "its warning was sent in enforce mode")
    if settings.require_channel and not warning.heard:
        return Void("unheard", "its warning reached no person")
    kept = history.kept.get(key)
    if kept is not None and kept.since >= warning.issued_at:
        return Void("kept", "kept or unkept after its warning")
    if announced_deadline(stretch, warning.issued_at, settings) != warning.terminate_at:
        return Void("moved", "the settings no longer give the deadline its warning announced")
    deadline = license_deadline(warning.terminate_at, warning.at, settings)
    last = max(deadline, warning.held_at or deadline)
    window_end = last + settings.warn_before + settings.reap_every
    if now > window_end:
        return Void("stale", f"its warning's window ended {utc(window_end)}")
    return License(warning=warning, deadline=deadline, window_end=window_end)


__all__ = ["License", "Void", "announced_deadline", "license_deadline", "license_for"]
