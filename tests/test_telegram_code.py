"""Backticks in an alert (`reaper keep runpod:abc`) reach Telegram as code, not as literal
backticks: escaped first, so nothing from outside can become markup through them."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from reaper.app.wiring import make_notifier
from reaper.channels.base import ChannelOptions
from reaper.channels.telegram.send import render_parts
from reaper.core import messages
from reaper.core.models import Alert, Instance
from tests.fakes import FakeSleep
from tests.fakes.telegram import Entity, TelegramFake, utf16_len
from tests.settings_support import settings as settings_of


@pytest.fixture
def telegram() -> Iterator[TelegramFake]:
    with TelegramFake() as fake:
        yield fake


def deliver(fake: TelegramFake, alert: Alert) -> None:
    settings = settings_of(
        telegram_bot_token=fake.token, telegram_chat_id=fake.chat_id, telegram_api_url=fake.url
    )
    options = ChannelOptions(timeout=2.0, max_attempts=1, deadline=5.0, sleep=FakeSleep())
    [delivery] = asyncio.run(make_notifier(settings, options=options).send(alert))
    assert delivery.ok, delivery.detail


def test_backticks_become_code(telegram: TelegramFake) -> None:
    deliver(telegram, Alert(title="t", body="Run `reaper keep runpod:abc` now.", level="info"))
    [message] = telegram.messages
    assert message.text == "t\nRun reaper keep runpod:abc now."
    start = utf16_len("t\nRun ")
    assert Entity("code", start, utf16_len("reaper keep runpod:abc")) in message.entities


def test_markup_inside_backticks_is_still_text(telegram: TelegramFake) -> None:
    body = 'name `<b>x</b> & "y"` and `<a href="https://evil.example">z</a>`'
    deliver(telegram, Alert(title="t", body=body, level="info"))
    [message] = telegram.messages
    assert message.text == 't\nname <b>x</b> & "y" and <a href="https://evil.example">z</a>'
    assert {e.tag for e in message.entities} == {"b", "code"}  # the title's bold, the two codes
    assert sum(e.tag == "code" for e in message.entities) == 2


@pytest.mark.parametrize(
    "body",
    ["a lone ` backtick", "a `span that\nbreaks` a line", "empty `` pair", "```"],
)
def test_what_is_not_one_line_code_stays_as_typed(telegram: TelegramFake, body: str) -> None:
    deliver(telegram, Alert(title="t", body=body, level="info"))
    [message] = telegram.messages
    assert message.text == f"t\n{body}"
    assert [e.tag for e in message.entities] == ["b"]


def test_code_in_the_title_stays_inside_the_bold() -> None:
    [html] = render_parts(Alert(title="keep `x` now", body="", level="info"))
    assert html == "<b>keep <code>x</code> now</b>"


def test_a_real_warning_shows_its_command_as_code(telegram: TelegramFake) -> None:
    now = datetime(2026, 5, 4, 12, 0, tzinfo=UTC)
    inst = Instance(
        provider="runpod",
        account="main",
        id="abc123",
        name="sweep",
        state="stopped",
        raw_status="EXITED",
        cost_per_hour=0.05,
        stopped_since=now,
    )
    deliver(telegram, messages.termination_warning(inst, now, now, "reaper:keep", next_check=now))
    [message] = telegram.messages
    assert "`" not in message.text.replace('"reaper:keep"', "")
    assert "code" in {e.tag for e in message.entities}
