"""The settings of actions from the phone: REAPER_PUBLIC_URL (https, or http only on loopback;
no trailing slash) and TELEGRAM_WEBHOOK_SECRET (Telegram's 1-256 of A-Z a-z 0-9 _ -, with a bot
configured), each refused with one line naming it, a secret never echoed."""

from __future__ import annotations

import pytest

from reaper.app.settings import load_settings
from reaper.channels.telegram.send import TelegramSettings
from reaper.settings.parse import ConfigError

BOT = {"TELEGRAM_BOT_TOKEN": "123456:ABC-def_ghi", "TELEGRAM_CHAT_ID": "4242"}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("https://reaper.example.com", "https://reaper.example.com"),
        ("https://reaper.example.com/", "https://reaper.example.com"),
        (
            "https://abc.execute-api.eu-west-1.amazonaws.com/prod/",
            "https://abc.execute-api.eu-west-1.amazonaws.com/prod",
        ),
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
        ("http://localhost:8080/", "http://localhost:8080"),
        ("http://[::1]:8080", "http://[::1]:8080"),
    ],
)
def test_a_public_url_is_https_or_loopback_without_a_trailing_slash(
    raw: str, expected: str
) -> None:
    assert load_settings({"REAPER_PUBLIC_URL": raw}, dotenv=None).public_url == expected


@pytest.mark.parametrize(
    "raw",
    [
        "http://reaper.example.com",
        "http://192.168.1.10:8080",
        "ftp://reaper.example.com",
        "reaper.example.com",
        "https://reaper.example.com/?x=1",
        "https://user:pw@reaper.example.com",
        "https://",
    ],
)
def test_anything_else_is_one_line_naming_the_variable(raw: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings({"REAPER_PUBLIC_URL": raw}, dotenv=None)
    assert caught.value.variable == "REAPER_PUBLIC_URL"
    assert "\n" not in str(caught.value)


def test_unset_means_no_public_url() -> None:
    assert load_settings({}, dotenv=None).public_url is None


def test_a_webhook_secret_is_telegrams_alphabet() -> None:
    secret = "A-z_09" * 40
    settings = load_settings({**BOT, "TELEGRAM_WEBHOOK_SECRET": secret}, dotenv=None)
    telegram = settings.channel("telegram")
    assert isinstance(telegram, TelegramSettings) and telegram.webhook_secret == secret
    assert secret in settings.secrets(), "redacted from every log line"
    assert secret not in repr(telegram)


@pytest.mark.parametrize("secret", ["has space", "semi;colon", "x" * 257, "é" * 8, "a/b"])
def test_a_bad_webhook_secret_is_refused_without_echoing_it(secret: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings({**BOT, "TELEGRAM_WEBHOOK_SECRET": secret}, dotenv=None)
    assert caught.value.variable == "TELEGRAM_WEBHOOK_SECRET"
    assert secret not in str(caught.value)


def test_a_webhook_secret_needs_a_bot() -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings({"TELEGRAM_WEBHOOK_SECRET": "s3cret-value"}, dotenv=None)
    assert str(caught.value) == (
        "TELEGRAM_WEBHOOK_SECRET: needs TELEGRAM_BOT_TOKEN and TELEGRAM_CHAT_ID"
    )


def test_the_webhook_secret_is_read_from_ssm_on_aws() -> None:
    from reaper.app.ssm import SECRET_VARIABLES

    assert "TELEGRAM_WEBHOOK_SECRET" in SECRET_VARIABLES
