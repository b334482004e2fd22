"""Bark: iOS push through a Bark server (api.day.app or a self-hosted one).

`BARK_URL` is what the Bark app shows, `https://<server>/<device_key>`; a self-hosted server may
sit under a path prefix, so the last path segment is the key and the rest is the server. The
alert goes out as the server's JSON API (`POST <server>/push`), which keeps the key out of the
request path and therefore out of the server's access log. Basic auth, when the server uses
it, rides in the URL (`https://user:password@host/...`).

A push is a notification, not a document: APNs refuses payloads over 4 KB, so the title and
body are cut (with a marker) to fit, rather than the push failing. `id` (APNs collapse id,
64 bytes at most) comes from the alert's `dedup_key`, so a repeat replaces the earlier
notification on the phone instead of stacking up.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit, urlunsplit

from reaper.channels.base import ActionSlots, Channel, ChannelPlugin, ChannelRequest, Verdict
from reaper.settings.parse import ChannelSettings, ConfigError, Env, SettingsReader, parse_url

if TYPE_CHECKING:  # pydantic models: reading the settings must not import them
    from reaper.core.models import Alert, AlertLevel

GROUP = "reaper"
LEVELS: dict[AlertLevel, str] = {
    "info": "active",
    "warning": "timeSensitive",
    "critical": "critical",
}
# Bytes of title + body + url + id, as JSON-encoded by the server (Go escapes < > & as \\u003c):
# APNs' 4,096-byte limit minus room for the rest of the payload (aps, sound, group, level).
PAYLOAD_BUDGET = 3500
# A title is one line on the lock screen: 400 bytes is about 130 Chinese characters.
TITLE_BUDGET = 400
URL_MAX = 1000
COLLAPSE_ID_MAX = 64
CUT = "… [cut]"


def apns_size(text: str) -> int:
    """Bytes `text` takes in the JSON the server hands to APNs."""
    escaped = json.dumps(text, ensure_ascii=False)[1:-1]
    return len(escaped.encode("utf-8")) + 5 * sum(text.count(c) for c in "<>&")


def fit(text: str, budget: int) -> str:
    """`text`, or its longest prefix plus `CUT` that fits in `budget` bytes."""
    if apns_size(text) <= budget:
        return text
    room = budget - apns_size(CUT)
    used = 0
    end = 0
    for end, char in enumerate(text):  # noqa: B007 - `end` is the cut position
        used += apns_size(char)
        if used > room:
            break
    return text[:end] + CUT


def collapse_id(dedup_key: str) -> str:
    """APNs takes at most 64 bytes; a longer or non-ASCII key becomes a stable hash."""
    if dedup_key.isascii() and len(dedup_key) <= COLLAPSE_ID_MAX:
        return dedup_key
    return "reaper-" + hashlib.sha256(dedup_key.encode("utf-8")).hexdigest()[:40]


@dataclass(frozen=True)
class BarkChannel:
    push_url: str = field(repr=False)
    device_key: str = field(repr=False)
    name: str = "bark"

    @classmethod
    def from_url(cls, bark_url: str) -> BarkChannel:
        """Split `https://[user:pw@]<server>[/prefix]/<device_key>` into the push URL and key."""
        parts = urlsplit(bark_url.strip())
        prefix, _, key = parts.path.rstrip("/").rpartition("/")
        if not key:
            raise ValueError("BARK_URL: expected https://<server>/<device_key>, the key is missing")
        push_url = urlunsplit((parts.scheme, parts.netloc, f"{prefix}/push", "", ""))
        return cls(push_url=push_url, device_key=unquote(key))

    @property
    def secrets(self) -> tuple[str, ...]:
        secrets = [self.device_key]
        password = urlsplit(self.push_url).password
        if password:
            secrets.append(password)
        return tuple(secrets)

    def requests(self, alert: Alert) -> list[ChannelRequest]:
        body: dict[str, Any] = {
            "device_key": self.device_key,
            "group": GROUP,
            "level": LEVELS[alert.level],
        }
        url = alert.menu or alert.url
        if url and len(url) <= URL_MAX:
            body["url"] = url
        if alert.dedup_key:
            body["id"] = collapse_id(alert.dedup_key)
        body["title"] = fit(" ".join(alert.title.strip().splitlines()), TITLE_BUDGET)
        spent = sum(apns_size(str(body.get(k, ""))) for k in ("title", "url", "id"))
        body["body"] = fit(alert.body.strip(), PAYLOAD_BUDGET - spent)
        return [ChannelRequest(self.push_url, body)]

    def classify(self, status: int, payload: Any) -> Verdict:
        answer: dict[str, Any] = payload if isinstance(payload, dict) else {}
        if 200 <= status < 300 and answer.get("code") == 200:
            return Verdict("ok")
        message = answer.get("message")
        detail = f"HTTP {status}: {message}" if isinstance(message, str) else f"HTTP {status}"
        if status >= 500 or status in (408, 429):
            return Verdict("retry", detail)
        if status == 418:
            # bark-server's answer to a missing or wrong basic-auth password.
            detail += " (the server wants basic auth: https://user:password@host/... in BARK_URL)"
        elif 200 <= status < 300:
            detail = f"HTTP {status} without code 200 ({message or 'no JSON'})"
        return Verdict("fail", detail)


@dataclass(frozen=True)
class BarkSettings(ChannelSettings):
    channel = "bark"
    url: str = field(default="", repr=False)

    def secrets(self) -> list[str]:
        return [s for s in BarkChannel.from_url(self.url).secrets if s]


def read_settings(env: Env) -> BarkSettings | None:
    raw = env.get("BARK_URL")
    if raw is None:
        return None
    # The device key is in the path: a malformed value is never echoed.
    url = parse_url(raw, "BARK_URL", echo=False)
    if not urlsplit(url).path.strip("/"):
        raise ConfigError("BARK_URL", "expected https://<server>/<device_key>, the key is missing")
    return BarkSettings(url=url)


def build(settings: ChannelSettings) -> Channel:
    assert isinstance(settings, BarkSettings)
    return BarkChannel.from_url(settings.url)


SETTINGS = SettingsReader(
    channel_variables="BARK_URL",
    variables=("BARK_URL",),
    secret_variables=("BARK_URL",),
    read=read_settings,
)
PLUGIN = ChannelPlugin(
    name="bark",
    label="Bark",
    build=build,
    settings=SETTINGS,
    env_prefix="BARK_",
    # A push notification: APNs' 4 KB, less the rest of the payload.
    body_budget=3000,
    actions=ActionSlots(menu=True),
)
