"""A fake Telegram Bot API answering `sendMessage` the way the real one does, and the bot side of
button presses: `getUpdates` (a queue of updates, offsets, long polls), `answerCallbackQuery`,
`editMessageText`, `editMessageReplyMarkup`, `setWebhook` and `deleteWebhook`.

It parses HTML parse mode like Telegram: only the tags Telegram allows, balanced; the named
entities &lt; &gt; &amp; &quot; and numeric ones decoded. It rejects what the real server
rejects (bad entities, a text over 4,096 UTF-16 units after parsing, an empty text, an unknown
chat, a wrong token, button data over 64 bytes, a second answer to one press, `getUpdates`
while a webhook is set) with the same status codes and descriptions, and records the decoded
text of every message it accepted, so a test can compare what a phone would show with what
was sent. `press()` makes the update a phone sends when a button of a sent message is pressed.
"""

from __future__ import annotations

import itertools
import re
import threading
import time
from dataclasses import dataclass, field, replace
from typing import Any

from tests.fakes import FakeServer, Reply

MESSAGE_LIMIT = 4096
FAKE_TOKEN = "123456:TEST-fake-token_xyz"
# A private chat with Alice (below): in Telegram a private chat's id is its user's id.
FAKE_CHAT = "42"
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
    message_id: int = 0
    # The inline keyboard under it: rows of buttons ({"text", "callback_data" | "url"}).
    keyboard: list[list[dict[str, Any]]] = field(default_factory=list)

    def button(self, text: str) -> dict[str, Any]:
        """The button whose text is `text` (or starts with it)."""
        for row in self.keyboard:
            for button in row:
                if button["text"] == text or button["text"].startswith(text):
                    return button
        raise KeyError(f"no button {text!r} under message {self.message_id}: {self.labels}")

    @property
    def labels(self) -> list[str]:
        return [b["text"] for row in self.keyboard for b in row]


ENTITY_TYPES = {"b": "bold", "strong": "bold", "i": "italic", "em": "italic", "code": "code"}
ALICE = {"id": 42, "is_bot": False, "first_name": "Alice", "username": "alice"}
CALLBACK_DATA_MAX = 64
# The real server holds a long poll up to 50 s; tests never wait that long.
LONG_POLL_CAP = 5.0


def _error(status: int, description: str, **parameters: Any) -> Reply:
    body: dict[str, Any] = {"ok": False, "error_code": status, "description": description}
    if parameters:
        body["parameters"] = parameters
    return Reply(status, body)


def _keyboard(payload: dict[str, Any]) -> list[list[dict[str, Any]]] | Reply:
    """The inline keyboard of a request, or the error Telegram gives for a bad one."""
    markup = payload.get("reply_markup")
    if markup is None:
        return []
    rows = markup.get("inline_keyboard") if isinstance(markup, dict) else None
    if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows):
        return _error(400, "Bad Request: can't parse inline keyboard button")
    for row in rows:
        for button in row:
            if not isinstance(button, dict) or not isinstance(button.get("text"), str):
                return _error(400, "Bad Request: can't parse inline keyboard button")
            data, url = button.get("callback_data"), button.get("url")
            if data is None and url is None:
                return _error(400, "Bad Request: can't parse inline keyboard button")
            if data is not None and not 1 <= len(str(data).encode()) <= CALLBACK_DATA_MAX:
                return _error(400, "Bad Request: BUTTON_DATA_INVALID")
            if url is not None and not str(url).startswith(("https://", "http://", "tg://")):
                return _error(400, "Bad Request: inline keyboard button URL is invalid")
    return [list(row) for row in rows]


