"""Under a pass deadline the listing has a cutoff (half of the pass): an account whose endpoint
has not answered by then is an error for this pass with a one-line reason, its request is
cancelled (the connection closed), and every account that did answer is listed as usual — one
hanging endpoint never holds the others past the cutoff."""

from __future__ import annotations

import asyncio
import time

from emulators import RunPodEmulator
from reaper.passes.deadline import PassDeadline
from reaper.passes.observe import Observation, observe
from reaper.providers.base import HttpOptions
from reaper.providers.runpod.client import RunPodClient
from reaper.settings.parse import Account
from tests.hostile_support import HostileServer

KEY = "rp-cutoff-key-0001"
SLOW_KEY = "rp-cutoff-key-0002"
# The request's own bounds far beyond the cutoff: only the cutoff can end the hanging listing.
PATIENT = HttpOptions(timeout=30, deadline=60, max_attempts=1)


def observed(
    healthy: RunPodEmulator, hanging: HostileServer, deadline: PassDeadline | None
) -> Observation:
    async def go() -> Observation:
        clients = [
            RunPodClient(
                Account("runpod", "main", KEY), healthy.rest_url, healthy.graphql_url, PATIENT
            ),
            RunPodClient(
                Account("runpod", "slow", SLOW_KEY),
                f"{hanging.url}/v2",
                f"{hanging.url}/gql",
                PATIENT,
            ),
        ]
        try:
            return await observe(clients, deadline=deadline)
        finally:
            await asyncio.gather(*(c.aclose() for c in clients))

    return asyncio.run(go())


def test_an_account_not_listed_by_the_cutoff_is_an_error_and_the_others_are_listed() -> None:
    with RunPodEmulator({"main": KEY}) as healthy, HostileServer("hang") as hanging:
        healthy.add_pod("pod-a", status="EXITED")
        started = time.monotonic()
        seen = observed(healthy, hanging, PassDeadline.start(0.8))
        took = time.monotonic() - started
        assert hanging.requested.is_set()
        # The cancelled request's connection is closed, not left hanging.
        assert hanging.client_gone.wait(5)
    assert [i.id for i in seen.instances] == ["pod-a"]
    assert seen.complete == {("runpod", "main")}
    assert [(e.account, e.message) for e in seen.errors] == [
        (
            "slow",
            "the listing did not finish in 0.4 s (half of the pass's REAPER_PASS_DEADLINE): "
            "nothing on this account is decided this pass",
        )
    ]
    assert seen.complete_providers == set()
    assert 0.4 <= took < 3


def test_without_a_deadline_every_listing_is_waited_for() -> None:
    with RunPodEmulator({"main": KEY}) as healthy, HostileServer("trickle") as trickling:
        healthy.add_pod("pod-a")
        options = HttpOptions(timeout=30, deadline=0.3, max_attempts=1)

        async def go() -> Observation:
            clients = [
                RunPodClient(
                    Account("runpod", "main", KEY), healthy.rest_url, healthy.graphql_url, options
                ),
                RunPodClient(
                    Account("runpod", "slow", SLOW_KEY),
                    f"{trickling.url}/v2",
                    f"{trickling.url}/gql",
                    options,
                ),
            ]
            try:
                return await observe(clients)
            finally:
                await asyncio.gather(*(c.aclose() for c in clients))

        seen = asyncio.run(go())
    # The trickling account ran to its own request deadline: its error says so.
    assert [e.message for e in seen.errors] == [
        "GET /v2/pods failed after 1 attempts: did not finish in 0.3 s"
    ]
    assert [i.id for i in seen.instances] == ["pod-a"]


def test_a_cutoff_already_past_lists_nothing_and_says_so_for_every_account() -> None:
    with RunPodEmulator({"main": KEY}) as healthy, HostileServer("hang") as hanging:
        ticks = iter([0.0, 100.0])
        seen = observed(healthy, hanging, PassDeadline.start(10, now=lambda: next(ticks)))
    assert seen.instances == []
    assert sorted(e.account for e in seen.errors) == ["main", "slow"]
