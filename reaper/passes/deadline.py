"""A reap pass's time: the whole of it, and the listing's half.

A pass that waits for every account's listing lets one slow or hostile endpoint hold every
other account's decisions, and a pass without an end holds the lease, the next pass and, on
Lambda, the invocation until the platform kills it mid-step. So a pass has a deadline
(`REAPER_PASS_DEADLINE`, 10 minutes; on Lambda no later than the invocation's remaining time
less a margin), and its listing a cutoff at half of it: an account not listed by then is an
error for this pass (its requests cancelled) and the accounts that were listed are decided and
acted on in the half that is left. Acting asks `time_for` before each step that must not be
cut short (a fresh read and its deletes, a confirmation wait).

Times are `time.monotonic()` instants: a wall clock that jumps must not stretch or cut a pass.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta

from reaper.core.units import humanize

# What a Lambda invocation keeps back from its remaining time: enough to record the pass, close
# the clients and answer, before the platform kills it.
LAMBDA_MARGIN = 20.0
# A pass still running this long after its deadline is cancelled (`reaper serve`, the Lambda
# handler): a backstop for a step that never ends, inside the Lambda margin.
BACKSTOP_GRACE = 10.0


def pass_seconds(setting: timedelta, remaining: float | None = None) -> float:
    """The pass's length: the setting, or on Lambda (`remaining`: seconds the invocation has
    left) the smaller of it and that less LAMBDA_MARGIN — never below a second, so that a pass
    started too late lists nothing and says so rather than running unbounded."""
    seconds = setting.total_seconds()
    if remaining is not None:
        seconds = min(seconds, remaining - LAMBDA_MARGIN)
    return max(1.0, seconds)


@dataclass(frozen=True)
class PassDeadline:
    """When a pass must be done (`ends`), and when its listing must be (`listing_ends`)."""

    started: float
    seconds: float
    now: Callable[[], float] = field(default=time.monotonic, repr=False, compare=False)

    @classmethod
    def start(cls, seconds: float, *, now: Callable[[], float] = time.monotonic) -> PassDeadline:
        return cls(started=now(), seconds=seconds, now=now)

    @property
    def ends(self) -> float:
        return self.started + self.seconds

    @property
    def listing_seconds(self) -> float:
        return self.seconds / 2

    @property
    def listing_ends(self) -> float:
        return self.started + self.listing_seconds

    @property
    def wrap_up(self) -> float:
        """What the end of a pass keeps for itself (its snapshot, its record, closing the
        clients): a tenth of it, at most 5 s."""
        return min(5.0, self.seconds / 10)

    def left(self) -> float:
        """Seconds until the pass's end (0 once past it)."""
        return max(0.0, self.ends - self.now())

    def working_left(self) -> float:
        """Seconds left for work that can be cut short (the guards' reads): `left` less the
        wrap-up, so that the pass still ends in time."""
        return max(0.0, self.left() - self.wrap_up)

    def listing_left(self) -> float:
        """Seconds until the listing cutoff (0 once past it)."""
        return max(0.0, self.listing_ends - self.now())

    def time_for(self, seconds: float) -> bool:
        """Whether a step that takes up to `seconds` still ends within the pass: a step that
        would not is left for the next pass instead of being cut short."""
        return self.left() >= seconds

    def listing_late(self) -> str:
        """The error of an account whose listing the cutoff ended, one line."""
        seconds = self.listing_seconds
        cutoff = f"{seconds:.3g} s" if seconds < 60 else humanize(timedelta(seconds=seconds))
        return (
            f"the listing did not finish in {cutoff} (half of the pass's "
            "REAPER_PASS_DEADLINE): nothing on this account is decided this pass"
        )
