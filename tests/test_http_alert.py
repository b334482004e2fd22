"""`POST /alert/<key>`: forwarded through the notifier, once; every bad input answered 4xx."""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from emulators.channels import RecordingNotifier
from emulators.clock import FakeClock
from reaper.channels.base import Notifier
from reaper.core.models import Alert, Delivery
from reaper.interfaces.api import (
    REQUEST_CHANNEL_OPTIONS,
    REQUEST_SEND_BUDGET,
    App,
    Request,
    Response,
)
from reaper.interfaces.http import handle
from reaper.interfaces.routes import ALERT_LIMIT
from reaper.passes.watch import UNDELIVERED_ALERT
from reaper.settings.model import Settings
from reaper.store.sqlite import SQLiteStore
from tests.fakes.notifiers import StandIn
from tests.heartbeat_support import KEY, WIDE, FailingNotifier, Served, make_settings, served

ROOT = Path(__file__).resolve().parent.parent

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


# --- the request's budget and the release of the dedup claim ------------------------------


class HangingNotifier(StandIn):
    """A channel that never answers (the request's budget must end the wait)."""

    def __init__(self) -> None:
        self.alerts: list[Alert] = []

    async def send(self, alert: Alert) -> list[Delivery]:
        self.alerts.append(alert)
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


class SlowNotifier(RecordingNotifier):
    """Delivers, but only after the other requests of the test had their turn."""

    async def send(self, alert: Alert) -> list[Delivery]:
        for _ in range(10):
            await asyncio.sleep(0)
        return await super().send(alert)


def _alert_request(text: str = "job failed") -> Request:
    return Request(
        "POST", URL, {"content-type": "application/json"}, json.dumps({"text": text}).encode()
    )


def _app(
    settings: Settings,
    store: SQLiteStore,
    notifier: Notifier,
    clock: FakeClock | None = None,
    **kwargs: Any,
) -> App:
    """One process (a Lambda container, or `reaper serve`) over the shared store."""
    fake = clock or FakeClock()
    return App(settings, store, notifier, fake, channels=("bark",), limits=WIDE, **kwargs)


def test_a_hanging_channel_is_answered_within_the_request_budget(tmp_path: Path) -> None:
    """On Lambda a request still waiting at 10 s is killed and its answer lost."""
    settings = make_settings(tmp_path)
    store = SQLiteStore(settings.state.location)
    started = time.monotonic()
    response = asyncio.run(
        handle(_alert_request(), _app(settings, store, HangingNotifier(), send_budget=0.2))
    )
    assert time.monotonic() - started < 5
    assert response.status == 502
    [channel] = json.loads(response.body)["channels"]
    assert channel["ok"] is False and "0.2s" in channel["detail"]
    # The failure released the dedup claim: a retry within the minute, even one that lands
    # in another process (another Lambda container), is sent, and only then deduplicated.
    elsewhere = RecordingNotifier()
    retry = asyncio.run(handle(_alert_request(), _app(settings, store, elsewhere)))
    assert json.loads(retry.body)["delivered"] is True
    again = asyncio.run(handle(_alert_request(), _app(settings, store, elsewhere)))
    assert json.loads(again.body) == {"deduplicated": True}
    assert [a.title for a in elsewhere.alerts] == ["job failed"]


def test_a_request_killed_mid_send_does_not_swallow_the_retry(tmp_path: Path) -> None:
    """Lambda kills a request at its timeout: it never gets to say the alert failed. A
    repeat while a send may still be running is a duplicate; after that it is sent again."""
    settings = make_settings(tmp_path)
    store = SQLiteStore(settings.state.location)
    clock = FakeClock()

    async def killed() -> None:
        app = _app(settings, store, HangingNotifier(), clock=clock)
        await asyncio.wait_for(handle(_alert_request(), app), 0.1)

    with pytest.raises(TimeoutError):
        asyncio.run(killed())
    elsewhere = RecordingNotifier()
    early = asyncio.run(handle(_alert_request(), _app(settings, store, elsewhere, clock=clock)))
    assert json.loads(early.body) == {"deduplicated": True}
    clock.advance(timedelta(seconds=15))
    retry = asyncio.run(handle(_alert_request(), _app(settings, store, elsewhere, clock=clock)))
    assert (retry.status, len(elsewhere.alerts)) == (200, 1)


def test_a_duplicate_while_the_first_is_being_sent_is_deduplicated(tmp_path: Path) -> None:
    """Eight ranks of a failed job send the same text at once: one message."""
    settings = make_settings(tmp_path)
    store = SQLiteStore(settings.state.location)
    notifier = SlowNotifier()

    async def at_once() -> list[Response]:
        app = _app(settings, store, notifier)
        return list(await asyncio.gather(*(handle(_alert_request(), app) for _ in range(8))))

    answers = [json.loads(r.body) for r in asyncio.run(at_once())]
    assert answers.count({"deduplicated": True}) == 7
    assert len(notifier.alerts) == 1


def test_two_retries_at_once_send_the_failed_alert_once(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    store = SQLiteStore(settings.state.location)
    failed = asyncio.run(handle(_alert_request(), _app(settings, store, FailingNotifier())))
    assert failed.status == 502
    notifier = SlowNotifier()

    async def both() -> list[Response]:
        app = _app(settings, store, notifier)
        return list(
            await asyncio.gather(handle(_alert_request(), app), handle(_alert_request(), app))
        )

    answers = [json.loads(r.body) for r in asyncio.run(both())]
    assert {"deduplicated": True} in answers
    assert [a.get("delivered") for a in answers].count(True) == 1
    assert len(notifier.alerts) == 1


def test_the_watch_pass_drops_undelivered_marks_nobody_came_back_for(tmp_path: Path) -> None:
    with served(make_settings(tmp_path), notifier=FailingNotifier()) as app:
        assert app.http.post(URL, json={"text": "lost"}).status_code == 502
        assert len(app.store.open_episodes(UNDELIVERED_ALERT)) == 1
        app.advance(minutes=59)
        app.watch()
        assert len(app.store.open_episodes(UNDELIVERED_ALERT)) == 1
        app.advance(minutes=1)
        app.watch()
        assert app.store.open_episodes(UNDELIVERED_ALERT) == []


def test_the_request_budget_fits_the_kit_and_the_lambda() -> None:
    """The channel deadline under the kit's curl timeout (the instance hears the real answer),
    the request's own budget under the HTTP function's timeout (serverless.yml)."""
    options = REQUEST_CHANNEL_OPTIONS
    worst = options.max_attempts * options.timeout + options.backoff_base * (
        options.max_attempts - 1
    )
    assert worst <= options.deadline
    common = (ROOT / "infra" / "instance" / "common.sh").read_text()
    kit = re.search(r"KIT_HTTP_TIMEOUT=\$\{KIT_HTTP_TIMEOUT:-(\d+)\}", common)
    assert kit is not None and options.deadline < int(kit.group(1))
    serverless = (ROOT / "serverless.yml").read_text()
    lambda_timeout = re.search(r"timeout: (\d+)", serverless[serverless.index("  http:\n") :])
    assert lambda_timeout is not None
    assert options.deadline < REQUEST_SEND_BUDGET <= int(lambda_timeout.group(1)) - 3
