"""A plain webhook (`WEBHOOK_URL`): every event as one JSON POST, for another program to read.

The body has exactly these keys, and keeps them:

    {"event": "termination_warning", "level": "info"|"warning"|"critical",
     "title": str, "body": str, "instance": "<provider>:<id>"|null, "at": "<ISO 8601 UTC>"}

`event` is the alert's kind (the names the log uses); `instance` the instance it is about, in
the spelling `reaper keep` takes, or null when it is about none or several (a folded warning, a
balance, a watchdog whose host is no provider instance); `at` when it was sent.

A machine channel: nothing says a person reads what it receives (a log collector, an incident
tool, a script), so a warning delivered there never counts as reaching a person — with
REAPER_REQUIRE_CHANNEL=true it licenses no termination — and it carries no action links: a
link to `/act/<token>` is a one-time key to keep or terminate an instance, and a program that
stores every event would hold a pile of them. Its URL is a secret like the others (it may carry
a token).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from reaper.channels.base import Channel, ChannelPlugin, ChannelRequest, Verdict
from reaper.channels.incoming import read_url, url_secrets
from reaper.clock import Clock, SystemClock
from reaper.settings.parse import ChannelSettings, Env, SettingsReader

if TYPE_CHECKING:  # pydantic models: reading the settings must not import them
    from reaper.core.models import Alert

# The events about one instance: their dedup key is `<kind>:<provider>:<id>`
# (reaper.core.messages).
INSTANCE_EVENTS = frozenset(
    {
        "termination_warning",
        "terminated",
        "termination_unconfirmed",
        "would_terminate",
        "watchdog_silent_billing",
        "instance_stopped_watchdog",
        "running_without_watchdog",
        "frozen",
        "stuck",
        "max_runtime",
        "idle",
        "future_start",
    }
)
# The events about one heartbeat monitor: their dedup key is `<kind>:<host>`, and a provider
# host (`<provider>-<id>`) names its instance.
MONITOR_EVENTS = frozenset(
    {
        "monitor_created",
        "monitor_down",
        "monitor_still_down",
        "monitor_down_after_mute",
        "monitor_recovered",
        "monitor_failed",
    }
)


def instance_of(alert: Alert) -> str | None:
    """The instance an alert is about (`provider:id`), or None. Read from its dedup key, and
    only for the events whose key names one instance: a folded warning's key names a time."""
    from reaper.core.models import instance_key
    from reaper.providers.plugins import canonical_id, provider_host

    _kind, _, subject = alert.dedup_key.partition(":")
    if alert.event in INSTANCE_EVENTS:
        provider, _, instance_id = subject.partition(":")
        if instance_id and canonical_id(provider, instance_id) == instance_id:
            return instance_key(provider, instance_id)
    elif alert.event in MONITOR_EVENTS and (found := provider_host(subject)) is not None:
        return instance_key(*found)
    return None


@dataclass(frozen=True)
class WebhookChannel:
    url: str = field(repr=False)
    clock: Clock = field(default_factory=SystemClock, repr=False)
    name: str = "webhook"

    @property
    def secrets(self) -> tuple[str, ...]:
        return url_secrets(self.url)

    def requests(self, alert: Alert) -> list[ChannelRequest]:
        from reaper.core.units import iso

        body = {
            "event": alert.event,
            "level": alert.level,
            "title": alert.title,
            "body": alert.body,
            "instance": instance_of(alert),
            "at": iso(self.clock.now()),
        }
        return [ChannelRequest(self.url, body)]

    def classify(self, status: int, payload: Any) -> Verdict:
        if 200 <= status < 300:
            return Verdict("ok")
        if status in (408, 429) or status >= 500:
            return Verdict("retry", f"HTTP {status}")
        hint = " (check WEBHOOK_URL)" if status in (401, 403, 404, 410) else ""
        return Verdict("fail", f"HTTP {status}{hint}")


@dataclass(frozen=True)
class WebhookSettings(ChannelSettings):
    channel = "webhook"
    # A program reads it; nothing says a person does (see the module docstring).
    reaches_person = False
    url: str = field(default="", repr=False)

    def secrets(self) -> list[str]:
        return list(url_secrets(self.url))


def read_settings(env: Env) -> WebhookSettings | None:
    url = read_url(env, "WEBHOOK_URL")
    return None if url is None else WebhookSettings(url=url)


def build(settings: ChannelSettings) -> Channel:
    assert isinstance(settings, WebhookSettings)
    return WebhookChannel(url=settings.url)


SETTINGS = SettingsReader(
    # Never named where a channel that reaches a person is asked for.
    channel_variables="",
    variables=("WEBHOOK_URL",),
    secret_variables=("WEBHOOK_URL",),
    read=read_settings,
)
PLUGIN = ChannelPlugin(
    name="webhook",
    label="webhook",
    build=build,
    settings=SETTINGS,
    env_prefix="WEBHOOK_",
    # A program takes the whole body: it never makes a folded message smaller.
    body_budget=18000,
)
