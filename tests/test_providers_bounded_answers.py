"""Whatever a provider's endpoint sends, one request ends within its total deadline and never
reads more than its size cap: a trickle of bytes, a 500 MB body, an endless stream or a body
without a length each become a one-line error for that account — never a hang, never memory
filled with an answer."""

from __future__ import annotations

import asyncio
import time

import pytest

from reaper.capped import byte_size
from reaper.providers.base import MAX_BODY, HttpOptions, ProviderError
from reaper.providers.runpod.client import RunPodClient
from reaper.settings.parse import Account
from tests.hostile_support import HUGE, HostileServer, Mode

KEY = "rp-hostile-key-0042"
# Deadline and cap made small, so nothing here waits the real ones out; one attempt, so the
# figures are one request's.
TIGHT = HttpOptions(timeout=5, deadline=0.5, max_body=64 * 1024, max_attempts=1)


def listing_error(server: HostileServer, options: HttpOptions = TIGHT) -> ProviderError:
    async def go() -> None:
        client = RunPodClient(
            Account("runpod", "main", KEY), f"{server.url}/v2", f"{server.url}/gql", options
        )
        try:
            await client.list_instances()
        finally:
            await client.aclose()

    with pytest.raises(ProviderError) as caught:
        asyncio.run(go())
    return caught.value


def test_a_trickle_is_cut_at_the_total_deadline_though_bytes_keep_coming() -> None:
    # A byte every 50 ms never lets the per-read timeout (5 s) fire: only the total deadline
    # can end this request.
    with HostileServer("trickle", interval=0.05) as server:
        started = time.monotonic()
        error = listing_error(server)
        took = time.monotonic() - started
    assert "GET /v2/pods" in error.message
    assert "did not finish in 0.5 s" in error.message
    assert took < 4


def test_the_deadline_is_retried_like_a_timeout_and_each_attempt_is_bounded() -> None:
    options = HttpOptions(
        timeout=5, deadline=0.3, max_attempts=2, backoff_base=0.001, backoff_cap=0.002
    )
    with HostileServer("trickle", interval=0.05) as server:
        error = listing_error(server, options)
        assert len(server.requests) == 2
    assert error.message.endswith("failed after 2 attempts: did not finish in 0.3 s")


@pytest.mark.parametrize("mode", ["huge", "endless", "undeclared"])
def test_an_answer_over_the_cap_is_an_error_and_is_not_read_on(mode: Mode) -> None:
    with HostileServer(mode) as server:
        started = time.monotonic()
        error = listing_error(server, HttpOptions(timeout=5, deadline=20, max_body=64 * 1024))
        took = time.monotonic() - started
        assert server.client_gone.wait(5)
        sent = server.bytes_sent
        # Not retried: a provider that sent too much will do it again.
        assert len(server.requests) == 1
    assert error.message == "GET /v2/pods answered more than 64 KB"
    assert error.status is None
    # The client hung up: what was sent is the cap plus what the sockets' buffers held, far
    # from the 500 MB (or the endless stream) on offer.
    assert sent < 32 * 1024 * 1024 < HUGE
    assert took < 10


def test_a_declared_length_over_the_cap_is_refused_before_reading() -> None:
    with HostileServer("answer", body=b"x" * 2000) as server:
        error = listing_error(server, HttpOptions(timeout=5, max_body=1000, max_attempts=1))
    assert error.message == "GET /v2/pods answered more than 1000 bytes"


def test_an_answer_up_to_the_cap_is_read_whole() -> None:
    body = b'{"pods": []}'

    async def go(server: HostileServer) -> int:
        client = RunPodClient(
            Account("runpod", "main", KEY),
            f"{server.url}/v2",
            f"{server.url}/gql",
            HttpOptions(max_body=len(body)),
        )
        try:
            return len(await client.list_instances())
        finally:
            await client.aclose()

    with HostileServer("answer", body=body) as server:
        assert asyncio.run(go(server)) == 0


def test_the_defaults_are_the_contract() -> None:
    assert HttpOptions().deadline == 30
    assert HttpOptions().max_body == MAX_BODY == 8 * 1024 * 1024
    assert byte_size(MAX_BODY) == "8 MB"
    assert byte_size(256 * 1024) == "256 KB"


@pytest.mark.parametrize("field", ["deadline", "max_body"])
def test_a_bound_of_zero_is_refused(field: str) -> None:
    with pytest.raises(ValueError):
        HttpOptions(**{field: 0})  # type: ignore[arg-type]
