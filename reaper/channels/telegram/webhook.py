"""Where reaper's interfaces start Telegram's presses (the plugin names each by import path):
the webhook route, the long poll for `reaper serve`, and `reaper telegram-webhook`, which
tells Telegram where to post them. Like `inbound.py`, this acts through the passes.
"""

from __future__ import annotations

import asyncio
import sys

from reaper import log
from reaper.channels.telegram.bot import BotError, TelegramBot
from reaper.channels.telegram.inbound import Poller, answer_webhook
from reaper.channels.telegram.send import TelegramSettings
from reaper.interfaces.api import MAX_BODY, App, Params, Request, Response, text_response, too_large
from reaper.interfaces.routes import act_context
from reaper.passes.act import ActContext
from reaper.settings.model import Settings
from reaper.settings.parse import ChannelSettings, ConfigError

EXIT_OK = 0
EXIT_ATTENTION = 1


async def route(request: Request, app: App, params: Params) -> Response:
    """`POST /telegram/<secret>`: a Telegram update (its secrets checked by the route key)."""
    if len(request.body) > MAX_BODY:
        return too_large(MAX_BODY)
    status, line = await answer_webhook(request.body, act_context(app))
    return text_response(status, line)


def poller(settings: ChannelSettings, ctx: ActContext) -> Poller:
    """The long poll of the configured bot, answering with `ctx`."""
    assert isinstance(settings, TelegramSettings)
    return Poller(ctx, TelegramBot(settings))


def command(settings: Settings, *, delete: bool = False) -> int:
    """`reaper telegram-webhook [--delete]`: have Telegram POST button presses to
    `<REAPER_PUBLIC_URL>/telegram/<TELEGRAM_WEBHOOK_SECRET>` (setWebhook, the secret as its
    secret_token), or stop it so that `reaper serve` long-polls again (deleteWebhook).
    0 done; 1 Telegram refused or did not answer; 2 a setting is missing."""
    telegram = settings.channel("telegram")
    if not isinstance(telegram, TelegramSettings):
        raise ConfigError("TELEGRAM_BOT_TOKEN", "required (with TELEGRAM_CHAT_ID) for a webhook")
    bot = TelegramBot(telegram)
    try:
        if delete:
            asyncio.run(bot.delete_webhook())
            print("webhook deleted: `reaper serve` long-polls getUpdates for presses again")
            return EXIT_OK
        secret = telegram.webhook_secret
        if not secret:
            raise ConfigError(
                "TELEGRAM_WEBHOOK_SECRET",
                "required: the secret Telegram sends with every update (openssl rand -hex 32)",
            )
        public = settings.public_url
        if not public or not public.startswith("https://"):
            raise ConfigError(
                "REAPER_PUBLIC_URL",
                "required as an https:// URL: Telegram posts updates only to https",
            )
        asyncio.run(bot.set_webhook(f"{public}/telegram/{secret}", secret))
    except BotError as exc:
        print(f"reaper: Telegram refused: {log.redact(str(exc))}", file=sys.stderr)
        return EXIT_ATTENTION
    log.event("telegram_webhook", result="set")
    print(f"webhook set: {public}/telegram/*** (the secret also rides in a header)")
    return EXIT_OK
