"""Alerts: one notifier interface, channels for Telegram and Bark, and the message texts.

`make_notifier(settings)` is the one way the rest of reaper gets a notifier; `messages` has the
words of every event.
"""

from __future__ import annotations

import asyncio
import sys

from reaper.config import Settings
from reaper.notify.base import LogNotifier, Notifier, RecordingNotifier
from reaper.notify.fanout import (
    ChannelOptions,
    FanoutNotifier,
    channels_configured,
    make_notifier,
)
from reaper.notify.messages import test_message

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_CONFIG = 2


def test_alert_command(settings: Settings, *, options: ChannelOptions | None = None) -> int:
    """`reaper test-alert`: one message through every configured channel, one line each.

    Exit 0 when every channel delivered, 1 when any failed, 2 when none is configured (that is
    a configuration problem, stated the way config errors are).
    """
    if not channels_configured(settings):
        print("reaper: TELEGRAM_BOT_TOKEN / BARK_URL: no alert channel configured", file=sys.stderr)
        return EXIT_CONFIG
    deliveries = asyncio.run(make_notifier(settings, options=options).send(test_message()))
    for delivery in deliveries:
        print(
            f"{delivery.channel}: ok"
            if delivery.ok
            else f"{delivery.channel}: failed: {delivery.detail}"
        )
    return EXIT_OK if all(d.ok for d in deliveries) else EXIT_FAILED


__all__ = [
    "ChannelOptions",
    "FanoutNotifier",
    "LogNotifier",
    "Notifier",
    "RecordingNotifier",
    "channels_configured",
    "make_notifier",
    "test_alert_command",
]
