"""Slack: a message to one channel through an incoming webhook (`SLACK_WEBHOOK_URL`).

The webhook takes JSON: `text` (what a notification shows, and the fallback) and `blocks` (the
message as shown). The title is a `header` block (plain text: nothing in it is markup); the body
is a `section` in mrkdwn, the actions a second `section` of links `<url|label>`. In mrkdwn `&`,
`<` and `>` are control characters, and Slack's documentation asks for them to be escaped as
`&amp;`, `&lt;` and `&gt;` in any text that is not markup: a forwarded `<!channel>` would
otherwise notify everyone in the channel, and a forwarded `<https://…|Keep 1 day>` would read as
one of reaper's own links. So every text from outside is escaped, and only the links built here
are markup.

Slack's limits, in characters: a header 150, a section's text 3,000; the body is cut (with a
marker) to fit, and links that do not fit are left out. Slack posts about one message per second
per webhook, short bursts allowed; past that it answers 429 with `Retry-After` (seconds), which
the notifier obeys. Its other answers are a status and one word as plain text (`ok`,
`invalid_payload`, `no_service`, ...): the word is not JSON, so the status says what went wrong.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from reaper.channels.base import ActionSlots, Channel, ChannelPlugin, ChannelRequest, Verdict
from reaper.channels.incoming import fit, length, links, one_line, read_url, url_secrets
from reaper.settings.parse import ChannelSettings, Env, SettingsReader

if TYPE_CHECKING:  # pydantic models: reading the settings must not import them
    from reaper.core.models import Alert, AlertLevel

MARKS: dict[AlertLevel, str] = {
    "info": ":information_source:",
    "warning": ":warning:",
    "critical": ":rotating_light:",
}
HEADER_MAX = 150
SECTION_MAX = 3000
# The notification text: the title, escaped, with its level's mark.
TEXT_MAX = 500
# Links offered per message: a folded warning's keep-all, then keep and terminate for each of
# its first ten instances, and the status page.
MAX_LINKS = 25
# What a refusal means, by status (Slack's answer is one word of plain text, not JSON).
REFUSALS = {
    400: "Slack refused the message as malformed (invalid_payload)",
    403: "the webhook may not post (invalid_token, action_prohibited): check SLACK_WEBHOOK_URL",
    404: "no such webhook or channel (no_service, channel_not_found): check SLACK_WEBHOOK_URL",
    410: "the webhook's channel is archived",
}


def escape(text: str) -> str:
    """Text shown as itself in mrkdwn: `&`, `<` and `>` escaped, as Slack documents."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def plain(text: str) -> str:
    """plain_text needs no escaping."""
    return text


def link_line(alert: Alert) -> str:
    """The alert's links as mrkdwn, as many as fit in one section."""
    line = ""
    for label, url in links(alert)[:MAX_LINKS]:
        item = f"<{escape(url)}|{escape(label.replace('|', '/'))}>"
        joined = f"{line}  ·  {item}" if line else item
        if length(joined) > SECTION_MAX:
            break
        line = joined
    return line


def section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


@dataclass(frozen=True)
class SlackChannel:
    url: str = field(repr=False)
    name: str = "slack"

    @property
    def secrets(self) -> tuple[str, ...]:
        return url_secrets(self.url)

    def requests(self, alert: Alert) -> list[ChannelRequest]:
        title = one_line(alert.title) or alert.event
        header = {"type": "plain_text", "text": fit(title, HEADER_MAX, plain), "emoji": True}
        blocks: list[dict[str, Any]] = [{"type": "header", "text": header}]
        if alert.body.strip():
            blocks.append(section(fit(alert.body.strip(), SECTION_MAX, escape)))
        if line := link_line(alert):
            blocks.append(section(line))
        text = f"{MARKS[alert.level]} {fit(title, TEXT_MAX, escape)}"
        return [ChannelRequest(self.url, {"text": text, "blocks": blocks})]

    def classify(self, status: int, payload: Any) -> Verdict:
        if 200 <= status < 300:
            return Verdict("ok")
        if status in (408, 429) or status >= 500:
            return Verdict("retry", f"HTTP {status}")
        refusal = REFUSALS.get(status)
        return Verdict("fail", f"HTTP {status}: {refusal}" if refusal else f"HTTP {status}")


@dataclass(frozen=True)
class SlackSettings(ChannelSettings):
    channel = "slack"
    url: str = field(default="", repr=False)

    def secrets(self) -> list[str]:
        return list(url_secrets(self.url))


def read_settings(env: Env) -> SlackSettings | None:
    url = read_url(env, "SLACK_WEBHOOK_URL")
    return None if url is None else SlackSettings(url=url)


def build(settings: ChannelSettings) -> Channel:
    assert isinstance(settings, SlackSettings)
    return SlackChannel(url=settings.url)


SETTINGS = SettingsReader(
    channel_variables="SLACK_WEBHOOK_URL",
    variables=("SLACK_WEBHOOK_URL",),
    secret_variables=("SLACK_WEBHOOK_URL",),
    read=read_settings,
)
PLUGIN = ChannelPlugin(
    name="slack",
    label="Slack",
    build=build,
    settings=SETTINGS,
    env_prefix="SLACK_",
    # A section's 3,000 characters, with room for escaping.
    body_budget=2500,
    actions=ActionSlots(links=MAX_LINKS),
)
