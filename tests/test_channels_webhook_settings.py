"""SLACK_WEBHOOK_URL, DISCORD_WEBHOOK_URL and WEBHOOK_URL as settings: each configures its
channel; a malformed value is one line naming the variable, never echoing it (the URL is the
webhook's only credential); each is a secret — in SSM on AWS, never in a log line."""

from __future__ import annotations

import asyncio

import pytest

from reaper import log
from reaper.app.known import unknown_setting_warnings
from reaper.app.settings import channel_readers, load_settings
from reaper.app.ssm import SECRET_VARIABLES
from reaper.app.wiring import make_notifier
from reaper.channels.base import ChannelOptions
from reaper.channels.registry import CHANNELS
from reaper.core.models import Alert
from reaper.settings.parse import ConfigError
from tests.fakes import FakeSleep
from tests.fakes.discord import DiscordFake
from tests.fakes.slack import SlackFake
from tests.fakes.webhook import WebhookReceiver
from tests.log_support import json_log

URLS = {
    "SLACK_WEBHOOK_URL": (
        "slack",
        "https://hooks.slack.com/services/T0A/B0B/s3cretSlackToken0123456",
    ),
    "DISCORD_WEBHOOK_URL": (
        "discord",
        "https://discord.com/api/webhooks/1300000000000000042/s3cretDiscordToken-abcdefghij",
    ),
    "WEBHOOK_URL": ("webhook", "https://ops.example.com/hooks/reaper?token=s3cretHookToken01"),
}


@pytest.mark.parametrize("variable", sorted(URLS))
def test_each_url_configures_its_channel(variable: str) -> None:
    name, url = URLS[variable]
    settings = load_settings({variable: url}, dotenv=None)
    assert [c.channel for c in settings.channels] == [name]
    assert url in settings.secrets()


@pytest.mark.parametrize("variable", sorted(URLS))
@pytest.mark.parametrize("raw", ["hooks.slack.com/services/s3cret-value", "ftp://x/s3cret-value"])
def test_a_malformed_url_is_one_line_naming_the_variable_without_the_value(
    variable: str, raw: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings({variable: raw}, dotenv=None)
    assert caught.value.variable == variable
    assert "s3cret-value" not in str(caught.value) and "\n" not in str(caught.value)


def test_every_channels_secret_is_read_from_ssm_on_aws() -> None:
    for name, reader in zip(CHANNELS, channel_readers(), strict=True):
        assert set(reader.secret_variables) <= set(SECRET_VARIABLES), name


def test_a_misspelt_name_is_named_with_the_nearest_one() -> None:
    known = {"SLACK_WEBHOOK_URL", "DISCORD_WEBHOOK_URL", "WEBHOOK_URL"}
    [line] = unknown_setting_warnings(["SLACK_WEBHOK_URL"], known)
    assert "did you mean SLACK_WEBHOOK_URL?" in line


def test_no_url_or_token_reaches_the_log() -> None:
    with SlackFake() as slack, DiscordFake() as discord, WebhookReceiver() as hook:
        urls = {
            "SLACK_WEBHOOK_URL": slack.webhook_url,
            "DISCORD_WEBHOOK_URL": discord.webhook_url,
            "WEBHOOK_URL": hook.webhook_url,
        }
        settings = load_settings(urls, dotenv=None)
        notifier = make_notifier(settings, options=ChannelOptions(sleep=FakeSleep()))
        with json_log() as stream:
            deliveries = asyncio.run(notifier.send(Alert(title="t")))
            for url in urls.values():
                log.event("probe", detail=f"posting to {url} failed")
            lines = stream.getvalue()
    assert [(d.channel, d.ok) for d in deliveries] == [
        ("slack", True),
        ("discord", True),
        ("webhook", True),
    ]
    tokens = [slack.hook.rsplit("/", 1)[1], discord.token, hook.path.split("=")[1]]
    assert "probe" in lines and not [t for t in tokens if t in lines]
