"""Telegram delivery over real HTTP against the fake Bot API: what the phone shows is exactly
what was sent, long texts split within Telegram's limit, and failures retried or reported as
the Bot API's answers call for."""

from __future__ import annotations

import asyncio
import io
import json
import re
import socket
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reaper.app.wiring import make_notifier
from reaper.channels.base import ChannelOptions
from reaper.channels.telegram.send import Part, plain_text, render_html, split_text
from reaper.core.models import Alert, AlertLevel, Delivery
from tests.fakes import FakeSleep
from tests.fakes.telegram import Entity, TelegramFake, parse_html, utf16_len
from tests.log_support import json_log
from tests.settings_support import settings as settings_of


@pytest.fixture
def telegram() -> Iterator[TelegramFake]:
    with TelegramFake() as fake:
        yield fake


@pytest.fixture
def sleep() -> FakeSleep:
    return FakeSleep()


@pytest.fixture
def log_stream() -> Iterator[io.StringIO]:
    with json_log() as stream:
        yield stream


def send(
    fake: TelegramFake,
    alert: Alert,
    sleep: FakeSleep,
    *,
    token: str | None = None,
    chat_id: str | None = None,
    api_url: str | None = None,
    timeout: float = 2.0,
    max_retry_after: float = 30.0,
) -> Delivery:
    settings = settings_of(
        telegram_bot_token=token or fake.token,
        telegram_chat_id=chat_id or fake.chat_id,
        telegram_api_url=api_url or fake.url,
    )
    options = ChannelOptions(
        timeout=timeout,
        max_attempts=3,
        backoff_base=0.25,
        max_retry_after=max_retry_after,
        deadline=10.0,
        sleep=sleep,
    )
    deliveries = asyncio.run(make_notifier(settings, options=options).send(alert))
    assert [d.channel for d in deliveries] == ["telegram"]
    return deliveries[0]


TRICKY_TITLE = 'Pod </b><i>"x"</i> & <a href="https://evil.example">y</a> 🚀 训练'
TRICKY_BODY = (
    "Text with <b>tags</b>, &amp; &lt;already escaped&gt;, 'single' and \"double\" quotes,\n"
    "emoji 👨‍👩‍👧 🇫🇷 and Chinese 实例已停止, a lone > and < and & and &#39; too."
)


def test_escaping_and_unicode_round_trip(telegram: TelegramFake, sleep: FakeSleep) -> None:
    delivery = send(telegram, Alert(title=TRICKY_TITLE, body=TRICKY_BODY, level="info"), sleep)
    assert delivery.ok, delivery.detail
    [message] = telegram.messages
    assert message.text == f"{TRICKY_TITLE}\n{TRICKY_BODY}"
    # The title is bold and nothing else became markup: no link, no italics were injected.
    assert message.entities == [Entity("b", 0, utf16_len(TRICKY_TITLE))]
    assert message.payload["parse_mode"] == "HTML"
    assert message.payload["disable_web_page_preview"] is True
    assert message.payload["chat_id"] == int(telegram.chat_id)


@pytest.mark.parametrize(("level", "mark"), [("warning", "⚠️ "), ("critical", "🚨 ")])
def test_level_marks_the_title(
    telegram: TelegramFake, sleep: FakeSleep, level: AlertLevel, mark: str
) -> None:
    assert send(telegram, Alert(title="t", body="b", level=level), sleep).ok
    assert telegram.messages[0].text == f"{mark}t\nb"


def test_url_is_a_plain_last_line(telegram: TelegramFake, sleep: FakeSleep) -> None:
    url = "https://www.runpod.io/console/pods?id=a&b=<c>"
    assert send(telegram, Alert(title="t", body="b", level="info", url=url), sleep).ok
    assert telegram.messages[0].text == f"t\nb\n{url}"


