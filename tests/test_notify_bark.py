"""Bark delivery over real HTTP against the fake bark-server: the /push JSON fields, levels,
self-hosted servers, and failures retried or reported."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from reaper.app.wiring import make_notifier
from reaper.channels.bark import CUT, BarkChannel
from reaper.channels.base import ChannelOptions
from reaper.core.models import Alert, AlertLevel, Delivery
from tests.fakes import FakeSleep
from tests.fakes.bark import BarkFake
from tests.settings_support import settings as settings_of


@pytest.fixture
def bark() -> Iterator[BarkFake]:
    with BarkFake() as fake:
        yield fake


@pytest.fixture
def sleep() -> FakeSleep:
    return FakeSleep()


def send(bark_url: str, alert: Alert, sleep: FakeSleep, *, timeout: float = 2.0) -> Delivery:
    options = ChannelOptions(
        timeout=timeout, max_attempts=3, backoff_base=0.5, deadline=10.0, sleep=sleep
    )
    deliveries = asyncio.run(
        make_notifier(settings_of(bark_url=bark_url), options=options).send(alert)
    )
    assert [d.channel for d in deliveries] == ["bark"]
    return deliveries[0]


def test_push_fields(bark: BarkFake, sleep: FakeSleep) -> None:
    alert = Alert(
        title="pod-a (runpod:abc) will be terminated in 1h",
        body="Keep it: `reaper keep runpod:abc`.",
        level="warning",
        dedup_key="termination_warning:runpod:abc",
        url="https://www.runpod.io/console/pods",
    )
    delivery = send(bark.bark_url, alert, sleep)
    assert delivery.ok, delivery.detail
    [push] = bark.pushes
    assert push == {
        "device_key": next(iter(bark.device_keys)),
        "title": alert.title,
        "body": alert.body,
        "group": "reaper",
        "level": "timeSensitive",
        "url": "https://www.runpod.io/console/pods",
        "id": "termination_warning:runpod:abc",
    }
    assert bark.requests[0].path == "/push"


@pytest.mark.parametrize(
    ("level", "bark_level"),
    [("info", "active"), ("warning", "timeSensitive"), ("critical", "critical")],
)
def test_levels_are_mapped(
    bark: BarkFake, sleep: FakeSleep, level: AlertLevel, bark_level: str
) -> None:
    assert send(bark.bark_url, Alert(title="t", level=level), sleep).ok
    assert bark.pushes[0]["level"] == bark_level


def test_no_url_and_no_id_when_unknown(bark: BarkFake, sleep: FakeSleep) -> None:
    assert send(bark.bark_url, Alert(title="t", body="b"), sleep).ok
    assert "url" not in bark.pushes[0]
    assert "id" not in bark.pushes[0]


def test_unicode_and_markup_arrive_as_sent(bark: BarkFake, sleep: FakeSleep) -> None:
    alert = Alert(title='实例 <b>"x"</b> & 🚀', body="emoji 👨‍👩‍👧, a < b & c > d, 'quotes'")
    assert send(bark.bark_url, alert, sleep).ok
    assert (bark.pushes[0]["title"], bark.pushes[0]["body"]) == (alert.title, alert.body)


def test_repeated_alert_keeps_its_id_even_when_long(bark: BarkFake, sleep: FakeSleep) -> None:
    long_key = "watchdog_silent_billing:vast:" + "9" * 80 + ":实例"
    for _ in range(2):
        assert send(bark.bark_url, Alert(title="t", dedup_key=long_key), sleep).ok
    first, second = (p["id"] for p in bark.pushes)
    assert first == second
    assert len(first.encode()) <= 64


def test_long_body_is_cut_to_fit_apns(bark: BarkFake, sleep: FakeSleep) -> None:
    body = "日志 <&> line\n" * 1500  # ~19 KB: APNs would refuse it whole
    delivery = send(bark.bark_url, Alert(title="log tail", body=body), sleep)
    assert delivery.ok, delivery.detail
    [push] = bark.pushes
    assert push["body"].endswith(CUT)
    assert body.startswith(push["body"][: -len(CUT)])
    assert len(push["body"]) > 500  # cut to fit, not to nothing


def test_self_hosted_server_with_prefix_and_basic_auth(sleep: FakeSleep) -> None:
    with BarkFake(prefix="/apps/bark", basic_auth=("me", "s3cret-pw")) as fake:
        key = next(iter(fake.device_keys))
        authed = fake.url.replace("http://", "http://me:s3cret-pw@")
        delivery = send(f"{authed}/apps/bark/{key}", Alert(title="t"), sleep)
        assert delivery.ok, delivery.detail
        assert fake.requests[-1].path == "/apps/bark/push"
        assert fake.pushes[0]["device_key"] == key

        wrong = send(f"{fake.url}/apps/bark/{key}", Alert(title="t"), sleep)
        assert not wrong.ok
        assert wrong.detail.startswith("HTTP 418")
        assert "basic auth" in wrong.detail


def test_from_url_splits_the_last_segment() -> None:
    channel = BarkChannel.from_url("https://push.example.com/prefix/x/KeyABC123/")
    assert channel.push_url == "https://push.example.com/prefix/x/push"
    assert channel.device_key == "KeyABC123"
    plain = BarkChannel.from_url("https://api.day.app/KeyABC123")
    assert plain.push_url == "https://api.day.app/push"


def test_unknown_device_is_not_retried(bark: BarkFake, sleep: FakeSleep) -> None:
    delivery = send(f"{bark.url}/NotARegisteredKey99", Alert(title="t"), sleep)
    assert not delivery.ok
    assert delivery.detail.startswith("HTTP 400: failed to get device token")
    assert "NotARegisteredKey99" not in delivery.detail
    assert len(bark.requests) == 1
    assert sleep.calls == []


def test_500_then_success(bark: BarkFake, sleep: FakeSleep) -> None:
    bark.fail(500, times=2)
    delivery = send(bark.bark_url, Alert(title="t"), sleep)
    assert delivery.ok, delivery.detail
    assert sleep.calls == [0.5, 1.0]
    assert len(bark.pushes) == 1


def test_500_every_time_gives_up(bark: BarkFake, sleep: FakeSleep) -> None:
    bark.fail(503, times=10, message="push failed: service unavailable")
    delivery = send(bark.bark_url, Alert(title="t"), sleep)
    assert not delivery.ok
    assert delivery.detail == "HTTP 503: push failed: service unavailable (after 3 attempts)"


def test_timeout_then_success(bark: BarkFake, sleep: FakeSleep) -> None:
    bark.hang(times=1)
    delivery = send(bark.bark_url, Alert(title="t"), sleep, timeout=0.3)
    assert delivery.ok, delivery.detail
    assert len(bark.requests) == 2
    assert len(bark.pushes) == 1
