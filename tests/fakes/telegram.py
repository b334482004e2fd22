"""A fake Telegram Bot API answering `sendMessage` the way the real one does.

It parses HTML parse mode like Telegram: only the tags Telegram allows, balanced; the named
entities &lt; &gt; &amp; &quot; and numeric ones decoded. It rejects what the real server
rejects (bad entities, a text over 4,096 UTF-16 units after parsing, an empty text, an unknown
chat, a wrong token) with the same status codes and descriptions, and records the decoded text
of every message it accepted, so a test can compare what a phone would show with what was sent.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from tests.fakes import FakeServer, Reply

MESSAGE_LIMIT = 4096
FAKE_TOKEN = "123456:TEST-fake-token_xyz"
FAKE_CHAT = "4242"
ALLOWED_TAGS = {
    "b",
    "strong",
    "i",
    "em",
    "u",
    "ins",
    "s",
    "strike",
    "del",
    "span",
    "tg-spoiler",
    "a",
    "code",
    "pre",
    "blockquote",
    "tg-emoji",
}
_START_TAG = re.compile(
    r"([a-zA-Z][a-zA-Z0-9-]*)((?:\s+[a-zA-Z-]+(?:\s*=\s*(?:\"[^\"]*\"|'[^']*'|[^\s\"'>]+))?)*)\s*"
)
_ENTITY = re.compile(r"&(?:(lt|gt|amp|quot)|#(\d{1,7})|#[xX]([0-9a-fA-F]{1,6}));")
_NAMED = {"lt": "<", "gt": ">", "amp": "&", "quot": '"'}


class EntityError(ValueError):
    pass


@dataclass(frozen=True)
class Entity:
    tag: str
    offset: int  # UTF-16 units, as Telegram reports entities
    length: int


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def parse_html(source: str) -> tuple[str, list[Entity]]:
    """Telegram's HTML parse mode: the plain text and its entities, or `EntityError`."""
    out: list[str] = []
    stack: list[tuple[str, int]] = []
    entities: list[Entity] = []
    i = 0

    def offset(position: int) -> int:
        return len(source[:position].encode("utf-8"))

    while i < len(source):
        char = source[i]
        if char == "<":
            close = source.find(">", i)
            if close == -1:
                raise EntityError(f"Unclosed start tag at byte offset {offset(i)}")
            inner = source[i + 1 : close]
            if inner.startswith("/"):
                name = inner[1:].strip().lower()
                if not stack:
                    raise EntityError(f"Unexpected end tag at byte offset {offset(i)}")
                if stack[-1][0] != name:
                    raise EntityError(
                        f"Unmatched end tag at byte offset {offset(i)},"
                        f' expected "</{stack[-1][0]}>", found "</{name}>"'
                    )
                tag, start = stack.pop()
                here = utf16_len("".join(out))
                entities.append(Entity(tag, start, here - start))
            else:
                match = _START_TAG.fullmatch(inner)
                name = match.group(1).lower() if match else inner[:16]
                if not match or name not in ALLOWED_TAGS:
                    raise EntityError(f'Unsupported start tag "{name}" at byte offset {offset(i)}')
                if name == "span" and not re.search(r"class\s*=\s*\"tg-spoiler\"", match.group(2)):
                    raise EntityError(f'Unsupported start tag "span" at byte offset {offset(i)}')
                stack.append((name, utf16_len("".join(out))))
            i = close + 1
        elif char == "&" and (entity := _ENTITY.match(source, i)):
            named, decimal, hexadecimal = entity.groups()
            if named:
                out.append(_NAMED[named])
            else:
                code = int(decimal) if decimal else int(hexadecimal, 16)
                if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                    raise EntityError(f"Invalid character entity at byte offset {offset(i)}")
                out.append(chr(code))
            i = entity.end()
        else:
            out.append(char)
            i += 1
    if stack:
        raise EntityError(f'Can\'t find end tag corresponding to start tag "{stack[-1][0]}"')
    return "".join(out), entities


@dataclass(frozen=True)
class Message:
    chat_id: str
    text: str  # as the phone shows it: entities parsed
    source: str  # as sent
    entities: list[Entity] = field(default_factory=list)
    payload: dict[str, Any] = field(default_factory=dict)


def _error(status: int, description: str, **parameters: Any) -> Reply:
    body: dict[str, Any] = {"ok": False, "error_code": status, "description": description}
    if parameters:
        body["parameters"] = parameters
    return Reply(status, body)


class TelegramFake(FakeServer):
    def __init__(self, token: str = FAKE_TOKEN, chat_id: str = FAKE_CHAT) -> None:
        super().__init__()
        self.token = token
        self.chat_id = chat_id
        self.messages: list[Message] = []
        self._ids = iter(range(1, 1_000_000))
        self._messages_lock = threading.Lock()

    # Failures as the real server sends them.
    def rate_limit(self, retry_after: int, times: int = 1) -> None:
        reply = _error(
            429, f"Too Many Requests: retry after {retry_after}", retry_after=retry_after
        )
        self.plan(Reply(429, reply.body, (("Retry-After", str(retry_after)),)), times)

    def fail(self, status: int = 500, times: int = 1, description: str = "") -> None:
        self.plan(_error(status, description or "Internal Server Error"), times)

    def answer(self, path: str, headers: dict[str, str], payload: Any) -> Reply:
        match = re.fullmatch(r"/bot([^/]+)/([A-Za-z]+)", path)
        if not match:
            return _error(404, "Not Found")
        token, method = match.groups()
        if token != self.token:
            if re.fullmatch(r"\d+:[A-Za-z0-9_-]+", token):
                return _error(401, "Unauthorized")
            return _error(404, "Not Found")
        if method.lower() != "sendmessage":
            return _error(404, "Not Found")
        if not isinstance(payload, dict):
            return _error(400, "Bad Request: message text is empty")
        return self._send_message(payload)

    def _send_message(self, payload: dict[str, Any]) -> Reply:
        if str(payload.get("chat_id")) != self.chat_id:
            return _error(400, "Bad Request: chat not found")
        source = payload.get("text")
        if not isinstance(source, str) or not source:
            return _error(400, "Bad Request: message text is empty")
        mode = payload.get("parse_mode")
        entities: list[Entity] = []
        if mode == "HTML":
            try:
                text, entities = parse_html(source)
            except EntityError as exc:
                return _error(400, f"Bad Request: can't parse entities: {exc}")
        elif mode in (None, ""):
            text = source
        else:
            return _error(400, "Bad Request: unsupported parse_mode")
        if not text.strip():
            return _error(400, "Bad Request: message text is empty")
        if utf16_len(text) > MESSAGE_LIMIT:
            return _error(400, "Bad Request: message is too long")
        with self._messages_lock:
            self.messages.append(Message(self.chat_id, text, source, entities, payload))
            message_id = next(self._ids)
        result = {
            "message_id": message_id,
            "date": int(time.time()),
            "chat": {"id": int(chat) if (chat := self.chat_id).lstrip("-").isdigit() else chat},
            "text": text,
        }
        return Reply(200, {"ok": True, "result": result})
