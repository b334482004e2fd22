"""Token buckets, in memory, on an injectable clock.

`reaper serve` answers strangers on the internet: the rate limits bound what a flood costs
(per client address) and what one leaked ping key can do to one monitor (per host). They live
in memory on purpose — a restart forgets them, which is harmless, and nothing touches the store
before a request is let through.
"""

from __future__ import annotations

import ipaddress
import math
from collections import OrderedDict
from dataclasses import dataclass

from reaper.clock import Clock


@dataclass(frozen=True)
class Rate:
    """`capacity` requests at once, refilled at `per_second`."""

    capacity: float
    per_second: float


class TokenBuckets:
    """One token bucket per key, at most `max_keys` of them (least recently used go first).

    Bounding the keys matters because the per-client buckets are keyed by whoever connects: a
    scan from many addresses must not grow memory without limit. A forgotten key starts again
    with a full bucket, which only errs on the side of answering.
    """

    def __init__(self, rate: Rate, clock: Clock, max_keys: int = 10_000) -> None:
        if rate.capacity < 1 or rate.per_second <= 0:
            raise ValueError("a rate needs capacity >= 1 and a refill above zero")
        self.rate = rate
        self._clock = clock
        self._max_keys = max_keys
        # key -> (tokens, updated at as a POSIX timestamp)
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def take(self, key: str) -> float:
        """Take one token. 0.0 when allowed, else the seconds until a token is back."""
        now = self._clock.now().timestamp()
        tokens, updated = self._buckets.pop(key, (self.rate.capacity, now))
        # max(): a wall clock stepped backwards must not drain the bucket.
        tokens = min(self.rate.capacity, tokens + max(0.0, now - updated) * self.rate.per_second)
        wait = 0.0
        if tokens >= 1:
            tokens -= 1
        else:
            wait = (1 - tokens) / self.rate.per_second
        self._buckets[key] = (tokens, now)
        while len(self._buckets) > self._max_keys:
            self._buckets.popitem(last=False)
        return wait

    def __len__(self) -> int:
        return len(self._buckets)


def retry_after(wait: float) -> str:
    """The `Retry-After` header value: whole seconds, at least one."""
    return str(max(1, math.ceil(wait)))


def client_network(address: str) -> str:
    """Whose bucket a client address fills: an IPv4 address its own, an IPv6 address its /64 —
    one subscriber's allocation, any of whose 2**64 addresses a host may take at will, so that
    a per-address limit would limit nothing. An address that is no IP ("unknown") is itself."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)
