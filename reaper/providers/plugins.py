"""Finding the registered providers: their plugins, their clients, their hosts and ids.

`registry.PROVIDERS` names the packages; this imports one when it is first needed, so that a
process that never makes a client never loads one.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from importlib import import_module
from typing import TYPE_CHECKING

from reaper.providers.base import ProviderClient, ProviderPlugin
from reaper.providers.registry import PROVIDERS

if TYPE_CHECKING:
    from reaper.config import Account, ProviderSettings, Settings
    from reaper.providers.http import HttpOptions


@cache
def plugin(name: str) -> ProviderPlugin:
    """The plugin of a registered provider; KeyError for a name no package claims. Cached:
    every ping asks (is its host a provider's?), and a module lookup is not free."""
    found: ProviderPlugin = import_module(PROVIDERS[name]).PLUGIN
    return found


def plugins() -> list[ProviderPlugin]:
    return [plugin(name) for name in PROVIDERS]


def label(name: str) -> str:
    """The provider's display name ("RunPod"), or the name itself when none is registered."""
    return plugin(name).label if name in PROVIDERS else name


def make_clients(settings: Settings, options: HttpOptions | None = None) -> list[ProviderClient]:
    """One client per configured account, in registry order. Callers `aclose()` them."""
    from reaper.providers.http import HttpOptions

    options = options or HttpOptions()
    clients: list[ProviderClient] = []
    for configured in settings.providers:
        module, _, function = plugin(configured.provider).client.partition(":")
        make: Callable[[Account, ProviderSettings, HttpOptions], ProviderClient] = getattr(
            import_module(module), function
        )
        clients += [make(account, configured, options) for account in configured.accounts]
    return clients


def canonical_id(provider: str, text: str) -> str | None:
    """An instance id as the provider's listing spells it (Vast `0123` is `123`), or None when
    it cannot be one of that provider's ids: what `reaper keep` records must be the key the
    pass looks up."""
    if provider not in PROVIDERS:
        return None
    return plugin(provider).canonical_id(text)


def provider_host(host: str) -> tuple[str, str] | None:
    """A heartbeat host that names a provider instance (`runpod-<podId>`, `vast-<id>`) ->
    (provider, id); any other host -> None."""
    for found in plugins():
        if host.startswith(found.host_prefix):
            instance_id = host[len(found.host_prefix) :]
            if instance_id and found.canonical_id(instance_id) == instance_id:
                return found.name, instance_id
    return None
