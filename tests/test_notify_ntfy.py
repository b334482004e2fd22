"""ntfy delivery over real HTTP against the fake ntfy server: JSON publishing to the server's
root (the topic never in a path), priorities and tags, Bearer and Basic auth, the 4 KB body
budget, failures retried or reported without a secret, and the alert's actions as ntfy action
buttons."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Iterator
from datetime import timedelta

import pytest

from reaper.app.wiring import make_notifier
from reaper.channels.base import ChannelOptions
from reaper.channels.ntfy import CUT, MESSAGE_BUDGET
from reaper.core.models import Alert, AlertLevel, Delivery, PhoneAction
from tests.fakes import FakeSleep
from tests.fakes.ntfy import NtfyFake
from tests.log_support import json_log
from tests.settings_support import settings as settings_of


@pytest.fixture
def ntfy() -> Iterator[NtfyFake]:
    with NtfyFake() as fake:
        yield fake


@pytest.fixture
def sleep() -> FakeSleep:
    return FakeSleep()


def send(
    url: str, alert: Alert, sleep: FakeSleep, *, token: str = "", timeout: float = 2.0
) -> Delivery:
    options = ChannelOptions(
        timeout=timeout, max_attempts=3, backoff_base=0.5, deadline=10.0, sleep=sleep
    )
    notifier = make_notifier(settings_of(ntfy_url=url, ntfy_token=token), options=options)
    deliveries = asyncio.run(notifier.send(alert))
    assert [d.channel for d in deliveries] == ["ntfy"]
    return deliveries[0]


def test_a_publish_is_json_to_the_root_with_the_topic_in_the_body(
    ntfy: NtfyFake, sleep: FakeSleep
) -> None:
    alert = Alert(
        title="pod-a (runpod:abc) will be terminated in 1h",
        body="Keep it: `reaper keep runpod:abc`.",
        level="warning",
        url="https://www.runpod.io/console/pods",
    )
    delivery = send(ntfy.topic_url, alert, sleep)
    assert delivery.ok and delivery.detail == "sent"
    [published] = ntfy.published
    assert published.payload == {
        "topic": ntfy.topic,
        "title": alert.title,
        "message": alert.body,
        "priority": 4,
        "tags": ["warning"],
        "click": "https://www.runpod.io/console/pods",
    }
    assert [r.path for r in ntfy.requests] == ["/"], "the topic stays out of the request path"
    assert published.authorization is None and "actions" not in published.payload


@pytest.mark.parametrize(
    ("level", "priority", "tag"),
    [
        ("info", 3, "information_source"),
        ("warning", 4, "warning"),
        ("critical", 5, "rotating_light"),
    ],
)
def test_levels_are_priorities(
    ntfy: NtfyFake, sleep: FakeSleep, level: AlertLevel, priority: int, tag: str
) -> None:
    assert send(ntfy.topic_url, Alert(title="t", level=level), sleep).ok
    [published] = ntfy.published
    assert (published.payload["priority"], published.payload["tags"]) == (priority, [tag])


def test_a_title_only_alert_is_its_own_message(ntfy: NtfyFake, sleep: FakeSleep) -> None:
    assert send(ntfy.topic_url, Alert(title="reaper test alert"), sleep).ok
    assert ntfy.published[0].payload["message"] == "reaper test alert"


def test_an_own_server_under_a_prefix(sleep: FakeSleep) -> None:
    with NtfyFake(topic="alerts") as fake:
        delivery = send(f"{fake.url}/alerts", Alert(title="t"), sleep)
        assert delivery.ok and fake.published[0].topic == "alerts"


@pytest.mark.parametrize(
    ("token", "header"),
    [
        ("tk_AgQdq7mVBoFD37zQVN29RhuMzNIz2", "Bearer tk_AgQdq7mVBoFD37zQVN29RhuMzNIz2"),
        ("phil:s3cret pass", "Basic cGhpbDpzM2NyZXQgcGFzcw=="),
    ],
)
def test_a_protected_topic_takes_the_token_as_bearer_or_basic(
    sleep: FakeSleep, token: str, header: str
) -> None:
    with NtfyFake(token=token) as fake:
        delivery = send(fake.topic_url, Alert(title="t"), sleep, token=token)
        assert delivery.ok, delivery.detail
        assert fake.published[0].authorization == header


def test_a_wrong_or_missing_token_fails_once_and_names_no_secret(sleep: FakeSleep) -> None:
    with NtfyFake(token="tk_right0123456789") as fake, json_log() as log:
        wrong = send(fake.topic_url, Alert(title="t"), sleep, token="tk_wrong0123456789")
        missing = send(fake.topic_url, Alert(title="t"), sleep)
        lines = log.getvalue()
    assert not wrong.ok and wrong.detail == "HTTP 401: unauthorized"
    assert not missing.ok and missing.detail == "HTTP 403: forbidden"
    assert sleep.calls == [], "a refused credential is not retried"
    assert fake.published == []
    for secret in ("tk_wrong0123456789", fake.topic):
        assert secret not in wrong.detail + missing.detail + lines


def test_a_long_body_is_cut_to_fit_and_never_becomes_an_attachment(
    ntfy: NtfyFake, sleep: FakeSleep
) -> None:
    body = "ü" * 2000 + "😀" * 1000 + "tail"
    assert send(ntfy.topic_url, Alert(title="log tail", body=body), sleep).ok
    [published] = ntfy.published
    message = published.payload["message"]
    assert not published.attachment
    assert len(message.encode()) <= MESSAGE_BUDGET and message.endswith(CUT)
    assert body.startswith(message.removesuffix(CUT)), "cut on a character, never inside one"


def test_a_long_title_is_cut(ntfy: NtfyFake, sleep: FakeSleep) -> None:
    assert send(ntfy.topic_url, Alert(title="x" * 1000), sleep).ok
    assert len(ntfy.published[0].payload["title"].encode()) <= 250


@pytest.mark.parametrize("status", [500, 502, 429])
def test_server_trouble_is_retried_with_backoff(
    ntfy: NtfyFake, sleep: FakeSleep, status: int
) -> None:
    ntfy.fail(status, times=2)
    delivery = send(ntfy.topic_url, Alert(title="t"), sleep)
    assert delivery.ok, delivery.detail
    assert sleep.calls == [0.5, 1.0]
    assert len(ntfy.published) == 1


def test_a_server_down_for_every_attempt_is_a_failure(ntfy: NtfyFake, sleep: FakeSleep) -> None:
    ntfy.fail(500, times=5)
    delivery = send(ntfy.topic_url, Alert(title="t"), sleep)
    assert not delivery.ok
    assert delivery.detail == "HTTP 500: internal server error (after 3 attempts)"


def test_a_server_that_never_answers_times_out(ntfy: NtfyFake, sleep: FakeSleep) -> None:
    ntfy.hang(times=3)
    delivery = send(ntfy.topic_url, Alert(title="t"), sleep, timeout=0.2)
    assert not delivery.ok and "no answer within 0.2s" in delivery.detail


def test_a_bad_request_is_reported_with_ntfys_words(sleep: FakeSleep) -> None:
    with NtfyFake(topic="bad topic!") as fake:
        delivery = send(f"{fake.url}/bad%20topic!", Alert(title="t"), sleep)
    assert not delivery.ok
    assert delivery.detail == "HTTP 400: invalid request: topic invalid"
    assert "bad topic" not in delivery.detail


# --- actions ---------------------------------------------------------------------------------

KEEP_DAY = PhoneAction(
    kind="keep",
    label="Keep 1 day",
    targets=("runpod:abc",),
    subject="trainer (runpod:abc)",
    duration=timedelta(days=1),
    link="https://reaper.example/act/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
)
KEEP_WEEK = KEEP_DAY.model_copy(
    update={
        "label": "Keep 1 week",
        "duration": timedelta(weeks=1),
        "link": "https://reaper.example/act/BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB",
    }
)
TERMINATE = PhoneAction(
    kind="terminate",
    label="Terminate now",
    targets=("runpod:abc",),
    subject="trainer (runpod:abc)",
    link="https://reaper.example/act/CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC",
)


def test_actions_become_ntfy_buttons(ntfy: NtfyFake, sleep: FakeSleep) -> None:
    alert = Alert(title="t", actions=(KEEP_DAY, KEEP_WEEK, TERMINATE))
    assert send(ntfy.topic_url, alert, sleep).ok
    assert ntfy.published[0].actions == [
        {
            "action": "http",
            "label": "Keep 1 day",
            "url": KEEP_DAY.link,
            "method": "POST",
            "clear": True,
        },
        {
            "action": "http",
            "label": "Keep 1 week",
            "url": KEEP_WEEK.link,
            "method": "POST",
            "clear": True,
        },
        # Terminate opens the page, which says what will happen and asks for the press.
        {"action": "view", "label": "Terminate now…", "url": TERMINATE.link},
    ]


def test_at_most_three_actions_and_the_status_page_as_a_view(
    ntfy: NtfyFake, sleep: FakeSleep
) -> None:
    mute = PhoneAction(
        kind="mute",
        label="Mute 1 day",
        targets=("trainer-1",),
        duration=timedelta(days=1),
        link="https://reaper.example/act/DDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDD",
    )
    page = PhoneAction(kind="open", label="Status page", url="https://reaper.example/")
    alert = Alert(title="t", actions=(mute, page, KEEP_DAY, KEEP_WEEK))
    assert send(ntfy.topic_url, alert, sleep).ok
    actions = ntfy.published[0].actions
    assert [a["label"] for a in actions] == ["Mute 1 day", "Status page", "Keep 1 day"]
    assert actions[1] == {
        "action": "view",
        "label": "Status page",
        "url": "https://reaper.example/",
    }


def test_actions_without_a_link_are_left_out(ntfy: NtfyFake, sleep: FakeSleep) -> None:
    """No REAPER_PUBLIC_URL: nothing was armed with a link, so no button."""
    bare = (KEEP_DAY.model_copy(update={"link": None}), PhoneAction(kind="open", label="Status"))
    assert send(ntfy.topic_url, Alert(title="t", actions=bare), sleep).ok
    assert "actions" not in ntfy.published[0].payload


def test_the_fake_refuses_what_ntfy_refuses(ntfy: NtfyFake) -> None:
    import httpx

    too_many = [{"action": "view", "label": str(i), "url": "https://x"} for i in range(4)]
    answer = httpx.post(ntfy.url, json={"topic": ntfy.topic, "actions": too_many})
    assert answer.status_code == 400 and answer.json()["code"] == 40018
    answer = httpx.post(ntfy.url, json={"topic": ntfy.topic, "priority": 9})
    assert answer.status_code == 400 and answer.json()["code"] == 40007
    assert httpx.post(f"{ntfy.url}/{ntfy.topic}", json={}).status_code == 404
    assert ntfy.published == []


def test_no_secret_reaches_the_log_on_success(sleep: FakeSleep) -> None:
    token = "tk_secret0123456789abcdef"
    stream: io.StringIO
    with NtfyFake(token=token) as fake, json_log() as stream:
        assert send(fake.topic_url, Alert(title="t"), sleep, token=token).ok
        lines = stream.getvalue()
    assert '"alert_delivery"' in lines
    assert token not in lines and fake.topic not in lines
