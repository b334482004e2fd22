"""A fake Discord webhook: `POST /api/v10/webhooks/<id>/<token>` as Discord's API answers it.

Success is 204 without a body (200 with the message under `?wait=true`). What Discord refuses is
refused with its status and error JSON (`{"message", "code"}`): an unknown webhook (404, 10015),
an empty message (400, 50006), a form body over Discord's limits (400, 50035: content over 2,000
characters, more than 10 embeds, an embed title over 256, a description over 4,096, over 6,000
over all embeds). A webhook URL that names no API version is answered as Discord's default
(deprecated) version would: the fake records it as `unversioned`, which the channel must never
provoke.

Mentions are read as Discord reads them: `@everyone`, `@here`, `<@id>` and `<@&role>` in the
content ping unless `allowed_mentions` says otherwise (`{"parse": []}` pings nobody); every
accepted message is recorded with the pings it made. Rate limiting is what `rate_limit` plans:
429 with `{"message", "retry_after": <seconds>, "global"}` and `Retry-After`, as Discord answers.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.fakes import FakeServer, Reply

CONTENT_MAX = 2000
EMBEDS_MAX = 10
TITLE_MAX = 256
DESCRIPTION_MAX = 4096
EMBEDS_TOTAL_MAX = 6000
_MENTION = re.compile(r"@everyone|@here|<@[!&]?\d+>")
_MASKED_LINK = re.compile(r"(?<!\\)\[((?:[^\[\]\\]|\\.)*)(?<!\\)\]\((https?://[^)\s]+)\)")


def _length(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _error(status: int, code: int, message: str, errors: dict[str, Any] | None = None) -> Reply:
    body: dict[str, Any] = {"message": message, "code": code}
    if errors:
        body["errors"] = errors
    return Reply(status, body)


def _too_long(where: str, limit: int) -> Reply:
    errors = {where: {"_errors": [{"code": "BASE_TYPE_MAX_LENGTH", "message": f"Must be {limit}"}]}}
    return _error(400, 50035, "Invalid Form Body", errors)


def masked_links(text: str) -> list[tuple[str, str]]:
    """The `[label](url)` links Discord renders in an embed (an escaped bracket is text)."""
    return [(label, url) for label, url in _MASKED_LINK.findall(text)]


@dataclass(frozen=True)
class Executed:
    payload: dict[str, Any]
    pings: list[str]
    unversioned: bool

    @property
    def content(self) -> str:
        return str(self.payload.get("content") or "")

    @property
    def embeds(self) -> list[dict[str, Any]]:
        return list(self.payload.get("embeds") or [])

    @property
    def description(self) -> str:
        return "\n".join(str(e.get("description") or "") for e in self.embeds)

    @property
    def links(self) -> list[tuple[str, str]]:
        return masked_links(self.description)


class DiscordFake(FakeServer):
    def __init__(
        self,
        webhook_id: str = "1300000000000000042",
        token: str = "d1sc0rdT0kenF0rTests-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJ",  # noqa: S107
    ) -> None:
        super().__init__()
        self.webhook_id = webhook_id
        self.token = token
        self.executed: list[Executed] = []
        self._lock_executed = threading.Lock()

    @property
    def webhook_url(self) -> str:
        """What Discord's channel settings copy, and a user puts in DISCORD_WEBHOOK_URL."""
        return f"{self.url}/api/webhooks/{self.webhook_id}/{self.token}"

    def rate_limit(self, retry_after: float = 0.5, times: int = 1) -> None:
        body = {
            "message": "You are being rate limited.",
            "retry_after": retry_after,
            "global": False,
        }
        header = (("Retry-After", str(max(1, round(retry_after)))),)
        self.plan(Reply(429, body, header), times)

    @staticmethod
    def _pings(payload: dict[str, Any]) -> list[str]:
        content = str(payload.get("content") or "")
        allowed = payload.get("allowed_mentions")
        parse = allowed.get("parse") if isinstance(allowed, dict) else None
        found = _MENTION.findall(content)
        if parse is None:
            return found
        kinds = set(parse) if isinstance(parse, list) else set()
        return [
            m
            for m in found
            if ("everyone" in kinds and m in ("@everyone", "@here"))
            or ("users" in kinds and m.startswith("<@") and not m.startswith("<@&"))
            or ("roles" in kinds and m.startswith("<@&"))
        ]

    @staticmethod
    def _refusal(payload: Any) -> Reply | None:
        if not isinstance(payload, dict):
            return _error(400, 50109, "The request body contains invalid JSON.")
        content = payload.get("content")
        embeds = payload.get("embeds") or []
        if not content and not embeds:
            return _error(400, 50006, "Cannot send an empty message")
        if content is not None and (not isinstance(content, str) or _length(content) > CONTENT_MAX):
            return _too_long("content", CONTENT_MAX)
        if not isinstance(embeds, list) or len(embeds) > EMBEDS_MAX:
            return _too_long("embeds", EMBEDS_MAX)
        total = 0
        for number, embed in enumerate(embeds):
            if not isinstance(embed, dict):
                return _error(400, 50035, "Invalid Form Body")
            title, text = str(embed.get("title") or ""), str(embed.get("description") or "")
            if _length(title) > TITLE_MAX:
                return _too_long(f"embeds.{number}.title", TITLE_MAX)
            if _length(text) > DESCRIPTION_MAX:
                return _too_long(f"embeds.{number}.description", DESCRIPTION_MAX)
            total += _length(title) + _length(text)
        if total > EMBEDS_TOTAL_MAX:
            return _too_long("embeds", EMBEDS_TOTAL_MAX)
        return None

    def answer(self, path: str, headers: dict[str, str], payload: Any) -> Reply:
        parts = urlsplit(path)
        hook = f"/webhooks/{self.webhook_id}/{self.token}"
        versioned = parts.path == f"/api/v10{hook}"
        if not versioned and parts.path != f"/api{hook}":
            return _error(404, 10015, "Unknown Webhook")
        refused = self._refusal(payload)
        if refused is not None:
            return refused
        assert isinstance(payload, dict)
        with self._lock_executed:
            self.executed.append(Executed(payload, self._pings(payload), not versioned))
        if parse_qs(parts.query).get("wait") == ["true"]:
            return Reply(200, {"id": "1300000000000000099", **json.loads(json.dumps(payload))})
        return Reply(204, None)
