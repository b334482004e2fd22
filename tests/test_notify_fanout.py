"""The notifier over both channels: each independent and concurrent, one log line per
delivery without secrets, never raising; and `reaper test-alert`."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Iterator
from typing import Any

import pytest

from reaper import log
from reaper.app.wiring import make_notifier
from reaper.channels.bark import BarkChannel
from reaper.channels.base import (
    ChannelOptions,
    ChannelRequest,
    LogNotifier,
    Verdict,
    channels_configured,
)
from reaper.channels.fanout import FanoutNotifier
from reaper.channels.telegram.send import TelegramChannel
from reaper.core.models import Alert
from reaper.interfaces import commands
from reaper.settings.model import Settings
from tests.fakes import FakeSleep
from tests.fakes.bark import BarkFake
from tests.fakes.telegram import TelegramFake
from tests.log_support import json_log
from tests.settings_support import replaced
from tests.settings_support import settings as settings_of


@pytest.fixture
def telegram() -> Iterator[TelegramFake]:
    with TelegramFake() as fake:
        yield fake


@pytest.fixture
def bark() -> Iterator[BarkFake]:
    with BarkFake() as fake:
        yield fake


@pytest.fixture
def log_stream() -> Iterator[io.StringIO]:
    with json_log() as stream:
        yield stream


def both(telegram: TelegramFake, bark: BarkFake) -> Settings:
    return settings_of(
        telegram_bot_token=telegram.token,
        telegram_chat_id=telegram.chat_id,
        telegram_api_url=telegram.url,
        bark_url=bark.bark_url,
    )


def quick(**overrides: Any) -> ChannelOptions:
    values: dict[str, Any] = {
        "timeout": 2.0,
        "max_attempts": 3,
        "backoff_base": 0.01,
        "deadline": 10.0,
        "sleep": FakeSleep(),
    }
    values.update(overrides)
    return ChannelOptions(**values)


def test_channels_configured() -> None:
    assert channels_configured(settings_of()) == []
    telegram_only = settings_of(telegram_bot_token="1:abc", telegram_chat_id="5")
    assert channels_configured(telegram_only) == ["telegram"]
    assert channels_configured(settings_of(bark_url="https://api.day.app/k")) == ["bark"]
    assert channels_configured(
        settings_of(telegram_bot_token="1:abc", telegram_chat_id="5", bark_url="https://b/k")
    ) == ["telegram", "bark"]


def test_no_channel_means_the_log(log_stream: io.StringIO) -> None:
    notifier = make_notifier(settings_of())
    assert isinstance(notifier, LogNotifier)
    deliveries = asyncio.run(notifier.send(Alert(title="only logged")))
    assert [(d.channel, d.ok) for d in deliveries] == [("log", True)]
    assert "only logged" in log_stream.getvalue()


def test_both_channels_deliver_and_log_once_each(
    telegram: TelegramFake, bark: BarkFake, log_stream: io.StringIO
) -> None:
    notifier = make_notifier(both(telegram, bark), options=quick())
    alert = Alert(title="hello", body="world", level="info", event="test")
    deliveries = asyncio.run(notifier.send(alert))
    assert [(d.channel, d.ok, d.detail) for d in deliveries] == [
        ("telegram", True, "sent"),
        ("bark", True, "sent"),
    ]
    assert telegram.messages[0].text == "hello\nworld"
    assert bark.pushes[0]["body"] == "world"
    output = log_stream.getvalue()
    records = [json.loads(line) for line in output.splitlines()]
    assert [(r["event"], r["channel"], r["result"]) for r in records] == [
        ("alert_delivery", "telegram", "ok"),
        ("alert_delivery", "bark", "ok"),
    ] or [(r["event"], r["channel"], r["result"]) for r in records] == [
        ("alert_delivery", "bark", "ok"),
        ("alert_delivery", "telegram", "ok"),
    ]
    assert all(r["alert_event"] == "test" for r in records)
    assert telegram.token not in output
    assert next(iter(bark.device_keys)) not in output


def test_a_hanging_channel_does_not_hold_the_other(telegram: TelegramFake, bark: BarkFake) -> None:
    bark.hang(times=10)
    # The hanging channel goes first: a sequential fan-out would reach Telegram only after
    # Bark's deadline.
    channels = [
        BarkChannel.from_url(bark.bark_url),
        TelegramChannel(token=telegram.token, chat_id=telegram.chat_id, api_url=telegram.url),
    ]
    notifier = FanoutNotifier(channels, quick(timeout=5.0, deadline=1.0))
    bark_result, telegram_result = asyncio.run(notifier.send(Alert(title="t")))
    assert telegram_result.ok, telegram_result.detail
    assert not bark_result.ok
    assert bark_result.detail == "gave up after 1s (channel deadline)"
    assert telegram.requests[0].at - bark.requests[0].at < 0.5


def test_a_failing_channel_does_not_fail_the_other(telegram: TelegramFake, bark: BarkFake) -> None:
    telegram.fail(500, times=10)
    deliveries = asyncio.run(
        make_notifier(both(telegram, bark), options=quick()).send(Alert(title="t"))
    )
    assert [(d.channel, d.ok) for d in deliveries] == [("telegram", False), ("bark", True)]
    assert len(bark.pushes) == 1


class _Broken:
    name = "broken"
    secrets = ()

    def requests(self, alert: Alert) -> list[ChannelRequest]:
        raise RuntimeError("a bug in a channel")

    def classify(self, status: int, payload: Any) -> Verdict:
        raise AssertionError("never reached")


def test_a_bug_in_a_channel_never_raises(bark: BarkFake) -> None:
    notifier = FanoutNotifier([_Broken(), BarkChannel.from_url(bark.bark_url)], quick())
    broken, delivered = asyncio.run(notifier.send(Alert(title="t")))
    assert (broken.ok, broken.detail) == (False, "internal error (RuntimeError)")
    assert delivered.ok


def test_registered_secrets_never_reach_a_phone(telegram: TelegramFake, bark: BarkFake) -> None:
    secret = "vast-key-0f9e8d7c6b5a-fanout-test"
    log.register_secrets([secret])
    alert = Alert(title=f"key {secret} leaked", body=f"env: VAST_API_KEY={secret}", level="info")
    deliveries = asyncio.run(make_notifier(both(telegram, bark), options=quick()).send(alert))
    assert all(d.ok for d in deliveries)
    assert telegram.messages[0].text == "key [redacted] leaked\nenv: VAST_API_KEY=[redacted]"
    assert bark.pushes[0]["body"] == "env: VAST_API_KEY=[redacted]"


def test_lone_surrogates_do_not_break_delivery(telegram: TelegramFake, bark: BarkFake) -> None:
    alert = Alert(title="t", body="bad \ud800 char, good 😀", level="info")
    deliveries = asyncio.run(make_notifier(both(telegram, bark), options=quick()).send(alert))
    assert all(d.ok for d in deliveries), deliveries
    assert telegram.messages[0].text == "t\nbad \ufffd char, good 😀"
    assert bark.pushes[0]["body"] == "bad \ufffd char, good 😀"


def test_test_alert_without_channels(capsys: pytest.CaptureFixture[str]) -> None:
    assert commands.test_alert_command(settings_of()) == 2
    err = capsys.readouterr().err
    assert err == (
        "reaper: TELEGRAM_BOT_TOKEN / BARK_URL / NTFY_URL / SLACK_WEBHOOK_URL /"
        " DISCORD_WEBHOOK_URL / WEBHOOK_URL: no alert channel configured\n"
    )


def test_test_alert_all_ok(
    telegram: TelegramFake, bark: BarkFake, capsys: pytest.CaptureFixture[str]
) -> None:
    assert commands.test_alert_command(both(telegram, bark), options=quick()) == 0
    assert capsys.readouterr().out == "telegram: ok\nbark: ok\n"
    assert telegram.messages[0].text.startswith("reaper test alert")
    assert bark.pushes[0]["title"] == "reaper test alert"


def test_test_alert_one_failing(
    telegram: TelegramFake, bark: BarkFake, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = replaced(both(telegram, bark), bark_url=f"{bark.url}/UnknownDevice42")
    assert commands.test_alert_command(settings, options=quick()) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "telegram: ok"
    assert out[1].startswith("bark: failed: HTTP 400: failed to get device token")
