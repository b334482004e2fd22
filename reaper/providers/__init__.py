"""Provider clients (RunPod REST v2, Vast) and their emulators.

`make_clients(settings)` is the one place the reap pass and the watcher get their clients
from: one per configured account of each provider, all sharing the same `HttpOptions`.
"""

from __future__ import annotations

from reaper.config import Settings
from reaper.providers.base import ProviderClient, ProviderError, TerminateOutcome
from reaper.providers.http import HttpOptions
from reaper.providers.runpod import RunPodClient
from reaper.providers.vast import VastClient


def make_clients(settings: Settings, options: HttpOptions | None = None) -> list[ProviderClient]:
    """One client per configured account, RunPod accounts first. Callers `aclose()` them."""
    options = options or HttpOptions()
    clients: list[ProviderClient] = [
        RunPodClient(account, settings.runpod_api_url, settings.runpod_graphql_url, options)
        for account in settings.runpod_accounts
    ]
    clients += [
        VastClient(account, settings.vast_api_url, options) for account in settings.vast_accounts
    ]
    return clients


__all__ = [
    "HttpOptions",
    "ProviderClient",
    "ProviderError",
    "RunPodClient",
    "TerminateOutcome",
    "VastClient",
    "make_clients",
]
