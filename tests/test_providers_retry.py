"""The request layer rides out what providers throw at it — 5xx, 429 storms with and without
`Retry-After`, timeouts, dropped connections — and gives up with a ProviderError (never a hang,
never a partial answer) when they last; its concurrency drops on 429s and recovers."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from emulators import RunPodEmulator, VastEmulator
from reaper.core.models import Instance
from reaper.providers.base import HttpOptions, ProviderError
from reaper.providers.http import parse_retry_after
from reaper.providers.runpod.client import RunPodClient
from reaper.providers.vast.client import VastClient
from reaper.settings.parse import Account

FAST = HttpOptions(
    timeout=2, max_attempts=4, backoff_base=0.001, backoff_cap=0.004, retry_after_cap=0.03
)
RP_KEY = "rp-test-key-0003"
VAST_KEY = "vast-test-key-0003"


def runpod_client(server: RunPodEmulator, options: HttpOptions = FAST) -> RunPodClient:
    account = Account("runpod", "main", RP_KEY)
    return RunPodClient(account, server.rest_url, server.graphql_url, options)


def vast_client(server: VastEmulator, options: HttpOptions = FAST) -> VastClient:
    return VastClient(Account("vast", "main", VAST_KEY), server.url, options)


async def list_and_close(client: RunPodClient | VastClient) -> list[Instance]:
    try:
        return await client.list_instances()
    finally:
        await client.aclose()


def test_5xx_then_success_is_retried() -> None:
    with RunPodEmulator({"main": RP_KEY}) as server:
        server.add_pod()
        server.fail_next("list", 503, count=2)
        client = runpod_client(server)
        fleet = asyncio.run(list_and_close(client))
        assert len(fleet) == 1
        assert server.count("list") == 3
    assert client.http.stats.retries == 2


def test_5xx_that_lasts_is_a_provider_error_after_max_attempts() -> None:
    with RunPodEmulator({"main": RP_KEY}) as server:
        server.fail_next("list", 500, count=10)
        with pytest.raises(ProviderError, match=r"after 4 attempts: HTTP 500"):
            asyncio.run(list_and_close(runpod_client(server)))
        assert server.count("list") == FAST.max_attempts


def test_4xx_other_than_429_is_not_retried() -> None:
    with RunPodEmulator({"main": RP_KEY}) as server:
        server.fail_next("list", 403, count=1)
        with pytest.raises(ProviderError, match="HTTP 403"):
            asyncio.run(list_and_close(runpod_client(server)))
        assert server.count("list") == 1


def test_429_storm_with_retry_after_waits_as_told_and_succeeds() -> None:
    with RunPodEmulator({"main": RP_KEY}) as server:
        server.add_pod()
        server.rate_limit_next(3, kind="list", retry_after=5)
        client = runpod_client(server)
        assert len(asyncio.run(list_and_close(client))) == 1
        throttled = [r for r in server.requests if r.status == 429]
    stats = client.http.stats
    assert len(throttled) == 3
    assert stats.throttled == 3
    # Retry-After (5 s) is honoured up to the cap (0.03 s), above the tiny backoff.
    assert stats.delays == [pytest.approx(FAST.retry_after_cap)] * 3
    assert client.http.limit.lowest < FAST.max_concurrency


def test_429_storm_without_retry_after_backs_off_and_succeeds_on_vast() -> None:
    with VastEmulator({"main": VAST_KEY}) as server:
        server.add_instance()
        server.rate_limit_next(3, kind="list")
        client = vast_client(server)
        assert len(asyncio.run(list_and_close(client))) == 1
        assert [r.status for r in server.requests] == [429, 429, 429, 200]
    stats = client.http.stats
    assert stats.throttled == 3
    assert all(d <= FAST.backoff_cap for d in stats.delays)
    assert client.http.limit.lowest < FAST.max_concurrency


def test_vast_json_429_body_is_also_understood() -> None:
    with VastEmulator({"main": VAST_KEY}, rate_limit_body="json") as server:
        server.add_instance()
        server.rate_limit_next(2)
        client = vast_client(server)
        assert len(asyncio.run(list_and_close(client))) == 1
    assert client.http.stats.throttled == 2


def test_a_storm_longer_than_the_attempts_is_a_provider_error() -> None:
    with VastEmulator({"main": VAST_KEY}) as server:
        server.rate_limit_next(50)
        with pytest.raises(ProviderError, match="API requests too frequent"):
            asyncio.run(list_and_close(vast_client(server)))


def test_a_real_quota_answers_429_with_rate_limit_headers() -> None:
    import httpx

    with RunPodEmulator({"main": RP_KEY}) as server:
        server.set_quota(2, window_seconds=60)
        answers = [
            httpx.get(f"{server.rest_url}/pods", headers={"Authorization": f"Bearer {RP_KEY}"})
            for _ in range(3)
        ]
    assert [a.status_code for a in answers] == [200, 200, 429]
    assert answers[0].headers["RateLimit"].startswith('"minute";r=1;')
    assert answers[2].headers["RateLimit-Policy"] == '"minute";q=2;w=60'
    assert int(answers[2].headers["Retry-After"]) > 0
    assert answers[2].json()["status"] == 429


def test_concurrency_drops_on_429_and_recovers_on_successes() -> None:
    options = HttpOptions(
        timeout=2, max_attempts=6, backoff_base=0.001, backoff_cap=0.004, max_concurrency=8
    )

    async def burst(client: VastClient, n: int) -> None:
        await asyncio.gather(*(client.balance() for _ in range(n)))

    with VastEmulator({"main": VAST_KEY}) as server:
        server.set_latency(0.05)
        client = vast_client(server, options)

        async def scenario() -> tuple[int, float, int, float]:
            try:
                await burst(client, 8)
                fresh_peak = server.peak_in_flight
                server.rate_limit_next(4, kind="balance")
                await burst(client, 8)
                dropped_to = client.http.limit.lowest
                server.reset_log()
                await burst(client, 8)
                throttled_peak = server.peak_in_flight
                server.set_latency(0)
                for _ in range(40):
                    await client.balance()
                return fresh_peak, dropped_to, throttled_peak, client.http.limit.limit
            finally:
                await client.aclose()

        fresh_peak, dropped_to, throttled_peak, recovered = asyncio.run(scenario())
    assert fresh_peak == 8
    assert dropped_to <= 2
    assert throttled_peak < fresh_peak
    assert recovered == pytest.approx(8.0)


def test_a_timeout_is_retried_and_then_succeeds() -> None:
    options = HttpOptions(timeout=0.2, max_attempts=3, backoff_base=0.001, backoff_cap=0.004)
    with RunPodEmulator({"main": RP_KEY}) as server:
        server.add_pod()
        server.slow_next("list", seconds=0.6)
        client = runpod_client(server, options)
        assert len(asyncio.run(list_and_close(client))) == 1
    assert client.http.stats.retries == 1


def test_a_call_that_always_times_out_is_a_provider_error() -> None:
    options = HttpOptions(timeout=0.05, max_attempts=2, backoff_base=0.001, backoff_cap=0.004)
    with VastEmulator({"main": VAST_KEY}) as server:
        server.set_latency(0.3)
        with pytest.raises(ProviderError, match="timed out"):
            asyncio.run(list_and_close(vast_client(server, options)))


def test_a_dropped_connection_is_retried() -> None:
    with VastEmulator({"main": VAST_KEY}) as server:
        server.add_instance()
        server.drop_next("list", count=2)
        client = vast_client(server)
        assert len(asyncio.run(list_and_close(client))) == 1
    assert client.http.stats.retries == 2


def test_a_provider_that_is_down_is_a_provider_error_and_comes_back() -> None:
    with RunPodEmulator({"main": RP_KEY}) as server:
        server.add_pod()
        port = server.port
        server.set_down("refuse")
        with pytest.raises(ProviderError, match="connection failed"):
            asyncio.run(list_and_close(runpod_client(server)))
        server.set_down(None)
        assert server.port == port
        assert len(asyncio.run(list_and_close(runpod_client(server)))) == 1


def test_a_provider_answering_503_is_a_provider_error() -> None:
    with VastEmulator({"main": VAST_KEY}) as server:
        server.set_down("503")
        with pytest.raises(ProviderError, match="HTTP 503"):
            asyncio.run(list_and_close(vast_client(server)))
        assert server.count("list") == FAST.max_attempts


def test_retry_after_reads_seconds_and_http_dates() -> None:
    now = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    later = format_datetime(now + timedelta(seconds=90), usegmt=True)
    earlier = format_datetime(now - timedelta(seconds=90), usegmt=True)
    assert parse_retry_after("12") == 12.0
    assert parse_retry_after(later, now) == pytest.approx(90.0)
    assert parse_retry_after(earlier, now) == 0.0
    assert parse_retry_after("soon") is None
    assert parse_retry_after("") is None
    assert parse_retry_after(None) is None
    assert parse_retry_after("-5") == 0.0


@pytest.mark.parametrize(
    "kwargs",
    [
        {"timeout": 0},
        {"max_attempts": 0},
        {"backoff_base": -1},
        {"min_concurrency": 0},
        {"min_concurrency": 5, "max_concurrency": 4},
    ],
)
def test_nonsense_options_are_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="HttpOptions"):
        HttpOptions(**kwargs)  # type: ignore[arg-type]


def test_backoff_grows_and_is_capped() -> None:
    options = HttpOptions(backoff_base=1.0, backoff_cap=8.0)
    for retry, ceiling in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (9, 8.0)]:
        delay = options.backoff(retry)
        assert ceiling / 2 <= delay <= ceiling


def test_adaptive_limit_halves_to_its_floor_and_grows_back_additively() -> None:
    from reaper.providers.http import AdaptiveLimit

    limit = AdaptiveLimit(maximum=8, minimum=2)
    for expected in (4.0, 2.0, 2.0):
        limit.throttled()
        assert limit.limit == expected
    assert limit.lowest == 2.0
    successes = 0
    while limit.limit < 8.0:
        limit.succeeded()
        successes += 1
    # Additive: about one step per `limit` successes, so 2 -> 8 takes ~2+3+...+7 = 27.
    assert 20 <= successes <= 35
    limit.succeeded()
    assert limit.limit == 8.0


def test_adaptive_limit_works_across_event_loops() -> None:
    from reaper.providers.http import AdaptiveLimit

    limit = AdaptiveLimit(maximum=2, minimum=1)

    async def use() -> int:
        async with limit.slot():
            return limit.in_flight

    assert asyncio.run(use()) == 1
    assert asyncio.run(use()) == 1
    assert limit.in_flight == 0
