"""ntfy: push to a topic on ntfy.sh or an own server, as ntfy's JSON publishing takes it.

`NTFY_URL` is the topic's URL, `https://<server>[/prefix]/<topic>`; the message is published as
JSON to the server's root (`POST <server>/` with `{"topic", "title", "message", "priority",
"tags", "click"}`), so the topic, which is a password on a public server, stays out of the
request path of any access log. `NTFY_TOKEN`, when set, is sent as `Authorization: Bearer
<token>` (an access token, `tk_...`), or as basic auth when it is `user:password`; it is a
secret: never in a detail, a log line or a URL.

Levels map to ntfy priorities (info 3 "default", warning 4 "high", critical 5 "max"). ntfy
turns a message over 4,096 bytes into an attachment, so the body is cut (with a marker) to fit.

An alert's armed actions become ntfy action buttons (at most 3, ntfy's limit), pointing at the
action page `<REAPER_PUBLIC_URL>/act/<token>`: keep and mute as `http` actions (the app POSTs,
the notification clears once it succeeded), "terminate now" as a `view` action opening the page,
which says what will happen and asks for the press that does it; `open` as a `view` action.
Without REAPER_PUBLIC_URL no action has a link, and the notification carries none.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit, urlunsplit

from reaper.channels.base import ActionSlots, Channel, ChannelPlugin, ChannelRequest, Verdict
from reaper.settings.parse import ChannelSettings, ConfigError, Env, SettingsReader, parse_url

if TYPE_CHECKING:  # pydantic models: reading the settings must not import them
    from reaper.core.models import Alert, AlertLevel, PhoneAction

PRIORITIES: dict[AlertLevel, int] = {"info": 3, "warning": 4, "critical": 5}
TAGS: dict[AlertLevel, str] = {
    "info": "information_source",
    "warning": "warning",
    "critical": "rotating_light",
}
# ntfy's default message size limit; past it the message becomes an attachment.
MESSAGE_BUDGET = 4000
TITLE_BUDGET = 250
CUT = "… [cut]"
# ntfy refuses a message with more action buttons than this.
MAX_ACTIONS = 3


def ntfy_actions(actions: tuple[PhoneAction, ...]) -> list[dict[str, Any]]:
    """The armed actions as ntfy's JSON `actions` (see the module docstring)."""
    out: list[dict[str, Any]] = []
    for action in actions:
        if action.kind == "open":
            if action.url:
                out.append({"action": "view", "label": action.label, "url": action.url})
        elif action.link and action.kind == "terminate":
            out.append({"action": "view", "label": f"{action.label}…", "url": action.link})
        elif action.link:
            out.append(
                {
                    "action": "http",
                    "label": action.label,
                    "url": action.link,
                    "method": "POST",
                    "clear": True,
                }
            )
    return out[:MAX_ACTIONS]


def fit(text: str, budget: int) -> str:
    """`text`, or its longest prefix plus `CUT` that fits in `budget` bytes of UTF-8."""
    if len(text.encode()) <= budget:
        return text
    room = budget - len(CUT.encode())
    cut = text.encode()[:room].decode("utf-8", "ignore")
    return cut + CUT


def auth_header(token: str) -> dict[str, str]:
    if not token:
        return {}
    if ":" in token:
        basic = base64.b64encode(token.encode()).decode()
        return {"Authorization": f"Basic {basic}"}
    return {"Authorization": f"Bearer {token}"}


@dataclass(frozen=True)
class NtfyChannel:
    server: str
    topic: str = field(repr=False)
    token: str = field(default="", repr=False)
    name: str = "ntfy"

    @classmethod
    def from_url(cls, url: str, token: str = "") -> NtfyChannel:
        parts = urlsplit(url.strip())
        prefix, _, topic = parts.path.rstrip("/").rpartition("/")
        if not topic:
            raise ValueError("NTFY_URL: expected https://<server>/<topic>, the topic is missing")
        server = urlunsplit((parts.scheme, parts.netloc, prefix + "/", "", ""))
        return cls(server=server, topic=unquote(topic), token=token)

    @property
    def secrets(self) -> tuple[str, ...]:
        # A topic on a public server is a password too.
        return tuple(s for s in (self.token, self.topic) if s)

    def requests(self, alert: Alert) -> list[ChannelRequest]:
        body: dict[str, Any] = {
            "topic": self.topic,
            "title": fit(" ".join(alert.title.strip().splitlines()), TITLE_BUDGET),
            "message": fit(alert.body.strip() or alert.title.strip(), MESSAGE_BUDGET),
            "priority": PRIORITIES[alert.level],
            "tags": [TAGS[alert.level]],
        }
        if alert.url:
            body["click"] = alert.url
        actions = ntfy_actions(alert.actions)
        if actions:
            body["actions"] = actions
        return [ChannelRequest(self.server, body, auth_header(self.token))]

    def classify(self, status: int, payload: Any) -> Verdict:
        answer: dict[str, Any] = payload if isinstance(payload, dict) else {}
        if 200 <= status < 300:
            return Verdict("ok")
        reason = str(answer.get("error") or f"HTTP {status}")
        if status == 429 or status >= 500:
            return Verdict("retry", f"HTTP {status}: {reason}")
        return Verdict("fail", f"HTTP {status}: {reason}")


@dataclass(frozen=True)
class NtfySettings(ChannelSettings):
    channel = "ntfy"
    url: str = field(default="", repr=False)
    token: str = field(default="", repr=False)

    def secrets(self) -> list[str]:
        return list(NtfyChannel.from_url(self.url, self.token).secrets)


def read_settings(env: Env) -> NtfySettings | None:
    raw = env.get("NTFY_URL")
    token = (env.get("NTFY_TOKEN") or "").strip()
    if raw is None:
        if token:
            raise ConfigError("NTFY_URL", "required when NTFY_TOKEN is set")
        return None
    # The topic is in the path: a malformed value is never echoed.
    url = parse_url(raw, "NTFY_URL", echo=False)
    if not urlsplit(url).path.strip("/"):
        raise ConfigError("NTFY_URL", "expected https://<server>/<topic>, the topic is missing")
    if token and (any(c.isspace() for c in token) or not token.isascii()):
        raise ConfigError("NTFY_TOKEN", "expected an access token (tk_...) or user:password")
    return NtfySettings(url=url, token=token)


def build(settings: ChannelSettings) -> Channel:
    assert isinstance(settings, NtfySettings)
    return NtfyChannel.from_url(settings.url, settings.token)


SETTINGS = SettingsReader(
    channel_variables="NTFY_URL",
    variables=("NTFY_URL", "NTFY_TOKEN"),
    secret_variables=("NTFY_URL", "NTFY_TOKEN"),
    read=read_settings,
)
PLUGIN = ChannelPlugin(
    name="ntfy",
    label="ntfy",
    build=build,
    settings=SETTINGS,
    env_prefix="NTFY_",
    # ntfy's 4,096-byte message limit, less the title.
    body_budget=3800,
    actions=ActionSlots(links=MAX_ACTIONS),
)
