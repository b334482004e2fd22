"""A provider's rate-limit headers pace the requests before a 429 comes: RunPod's `RateLimit`
(the structured per-window list of its spec, and the draft's older shapes) and DigitalOcean's
`ratelimit-remaining`/`-reset` (an epoch time). A spent window holds the account's next request
until it resets, capped like `Retry-After`; headers that cannot be read change nothing."""

from __future__ import annotations

import asyncio
from email.utils import formatdate

import httpx
import pytest

from emulators import RunPodEmulator
from reaper.providers.base import HttpOptions
from reaper.providers.pacing import pacing_wait
from reaper.providers.runpod.client import RunPodClient
from reaper.settings.parse import Account
from tests.hostile_support import HostileServer

KEY = "rp-pacing-key-0007"
NOW = 1_800_000_000.0


def wait(**headers: str) -> float | None:
    return pacing_wait(httpx.Headers({k.replace("_", "-"): v for k, v in headers.items()}), NOW)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        # RunPod's spec: one member per window; the spent one decides.
        ({"RateLimit": '"minute";r=0;t=12, "hour";r=2800;t=1812'}, 12.0),
        ({"RateLimit": '"minute";r=0;t=12, "hour";r=0;t=1812'}, 1812.0),
        ({"RateLimit": '"minute";r=5;t=12'}, None),
        # The draft's older shapes.
        ({"RateLimit": "limit=60, remaining=0, reset=30"}, 30.0),
        ({"RateLimit": "limit=60, remaining=3, reset=30"}, None),
        ({"RateLimit-Remaining": "0", "RateLimit-Reset": "7"}, 7.0),
        ({"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "9"}, 9.0),
        # DigitalOcean: the reset is a Unix time.
        (
            {
                "ratelimit-limit": "5000",
                "ratelimit-remaining": "0",
                "ratelimit-reset": "1800000045",
            },
            45.0,
        ),
        ({"ratelimit-remaining": "4816", "ratelimit-reset": "1800000045"}, None),
        # A reset already past: nothing to wait for.
        ({"ratelimit-remaining": "0", "ratelimit-reset": "1799999000"}, 0.0),
        # Unreadable: no wait.
        ({"RateLimit": "garbage;;=,"}, None),
        ({"RateLimit": '"minute";r=zero;t=12'}, None),
        ({"RateLimit": '"minute";r=0;t=soon'}, None),
        ({"RateLimit": '"minute";r=0;t=-4'}, None),
        ({"RateLimit": '"minute";r=0;t=nan'}, None),
        ({"RateLimit-Remaining": "0"}, None),
        ({}, None),
    ],
)
def test_the_headers_are_read(headers: dict[str, str], expected: float | None) -> None:
    assert pacing_wait(httpx.Headers(headers), NOW) == expected


def runpod(server_url: str, options: HttpOptions) -> RunPodClient:
    return RunPodClient(
        Account("runpod", "main", KEY), f"{server_url}/v2", f"{server_url}/gql", options
    )


def test_a_spent_window_holds_the_next_request_instead_of_meeting_a_429() -> None:
    """RunPod's emulator keeps a real quota and sends the spec's headers on every answer: two
    requests spend a window of 0.3 s, and the third waits for it instead of being refused."""
    options = HttpOptions(max_attempts=1, retry_after_cap=5)
    with RunPodEmulator({"main": KEY}) as server:
        server.set_quota(2, window_seconds=0.3)

        async def three() -> RunPodClient:
            client = RunPodClient(
                Account("runpod", "main", KEY), server.rest_url, server.graphql_url, options
            )
            try:
                for _ in range(3):
                    await client.list_instances()
            finally:
                await client.aclose()
            return client

        client = asyncio.run(three())
        statuses = [r.status for r in server.requests if r.kind == "list"]
    assert statuses == [200, 200, 200]
    # The header rounds the reset up to whole seconds: one pause of a second.
    assert client.http.stats.paced == [1.0]


def test_digitalocean_shaped_headers_pace_by_the_providers_clock() -> None:
    """The reset is an epoch time read against the answer's own `Date`, not this machine's
    clock; the wait is capped like `Retry-After`, and the next request goes out after it."""
    date = formatdate(NOW, usegmt=True)
    headers = {"Date": date, "ratelimit-remaining": "0", "ratelimit-reset": str(int(NOW) + 600)}
    options = HttpOptions(max_attempts=1, retry_after_cap=0.2)
    with HostileServer("answer", headers=headers, body=b'{"pods": []}') as server:
        client = runpod(server.url, options)

        async def twice() -> None:
            try:
                await client.list_instances()
                await client.list_instances()
            finally:
                await client.aclose()

        asyncio.run(twice())
        (first, _), (second, _) = server.requests
    # Each answer said the window is spent: each holds the request after it.
    assert client.http.stats.paced == [0.2, 0.2]
    assert second - first >= 0.2


def test_headers_with_quota_left_or_unreadable_never_slow_a_request() -> None:
    for headers in ({"RateLimit": '"minute";r=59;t=60'}, {"RateLimit": "\x01bogus"}):
        with HostileServer("answer", headers=headers, body=b'{"pods": []}') as server:
            client = runpod(server.url, HttpOptions(max_attempts=1))

            async def twice(client: RunPodClient = client) -> None:
                try:
                    await client.list_instances()
                    await client.list_instances()
                finally:
                    await client.aclose()

            asyncio.run(twice())
        assert client.http.stats.paced == []
