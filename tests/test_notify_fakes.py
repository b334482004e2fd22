"""The fake Telegram and Bark servers reject what the real ones reject; the channel tests lean on
that, so it is checked here with raw requests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.fakes.bark import BarkFake
from tests.fakes.telegram import Entity, EntityError, TelegramFake, parse_html


@pytest.fixture
def telegram() -> Iterator[TelegramFake]:
    with TelegramFake() as fake:
        yield fake


@pytest.fixture
def bark() -> Iterator[BarkFake]:
    with BarkFake() as fake:
        yield fake


def send(fake: TelegramFake, text: str, **extra: Any) -> httpx.Response:
    body = {"chat_id": fake.chat_id, "text": text, "parse_mode": "HTML", **extra}
    return httpx.post(f"{fake.url}/bot{fake.token}/sendMessage", json=body)


def test_parse_html_decodes_entities_and_reports_tags() -> None:
    text, entities = parse_html("<b>a &lt;&amp;&gt; &quot;</b> &#x27;&#128512; x")
    assert text == "a <&> \" '😀 x"
    assert entities == [Entity("b", 0, 7)]


@pytest.mark.parametrize(
    ("source", "error"),
    [
        ("<foo>x</foo>", 'Unsupported start tag "foo"'),
        ("<b>x", "Can't find end tag"),
        ("x</b>", "Unexpected end tag"),
        ("<b><i>x</b></i>", "Unmatched end tag"),
        ("a < b > c", "Unsupported start tag"),
        ("<b", "Unclosed start tag"),
        ('<span class="other">x</span>', 'Unsupported start tag "span"'),
    ],
)
def test_parse_html_rejects_bad_markup(source: str, error: str) -> None:
    with pytest.raises(EntityError, match=error):
        parse_html(source)


def test_telegram_accepts_and_records(telegram: TelegramFake) -> None:
    answer = send(telegram, "<b>hi</b> &amp; 中文")
    assert answer.status_code == 200
    assert answer.json()["ok"] is True
    assert answer.json()["result"]["text"] == "hi & 中文"
    assert [m.text for m in telegram.messages] == ["hi & 中文"]


def test_telegram_rejects_bad_entities(telegram: TelegramFake) -> None:
    answer = send(telegram, "<x>1</x>")
    assert answer.status_code == 400
    assert answer.json()["description"].startswith("Bad Request: can't parse entities:")
    assert telegram.messages == []


def test_telegram_counts_utf16_after_parsing(telegram: TelegramFake) -> None:
    # 4,096 units after parsing is fine however long the escaped source is ...
    assert send(telegram, "&amp;" * 4096).status_code == 200
    # ... and 2,049 emoji are 4,098 units: too long.
    answer = send(telegram, "😀" * 2049)
    assert answer.status_code == 400
    assert answer.json()["description"] == "Bad Request: message is too long"


def test_telegram_wrong_token_and_chat(telegram: TelegramFake) -> None:
    body = {"chat_id": telegram.chat_id, "text": "x"}
    assert httpx.post(f"{telegram.url}/bot1:wrong/sendMessage", json=body).status_code == 401
    assert httpx.post(f"{telegram.url}/botgarbage/sendMessage", json=body).status_code == 404
    other = send(telegram, "x", chat_id="1")
    assert (other.status_code, other.json()["description"]) == (400, "Bad Request: chat not found")


def test_telegram_injected_429(telegram: TelegramFake) -> None:
    telegram.rate_limit(5)
    answer = send(telegram, "x")
    assert answer.status_code == 429
    assert answer.json()["parameters"] == {"retry_after": 5}
    assert send(telegram, "x").status_code == 200


def test_bark_success_and_errors(bark: BarkFake) -> None:
    key = next(iter(bark.device_keys))
    ok = httpx.post(f"{bark.url}/push", json={"device_key": key, "title": "t", "body": "b"})
    assert ok.status_code == 200
    assert ok.json()["code"] == 200
    assert ok.json()["message"] == "success"
    missing = httpx.post(f"{bark.url}/push", json={"title": "t"})
    assert (missing.status_code, missing.json()["code"]) == (400, 400)
    big = httpx.post(f"{bark.url}/push", json={"device_key": key, "body": "<" * 1000})
    assert big.status_code == 500
    assert "PayloadTooLarge" in big.json()["message"]
    assert len(bark.pushes) == 1


def test_bark_basic_auth_and_prefix() -> None:
    with BarkFake(prefix="/bark", basic_auth=("me", "pw")) as fake:
        key = next(iter(fake.device_keys))
        url = f"{fake.url}/bark/push"
        assert httpx.post(url, json={"device_key": key}).status_code == 418
        assert httpx.post(url, json={"device_key": key}, auth=("me", "pw")).status_code == 200
        assert httpx.post(f"{fake.url}/push", json={}, auth=("me", "pw")).status_code == 404
