"""Discord: a message to one channel through a webhook (`DISCORD_WEBHOOK_URL`).

Executing a webhook takes JSON: `content` (at most 2,000 characters; what a notification shows)
and `embeds` (at most 10; a description of at most 4,096 characters, 6,000 over all). The title
is the content, in bold; the body and the action links (`[label](url)`) are one embed, coloured
by level. `allowed_mentions: {"parse": []}` makes Discord ping nobody whatever the text holds: a
forwarded `@everyone` stays text. Text from outside is Discord-markdown escaped (a backslash
before `\\ * _ ~ ` | [ ] < > #`), so a forwarded `[Keep 1 day](https://…)` reads as the text it
is, not as one of reaper's own links.

Discord's documented semantics are those of a versioned API: a URL as Discord's settings copy it
(`https://discord.com/api/webhooks/<id>/<token>`) names no version, and the unversioned API
answered `retry_after` in milliseconds where v8 and later answer seconds. So the request goes to
the same webhook under `/api/v10/`. A webhook allows a few messages a second (and about 30 a
minute per channel); past that Discord answers 429 with `{"retry_after": <seconds>, "global":
...}`, which the notifier obeys. Success is 204 (or 200 with the message under `?wait=true`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from reaper.channels.base import ActionSlots, Channel, ChannelPlugin, ChannelRequest, Verdict
from reaper.channels.incoming import fit, length, links, one_line, read_url, url_secrets
from reaper.settings.parse import ChannelSettings, Env, SettingsReader

if TYPE_CHECKING:  # pydantic models: reading the settings must not import them
    from reaper.core.models import Alert, AlertLevel

MARKS: dict[AlertLevel, str] = {"info": "ℹ️", "warning": "⚠️", "critical": "🚨"}
COLOURS: dict[AlertLevel, int] = {"info": 0x2563EB, "warning": 0xD97706, "critical": 0xDC2626}
CONTENT_MAX = 2000
# What reaper puts in the content: a title, not a document.
TITLE_MAX = 300
DESCRIPTION_MAX = 4096
API_VERSION = "v10"
# Links offered per message, as on the other link channel.
MAX_LINKS = 25
_MARKDOWN = re.compile(r"([\\*_~`|\[\]<>#])")
_UNVERSIONED = re.compile(r"(.*/api)(/webhooks/.+)")


def escape(text: str) -> str:
    """Text shown as itself in Discord markdown: a backslash before each markup character."""
    return _MARKDOWN.sub(r"\\\1", text)


def versioned(url: str) -> str:
    """The webhook under `/api/v10/` when its URL names no API version."""
    parts = urlsplit(url)
    match = _UNVERSIONED.fullmatch(parts.path)
    if match is None:
        return url
    path = f"{match[1]}/{API_VERSION}{match[2]}"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def description(alert: Alert) -> str:
    """The body, then the links that fit after it (the body is cut first to leave them room)."""
    items = [f"[{escape(label)}]({url})" for label, url in links(alert)[:MAX_LINKS]]
    line = ""
    for item in items:
        joined = f"{line} · {item}" if line else item
        if length(joined) > DESCRIPTION_MAX // 2:
            break
        line = joined
    room = DESCRIPTION_MAX - (length(line) + 2 if line else 0)
    body = fit(alert.body.strip(), room, escape)
    return "\n\n".join(part for part in (body, line) if part)


@dataclass(frozen=True)
class DiscordChannel:
    url: str = field(repr=False)
    name: str = "discord"

    @property
    def secrets(self) -> tuple[str, ...]:
        return (*url_secrets(self.url), versioned(self.url))

    def requests(self, alert: Alert) -> list[ChannelRequest]:
        title = fit(one_line(alert.title) or alert.event, TITLE_MAX, escape)
        body: dict[str, Any] = {
            "content": f"{MARKS[alert.level]} **{title}**",
            "allowed_mentions": {"parse": []},
        }
        if text := description(alert):
            body["embeds"] = [{"description": text, "color": COLOURS[alert.level]}]
        return [ChannelRequest(versioned(self.url), body)]

    def classify(self, status: int, payload: Any) -> Verdict:
        answer: dict[str, Any] = payload if isinstance(payload, dict) else {}
        if 200 <= status < 300:
            return Verdict("ok")
        message = answer.get("message")
        detail = f"HTTP {status}: {message}" if isinstance(message, str) else f"HTTP {status}"
        if status == 429:
            wait = answer.get("retry_after")
            seconds = float(wait) if isinstance(wait, int | float) and wait >= 0 else None
            return Verdict("retry", detail, seconds)
        if status == 408 or status >= 500:
            return Verdict("retry", detail)
        if status in (401, 403, 404):
            detail += " (check DISCORD_WEBHOOK_URL)"
        return Verdict("fail", detail)


@dataclass(frozen=True)
class DiscordSettings(ChannelSettings):
    channel = "discord"
    url: str = field(default="", repr=False)

    def secrets(self) -> list[str]:
        return list(DiscordChannel(self.url).secrets)


def read_settings(env: Env) -> DiscordSettings | None:
    url = read_url(env, "DISCORD_WEBHOOK_URL")
    return None if url is None else DiscordSettings(url=url)


def build(settings: ChannelSettings) -> Channel:
    assert isinstance(settings, DiscordSettings)
    return DiscordChannel(url=settings.url)


SETTINGS = SettingsReader(
    channel_variables="DISCORD_WEBHOOK_URL",
    variables=("DISCORD_WEBHOOK_URL",),
    secret_variables=("DISCORD_WEBHOOK_URL",),
    read=read_settings,
)
PLUGIN = ChannelPlugin(
    name="discord",
    label="Discord",
    build=build,
    settings=SETTINGS,
    env_prefix="DISCORD_",
    # An embed's 4,096 characters, less the links and room for escaping.
    body_budget=2500,
    actions=ActionSlots(links=MAX_LINKS),
)