def test_long_text_is_split_at_line_breaks(telegram: TelegramFake, sleep: FakeSleep) -> None:
    lines = [f'line {n}: <tag> & "quote" 🚀 日志 {"x" * (n % 40)}' for n in range(250)]
    body = "\n".join(lines)
    delivery = send(telegram, Alert(title="log tail", body=body, level="info"), sleep)
    assert delivery.ok, delivery.detail
    texts = [m.text for m in telegram.messages]
    assert len(texts) >= 3
    assert delivery.detail == f"sent in {len(texts)} parts"
    assert all(utf16_len(t) <= 4096 for t in texts)
    assert "\n".join(texts) == f"log tail\n{body}"
    # Escaping is not counted against the limit: parts use the room the decoded text allows.
    assert max(len(m.source) for m in telegram.messages) > 4096
    assert telegram.messages[0].entities[0] == Entity("b", 0, len("log tail"))


def test_emoji_count_two_and_are_never_cut(telegram: TelegramFake, sleep: FakeSleep) -> None:
    body = "😀" * 3000  # 3,000 characters but 6,000 UTF-16 units, one line
    delivery = send(telegram, Alert(title="t", body=body, level="info"), sleep)
    assert delivery.ok, delivery.detail
    texts = [m.text for m in telegram.messages]
    assert len(texts) == 2
    assert "".join(texts) == f"t\n{body}"
    assert set(texts[1]) == {"😀"}


def test_escape_sequences_are_never_cut(telegram: TelegramFake, sleep: FakeSleep) -> None:
    body = "&<>\"'" * 1800  # 9,000 characters that each escape to several
    delivery = send(telegram, Alert(title="t", body=body, level="info"), sleep)
    assert delivery.ok, delivery.detail
    assert "".join(m.text for m in telegram.messages) == f"t\n{body}"


def test_runaway_text_is_cut_with_a_marker(telegram: TelegramFake, sleep: FakeSleep) -> None:
    body = "\n".join(f"{n:06d} " + "z" * 90 for n in range(600))  # ~58,000 characters
    delivery = send(telegram, Alert(title="t", body=body, level="info"), sleep)
    assert delivery.ok, delivery.detail
    texts = [m.text for m in telegram.messages]
    assert len(texts) == 5
    match = re.search(r"\n\[… cut: (\d+) more characters\]$", texts[-1])
    assert match, texts[-1][-80:]
    shown = "\n".join([*texts[:-1], texts[-1][: match.start()]])
    full = f"t\n{body}"
    assert full.startswith(shown)
    assert int(match.group(1)) == len(full) - len(shown)


def test_429_waits_retry_after_then_delivers(telegram: TelegramFake, sleep: FakeSleep) -> None:
    telegram.rate_limit(7)
    delivery = send(telegram, Alert(title="t"), sleep)
    assert delivery.ok, delivery.detail
    assert sleep.calls == [7.0]
    assert len(telegram.requests) == 2
    assert len(telegram.messages) == 1


def test_429_beyond_the_bound_is_a_failure(telegram: TelegramFake, sleep: FakeSleep) -> None:
    telegram.rate_limit(120)
    delivery = send(telegram, Alert(title="t"), sleep, max_retry_after=30)
    assert not delivery.ok
    assert "retry after 120" in delivery.detail
    assert "30s" in delivery.detail
    assert sleep.calls == []
    assert len(telegram.requests) == 1


def test_500_then_success_with_backoff(telegram: TelegramFake, sleep: FakeSleep) -> None:
    telegram.fail(500, times=2)
    delivery = send(telegram, Alert(title="t"), sleep)
    assert delivery.ok, delivery.detail
    assert sleep.calls == [0.25, 0.5]
    assert len(telegram.requests) == 3


def test_500_every_time_gives_up(telegram: TelegramFake, sleep: FakeSleep) -> None:
    telegram.fail(502, times=10, description="Bad Gateway")
    delivery = send(telegram, Alert(title="t"), sleep)
    assert not delivery.ok
    assert delivery.detail == "HTTP 502: Bad Gateway (after 3 attempts)"
    assert len(telegram.requests) == 3


