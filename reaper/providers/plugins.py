"""Finding the registered providers: their plugins (each the description of everything reaper may
know of one provider), their hosts and ids.

`registry.PROVIDERS` names the packages; this imports one when it is first needed (a plugin
package is light: its client module is imported only by `reaper.app.wiring`, when a client is
made). `parse_target` reads `<provider>:<id>` as the command line and the status page take it.
"""

from __future__ import annotations

from functools import cache
from importlib import import_module
from typing import TYPE_CHECKING

from reaper.providers.base import ProviderPlugin
from reaper.providers.registry import PROVIDERS
from reaper.settings.parse import ConfigError

if TYPE_CHECKING:
    pass


@cache
def plugin(name: str) -> ProviderPlugin:
    """The plugin of a registered provider; KeyError for a name no package claims. Cached:
    every ping asks (is its host a provider's?), and a module lookup is not free."""
    found: ProviderPlugin = import_module(PROVIDERS[name]).PLUGIN
    return found


def plugins() -> list[ProviderPlugin]:
    return [plugin(name) for name in PROVIDERS]


def label(name: str) -> str:
    """The provider's display name (its plugin's label), or the name itself when none is
    registered."""
    return plugin(name).label if name in PROVIDERS else name


def canonical_id(provider: str, text: str) -> str | None:
    """An instance id as the provider's listing spells it (`0123` may be `123`), or None when
    it cannot be one of that provider's ids: what `reaper keep` records must be the key the
    pass looks up."""
    if provider not in PROVIDERS:
        return None
    return plugin(provider).canonical_id(text)


def provider_host(host: str) -> tuple[str, str] | None:
    """A heartbeat host that names a provider instance (`<provider>-<id>`) ->
    (provider, id); any other host -> None."""
    for found in plugins():
        if host.startswith(found.host_prefix):
            instance_id = host[len(found.host_prefix) :]
            if instance_id and found.canonical_id(instance_id) == instance_id:
                return found.name, instance_id
    return None


def parse_target(target: str) -> tuple[str, str]:
    """`<provider>:<id>`, the id canonicalised the way the provider's listing spells it."""
    provider, sep, raw_id = target.strip().partition(":")
    names = [p.name for p in plugins()]
    if not sep or provider not in names or not raw_id:
        expected = " or ".join(f"{name}:<id>" for name in names)
        raise ConfigError("<provider>:<id>", f"expected {expected}, got {target!r}")
    instance_id = canonical_id(provider, raw_id)
    if instance_id is None:
        raise ConfigError("<provider>:<id>", f"not a valid {provider} instance id: {raw_id!r}")
    return provider, instance_id
