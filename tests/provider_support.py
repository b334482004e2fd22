"""What provider-client tests share: a client on an emulator for the length of one call, and
the error a RunPod listing raises against a server that answers badly."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest

from emulators import RunPodEmulator
from emulators.server import EmulatorServer
from reaper.providers.base import HttpOptions, ProviderError
from reaper.providers.runpod.client import RunPodClient
from reaper.providers.vast.client import VastClient
from reaper.settings.parse import Account

# Tiny backoffs so that retries cost milliseconds.
FAST = HttpOptions(timeout=2, max_attempts=2, backoff_base=0.001, backoff_cap=0.004)
T = TypeVar("T")


def on_runpod(
    server: RunPodEmulator,
    key: str,
    action: Callable[[RunPodClient], Awaitable[T]],
    options: HttpOptions = FAST,
) -> T:
    """Run `action` with a RunPod client of account "main" holding `key`, then close it."""

    async def go() -> T:
        client = RunPodClient(
            Account("runpod", "main", key), server.rest_url, server.graphql_url, options
        )
        try:
            return await action(client)
        finally:
            await client.aclose()

    return asyncio.run(go())


def on_vast(
    server: EmulatorServer[Any, Any],
    key: str,
    action: Callable[[VastClient], Awaitable[T]],
    options: HttpOptions = FAST,
) -> T:
    """Run `action` with a Vast client of account "main" holding `key`, then close it."""

    async def go() -> T:
        client = VastClient(Account("vast", "main", key), server.url, options)
        try:
            return await action(client)
        finally:
            await client.aclose()

    return asyncio.run(go())


def runpod_listing_error(
    server: EmulatorServer[Any, Any], key: str, options: HttpOptions = FAST
) -> ProviderError:
    """The ProviderError a RunPod listing raises against `server` (the test fails if none)."""

    async def go() -> None:
        client = RunPodClient(
            Account("runpod", "main", key), f"{server.url}/v2", f"{server.url}/gql", options
        )
        try:
            await client.list_instances()
        finally:
            await client.aclose()

    with pytest.raises(ProviderError) as caught:
        asyncio.run(go())
    return caught.value
