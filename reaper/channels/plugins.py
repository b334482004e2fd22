"""Finding the registered channels: their plugins (each the description of everything reaper
may know of one channel), and what the configured ones can carry together.

`registry.CHANNELS` names the modules; this imports one when it is first needed. A channel
module is light (its HTTP client is imported with the first delivery).
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import import_module
from typing import TYPE_CHECKING

from reaper.channels.base import ActionSlots, ChannelPlugin
from reaper.channels.registry import CHANNELS

if TYPE_CHECKING:
    pass


def channel_plugin(name: str) -> ChannelPlugin:
    found: ChannelPlugin = import_module(CHANNELS[name]).PLUGIN
    return found


def channel_plugins() -> list[ChannelPlugin]:
    """Every registered channel's plugin, in registry (delivery) order."""
    return [channel_plugin(name) for name in CHANNELS]


def body_budget(names: Sequence[str]) -> int:
    """What one folded message may carry through these channels: the smallest of their
    budgets; through none (the log), the largest any channel takes."""
    budgets = [channel_plugin(name).body_budget for name in names]
    return min(budgets) if budgets else max(channel_plugin(name).body_budget for name in CHANNELS)


def action_slots(names: Sequence[str]) -> ActionSlots:
    """What these channels can show of an alert's actions, together."""
    configured = [channel_plugin(name).actions for name in names]
    return ActionSlots(
        buttons=max((s.buttons for s in configured), default=0),
        links=max((s.links for s in configured), default=0),
        menu=any(s.menu for s in configured),
    )