class TelegramFake(FakeServer):
    def __init__(self, token: str = FAKE_TOKEN, chat_id: str = FAKE_CHAT) -> None:
        super().__init__()
        self.token = token
        self.chat_id = chat_id
        self.messages: list[Message] = []
        # Each message as it is now, after edits, by message id.
        self.current: dict[int, Message] = {}
        self.answers: list[dict[str, Any]] = []
        self.edits: list[dict[str, Any]] = []
        self.webhook: dict[str, Any] | None = None
        self.webhook_calls: list[dict[str, Any]] = []
        self.polls: list[dict[str, Any]] = []
        self._ids = iter(range(1, 1_000_000))
        self._messages_lock = threading.Lock()
        self._updates: list[dict[str, Any]] = []
        self._update_ids = itertools.count(1000)
        self._queries = itertools.count(1)
        self._open_queries: set[str] = set()
        self._arrived = threading.Condition(self._messages_lock)

    # --- the phone's side -------------------------------------------------------------------
    def message(self, message_id: int) -> Message:
        with self._messages_lock:
            return self.current[message_id]

    def last_message(self) -> Message:
        with self._messages_lock:
            return self.current[max(self.current)]

    def press(
        self,
        message: Message | int,
        button: str,
        *,
        user: dict[str, Any] | None = None,
        chat_id: str | None = None,
        data: str | None = None,
        queue: bool = True,
    ) -> dict[str, Any]:
        """The `callback_query` update of pressing `button` under `message` (as it is now),
        queued for getUpdates unless `queue=False` (a webhook test POSTs it). `user`, `chat_id`
        and `data` forge who pressed, where, and what the button carried."""
        current = self.message(message if isinstance(message, int) else message.message_id)
        pressed = current.button(button)
        chat = chat_id or current.chat_id
        entities = [
            {"type": ENTITY_TYPES.get(e.tag, e.tag), "offset": e.offset, "length": e.length}
            for e in current.entities
        ]
        query_id = str(next(self._queries))
        update = {
            "update_id": next(self._update_ids),
            "callback_query": {
                "id": query_id,
                "from": user or ALICE,
                "chat_instance": "-1234567890",
                "data": pressed["callback_data"] if data is None else data,
                "message": {
                    "message_id": current.message_id,
                    "date": int(time.time()),
                    "chat": {"id": int(chat) if chat.lstrip("-").isdigit() else chat},
                    "text": current.text,
                    "entities": entities,
                    "reply_markup": {"inline_keyboard": current.keyboard},
                },
            },
        }
        with self._messages_lock:
            self._open_queries.add(query_id)
            if queue:
                self._updates.append(update)
                self._arrived.notify_all()
        return update

    def queue(self, update: dict[str, Any]) -> None:
        with self._messages_lock:
            self._updates.append(update)
            self._arrived.notify_all()

    def pending_updates(self) -> int:
        with self._messages_lock:
            return len(self._updates)

    def close(self) -> None:
        self._release.set()  # ends a long poll under way
        with self._messages_lock:
            self._arrived.notify_all()
        super().close()

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
        handlers = {
            "sendmessage": self._send_message,
            "getupdates": self._get_updates,
            "answercallbackquery": self._answer_callback,
            "editmessagetext": self._edit_text,
            "editmessagereplymarkup": self._edit_markup,
            "setwebhook": self._set_webhook,
            "deletewebhook": self._delete_webhook,
        }
        handler = handlers.get(method.lower())
        if handler is None:
            return _error(404, "Not Found")
        if not isinstance(payload, dict):
            if method.lower() == "sendmessage":
                return _error(400, "Bad Request: message text is empty")
            payload = {}
        return handler(payload)

    def _ok(self, result: Any) -> Reply:
        return Reply(200, {"ok": True, "result": result})

    def _get_updates(self, payload: dict[str, Any]) -> Reply:
        with self._messages_lock:
            self.polls.append(payload)
            if self.webhook is not None:
                return _error(
                    409,
                    "Conflict: can't use getUpdates method while webhook is active; use"
                    " deleteWebhook to delete the webhook first",
                )
            offset = payload.get("offset")
            if isinstance(offset, int):
                # Updates before the offset are confirmed: Telegram forgets them.
                self._updates = [u for u in self._updates if u["update_id"] >= offset]
            wait = min(float(payload.get("timeout") or 0), LONG_POLL_CAP)
            deadline = time.monotonic() + wait
            while not self._updates and not self._release.is_set():
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._arrived.wait(left)
            return self._ok(list(self._updates))

    def _answer_callback(self, payload: dict[str, Any]) -> Reply:
        query = str(payload.get("callback_query_id"))
        text = payload.get("text", "")
        with self._messages_lock:
            if query not in self._open_queries:
                return _error(
                    400,
                    "Bad Request: query is too old and response timeout expired or query ID is"
                    " invalid",
                )
            if isinstance(text, str) and len(text) > 200:
                return _error(400, "Bad Request: MESSAGE_TOO_LONG")
            self._open_queries.discard(query)
            self.answers.append(payload)
        return self._ok(True)

    def _edited(self, payload: dict[str, Any], *, text: bool) -> Reply:
        keyboard = _keyboard(payload)
        if isinstance(keyboard, Reply):
            return keyboard
        with self._messages_lock:
            message_id = payload.get("message_id")
            current = self.current.get(message_id) if isinstance(message_id, int) else None
            if current is None or str(payload.get("chat_id")) != current.chat_id:
                return _error(400, "Bad Request: message to edit not found")
            update: dict[str, Any] = {"keyboard": keyboard}
            if text:
                new_text = payload.get("text")
                if not isinstance(new_text, str) or not new_text.strip():
                    return _error(400, "Bad Request: message text is empty")
                if utf16_len(new_text) > MESSAGE_LIMIT:
                    return _error(400, "Bad Request: MESSAGE_TOO_LONG")
                update["text"] = new_text
            edited = replace(current, **update)
            if edited.text == current.text and edited.keyboard == current.keyboard:
                return _error(
                    400,
                    "Bad Request: message is not modified: specified new message content and"
                    " reply markup are exactly the same as a current content and reply markup"
                    " of the message",
                )
            self.current[current.message_id] = edited
            self.edits.append(payload)
        return self._ok({"message_id": current.message_id, "text": edited.text})

    def _edit_text(self, payload: dict[str, Any]) -> Reply:
        return self._edited(payload, text=True)

    def _edit_markup(self, payload: dict[str, Any]) -> Reply:
        return self._edited(payload, text=False)

    def _set_webhook(self, payload: dict[str, Any]) -> Reply:
        url, secret = payload.get("url"), payload.get("secret_token")
        if not isinstance(url, str) or not url.startswith("https://"):
            return _error(
                400, "Bad Request: bad webhook: An HTTPS URL must be provided for webhook"
            )
        if secret is not None and not re.fullmatch(r"[A-Za-z0-9_-]{1,256}", str(secret)):
            return _error(400, "Bad Request: secret token contains unallowed characters")
        with self._messages_lock:
            self.webhook = payload
            self.webhook_calls.append(payload)
        return self._ok(True)

    def _delete_webhook(self, payload: dict[str, Any]) -> Reply:
        with self._messages_lock:
            self.webhook = None
            self.webhook_calls.append({"delete": True})
        return self._ok(True)

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
        keyboard = _keyboard(payload)
        if isinstance(keyboard, Reply):
            return keyboard
        with self._messages_lock:
            message_id = next(self._ids)
            message = Message(self.chat_id, text, source, entities, payload, message_id, keyboard)
            self.messages.append(message)
            self.current[message_id] = message
        result = {
            "message_id": message_id,
            "date": int(time.time()),
            "chat": {"id": int(chat) if (chat := self.chat_id).lstrip("-").isdigit() else chat},
            "text": text,
        }
        if keyboard:
            result["reply_markup"] = {"inline_keyboard": keyboard}
        return Reply(200, {"ok": True, "result": result})
