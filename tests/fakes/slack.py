"""A fake Slack incoming webhook: `POST /services/<team>/<bot>/<token>` as Slack answers it.

Success is 200 with the plain-text body `ok`. What Slack refuses is refused with its status and
its one word of plain text: a path that is no webhook (404 `no_service`), a body that is not
message JSON or a block Slack would not take (400 `invalid_payload`), no `text` (400 `no_text`).
The blocks are checked as Block Kit defines them for what the channel sends: a `header` of
plain_text up to 150 characters, `section`s of mrkdwn up to 3,000, at most 50 blocks.

mrkdwn is read as Slack reads it: `&`, `<` and `>` are control characters; `<url|label>` is a
link, `<!channel>`, `<!here>`, `<!everyone>` and `<@U…>` are mentions, and `&amp;` `&lt;` `&gt;`
are the escapes. Every accepted message is recorded with what a reader sees in it: its links and
the mentions that would notify someone. Rate limiting is what `rate_limit` plans: 429 with
`Retry-After` (seconds), as Slack answers.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any

from tests.fakes import FakeServer, Reply

HEADER_MAX = 150
SECTION_MAX = 3000
BLOCKS_MAX = 50
_ANGLED = re.compile(r"<([^<>]*)>")
_ENTITY = re.compile(r"&(amp|lt|gt);")


def _length(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


@dataclass(frozen=True)
class Link:
    url: str
    label: str


@dataclass
class Reading:
    """What a mrkdwn text shows: its links, the mentions it makes, and its text as read."""

    links: list[Link] = field(default_factory=list)
    mentions: list[str] = field(default_factory=list)
    text: str = ""
    # A bare `&` that is not an escape, or a `<`/`>` outside markup: Slack's docs ask for them
    # to be escaped; a sender that does not escape is a sender that lets markup through.
    unescaped: list[str] = field(default_factory=list)


def unescape(text: str) -> str:
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def read_mrkdwn(text: str) -> Reading:
    reading = Reading()
    shown: list[str] = []
    position = 0
    for match in _ANGLED.finditer(text):
        shown.append(text[position : match.start()])
        inner = match.group(1)
        if inner.startswith(("!", "@", "#")):
            reading.mentions.append(inner)
            shown.append(f"@{inner[1:]}")
        else:
            url, _, label = inner.partition("|")
            reading.links.append(Link(unescape(url), unescape(label or url)))
            shown.append(unescape(label or url))
        position = match.end()
    shown.append(text[position:])
    outside = "".join(
        part for i, part in enumerate(_ANGLED.split(text)) if i % 2 == 0
    )  # the text outside <...>
    for char in "<>":
        if char in outside:
            reading.unescaped.append(char)
    if "&" in _ENTITY.sub("", text):
        reading.unescaped.append("&")
    reading.text = unescape("".join(shown))
    return reading


@dataclass(frozen=True)
class Posted:
    payload: dict[str, Any]
    header: str
    sections: list[Reading]
    fallback: Reading

    @property
    def links(self) -> list[Link]:
        return [link for s in self.sections for link in s.links]

    @property
    def mentions(self) -> list[str]:
        return [m for r in (*self.sections, self.fallback) for m in r.mentions]

    @property
    def unescaped(self) -> list[str]:
        return [c for r in (*self.sections, self.fallback) for c in r.unescaped]

    @property
    def body(self) -> str:
        return "\n".join(s.text for s in self.sections)


def _text_object(block: dict[str, Any], kind: str, limit: int) -> str | None:
    text = block.get("text")
    if not isinstance(text, dict) or text.get("type") != kind:
        return None
    value = text.get("text")
    if not isinstance(value, str) or not 1 <= _length(value) <= limit:
        return None
    return value


class SlackFake(FakeServer):
    def __init__(self, hook: str = "/services/T0REAPER1/B0REAPER2/s1ackT0kenF0rTests0123") -> None:
        super().__init__()
        self.hook = hook
        self.posted: list[Posted] = []
        self._lock_posted = threading.Lock()

    @property
    def webhook_url(self) -> str:
        """What a user puts in SLACK_WEBHOOK_URL."""
        return self.url + self.hook

    def rate_limit(self, retry_after: int = 1, times: int = 1) -> None:
        self.plan(Reply(429, "rate_limited", (("Retry-After", str(retry_after)),)), times)

    def _read(self, payload: Any) -> Posted | str:
        """The message as Slack shows it, or the word Slack refuses it with."""
        if not isinstance(payload, dict):
            return "invalid_payload"
        text = payload.get("text")
        if not isinstance(text, str) or not text.strip():
            return "no_text"
        blocks = payload.get("blocks", [])
        if not isinstance(blocks, list) or len(blocks) > BLOCKS_MAX:
            return "invalid_payload"
        header = ""
        sections: list[Reading] = []
        for block in blocks:
            if not isinstance(block, dict):
                return "invalid_payload"
            if block.get("type") == "header":
                plain = _text_object(block, "plain_text", HEADER_MAX)
                if plain is None:
                    return "invalid_payload"
                header = plain
            elif block.get("type") == "section":
                mrkdwn = _text_object(block, "mrkdwn", SECTION_MAX)
                if mrkdwn is None:
                    return "invalid_payload"
                sections.append(read_mrkdwn(mrkdwn))
            else:
                return "invalid_payload"
        return Posted(payload, header, sections, read_mrkdwn(text))

    def answer(self, path: str, headers: dict[str, str], payload: Any) -> Reply:
        if path != self.hook:
            return Reply(404, "no_service")
        read = self._read(payload)
        if isinstance(read, str):
            return Reply(400, read)
        with self._lock_posted:
            self.posted.append(read)
        return Reply(200, "ok")
