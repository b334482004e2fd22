"""Runway: how long a balance lasts at the current spend. One rule for the status page, the
`/status` JSON and the balance alerts."""

from __future__ import annotations

import math


def runway_hours(balance: float | None, spend_per_hour: float | None) -> float | None:
    """Hours the balance lasts at `spend_per_hour`; None when either is unknown, the spend is
    zero or less (nothing runs out), or a value is not a finite number. A balance at or below
    zero has no hours left."""
    if balance is None or spend_per_hour is None:
        return None
    if not (math.isfinite(balance) and math.isfinite(spend_per_hour)) or spend_per_hour <= 0:
        return None
    return max(0.0, balance) / spend_per_hour
