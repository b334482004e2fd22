"""Provider clients (RunPod REST v2, Vast) and their emulators.

`make_clients(settings)` is the one place the reap pass and the watcher get their clients
from: one per configured account of each provider, all sharing the same `HttpOptions`.

The clients are imported on first use, not with the package: the Lambda HTTP handler reaches
`reaper.providers.base` through the heartbeat and must not pay for client code it never runs.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from reaper.config import Settings
from reaper.providers.base import ProviderClient, ProviderError, TerminateOutcome

if TYPE_CHECKING:
    from reaper.providers.http import HttpOptions
    from reaper.providers.runpod import RunPodClient
    from reaper.providers.vast import VastClient

_LAZY = {
    "HttpOptions": "reaper.providers.http",
    "RunPodClient": "reaper.providers.runpod",
    "VastClient": "reaper.providers.vast",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'reaper.providers' has no attribute {name!r}")


def canonical_id(provider: str, text: str) -> str | None:
    """An instance id as the provider's listing spells it (Vast `0123` is `123`), or None when
    it cannot be one of that provider's ids: what `reaper keep` records must be the key the
    pass looks up."""
    module = {"runpod": "reaper.providers.runpod", "vast": "reaper.providers.vast"}.get(provider)
    if module is None:
        return None
    canonical: str | None = import_module(module).canonical_id(text)
    return canonical


def make_clients(settings: Settings, options: HttpOptions | None = None) -> list[ProviderClient]:
    """One client per configured account, RunPod accounts first. Callers `aclose()` them."""
    from reaper.providers.http import HttpOptions
    from reaper.providers.runpod import RunPodClient
    from reaper.providers.vast import VastClient

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
    "canonical_id",
    "make_clients",
]
