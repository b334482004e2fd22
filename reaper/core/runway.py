"""Runway: how long an account's balance lasts at what it spends now.

A balance above `BALANCE_MIN` can still be minutes from zero: $16.95 at $67.78/h is fifteen
minutes. So the money guards also alert when the runway is shorter than `BALANCE_HOURS`, and
the digest and `reaper report` show it beside the balance.
"""

from __future__ import annotations

# The guards' episode of a short runway, one per account (beside the low balance's).
RUNWAY_PREFIX = "runway:"


def runway_key(provider: str, account: str) -> str:
    return f"{RUNWAY_PREFIX}{provider}:{account}"


def runway_hours(balance: float | None, spend_per_hour: float | None) -> float | None:
    """Hours until the balance reaches zero at `spend_per_hour` (what runs plus what is stored,
    per hour). None when either is unknown or nothing bills (no runway to speak of); a balance
    at or below zero has 0 hours left."""
    if balance is None or spend_per_hour is None or not spend_per_hour > 0:
        return None
    if spend_per_hour == float("inf"):
        return 0.0
    return max(balance, 0.0) / spend_per_hour


def runway_short(hours: float | None, threshold_hours: float) -> bool | None:
    """Whether a runway is shorter than `threshold_hours` (`BALANCE_HOURS`; 0 = never). None
    when the runway is unknown or endless (no decision either way)."""
    if hours is None or threshold_hours <= 0:
        return None
    return hours < threshold_hours
