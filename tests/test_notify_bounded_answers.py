"""A channel's server (Bark, ntfy, a self-hosted relay, Telegram) that trickles its answer, sends
500 MB or streams without end costs one failed delivery, bounded in time and memory: each
attempt has a total deadline and its answer is read no further than a small cap. The Telegram
Bot calls the poller makes are bounded the same way."""

from __future__ import annotations

import asyncio
import time

import pytest

from reaper.channels.bark import BarkChannel
from reaper.channels.base import ChannelOptions
from reaper.channels.fanout import ANSWER_CAP, FanoutNotifier
from reaper.channels.telegram.bot import ANSWER_CAP as BOT_CAP
from reaper.channels.telegram.bot import BotError, TelegramBot
from reaper.channels.telegram.send import TelegramSettings
from reaper.core.models import Alert
from tests.fakes import FakeSleep
from tests.hostile_support import HostileServer, Mode

DEVICE_KEY = "HostileDeviceKey0042"
TOKEN = "4242:hostile-bot-token"


def bark_delivery(server: HostileServer, options: ChannelOptions, cap: int = ANSWER_CAP) -> str:
    notifier = FanoutNotifier(
        [BarkChannel.from_url(f"{server.url}/{DEVICE_KEY}")], options, answer_cap=cap
    )
    (delivery,) = asyncio.run(notifier.send(Alert(title="hello")))
    assert not delivery.ok
    return delivery.detail


def test_a_trickling_channel_fails_each_attempt_at_its_timeout() -> None:
    # Bytes every 50 ms: an httpx read timeout of 0.3 s would never fire.
    options = ChannelOptions(timeout=0.3, max_attempts=2, deadline=20, sleep=FakeSleep())
    with HostileServer("trickle", interval=0.05) as server:
        started = time.monotonic()
        detail = bark_delivery(server, options)
        took = time.monotonic() - started
        assert len(server.requests) == 2
    assert detail == "no answer within 0.3s (after 2 attempts)"
    assert took < 5


@pytest.mark.parametrize("mode", ["huge", "endless", "undeclared"])
def test_an_answer_over_the_cap_fails_the_delivery_and_is_not_read_on(mode: Mode) -> None:
    options = ChannelOptions(timeout=20, max_attempts=3, deadline=30, sleep=FakeSleep())
    with HostileServer(mode) as server:
        detail = bark_delivery(server, options, cap=16 * 1024)
        assert server.client_gone.wait(5)
        sent = server.bytes_sent
        assert len(server.requests) == 1
    assert detail == "HTTP 200: answered more than 16 KB"
    assert sent < 32 * 1024 * 1024


def test_the_default_cap_is_small() -> None:
    assert ANSWER_CAP == 256 * 1024


def bot(server: HostileServer, *, timeout: float, answer_cap: int = BOT_CAP) -> TelegramBot:
    settings = TelegramSettings(token=TOKEN, chat_id="42", api_url=server.url)
    return TelegramBot(settings, timeout=timeout, answer_cap=answer_cap)


def test_a_trickling_bot_api_ends_the_long_poll_at_its_bound() -> None:
    with HostileServer("trickle", interval=0.05) as server:
        started = time.monotonic()
        with pytest.raises(BotError) as caught:
            asyncio.run(bot(server, timeout=0.2).get_updates(None, hold=0))
        took = time.monotonic() - started
    assert str(caught.value) == "getUpdates: no complete answer within 0.2s"
    assert TOKEN not in str(caught.value)
    assert took < 4


@pytest.mark.parametrize("mode", ["huge", "endless"])
def test_a_bot_answer_over_the_cap_is_an_error(mode: Mode) -> None:
    with HostileServer(mode) as server:
        with pytest.raises(BotError) as caught:
            asyncio.run(bot(server, timeout=20, answer_cap=4096).get_updates(None, hold=0))
        assert server.client_gone.wait(5)
    assert str(caught.value) == "getUpdates: HTTP 200: answered more than 4 KB"
    assert caught.value.status == 200
