"""Slack delivery over real HTTP against the fake incoming webhook: `text` and `blocks` as Block
Kit takes them, every text from outside mrkdwn-escaped (a forwarded `<!channel>` notifies nobody,
a forwarded `<url|label>` is no link), the actions as links to the action page, Slack's limits,
429 obeyed by its `Retry-After`, refusals reported with what they mean and no secret."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import timedelta

import pytest

from reaper.app.wiring import make_notifier
from reaper.channels.base import ChannelOptions
from reaper.channels.incoming import CUT
from reaper.core.models import Alert, AlertLevel, Delivery, PhoneAction
from tests.fakes import FakeSleep, Reply
from tests.fakes.slack import SlackFake, read_mrkdwn
from tests.log_support import json_log
from tests.settings_support import settings as settings_of

KEEP_DAY = PhoneAction(
    kind="keep",
    label="Keep 1 day",
    targets=("runpod:abc",),
    duration=timedelta(days=1),
    link="https://reaper.example/act/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
)
TERMINATE = PhoneAction(
    kind="terminate",
    label="Terminate now",
    targets=("runpod:abc",),
    link="https://reaper.example/act/CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC",
)
PAGE = PhoneAction(kind="open", label="Status page", url="https://reaper.example/")


@pytest.fixture
def slack() -> Iterator[SlackFake]:
    with SlackFake() as fake:
        yield fake


@pytest.fixture
def sleep() -> FakeSleep:
    return FakeSleep()


def send(url: str, alert: Alert, sleep: FakeSleep) -> Delivery:
    options = ChannelOptions(timeout=2.0, max_attempts=3, backoff_base=0.5, sleep=sleep)
    notifier = make_notifier(settings_of(slack_webhook_url=url), options=options)
    [delivery] = asyncio.run(notifier.send(alert))
    assert delivery.channel == "slack"
    return delivery


def test_a_message_is_text_and_blocks_with_the_title_as_a_header(
    slack: SlackFake, sleep: FakeSleep
) -> None:
    alert = Alert(
        title="pod-a (runpod:abc) will be terminated in 1h",
        body="Stopped for 23h.\nKeep it: `reaper keep runpod:abc`.",
        level="warning",
    )
    delivery = send(slack.webhook_url, alert, sleep)
    assert delivery.ok and delivery.heard and delivery.detail == "sent"
    [posted] = slack.posted
    assert posted.payload == {
        "text": ":warning: pod-a (runpod:abc) will be terminated in 1h",
        "blocks": [
            {
                "type": "header",
                "text": {"type": "plain_text", "text": alert.title, "emoji": True},
            },
            {"type": "section", "text": {"type": "mrkdwn", "text": alert.body}},
        ],
    }
    assert [r.path for r in slack.requests] == [slack.hook]


@pytest.mark.parametrize(
    ("level", "mark"),
    [("info", ":information_source:"), ("warning", ":warning:"), ("critical", ":rotating_light:")],
)
def test_the_level_is_the_notifications_mark(
    slack: SlackFake, sleep: FakeSleep, level: AlertLevel, mark: str
) -> None:
    assert send(slack.webhook_url, Alert(title="t", level=level), sleep).ok
    assert slack.posted[0].payload["text"] == f"{mark} t"


def test_forwarded_text_is_escaped_and_neither_mentions_nor_links(
    slack: SlackFake, sleep: FakeSleep
) -> None:
    forged = "<!channel> disk full & <https://evil.example/act/x|Keep 1 day> <@U024BE7LH> a<b>c"
    alert = Alert(title="trainer: <!here> job FAILED & more", body=forged, actions=(KEEP_DAY,))
    assert send(slack.webhook_url, alert, sleep).ok
    [posted] = slack.posted
    assert posted.mentions == [] and posted.unescaped == []
    assert [link.url for link in posted.links] == [KEEP_DAY.link], "only reaper's own link"
    assert forged in posted.body, "the reader sees the text exactly as it was sent"
    assert posted.header == alert.title, "plain text is shown as it is"
    assert read_mrkdwn(posted.payload["text"]).text == ":warning: " + alert.title


def test_actions_are_links_to_the_action_page(slack: SlackFake, sleep: FakeSleep) -> None:
    alert = Alert(
        title="t",
        body="b",
        actions=(KEEP_DAY, TERMINATE, PAGE),
        url="https://www.runpod.io/console/pods",
    )
    assert send(slack.webhook_url, alert, sleep).ok
    links = [(link.label, link.url) for link in slack.posted[0].links]
    assert links == [
        ("Keep 1 day", KEEP_DAY.link),
        # Terminate opens the page, which says what will happen and asks for the press.
        ("Terminate now…", TERMINATE.link),
        ("Status page", "https://reaper.example/"),
        ("Open", "https://www.runpod.io/console/pods"),
    ]


def test_actions_without_a_link_are_left_out(slack: SlackFake, sleep: FakeSleep) -> None:
    """No REAPER_PUBLIC_URL: nothing was armed with a link, so no link."""
    bare = (KEEP_DAY.model_copy(update={"link": None}), PhoneAction(kind="open", label="Status"))
    assert send(slack.webhook_url, Alert(title="t", body="b", actions=bare), sleep).ok
    assert slack.posted[0].links == [] and len(slack.posted[0].payload["blocks"]) == 2


def test_a_long_body_and_title_are_cut_to_slacks_limits(slack: SlackFake, sleep: FakeSleep) -> None:
    alert = Alert(title="T" * 400, body="<&>" * 2000)
    delivery = send(slack.webhook_url, alert, sleep)
    assert delivery.ok, delivery.detail
    [posted] = slack.posted
    assert len(posted.header) == 150 and posted.header.endswith(CUT)
    section = posted.payload["blocks"][1]["text"]["text"]
    assert len(section) <= 3000 and section.endswith(CUT) and posted.unescaped == []
    assert posted.body.startswith("<&>" * 100)


def test_a_429_waits_as_long_as_retry_after_says(slack: SlackFake, sleep: FakeSleep) -> None:
    slack.rate_limit(retry_after=3)
    delivery = send(slack.webhook_url, Alert(title="t"), sleep)
    assert delivery.ok and sleep.calls == [3.0]
    assert len(slack.requests) == 2 and len(slack.posted) == 1


def test_server_trouble_is_retried_with_backoff(slack: SlackFake, sleep: FakeSleep) -> None:
    slack.plan(Reply(500, "internal_error"), 2)
    assert send(slack.webhook_url, Alert(title="t"), sleep).ok
    assert sleep.calls == [0.5, 1.0]


@pytest.mark.parametrize(
    ("reply", "detail"),
    [
        (
            Reply(404, "no_service"),
            "HTTP 404: no such webhook or channel (no_service, channel_not_found):"
            " check SLACK_WEBHOOK_URL",
        ),
        (Reply(410, "channel_is_archived"), "HTTP 410: the webhook's channel is archived"),
        (Reply(400, "invalid_payload"), "HTTP 400: Slack refused the message as malformed"),
    ],
)
def test_a_refusal_fails_once_with_what_it_means_and_no_secret(
    slack: SlackFake, sleep: FakeSleep, reply: Reply, detail: str
) -> None:
    slack.plan(reply)
    with json_log() as log:
        delivery = send(slack.webhook_url, Alert(title="t"), sleep)
        lines = log.getvalue()
    assert not delivery.ok and delivery.detail.startswith(detail)
    assert len(slack.requests) == 1 and sleep.calls == []
    token = slack.hook.rsplit("/", 1)[1]
    assert token not in lines and token not in delivery.detail and "alert_delivery" in lines


def test_a_removed_webhook_is_no_service(slack: SlackFake, sleep: FakeSleep) -> None:
    delivery = send(slack.url + "/services/T0/B0/removedWebhookToken0123", Alert(title="t"), sleep)
    assert not delivery.ok and "no_service" in delivery.detail


def test_the_fake_refuses_what_slack_refuses(slack: SlackFake) -> None:
    import httpx

    assert httpx.post(slack.webhook_url, json={"blocks": []}).text == "no_text"
    long_header = {"type": "header", "text": {"type": "plain_text", "text": "x" * 151}}
    answer = httpx.post(slack.webhook_url, json={"text": "t", "blocks": [long_header]})
    assert (answer.status_code, answer.text) == (400, "invalid_payload")
    assert httpx.post(slack.webhook_url, json={"text": "t"}).text == "ok"
    assert read_mrkdwn("a & b").unescaped == ["&"]
