"""The channels whose buttons come back to reaper (a plugin's `inbound`), found: their webhook
routes for the route table, their long polls for `reaper serve`, their webhook commands for the
CLI. Each plugin names its answering code by import path (it acts through the passes, a floor
above the plugins); the route table imports a route's handler, and this module the rest, on
first use: with the registries' lookups and the wiring, the seams where reaper imports a
module by a name held in a string.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import TYPE_CHECKING, Any, Protocol

from reaper.channels.base import ChannelPlugin, Inbound
from reaper.channels.plugins import channel_plugins

if TYPE_CHECKING:
    from reaper.passes.act import ActContext
    from reaper.settings.model import Settings
    from reaper.settings.parse import ChannelSettings


class Poller(Protocol):
    """A channel's long poll: runs until interrupted."""

    async def run(self) -> None: ...

    def interrupt(self) -> None: ...


def inbound_channels() -> list[tuple[ChannelPlugin, Inbound]]:
    """Every registered channel whose buttons come back to reaper, in registry order."""
    return [(plugin, plugin.inbound) for plugin in channel_plugins() if plugin.inbound]


def _load(path: str) -> Any:
    """What `module:name` names, imported."""
    module, _, name = path.partition(":")
    return getattr(import_module(module), name)


def pollers(settings: Settings, act_context: Callable[[], ActContext]) -> list[tuple[str, Poller]]:
    """(channel name, long poll) for each configured inbound channel without a webhook secret:
    its presses are read by polling, as a laptop behind NAT needs no public URL for that."""
    found: list[tuple[str, Poller]] = []
    for plugin, inbound in inbound_channels():
        configured = settings.channel(plugin.name)
        if configured is None or inbound.secret(configured):
            continue
        make: Callable[[ChannelSettings, ActContext], Poller] = _load(inbound.poller)
        found.append((plugin.name, make(configured, act_context())))
    return found


def webhook_commands() -> dict[str, str]:
    """`<channel>-webhook`: its help line, for each inbound channel."""
    return {
        f"{plugin.name}-webhook": inbound.command_help for plugin, inbound in inbound_channels()
    }


def run_webhook_command(command: str, settings: Settings, *, delete: bool) -> int:
    """`reaper <channel>-webhook [--delete]`: the channel's own command."""
    inbound = next(i for p, i in inbound_channels() if f"{p.name}-webhook" == command)
    run: Callable[..., int] = _load(inbound.command)
    return run(settings, delete=delete)


def presses_line(settings: Settings) -> str:
    """How presses arrive, for `reaper serve`'s start line."""
    lines = [
        inbound.describe(settings.channel(plugin.name), settings.public_url)
        for plugin, inbound in inbound_channels()
    ]
    return " | ".join(lines) or "off (no channel answers presses)"
