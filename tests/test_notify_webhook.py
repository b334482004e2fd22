"""The plain webhook over real HTTP against a fake receiver: one JSON POST per event with exactly
`event`, `level`, `title`, `body`, `instance` (`provider:id` or null) and `at` (ISO 8601); it
never carries an action link and is never heard by a person; failures retried or reported
without the URL."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from emulators.clock import FakeClock
from reaper.app.wiring import make_notifier
from reaper.channels.base import ChannelOptions
from reaper.channels.fanout import FanoutNotifier
from reaper.channels.webhook import WebhookChannel
from reaper.core import messages
from reaper.core.models import Alert, Delivery, Instance
from tests.fakes import FakeSleep, Reply
from tests.fakes.webhook import WebhookReceiver
from tests.log_support import json_log
from tests.settings_support import settings as settings_of

NOW = datetime(2026, 3, 2, 9, 30, tzinfo=UTC)
POD = Instance(
    provider="runpod",
    account="main",
    id="abc123xyz",
    name="old-run",
    state="stopped",
    raw_status="EXITED",
    stopped_since=NOW - timedelta(hours=23),
)
FOLDED = [(POD, NOW), (POD.model_copy(update={"id": "def456uvw"}), NOW)]
KEYS = {"event", "level", "title", "body", "instance", "at"}


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    with WebhookReceiver() as fake:
        yield fake


@pytest.fixture
def sleep() -> FakeSleep:
    return FakeSleep()


def options(sleep: FakeSleep) -> ChannelOptions:
    return ChannelOptions(timeout=2.0, max_attempts=3, backoff_base=0.5, sleep=sleep)


def deliver(receiver: WebhookReceiver, alert: Alert, sleep: FakeSleep) -> Delivery:
    """Through the notifier the settings make, on a clock standing at NOW."""
    notifier = make_notifier(settings_of(webhook_url=receiver.webhook_url), options=options(sleep))
    assert isinstance(notifier, FanoutNotifier)
    [channel] = notifier.channels
    assert isinstance(channel, WebhookChannel)
    notifier.channels = [WebhookChannel(channel.url, clock=FakeClock(NOW))]
    [delivery] = asyncio.run(notifier.send(alert))
    return delivery


def test_a_warning_is_one_post_with_exactly_the_documented_keys(
    receiver: WebhookReceiver, sleep: FakeSleep
) -> None:
    due = NOW + timedelta(hours=1)
    alert = messages.termination_warning(POD, due, NOW, "reaper:keep", next_check=due)
    alert = alert.model_copy(update={"actions": messages.warning_actions(POD)})
    delivery = deliver(receiver, alert, sleep)
    assert delivery.ok and delivery.channel == "webhook"
    [event] = receiver.events
    assert event == {
        "event": "termination_warning",
        "level": alert.level,
        "title": alert.title,
        "body": alert.body,
        "instance": "runpod:abc123xyz",
        "at": "2026-03-02T09:30:00Z",
    }
    assert "/act/" not in str(event)


def test_a_delivered_event_is_not_heard_by_a_person(
    receiver: WebhookReceiver, sleep: FakeSleep
) -> None:
    delivery = deliver(receiver, Alert(title="t"), sleep)
    assert delivery.ok and not delivery.heard


@pytest.mark.parametrize(
    ("alert", "instance"),
    [
        (messages.terminated(POD, None), "runpod:abc123xyz"),
        (messages.monitor_down("runpod-abc123xyz", NOW, NOW), "runpod:abc123xyz"),
        (messages.monitor_recovered("vast-4242", timedelta(minutes=9)), "vast:4242"),
        (messages.monitor_down("trainer-box", NOW, NOW), None),
        (messages.balance_low("runpod", "RunPod", "main", 1.5, None, 5.0), None),
        (messages.fold_warnings(FOLDED, NOW, "reaper:keep", next_check=NOW)[0][1], None),
        (Alert(title="forwarded", event="webhook", dedup_key="webhook:runpod:abc"), None),
    ],
)
def test_instance_names_the_one_instance_an_event_is_about(
    receiver: WebhookReceiver, sleep: FakeSleep, alert: Alert, instance: str | None
) -> None:
    assert deliver(receiver, alert, sleep).ok
    [event] = receiver.events
    assert set(event) == KEYS and event["instance"] == instance


def test_server_trouble_is_retried_and_a_refusal_names_no_secret(
    receiver: WebhookReceiver, sleep: FakeSleep
) -> None:
    receiver.plan(Reply(503, {"error": "busy"}), 2)
    assert deliver(receiver, Alert(title="t"), sleep).ok
    assert sleep.calls == [0.5, 1.0] and len(receiver.events) == 1
    receiver.plan(Reply(403, {"error": "forbidden"}))
    with json_log() as log:
        refused = deliver(receiver, Alert(title="t"), sleep)
        lines = log.getvalue()
    assert not refused.ok and refused.detail == "HTTP 403 (check WEBHOOK_URL)"
    assert "receiver-token-0123456789" not in lines + refused.detail


def test_the_at_is_the_time_it_was_sent(receiver: WebhookReceiver) -> None:
    channel = WebhookChannel(receiver.webhook_url)
    before = datetime.now(UTC)
    [request] = channel.requests(Alert(title="t"))
    at = datetime.fromisoformat(str(request.body["at"]))
    assert before - timedelta(seconds=1) <= at <= datetime.now(UTC)
