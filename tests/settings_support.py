"""Settings for tests, spelt the short way: `settings(runpod_accounts=..., runpod_api_url=...,
telegram_bot_token=..., mode="observe", ...)` builds the providers' and channels' own settings
from those names, and passes everything else to `Settings` as it is; `replaced(s, ...)` does the
same on top of existing settings."""

from __future__ import annotations

import dataclasses
from typing import Any

from reaper.app.settings import load_settings
from reaper.channels.bark import BarkSettings
from reaper.channels.discord import DiscordSettings
from reaper.channels.ntfy import NtfySettings
from reaper.channels.slack import SlackSettings
from reaper.channels.telegram.send import TelegramSettings
from reaper.channels.webhook import WebhookSettings
from reaper.providers.digitalocean import DigitalOceanSettings
from reaper.providers.runpod import RunPodSettings
from reaper.providers.vast import VastSettings
from reaper.settings.model import Settings
from reaper.settings.parse import Account, ChannelSettings, ProviderSettings

_PROVIDER_KEYS = {
    "runpod_accounts",
    "runpod_api_url",
    "runpod_graphql_url",
    "vast_accounts",
    "vast_api_url",
    "digitalocean_accounts",
    "digitalocean_api_url",
}
_CHANNEL_KEYS = {
    "telegram_bot_token",
    "telegram_chat_id",
    "telegram_api_url",
    "telegram_allowed_users",
    "bark_url",
    "ntfy_url",
    "ntfy_token",
    "slack_webhook_url",
    "discord_webhook_url",
    "webhook_url",
}
# The incoming-webhook channels: each is its URL alone.
_URL_CHANNELS: dict[str, tuple[str, type[SlackSettings | DiscordSettings | WebhookSettings]]] = {
    "slack_webhook_url": ("slack", SlackSettings),
    "discord_webhook_url": ("discord", DiscordSettings),
    "webhook_url": ("webhook", WebhookSettings),
}


def _providers(base: Settings, values: dict[str, Any]) -> tuple[ProviderSettings, ...]:
    runpod = base.provider("runpod")
    vast = base.provider("vast")
    out: list[ProviderSettings] = []
    rp_accounts: tuple[Account, ...] = values.get(
        "runpod_accounts", runpod.accounts if runpod else ()
    )
    if rp_accounts or "runpod_api_url" in values:
        old = runpod if isinstance(runpod, RunPodSettings) else RunPodSettings()
        out.append(
            RunPodSettings(
                accounts=rp_accounts,
                api_url=values.get("runpod_api_url", old.api_url),
                graphql_url=values.get("runpod_graphql_url", old.graphql_url),
            )
        )
    vast_accounts: tuple[Account, ...] = values.get("vast_accounts", vast.accounts if vast else ())
    if vast_accounts or "vast_api_url" in values:
        old_vast = vast if isinstance(vast, VastSettings) else VastSettings()
        out.append(
            VastSettings(
                accounts=vast_accounts, api_url=values.get("vast_api_url", old_vast.api_url)
            )
        )
    docean = base.provider("digitalocean")
    do_accounts: tuple[Account, ...] = values.get(
        "digitalocean_accounts", docean.accounts if docean else ()
    )
    if do_accounts or "digitalocean_api_url" in values:
        old_do = docean if isinstance(docean, DigitalOceanSettings) else DigitalOceanSettings()
        out.append(
            DigitalOceanSettings(
                accounts=do_accounts,
                api_url=values.get("digitalocean_api_url", old_do.api_url),
            )
        )
    return tuple(p for p in out if p.accounts)


def _channels(base: Settings, values: dict[str, Any]) -> tuple[ChannelSettings, ...]:
    out = {c.channel: c for c in base.channels}
    if "telegram_bot_token" in values or "telegram_chat_id" in values:
        token, chat = values.get("telegram_bot_token"), values.get("telegram_chat_id")
        if token and chat:
            out["telegram"] = TelegramSettings(
                token=token,
                chat_id=chat,
                api_url=values.get("telegram_api_url", "https://api.telegram.org"),
                allowed_users=values.get("telegram_allowed_users"),
            )
        else:
            out.pop("telegram", None)
    if "bark_url" in values:
        if values["bark_url"]:
            out["bark"] = BarkSettings(url=values["bark_url"])
        else:
            out.pop("bark", None)
    if "ntfy_url" in values:
        if values["ntfy_url"]:
            out["ntfy"] = NtfySettings(url=values["ntfy_url"], token=values.get("ntfy_token", ""))
        else:
            out.pop("ntfy", None)
    for key, (name, kind) in _URL_CHANNELS.items():
        if key in values:
            if values[key]:
                out[name] = kind(url=values[key])
            else:
                out.pop(name, None)
    order = ["telegram", "bark", "ntfy", "slack", "discord", "webhook"]
    return tuple(out[name] for name in order if name in out)


def replaced(base: Settings, **values: Any) -> Settings:
    integration = {k: values.pop(k) for k in list(values) if k in _PROVIDER_KEYS | _CHANNEL_KEYS}
    updated = dataclasses.replace(base, **values)
    if integration.keys() & _PROVIDER_KEYS:
        updated = dataclasses.replace(updated, providers=_providers(base, integration))
    if integration.keys() & _CHANNEL_KEYS:
        updated = dataclasses.replace(updated, channels=_channels(base, integration))
    return updated


def bare() -> Settings:
    """The defaults as the loader gives them: `Settings()` with what it fills in from the
    registries (the channel hint, the providers' key variables)."""
    return load_settings({}, dotenv=None)


def settings(**values: Any) -> Settings:
    return replaced(bare(), **values)


class Flat:
    """Settings read by the old flat names (`runpod_accounts`, `bark_url`, ...), for tests that
    check what the environment configured; every other attribute is the settings' own."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def __getattr__(self, name: str) -> Any:
        s = self.settings
        runpod = s.provider("runpod")
        vast = s.provider("vast")
        telegram = s.channel("telegram")
        bark = s.channel("bark")
        ntfy = s.channel("ntfy")
        flat: dict[str, Any] = {
            "runpod_accounts": runpod.accounts if runpod else (),
            "vast_accounts": vast.accounts if vast else (),
            "runpod_api_url": runpod.api_url
            if isinstance(runpod, RunPodSettings)
            else RunPodSettings.api_url,
            "runpod_graphql_url": runpod.graphql_url
            if isinstance(runpod, RunPodSettings)
            else RunPodSettings.graphql_url,
            "vast_api_url": vast.api_url
            if isinstance(vast, VastSettings)
            else VastSettings.api_url,
            "telegram_bot_token": telegram.token
            if isinstance(telegram, TelegramSettings)
            else None,
            "telegram_chat_id": telegram.chat_id
            if isinstance(telegram, TelegramSettings)
            else None,
            "telegram_api_url": telegram.api_url
            if isinstance(telegram, TelegramSettings)
            else TelegramSettings.api_url,
            "bark_url": bark.url if isinstance(bark, BarkSettings) else None,
            "ntfy_url": ntfy.url if isinstance(ntfy, NtfySettings) else None,
            "ntfy_token": ntfy.token if isinstance(ntfy, NtfySettings) else None,
        }
        if name in flat:
            return flat[name]
        return getattr(s, name)
