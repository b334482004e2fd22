"""Telegram: alerts through a bot, and the phone's answers — button presses — read and
answered.

- `send.py`: the Bot API's `sendMessage` (the channel) and the settings;
- `bot.py`: the rest of the Bot API (reading presses, answering them, the webhook calls);
- `inbound.py`: a press answered, by webhook or by the long poll;
- `webhook.py`: where reaper's interfaces start them (the webhook route, the long poll, the
  `reaper telegram-webhook` command).

What is here is the plugin: how the channel is built and read, what one message carries, and
how presses come back. `inbound.py` and `webhook.py` act through the passes, so the plugin
names them by import path and only the interfaces import them.
"""

from __future__ import annotations

from reaper.channels.base import ActionSlots, ChannelPlugin, Inbound
from reaper.channels.telegram.send import MAX_BUTTONS, SETTINGS, TelegramSettings, build
from reaper.settings.parse import ChannelSettings


def webhook_secret(settings: ChannelSettings) -> str | None:
    """TELEGRAM_WEBHOOK_SECRET: presses come by webhook when it is set, else by the long poll."""
    return settings.webhook_secret if isinstance(settings, TelegramSettings) else None


def describe(settings: ChannelSettings | None, public_url: str | None) -> str:
    """How presses arrive, for `reaper serve`'s start line."""
    if not isinstance(settings, TelegramSettings):
        return "off (no Telegram bot)"
    how = "webhook /telegram/***" if settings.webhook_secret else "long polling getUpdates"
    links = "action links on" if public_url else "action links off (no REAPER_PUBLIC_URL)"
    terminate = settings.who_may_terminate() or (
        "nobody (a group or a channel: set TELEGRAM_ALLOWED_USERS)"
    )
    return f"{how}; {links}; Terminate now from {terminate}"


_WEBHOOK = "reaper.channels.telegram.webhook:"
PLUGIN = ChannelPlugin(
    name="telegram",
    label="Telegram",
    build=build,
    settings=SETTINGS,
    env_prefix="TELEGRAM_",
    # Five parts of 4,096 characters, with room for the title and escaping.
    body_budget=18000,
    actions=ActionSlots(buttons=MAX_BUTTONS),
    inbound=Inbound(
        header="x-telegram-bot-api-secret-token",
        secret=webhook_secret,
        webhook=_WEBHOOK + "route",
        poller=_WEBHOOK + "poller",
        command=_WEBHOOK + "command",
        command_help="have Telegram POST button presses to REAPER_PUBLIC_URL",
        describe=describe,
    ),
)

__all__ = ["PLUGIN", "SETTINGS", "TelegramSettings", "describe", "webhook_secret"]
