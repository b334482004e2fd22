"""Finding the registered channels: their plugins and their settings readers.

`registry.CHANNELS` names the modules; this imports one when it is first needed. A channel
module is light (its HTTP client is imported with the first delivery).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from reaper.channels.base import ChannelPlugin
from reaper.channels.registry import CHANNELS

if TYPE_CHECKING:
    from reaper.settings.parse import SettingsReader


def channel_plugin(name: str) -> ChannelPlugin:
    found: ChannelPlugin = import_module(CHANNELS[name]).PLUGIN
    return found


def settings_reader(name: str) -> SettingsReader:
    """The `SETTINGS` reader of a registered channel's module."""
    reader: SettingsReader = import_module(CHANNELS[name]).SETTINGS
    return reader