def test_timeout_is_retried(telegram: TelegramFake, sleep: FakeSleep) -> None:
    telegram.hang(times=1)
    delivery = send(telegram, Alert(title="t"), sleep, timeout=0.3)
    assert delivery.ok, delivery.detail
    assert len(telegram.requests) == 2
    assert len(sleep.calls) == 1


def test_connection_refused_is_reported(sleep: FakeSleep, telegram: TelegramFake) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    delivery = send(telegram, Alert(title="t"), sleep, api_url=f"http://127.0.0.1:{port}")
    assert not delivery.ok
    assert "connection failed" in delivery.detail
    assert "after 3 attempts" in delivery.detail


def test_400_is_not_retried_and_says_why(telegram: TelegramFake, sleep: FakeSleep) -> None:
    delivery = send(telegram, Alert(title="t"), sleep, chat_id="999")
    assert not delivery.ok
    assert delivery.detail == "HTTP 400: Bad Request: chat not found"
    assert len(telegram.requests) == 1
    assert sleep.calls == []


def test_403_is_not_retried(telegram: TelegramFake, sleep: FakeSleep) -> None:
    telegram.fail(403, description="Forbidden: bot was blocked by the user")
    delivery = send(telegram, Alert(title="t"), sleep)
    assert not delivery.ok
    assert delivery.detail == "HTTP 403: Forbidden: bot was blocked by the user"
    assert len(telegram.requests) == 1


def test_wrong_token_never_leaks_it(
    telegram: TelegramFake, sleep: FakeSleep, log_stream: io.StringIO
) -> None:
    wrong = "987654:WRONG-token-that-must-not-leak"
    delivery = send(telegram, Alert(title="t"), sleep, token=wrong)
    assert not delivery.ok
    assert delivery.detail.startswith("HTTP 401: Unauthorized")
    assert "TELEGRAM_BOT_TOKEN" in delivery.detail
    output = log_stream.getvalue()
    [record] = [json.loads(line) for line in output.splitlines()]
    assert record["event"] == "alert_delivery"
    assert record["result"] == "failed"
    assert wrong not in output
    assert wrong not in delivery.detail


def test_group_migration_names_the_new_chat(telegram: TelegramFake, sleep: FakeSleep) -> None:
    from tests.fakes import Reply

    body = {
        "ok": False,
        "error_code": 400,
        "description": "Bad Request: group chat was upgraded to a supergroup chat",
        "parameters": {"migrate_to_chat_id": -1001234567890},
    }
    telegram.plan(Reply(400, body))
    delivery = send(telegram, Alert(title="t"), sleep)
    assert not delivery.ok
    assert "TELEGRAM_CHAT_ID=-1001234567890" in delivery.detail


# Splitting, checked against the fake's HTML parser for any text: each part parses back to its
# slice of the plain text, fits the limit, and the parts cover the text in order.
_TEXT = st.text(
    alphabet=st.sampled_from([*list("ab <>&\"'\n"), "😀", "中", "\u200d", "é"]), max_size=400
)


@settings(max_examples=200, deadline=None)
@given(title=_TEXT, body=_TEXT, limit=st.integers(min_value=70, max_value=120))
def test_split_parts_parse_back_and_fit(title: str, body: str, limit: int) -> None:
    text, title_end = plain_text(Alert(title=title, body=body, level="info"))
    parts = split_text(text, limit=limit, max_parts=1000)
    position = 0
    for part in parts:
        decoded, _ = parse_html(render_html(text, title_end, part))
        assert decoded == text[part.start : part.end]
        assert utf16_len(decoded) <= limit
        # Only a dropped line break (or whitespace-only stretch) lies between parts.
        assert text[position : part.start].strip() == ""
        position = part.end
    assert text[position:].strip() == ""


def test_split_keeps_short_text_whole() -> None:
    assert split_text("hello\nworld") == [Part(0, 11)]
