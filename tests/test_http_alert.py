"""`POST /alert/<key>`: forwarded through the notifier, once; every bad input answered 4xx."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from reaper.http import ALERT_LIMIT
from reaper.models import Alert, Delivery
from tests.heartbeat_support import KEY, FailingNotifier, Served, make_settings, served

URL = f"/alert/{KEY}"


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Served]:
    with served(make_settings(tmp_path)) as running:
        yield running


def test_text_is_forwarded_with_the_result_per_channel(app: Served) -> None:
    response = app.http.post(URL, json={"text": "run.sh: results saved\nDestroying pod now"})
    assert response.status_code == 200
    assert response.json() == {
        "delivered": True,
        "channels": [{"channel": "recording", "ok": True, "detail": ""}],
    }
    [alert] = app.notifier.alerts
    assert (alert.title, alert.body, alert.event) == (
        "run.sh: results saved",
        "Destroying pod now",
        "webhook",
    )


def test_title_body_and_level_are_taken_as_given(app: Served) -> None:
    payload = {"title": "OOM <b>&</b>", "body": "训练 stopped 🔥", "level": "critical"}
    assert app.http.post(URL, json=payload).status_code == 200
    [alert] = app.notifier.alerts
    assert (alert.title, alert.body, alert.level) == ("OOM <b>&</b>", "训练 stopped 🔥", "critical")


def test_plain_text_is_forwarded(app: Served) -> None:
    response = app.http.post(URL, content=b"disk 95% full", headers={"content-type": "text/plain"})
    assert response.status_code == 200
    assert app.notifier.alerts[0].title == "disk 95% full"


def test_json_sent_with_curls_default_form_type_is_read_as_json(app: Served) -> None:
    response = app.http.post(
        URL,
        content=b'{"text": "from curl -d"}',
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert response.status_code == 200
    assert app.notifier.alerts[0].title == "from curl -d"


def test_a_duplicate_within_a_minute_is_deduplicated(app: Served) -> None:
    assert app.http.post(URL, json={"text": "same"}).json()["delivered"] is True
    app.advance(seconds=59)
    duplicate = app.http.post(URL, json={"text": "same"})
    assert (duplicate.status_code, duplicate.json()) == (200, {"deduplicated": True})
    assert app.http.post(URL, json={"text": "different"}).status_code == 200
    app.advance(seconds=61)
    assert app.http.post(URL, json={"text": "same"}).json()["delivered"] is True
    assert [a.title for a in app.notifier.alerts] == ["same", "different", "same"]


@pytest.mark.parametrize(
    ("body", "content_type", "says"),
    [
        (b"{not json", "application/json", "not valid JSON"),
        (b"[1, 2]", "application/json", "JSON object"),
        (b'"text"', "application/json", "JSON object"),
        (b"{}", "application/json", '"text"'),
        (b'{"text": ""}', "application/json", '"text"'),
        (b'{"text": 42}', "application/json", '"text"'),
        (b'{"title": "t", "body": 5}', "application/json", '"body"'),
        (b'{"text": "a", "title": "b"}', "application/json", "not both"),
        (b'{"text": "a", "level": "urgent"}', "application/json", '"level"'),
        (b"[" * 8000 + b"]" * 8000, "application/json", "not valid JSON"),
        (b"   ", "text/plain", "empty"),
        (b"\xff\xfe", "text/plain", "UTF-8"),
    ],
)
def test_bad_input_is_400_with_one_line(
    app: Served, body: bytes, content_type: str, says: str
) -> None:
    response = app.http.post(URL, content=body, headers={"content-type": content_type})
    assert response.status_code == 400
    assert says in response.text and response.text.count("\n") == 1
    assert app.notifier.alerts == []


def test_over_16_kb_is_413(app: Served) -> None:
    body = json.dumps({"text": "x" * ALERT_LIMIT}).encode()
    assert app.http.post(URL, content=body).status_code == 413
    assert app.notifier.alerts == []


def test_exactly_16_kb_is_accepted(app: Served) -> None:
    text = "y" * (ALERT_LIMIT - len(b'{"text": ""}'))
    body = json.dumps({"text": text}).encode()
    assert len(body) == ALERT_LIMIT
    assert app.http.post(URL, content=body).status_code == 200


def test_a_wrong_key_is_404_and_sends_nothing(app: Served) -> None:
    assert app.http.post("/alert/wrong", json={"text": "x"}).status_code == 404
    assert app.notifier.alerts == []


def test_every_channel_failing_is_502_with_the_details(tmp_path: Path) -> None:
    with served(make_settings(tmp_path), notifier=FailingNotifier()) as app:
        response = app.http.post(URL, json={"text": "help"})
    assert response.status_code == 502
    assert response.json() == {
        "delivered": False,
        "channels": [
            {"channel": "telegram", "ok": False, "detail": "HTTP 500"},
            {"channel": "bark", "ok": False, "detail": "timeout"},
        ],
    }


def test_no_channel_configured_is_503(tmp_path: Path) -> None:
    with served(make_settings(tmp_path), channels=()) as app:
        response = app.http.post(URL, json={"text": "anyone?"})
        assert response.status_code == 503
        assert "channel" in response.text
        assert app.notifier.alerts == []


def test_dedup_window_is_one_minute_of_the_injected_clock(app: Served) -> None:
    app.http.post(URL, json={"text": "tick"})
    app.clock.advance(timedelta(minutes=1))
    assert app.http.post(URL, json={"text": "tick"}).json() != {"deduplicated": True}


class FlakyNotifier(FailingNotifier):
    """Fails the first alert on every channel, then delivers."""

    async def send(self, alert: Alert) -> list[Delivery]:
        if not self.alerts:
            return await super().send(alert)
        self.alerts.append(alert)
        return [Delivery(channel="telegram", ok=True)]


def test_a_retry_after_a_502_is_sent_again_not_deduplicated(tmp_path: Path) -> None:
    notifier = FlakyNotifier()
    with served(make_settings(tmp_path), notifier=notifier) as app:
        assert app.http.post(URL, json={"text": "disk full"}).status_code == 502
        retry = app.http.post(URL, json={"text": "disk full"})
        assert (retry.status_code, retry.json()["delivered"]) == (200, True)
        again = app.http.post(URL, json={"text": "disk full"})
        assert again.json() == {"deduplicated": True}
    assert len(notifier.alerts) == 2
