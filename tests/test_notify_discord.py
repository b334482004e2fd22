"""Discord delivery over real HTTP against the fake webhook: the title as content and the body
in an embed, within Discord's limits; `allowed_mentions` so that a forwarded `@everyone` pings
nobody; Discord markdown escaped (a forwarded `[label](url)` is no link); the actions as links to
the action page; the versioned API; 429 obeyed by its `retry_after`; refusals reported without a
secret."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import timedelta

import httpx
import pytest

from reaper.app.wiring import make_notifier
from reaper.channels.base import ChannelOptions
from reaper.channels.discord import escape, versioned
from reaper.channels.incoming import CUT
from reaper.core.models import Alert, AlertLevel, Delivery, PhoneAction
from tests.fakes import FakeSleep
from tests.fakes.discord import DiscordFake, masked_links
from tests.log_support import json_log
from tests.settings_support import settings as settings_of

KEEP_WEEK = PhoneAction(
    kind="keep",
    label="Keep 1 week",
    targets=("vast:42",),
    duration=timedelta(days=7),
    link="https://reaper.example/act/BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB",
)
TERMINATE = PhoneAction(
    kind="terminate",
    label="Terminate now",
    targets=("vast:42",),
    link="https://reaper.example/act/CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC",
)


@pytest.fixture
def discord() -> Iterator[DiscordFake]:
    with DiscordFake() as fake:
        yield fake


@pytest.fixture
def sleep() -> FakeSleep:
    return FakeSleep()


def send(url: str, alert: Alert, sleep: FakeSleep) -> Delivery:
    options = ChannelOptions(timeout=2.0, max_attempts=3, backoff_base=0.5, sleep=sleep)
    notifier = make_notifier(settings_of(discord_webhook_url=url), options=options)
    [delivery] = asyncio.run(notifier.send(alert))
    assert delivery.channel == "discord"
    return delivery


def test_the_title_is_the_content_and_the_body_an_embed(
    discord: DiscordFake, sleep: FakeSleep
) -> None:
    alert = Alert(title="eval-harness (vast:42) will be terminated in 1h", body="Stopped for 23h.")
    delivery = send(discord.webhook_url, alert, sleep)
    assert delivery.ok and delivery.heard and delivery.detail == "sent"
    [executed] = discord.executed
    assert executed.payload == {
        "content": "⚠️ **eval-harness (vast:42) will be terminated in 1h**",
        "allowed_mentions": {"parse": []},
        "embeds": [{"description": "Stopped for 23h.", "color": 0xD97706}],
    }
    assert not executed.unversioned, "sent to the versioned API (retry_after in seconds)"


@pytest.mark.parametrize(
    ("level", "mark", "colour"),
    [("info", "ℹ️", 0x2563EB), ("warning", "⚠️", 0xD97706), ("critical", "🚨", 0xDC2626)],
)
def test_the_level_is_a_mark_and_a_colour(
    discord: DiscordFake, sleep: FakeSleep, level: AlertLevel, mark: str, colour: int
) -> None:
    assert send(discord.webhook_url, Alert(title="t", body="b", level=level), sleep).ok
    [executed] = discord.executed
    assert executed.content.startswith(mark) and executed.embeds[0]["color"] == colour


def test_a_forwarded_everyone_pings_nobody_and_a_forwarded_link_is_text(
    discord: DiscordFake, sleep: FakeSleep
) -> None:
    alert = Alert(
        title="@everyone trainer <@&123456> job FAILED",
        body="@here [Keep 1 day](https://evil.example/act/x) *urgent* `code` <@42>",
        actions=(KEEP_WEEK,),
    )
    assert send(discord.webhook_url, alert, sleep).ok
    [executed] = discord.executed
    assert executed.pings == []
    assert executed.links == [("Keep 1 week", KEEP_WEEK.link)], "only reaper's own link"
    assert escape("[Keep 1 day](https://evil.example/act/x)") in executed.description


def test_without_allowed_mentions_the_fake_would_ping() -> None:
    """The fake reads mentions as Discord does: the test above can fail."""
    with DiscordFake() as fake:
        httpx.post(versioned(fake.webhook_url), json={"content": "@everyone look"})
        assert fake.executed[0].pings == ["@everyone"]


def test_actions_are_links_to_the_action_page_after_the_body(
    discord: DiscordFake, sleep: FakeSleep
) -> None:
    alert = Alert(title="t", body="b", actions=(KEEP_WEEK, TERMINATE))
    assert send(discord.webhook_url, alert, sleep).ok
    [executed] = discord.executed
    assert executed.links == [("Keep 1 week", KEEP_WEEK.link), ("Terminate now…", TERMINATE.link)]
    assert executed.description.startswith("b\n\n")


def test_a_long_body_is_cut_to_leave_the_links_room(discord: DiscordFake, sleep: FakeSleep) -> None:
    alert = Alert(title="T" * 3000, body="_" * 5000, actions=(KEEP_WEEK, TERMINATE))
    delivery = send(discord.webhook_url, alert, sleep)
    assert delivery.ok, delivery.detail
    [executed] = discord.executed
    assert len(executed.content) <= 2000 and CUT in executed.content
    assert len(executed.description) <= 4096 and CUT in executed.description
    assert [label for label, _url in executed.links] == ["Keep 1 week", "Terminate now…"]


def test_a_429_waits_as_long_as_retry_after_says(discord: DiscordFake, sleep: FakeSleep) -> None:
    discord.rate_limit(retry_after=0.25)
    delivery = send(discord.webhook_url, Alert(title="t"), sleep)
    assert delivery.ok and sleep.calls == [0.25]
    assert len(discord.requests) == 2 and len(discord.executed) == 1


def test_a_wait_longer_than_the_channel_allows_is_a_failure(
    discord: DiscordFake, sleep: FakeSleep
) -> None:
    discord.rate_limit(retry_after=600)
    delivery = send(discord.webhook_url, Alert(title="t"), sleep)
    assert not delivery.ok and "asked to wait 600s" in delivery.detail and sleep.calls == []


def test_an_unknown_webhook_fails_once_and_names_no_secret(
    discord: DiscordFake, sleep: FakeSleep
) -> None:
    wrong = discord.webhook_url.replace(discord.token, "W" * 68)
    with json_log() as log:
        delivery = send(wrong, Alert(title="t"), sleep)
        lines = log.getvalue()
    assert not delivery.ok
    assert delivery.detail == "HTTP 404: Unknown Webhook (check DISCORD_WEBHOOK_URL)"
    assert len(discord.requests) == 1 and "W" * 68 not in lines and "alert_delivery" in lines


def test_a_versioned_or_queried_url_is_kept() -> None:
    assert versioned("https://discord.com/api/v10/webhooks/1/t") == (
        "https://discord.com/api/v10/webhooks/1/t"
    )
    assert versioned("https://discord.com/api/webhooks/1/t?thread_id=7") == (
        "https://discord.com/api/v10/webhooks/1/t?thread_id=7"
    )


def test_the_fake_refuses_what_discord_refuses(discord: DiscordFake) -> None:
    url = versioned(discord.webhook_url)
    assert httpx.post(url, json={}).json()["code"] == 50006
    assert httpx.post(url, json={"content": "x" * 2001}).json()["code"] == 50035
    too_long = {"embeds": [{"description": "x" * 4097}]}
    assert httpx.post(url, json=too_long).json()["code"] == 50035
    assert httpx.post(url, json={"content": "ok"}).status_code == 204
    assert masked_links(r"\[a\](https://x) [b](https://y)") == [("b", "https://y")]
