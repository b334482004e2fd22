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


# --- the runway alert (#19): beside BALANCE_MIN, a balance that lasts fewer than BALANCE_HOURS --
# $16.95 is well above a $5 BALANCE_MIN, and lasts fifteen minutes at $67.78/h.

# The guards' episode of a short runway, one per account (beside the low balance's).
RUNWAY_PREFIX = "runway:"


def runway_key(provider: str, account: str) -> str:
    return f"{RUNWAY_PREFIX}{provider}:{account}"


def runway_short(hours: float | None, threshold_hours: float) -> bool | None:
    """Whether a runway is shorter than `threshold_hours` (`BALANCE_HOURS`; 0 = never). None
    when the runway is unknown or endless (no decision either way)."""
    if hours is None or threshold_hours <= 0:
        return None
    return hours < threshold_hours
