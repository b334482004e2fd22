"""How long a provider's rate-limit headers say to wait before the next request.

Waiting for a 429 costs a round trip and, for some, a halved concurrency; a provider that says
ahead of time that its quota is spent can be obeyed instead. The shapes seen:

- structured (a provider's REST spec): `RateLimit: "minute";r=0;t=12, "hour";r=2800;t=1812`,
  one member per window, `r` the requests left and `t` the seconds until that window resets
  (IETF draft-ietf-httpapi-ratelimit-headers, structured fields), on every answer, not only on
  a 429;
- the draft's older shapes: `RateLimit: limit=60, remaining=0, reset=30` in one header, or
  `RateLimit-Remaining: 0` with `RateLimit-Reset: 30` (and their `X-` forms);
- `ratelimit-remaining` and `ratelimit-reset` with the reset a Unix time (epoch seconds), as
  some providers answer them.

A reset is seconds from now, or an epoch time when it is that large (no window lasts 30
years). Only a spent window (nothing remaining) asks for a wait; anything unreadable asks for
none: a header we cannot read never slows a pass down.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

# A reset this large is a Unix time (2001-09-09), not a number of seconds.
EPOCH_RESET = 1_000_000_000


def _number(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        value = float(text.strip().strip('"'))
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _reset_seconds(text: str | None, now: float) -> float | None:
    """A reset as seconds from `now` (Unix time): delta-seconds or an epoch time."""
    value = _number(text)
    if value is None or value < 0:
        return None
    return max(0.0, value - now) if value >= EPOCH_RESET else value


def _parameters(member: str) -> dict[str, str]:
    """`"minute";r=0;t=12` -> {"r": "0", "t": "12"}; `remaining=0` -> {"remaining": "0"}."""
    found: dict[str, str] = {}
    for part in member.split(";"):
        name, equals, value = part.partition("=")
        if equals:
            found[name.strip().lower()] = value.strip()
    return found


def _windows(value: str, now: float) -> list[tuple[float, float | None]]:
    """(remaining, seconds to reset) of each window a `RateLimit` header names."""
    windows: list[tuple[float, float | None]] = []
    flat: dict[str, str] = {}
    for member in value.split(","):
        params = _parameters(member)
        remaining = _number(params.get("r"))
        if remaining is not None:
            windows.append((remaining, _reset_seconds(params.get("t"), now)))
        else:
            flat.update(params)
    remaining = _number(flat.get("remaining"))
    if remaining is not None:
        windows.append((remaining, _reset_seconds(flat.get("reset"), now)))
    return windows


def pacing_wait(headers: Mapping[str, str], now: float) -> float | None:
    """Seconds until a spent window resets (the longest, when several are spent), or None when
    the headers show quota left, say nothing, or cannot be read. `headers` are looked up
    case-insensitively (httpx.Headers); `now` is Unix time, the provider's own when known."""
    windows: list[tuple[float, float | None]] = []
    combined = headers.get("ratelimit")
    if combined:
        windows += _windows(combined, now)
    for prefix in ("ratelimit-", "x-ratelimit-"):
        remaining = _number(headers.get(prefix + "remaining"))
        if remaining is not None:
            windows.append((remaining, _reset_seconds(headers.get(prefix + "reset"), now)))
    waits = [reset for remaining, reset in windows if remaining <= 0 and reset is not None]
    return max(waits) if waits else None
