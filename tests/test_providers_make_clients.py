"""`make_clients` gives one client per configured account of each provider, pointed at the
configured URLs, and those clients work end to end against the emulators."""

from __future__ import annotations

import asyncio

from emulators import RunPodEmulator, VastEmulator
from reaper.app.settings import load_settings
from reaper.app.wiring import make_clients
from reaper.providers.base import HttpOptions
from reaper.providers.runpod.client import RunPodClient
from reaper.providers.vast.client import VastClient

FAST = HttpOptions(timeout=2, max_attempts=2, backoff_base=0.001, backoff_cap=0.004)


def test_one_client_per_account_of_each_provider() -> None:
    rp_keys = {"team": "rp-team-key-0009", "2": "rp-solo-key-0009"}
    vast_keys = {"1": "vast-only-key-0009"}
    with RunPodEmulator(rp_keys) as runpod, VastEmulator(vast_keys) as vast:
        runpod.add_pod(account="team", status="EXITED")
        runpod.add_pod(account="2")
        runpod.add_pod(account="2")
        vast.add_instance(actual_status="stopped")
        settings = load_settings(
            {
                "RUNPOD_API_KEY": "team=rp-team-key-0009,rp-solo-key-0009",
                "VAST_API_KEY": "vast-only-key-0009",
                "RUNPOD_API_URL": runpod.rest_url,
                "RUNPOD_GRAPHQL_URL": runpod.graphql_url,
                "VAST_API_URL": vast.url,
            },
            dotenv=None,
        )
        clients = make_clients(settings, FAST)

        async def list_all() -> list[tuple[str, str, int]]:
            try:
                fleets = await asyncio.gather(*(c.list_instances() for c in clients))
                return [
                    (c.provider, c.account, len(f)) for c, f in zip(clients, fleets, strict=True)
                ]
            finally:
                await asyncio.gather(*(c.aclose() for c in clients))

        summary = asyncio.run(list_all())
    assert [type(c) for c in clients] == [RunPodClient, RunPodClient, VastClient]
    assert summary == [("runpod", "team", 1), ("runpod", "2", 2), ("vast", "1", 1)]


def test_no_accounts_no_clients() -> None:
    assert make_clients(load_settings({}, dotenv=None)) == []
