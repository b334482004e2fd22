"""RunPod's own billing history (`GET /v2/billing?bucketSize=day&lastN=30`), for the status
page: one total per UTC day, a day of the answer's window without a record billed nothing, an
unreadable record leaves its day unknown (never zero), an answer without `records` is an
error; Vast offers none (None)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from emulators import RunPodEmulator, VastEmulator
from emulators.server import EmulatorServer, Request, Response
from reaper.providers.base import ProviderError
from reaper.providers.runpod.client import RunPodClient
from reaper.settings.parse import Account
from tests.provider_support import FAST, on_runpod, on_vast

RP_KEY = "rp-test-key-0011"
NOW = datetime(2026, 11, 30, 15, 30, tzinfo=UTC)
TODAY = NOW.replace(hour=0, minute=30)


def test_the_last_days_one_total_each_and_silent_days_billed_nothing() -> None:
    with RunPodEmulator({"main": RP_KEY}, now=lambda: NOW) as server:
        server.set_billing({TODAY: 3.5, TODAY - timedelta(days=2): 12.25})
        server.set_billing({TODAY: 1.0}, account="other")
        billed = on_runpod(server, RP_KEY, lambda c: c.billing(7))
        [request] = server.requests
    assert (request.method, request.path) == ("GET", "/v2/billing")
    assert "bucketSize=day" in request.query and "lastN=7" in request.query
    midnight = NOW.replace(hour=0, minute=0)
    assert [(b.day, b.amount) for b in billed] == [
        (midnight - timedelta(days=n), amount)
        for n, amount in ((6, 0.0), (5, 0.0), (4, 0.0), (3, 0.0), (2, 12.25), (1, 0.0), (0, 3.5))
    ]
    assert all(b.day.tzinfo is not None for b in billed)


def _answering(body: object, status: int = 200) -> type[EmulatorServer]:
    class Fixed(EmulatorServer):
        def dispatch(self, request: Request) -> Response:
            return Response.json(status, body)

    return Fixed


def _billing(server: EmulatorServer) -> object:
    async def go() -> object:
        client = RunPodClient(
            Account("runpod", "main", RP_KEY), server.url + "/v2", server.url + "/graphql", FAST
        )
        try:
            return await client.billing(30)
        finally:
            await client.aclose()

    return asyncio.run(go())


def test_unreadable_records_leave_their_day_unknown() -> None:
    body = {
        "records": [
            {"startTime": "2026-11-29T00:00:00Z", "totalAmount": 4.0},
            {"startTime": "2026-11-28T00:00:00Z", "totalAmount": "4.0"},
            {"startTime": "yesterday", "totalAmount": 2.0},
            {"startTime": "2026-11-27T00:00:00Z", "totalAmount": float("inf")},
            {"startTime": "2026-11-26T00:00:00Z", "totalAmount": -3},
            "not a record",
        ],
        "metadata": {"recordCount": 6},  # no window: no day is known to be zero
    }
    with _answering(body)({"main": RP_KEY}) as server:
        billed = _billing(server)
    assert isinstance(billed, list)
    assert [(b.day.day, b.amount) for b in billed] == [(29, 4.0)]


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        ({"metadata": {}}, 200, "no `records` list"),
        ({"records": "none"}, 200, "no `records` list"),
        ({"error": "forbidden"}, 403, "HTTP 403"),
    ],
)
def test_an_answer_without_records_is_a_provider_error(
    body: object, status: int, words: str
) -> None:
    with (
        _answering(body, status)({"main": RP_KEY}) as server,
        pytest.raises(ProviderError, match="billing") as caught,
    ):
        _billing(server)
    assert words in caught.value.message


def test_each_pods_billing_summed_over_the_window_and_only_its_own() -> None:
    with RunPodEmulator({"main": RP_KEY, "other": "rp-other-0011"}, now=lambda: NOW) as server:
        mine = server.add_pod("mine-a1", cost=0.5)
        theirs = server.add_pod("theirs-b2", account="other")
        server.set_pod_billing(mine, {TODAY: 1.25, TODAY - timedelta(days=3): 2.0})
        server.set_pod_billing(mine, {TODAY - timedelta(days=40): 99.0})  # outside the window
        server.set_pod_billing(theirs, {TODAY: 7.0})
        totals = on_runpod(server, RP_KEY, lambda c: c.instance_billing(30))
        [request] = server.requests
    assert (request.path, "lastN=30" in request.query) == ("/v2/billing/pods", True)
    assert totals == {mine: 3.25}


def test_unreadable_pod_records_are_left_out() -> None:
    body = {
        "records": [
            {"podId": "good-1", "totalAmount": 1.5},
            {"podId": "good-1", "totalAmount": 0.5},
            {"podId": "../etc", "totalAmount": 3.0},
            {"podId": 7, "totalAmount": 3.0},
            {"podId": "neg-1", "totalAmount": -1.0},
            {"podId": "nan-1", "totalAmount": float("nan")},
        ],
        "metadata": {},
    }

    async def go(server: EmulatorServer) -> object:
        client = RunPodClient(
            Account("runpod", "main", RP_KEY), server.url + "/v2", server.url + "/graphql", FAST
        )
        try:
            return await client.instance_billing(30)
        finally:
            await client.aclose()

    with _answering(body)({"main": RP_KEY}) as server:
        assert asyncio.run(go(server)) == {"good-1": 2.0}


def test_vast_offers_no_billing_history() -> None:
    with VastEmulator({"main": "vast-key-0011"}) as server:
        assert on_vast(server, "vast-key-0011", lambda c: c.billing(30)) is None
        assert on_vast(server, "vast-key-0011", lambda c: c.instance_billing(30)) is None
        assert server.requests == []
