"""The lists that used to be written out by hand — the secrets read from SSM, the provider keys,
the names reaper knows and the prefixes it shares with other tools — are derived from the
providers' and channels' plugins, and come out as they were written: a new integration adds
to them by its plugin alone, and none of today's names went missing on the way."""

from __future__ import annotations

from reaper.app import known, ssm
from reaper.app.settings import known_variables

# As they were written in the code before the lists were derived, and DigitalOcean's, which its
# plugin alone added.
SECRET_VARIABLES = {
    "RUNPOD_API_KEY",
    "VAST_API_KEY",
    "DIGITALOCEAN_TOKEN",
    "TELEGRAM_BOT_TOKEN",
    "TELEGRAM_CHAT_ID",
    "BARK_URL",
    "NTFY_URL",
    "NTFY_TOKEN",
    "SLACK_WEBHOOK_URL",
    "DISCORD_WEBHOOK_URL",
    "WEBHOOK_URL",
    "REAPER_PING_KEY",
    "REAPER_ADMIN_KEY",
    "TELEGRAM_WEBHOOK_SECRET",
}
SHARED_PREFIXES = (
    "HEARTBEAT_",
    "RUNPOD_",
    "VAST_",
    "DIGITALOCEAN_",
    "TELEGRAM_",
    "BARK_",
    "NTFY_",
    "SLACK_",
    "DISCORD_",
    "WEBHOOK_",
    "BALANCE_",
    "IDLE_",
    "LOG_",
)
# Every name the misspelt-name warning knew: the core's and the deployment's (still written in
# `reaper.app.known`) and the plugins' own.
PLUGIN_VARIABLES = {
    "RUNPOD_API_KEY",
    "RUNPOD_API_URL",
    "RUNPOD_GRAPHQL_URL",
    "RUNPOD_POD_ID",
    "VAST_API_KEY",
    "VAST_API_URL",
    "DIGITALOCEAN_TOKEN",
    "DIGITALOCEAN_API_URL",
    "DIGITALOCEAN_METADATA_URL",
    "TELEGRAM_BOT_TOKEN",
    "TELEGRAM_CHAT_ID",
    "TELEGRAM_API_URL",
    "TELEGRAM_WEBHOOK_SECRET",
    "TELEGRAM_ALLOWED_USERS",
    "BARK_URL",
    "NTFY_URL",
    "NTFY_TOKEN",
    "SLACK_WEBHOOK_URL",
    "DISCORD_WEBHOOK_URL",
    "WEBHOOK_URL",
}


def test_the_secrets_read_from_ssm_are_todays() -> None:
    assert set(ssm.SECRET_VARIABLES) == SECRET_VARIABLES
    assert len(ssm.SECRET_VARIABLES) == len(SECRET_VARIABLES)
    assert {"TELEGRAM_CHAT_ID"} == ssm.NOT_SECRET
    assert ssm.PROVIDER_KEYS == ("RUNPOD_API_KEY", "VAST_API_KEY", "DIGITALOCEAN_TOKEN")


def test_the_shared_prefixes_are_todays_in_their_order() -> None:
    assert known.shared_prefixes() == SHARED_PREFIXES


def test_the_known_names_are_todays() -> None:
    written = set(known.CORE_VARIABLES) | set(known.OTHER_VARIABLES)
    assert known_variables() == written | PLUGIN_VARIABLES
    assert not written & PLUGIN_VARIABLES, "a plugin's own name is written out in app/known"
