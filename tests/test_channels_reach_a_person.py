"""Which channels reach a person, through real reap passes and the real notifier: a warning
delivered to Slack or Discord licenses the termination (like Telegram, Bark and ntfy) and
carries its actions as links to `/act/<token>`; one delivered only to the plain webhook does
not — with REAPER_REQUIRE_CHANNEL=true the due instance is held, and the hold names the
channels that would reach a person, never WEBHOOK_URL."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from reaper.app.settings import load_settings
from reaper.app.wiring import make_notifier
from reaper.channels.base import ChannelOptions
from tests.fakes import FakeSleep
from tests.fakes.discord import DiscordFake
from tests.fakes.slack import SlackFake
from tests.fakes.webhook import WebhookReceiver
from tests.reap_support import World, action_of, world
from tests.settings_support import settings as settings_of

PUBLIC = "https://reaper.example"


def _options() -> ChannelOptions:
    return ChannelOptions(timeout=2.0, max_attempts=2, backoff_base=0.01, sleep=FakeSleep())


def _through_the_deadline(w: World) -> tuple[str, str]:
    """A stopped pod seen, warned 23h later, then a pass at its deadline: (warned, deadline)
    actions, each pass through the notifier the settings make."""
    pod = w.runpod.add_pod(status="EXITED")

    def run() -> str | None:
        return action_of(w.run(notifier=make_notifier(w.settings, options=_options())), pod)

    run()
    w.advance(23)
    warned = run()
    w.advance(1)
    return str(warned), str(run())


@contextmanager
def _receivers() -> Iterator[tuple[SlackFake, DiscordFake, WebhookReceiver]]:
    with SlackFake() as slack, DiscordFake() as discord, WebhookReceiver() as hook:
        yield slack, discord, hook


def test_a_warning_in_slack_licenses_the_termination_and_carries_links(tmp_path: Path) -> None:
    with (
        SlackFake() as slack,
        world(tmp_path, slack_webhook_url=slack.webhook_url, public_url=PUBLIC) as w,
    ):
        assert _through_the_deadline(w) == ("warn", "terminate")
        warning = next(p for p in slack.posted if "will be terminated" in p.header)
        labels = [link.label for link in warning.links]
        assert labels[:3] == ["Keep 1 day", "Keep 1 week", "Terminate now…"]
        assert all(link.url.startswith(f"{PUBLIC}/act/") for link in warning.links[:3])


def test_a_warning_in_discord_licenses_the_termination_and_carries_links(
    tmp_path: Path,
) -> None:
    with (
        DiscordFake() as discord,
        world(tmp_path, discord_webhook_url=discord.webhook_url, public_url=PUBLIC) as w,
    ):
        assert _through_the_deadline(w) == ("warn", "terminate")
        warning = next(e for e in discord.executed if "will be terminated" in e.content)
        assert [label for label, _url in warning.links][:3] == [
            "Keep 1 day",
            "Keep 1 week",
            "Terminate now…",
        ]
        assert all(url.startswith(f"{PUBLIC}/act/") for _label, url in warning.links[:3])


def test_a_warning_only_in_the_webhook_licenses_nothing(tmp_path: Path) -> None:
    with (
        WebhookReceiver() as hook,
        world(tmp_path, webhook_url=hook.webhook_url, public_url=PUBLIC) as w,
    ):
        pod = w.runpod.add_pod(status="EXITED")
        notifier = make_notifier(w.settings, options=_options())
        w.run(notifier=notifier)
        w.advance(23)
        assert action_of(w.run(notifier=notifier), pod) == "warn"
        w.advance(1)
        report = w.run(notifier=notifier)
        assert action_of(report, pod) == "hold" and w.runpod.mutations == []
        [held] = [a for a in report.actions if a.id == pod]
        assert "SLACK_WEBHOOK_URL or DISCORD_WEBHOOK_URL" in held.reason
        assert "WEBHOOK_URL," not in held.reason.replace("SLACK_WEBHOOK_URL", "")
        warnings = [e for e in hook.events if e["event"] == "termination_warning"]
        assert [e["instance"] for e in warnings] == [f"runpod:{pod}"]
        assert "/act/" not in str(hook.events), "a machine channel carries no action link"


def test_the_webhook_beside_a_human_channel_changes_nothing(tmp_path: Path) -> None:
    with (
        _receivers() as (slack, _discord, hook),
        world(tmp_path, slack_webhook_url=slack.webhook_url, webhook_url=hook.webhook_url) as w,
    ):
        assert _through_the_deadline(w) == ("warn", "terminate")
        assert {e["event"] for e in hook.events} >= {"termination_warning", "terminated"}


def test_the_channel_hint_names_every_channel_that_reaches_a_person() -> None:
    assert load_settings({}, dotenv=None).channel_hint == (
        "TELEGRAM_BOT_TOKEN and TELEGRAM_CHAT_ID, BARK_URL, NTFY_URL, SLACK_WEBHOOK_URL"
        " or DISCORD_WEBHOOK_URL"
    )
    webhook_only = settings_of(webhook_url="https://example.com/hook")
    assert not webhook_only.human_channel
    assert settings_of(slack_webhook_url="https://hooks.slack.com/services/T/B/x").human_channel
    assert settings_of(discord_webhook_url="https://discord.com/api/webhooks/1/x").human_channel
