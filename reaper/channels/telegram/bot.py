"""The Telegram Bot API beyond `sendMessage`: reading button presses and answering them.

A press is a `callback_query` update. What it carries is read defensively (`parse_press`):
anything missing or of the wrong type makes it no press at all, and nothing in it is trusted
beyond what Telegram vouches for — the chat it came from (checked against TELEGRAM_CHAT_ID by
`from_chat`) and the message it was pressed on. The button's data is only a handle to look up.

`TelegramBot` makes the calls (`getUpdates`, `answerCallbackQuery`, `editMessageText`,
`editMessageReplyMarkup`, `setWebhook`, `deleteWebhook`) with the bot token in the URL path, as
the API wants it; an error names the method and Telegram's description, never the URL. Each call
is bounded in total (connect, headers and the whole answer: a server trickling bytes cannot hold
the poller) and reads at most `ANSWER_CAP` of the answer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from reaper import USER_AGENT
from reaper.capped import byte_size, read_capped
from reaper.channels.telegram.send import MESSAGE_LIMIT, TelegramSettings, chat_value, utf16_len
from reaper.text import shown

# answerCallbackQuery shows at most this many characters.
ANSWER_LIMIT = 200
# The long poll: Telegram holds getUpdates open this long when nothing happens.
POLL_SECONDS = 25
# The most of an answer read: getUpdates brings at most 100 updates, each a press with the
# message it was made on (4096 characters at most).
ANSWER_CAP = 2 * 1024 * 1024


class BotError(Exception):
    """A Bot API call failed: `str()` is one line without the token; `status` the HTTP status
    (None: no answer)."""

    def __init__(self, detail: str, status: int | None = None) -> None:
        super().__init__(detail)
        self.status = status


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


@dataclass(frozen=True)
class Press:
    """One button press, as far as the update shows it."""

    update_id: int
    callback_id: str
    data: str
    user_id: int | None
    username: str | None
    first_name: str
    chat_id: int | None
    chat_username: str | None
    message_id: int | None
    text: str = ""
    entities: list[dict[str, Any]] = field(default_factory=list)
    keyboard: list[list[dict[str, Any]]] = field(default_factory=list)

    @property
    def who(self) -> str:
        """Who pressed, as the audit names them: "@name (Telegram user 42)"."""
        name = f"@{self.username}" if self.username else (self.first_name or "someone")
        return f"{name} (Telegram user {self.user_id})" if self.user_id is not None else name


def update_id(update: Any) -> int | None:
    return _int(update.get("update_id")) if isinstance(update, dict) else None


def parse_press(update: Any) -> Press | None:
    """The press in an update, or None for anything else (a message, an edit, junk)."""
    if not isinstance(update, dict) or _int(update.get("update_id")) is None:
        return None
    query = update.get("callback_query")
    if not isinstance(query, dict):
        return None
    callback_id, data = _str(query.get("id")), _str(query.get("data"))
    if callback_id is None or data is None:
        return None
    user = _dict(query.get("from"))
    message = _dict(query.get("message"))
    chat = _dict(message.get("chat"))
    markup = _dict(message.get("reply_markup"))
    rows = markup.get("inline_keyboard")
    keyboard = (
        [[b for b in row if isinstance(b, dict)] for row in rows if isinstance(row, list)]
        if isinstance(rows, list)
        else []
    )
    entities = message.get("entities")
    return Press(
        update_id=int(update["update_id"]),
        callback_id=callback_id,
        data=data,
        user_id=_int(user.get("id")),
        # Shown as text: a member's name is chosen by them, and goes to the audit and the chat.
        username=shown(_str(user.get("username")) or "") or None,
        first_name=shown(_str(user.get("first_name")) or ""),
        chat_id=_int(chat.get("id")),
        chat_username=_str(chat.get("username")),
        message_id=_int(message.get("message_id")),
        text=_str(message.get("text")) or "",
        entities=[e for e in entities if isinstance(e, dict)] if isinstance(entities, list) else [],
        keyboard=keyboard,
    )


def from_chat(press: Press, chat_id: str) -> bool:
    """Whether the press came from the configured chat: its numeric id, or its @username for
    a channel configured by name. A press on no message (too old, or inline) never is."""
    if press.chat_id is None or press.message_id is None:
        return False
    configured = chat_value(chat_id)
    if isinstance(configured, int):
        return press.chat_id == configured
    return (press.chat_username or "").lower() == configured.removeprefix("@").lower()


def short_answer(text: str) -> str:
    return text if len(text) <= ANSWER_LIMIT else text[: ANSWER_LIMIT - 1] + "…"


def with_result(press: Press, line: str) -> tuple[str, list[dict[str, Any]]] | None:
    """The pressed message's text with `line` appended (its formatting kept), or None when
    that would not fit in a message."""
    text = f"{press.text}\n\n{line}" if press.text else line
    if utf16_len(text) > MESSAGE_LIMIT:
        return None
    return text, press.entities


class TelegramBot:
    """The bot's API calls, each one HTTP request with a bounded wait (short: an answer is
    given inside a webhook request, which on Lambda has 10 s in all)."""

    def __init__(
        self, settings: TelegramSettings, *, timeout: float = 5.0, answer_cap: int = ANSWER_CAP
    ) -> None:
        self._base = f"{settings.api_url.rstrip('/')}/bot{settings.token}"
        self.chat_id = settings.chat_id
        self.timeout = timeout
        self.answer_cap = answer_cap

    async def call(self, method: str, payload: dict[str, Any], *, wait: float = 0.0) -> Any:
        """The `result` of one call; `BotError` for anything else. `wait`: extra seconds the
        server may hold the answer (a long poll); the whole call never takes longer than
        `timeout` + `wait`."""
        import asyncio

        import httpx

        from reaper.channels.fanout import tls_context

        limit = self.timeout + wait
        try:
            async with (
                asyncio.timeout(limit),
                httpx.AsyncClient(
                    timeout=limit, verify=tls_context(), headers={"User-Agent": USER_AGENT}
                ) as client,
                client.stream("POST", f"{self._base}/{method}", json=payload) as response,
            ):
                body = await read_capped(response, self.answer_cap)
        except TimeoutError:
            raise BotError(f"{method}: no complete answer within {limit:g}s") from None
        except httpx.HTTPError as exc:
            raise BotError(f"{method}: no answer ({type(exc).__name__})") from None
        if body is None:
            detail = f"answered more than {byte_size(self.answer_cap)}"
            raise BotError(f"{method}: HTTP {response.status_code}: {detail}", response.status_code)
        try:
            answer = json.loads(body)
        except ValueError:
            answer = None
        if isinstance(answer, dict) and answer.get("ok") is True:
            return answer.get("result")
        description = answer.get("description") if isinstance(answer, dict) else None
        detail = f"HTTP {response.status_code}" + (
            f": {description}" if isinstance(description, str) else ""
        )
        raise BotError(f"{method}: {detail}", response.status_code)

    async def get_updates(self, offset: int | None, hold: int = POLL_SECONDS) -> list[Any]:
        """Updates after `offset`; Telegram holds the answer up to `hold` seconds."""
        payload: dict[str, Any] = {"timeout": hold, "allowed_updates": ["callback_query"]}
        if offset is not None:
            payload["offset"] = offset
        result = await self.call("getUpdates", payload, wait=hold)
        return result if isinstance(result, list) else []

    async def answer(self, callback_id: str, text: str) -> None:
        await self.call(
            "answerCallbackQuery", {"callback_query_id": callback_id, "text": short_answer(text)}
        )

    async def edit_text(
        self,
        press: Press,
        text: str,
        entities: list[dict[str, Any]],
        keyboard: list[list[dict[str, Any]]],
    ) -> None:
        payload: dict[str, Any] = {
            "chat_id": press.chat_id,
            "message_id": press.message_id,
            "text": text,
            "entities": entities,
            "disable_web_page_preview": True,
            "reply_markup": {"inline_keyboard": keyboard},
        }
        await self.call("editMessageText", payload)

    async def edit_keyboard(self, press: Press, keyboard: list[list[dict[str, Any]]]) -> None:
        await self.call(
            "editMessageReplyMarkup",
            {
                "chat_id": press.chat_id,
                "message_id": press.message_id,
                "reply_markup": {"inline_keyboard": keyboard},
            },
        )

    async def set_webhook(self, url: str, secret: str) -> None:
        await self.call(
            "setWebhook",
            {"url": url, "secret_token": secret, "allowed_updates": ["callback_query"]},
        )

    async def delete_webhook(self) -> None:
        await self.call("deleteWebhook", {})
