"""Telegram: the Bot API's `sendMessage`, in HTML parse mode.

HTML mode is used only for the bold title and for `code` (a pair of backticks on one line, as
the alerts write commands: `reaper keep <target>`); everything that came from outside (instance
names, provider errors, texts forwarded from instances) is escaped first, so `<`, `>`, `&` and
quotes arrive as typed and nothing can inject markup or links.

Long texts are split, not cut: a forwarded log tail is useful whole. Telegram's limit is 4,096
characters of the text *after* entity parsing, counted in UTF-16 code units (an emoji counts 2),
so the splitting is done on the plain text and each part is escaped afterwards; an escape
sequence or a surrogate pair can never be cut in two, and escaping costs nothing against the
limit. A split prefers the last line break in the second half of a part (that line break is
dropped: Telegram trims it anyway); a line longer than a part is cut hard. At most `MAX_PARTS`
messages go out for one alert; past that the last part ends with a marker saying how many
characters were left out, so a runaway text cannot flood the chat.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from reaper.channels.base import Channel, ChannelRequest, Verdict
from reaper.settings.parse import ChannelSettings, ConfigError, Env, SettingsReader, parse_url

if TYPE_CHECKING:  # pydantic models: reading the settings must not import them
    from reaper.core.models import Alert, AlertLevel, PhoneAction

MESSAGE_LIMIT = 4096
MAX_PARTS = 5
# Leading mark on the title, so the level shows in the chat list.
LEVEL_MARK: dict[AlertLevel, str] = {"info": "", "warning": "⚠️ ", "critical": "🚨 "}
# Room kept in the last part for the cut marker (its longest form is well under this).
_MARKER_ROOM = 64


def cut_marker(left_out: int) -> str:
    return f"\n[… cut: {left_out} more characters]"


def utf16_len(text: str) -> int:
    """Length as Telegram counts it: UTF-16 code units."""
    return sum(2 if ord(c) > 0xFFFF else 1 for c in text)


@dataclass(frozen=True)
class Part:
    """One message: `text[start:end]` of the alert's plain text, then `suffix` (the cut marker)."""

    start: int
    end: int
    suffix: str = ""


def plain_text(alert: Alert) -> tuple[str, int]:
    """The text as it will read in the chat, and how many of its first characters are the title."""
    # A title is one line; anything else in it is kept exactly.
    title = LEVEL_MARK[alert.level] + " ".join(alert.title.strip().splitlines())
    lines = [title] + [s for s in (alert.body.strip(), alert.url or "") if s]
    text = "\n".join(lines)
    if not text.strip():
        return "(empty alert)", 0
    return text, len(title)


def _fit(text: str, start: int, budget: int) -> int:
    """The largest end such that text[start:end] is at most `budget` UTF-16 units."""
    units = 0
    end = start
    while end < len(text):
        units += 2 if ord(text[end]) > 0xFFFF else 1
        if units > budget:
            break
        end += 1
    return end


def _break_at(text: str, start: int, end: int) -> tuple[int, int]:
    """Where this part ends and the next starts: at a line break in the part's second half
    (dropped), else exactly at `end`."""
    newline = text.rfind("\n", start + (end - start) // 2, end)
    if newline > start:
        return newline, newline + 1
    return end, end


def split_text(text: str, limit: int = MESSAGE_LIMIT, max_parts: int = MAX_PARTS) -> list[Part]:
    """Cut `text` into parts of at most `limit` UTF-16 units each; see the module docstring."""
    parts: list[Part] = []
    start = 0
    while start < len(text):
        end = _fit(text, start, limit)
        if end >= len(text):
            parts.append(Part(start, len(text)))
            break
        if len(parts) == max_parts - 1:
            end, _ = _break_at(text, start, _fit(text, start, limit - _MARKER_ROOM))
            parts.append(Part(start, end, cut_marker(len(text) - end)))
            break
        end, start_next = _break_at(text, start, end)
        parts.append(Part(start, end))
        start = start_next
    # Telegram refuses a message that is only whitespace ("message text is empty").
    return [p for p in parts if text[p.start : p.end].strip() or p.suffix]


# `code` in a message (a command to run: `reaper keep <target>`), on one line, after escaping.
_CODE = re.compile(r"`([^`\n]+)`")


def _escape(text: str) -> str:
    """Escaped first, so that nothing from outside can become markup; then each pair of
    backticks on one line becomes <code> (an unpaired one stays as typed)."""
    return _CODE.sub(r"<code>\1</code>", html.escape(text))


def render_html(text: str, title_end: int, part: Part) -> str:
    """One part in HTML parse mode: the title's share in <b>, everything escaped, `code` as
    <code>."""
    bold = text[part.start : min(part.end, title_end)] if part.start < title_end else ""
    rest = text[max(part.start, title_end) : part.end]
    head = f"<b>{_escape(bold)}</b>" if bold.strip() else _escape(bold)
    return head + _escape(rest) + html.escape(part.suffix)


def render_parts(alert: Alert) -> list[str]:
    """The HTML of every message that delivers `alert`."""
    text, title_end = plain_text(alert)
    return [render_html(text, title_end, part) for part in split_text(text)]


_NUMERIC_CHAT = re.compile(r"-?\d+")
# Buttons one alert's keyboard carries at most (Telegram allows 100; a phone shows far fewer).
MAX_BUTTONS = 24
BUTTONS_PER_ROW = 2


def keyboard(actions: tuple[PhoneAction, ...]) -> list[list[dict[str, str]]]:
    """The inline keyboard of an alert's armed actions (see the module docstring)."""
    rows: list[list[dict[str, str]]] = []
    subject: tuple[str, ...] | None = None
    count = 0
    for action in actions:
        if action.kind == "open":
            if not (action.url and action.url.startswith("https://")):
                continue
            button = {"text": action.label, "url": action.url}
        elif action.callback:
            button = {"text": action.label, "callback_data": action.callback}
        else:
            continue
        if count == MAX_BUTTONS:
            break
        count += 1
        if rows and action.targets == subject and len(rows[-1]) < BUTTONS_PER_ROW:
            rows[-1].append(button)
        else:
            rows.append([button])
            subject = action.targets
    return rows


def chat_value(chat_id: str) -> int | str:
    """The chat as the Bot API takes it: a number, or an @channelname."""
    return int(chat_id) if _NUMERIC_CHAT.fullmatch(chat_id) else chat_id


@dataclass(frozen=True)
class TelegramChannel:
    token: str = field(repr=False)
    chat_id: str
    api_url: str = "https://api.telegram.org"
    name: str = "telegram"

    @property
    def secrets(self) -> tuple[str, ...]:
        return (self.token,)

    def requests(self, alert: Alert) -> list[ChannelRequest]:
        url = f"{self.api_url.rstrip('/')}/bot{self.token}/sendMessage"
        chat = chat_value(self.chat_id)
        parts = render_parts(alert)
        buttons = keyboard(alert.actions)
        requests = []
        for number, part in enumerate(parts, start=1):
            body: dict[str, Any] = {
                "chat_id": chat,
                "text": part,
                "parse_mode": "HTML",
                "disable_web_page_preview": True,
            }
            if buttons and number == len(parts):
                body["reply_markup"] = {"inline_keyboard": buttons}
            requests.append(ChannelRequest(url, body))
        return requests

    def classify(self, status: int, payload: Any) -> Verdict:
        answer: dict[str, Any] = payload if isinstance(payload, dict) else {}
        if status == 200 and answer.get("ok") is True:
            return Verdict("ok")
        description = answer.get("description")
        detail = (
            f"HTTP {status}: {description}" if isinstance(description, str) else f"HTTP {status}"
        )
        parameters = answer.get("parameters")
        parameters = parameters if isinstance(parameters, dict) else {}
        if status == 429:
            retry_after = parameters.get("retry_after")
            wait = float(retry_after) if isinstance(retry_after, int | float) else None
            return Verdict("retry", detail, wait)
        if status >= 500 or status == 408:
            return Verdict("retry", detail)
        if status in (401, 404):
            detail += " (check TELEGRAM_BOT_TOKEN)"
        elif isinstance(parameters.get("migrate_to_chat_id"), int):
            detail += f" (the group moved: set TELEGRAM_CHAT_ID={parameters['migrate_to_chat_id']})"
        elif status == 200:
            detail = "HTTP 200 without ok: true"
        return Verdict("fail", detail)


@dataclass(frozen=True)
class TelegramSettings(ChannelSettings):
    channel = "telegram"
    token: str = field(default="", repr=False)
    chat_id: str = ""
    api_url: str = "https://api.telegram.org"
    # TELEGRAM_WEBHOOK_SECRET: presses arrive at POST /telegram/<secret> (None: long polling).
    webhook_secret: str | None = field(default=None, repr=False)
    # TELEGRAM_ALLOWED_USERS: the user ids whose "Terminate now" counts (None: unset).
    allowed_users: tuple[int, ...] | None = None

    def secrets(self) -> list[str]:
        return [self.token] + ([self.webhook_secret] if self.webhook_secret else [])

    def private_chat_user(self) -> int | None:
        """The user of a private chat: there the chat's id is its user's id. None for a group
        (a negative id) or a channel (an @name)."""
        value = self.chat_id.strip()
        return int(value) if value.isdigit() and int(value) > 0 else None

    def may_terminate(self, user_id: int | None) -> bool:
        """Whether this user's "Terminate now" counts: one of TELEGRAM_ALLOWED_USERS; unset,
        the one user of a private chat — in a group or a channel, nobody (any member could
        press, or a channel's subscriber). Keep and Mute count from any member of the chat."""
        if user_id is None:
            return False
        if self.allowed_users is not None:
            return user_id in self.allowed_users
        return user_id == self.private_chat_user()

    def refusal(self, user_id: int | None) -> str:
        """The answer to a "Terminate now" press from a member who may not terminate (the
        press does nothing)."""
        allowed = self.who_may_terminate() or (
            "TELEGRAM_ALLOWED_USERS, which is not set (in a group or a channel any member"
            " could press)"
        )
        user = f"user {user_id}" if user_id is not None else "an unknown user"
        return (
            f"Refused: Terminate now counts only from {allowed}; this press came from {user}."
            " Keep and Mute count from anyone in the chat."
        )

    def who_may_terminate(self) -> str | None:
        """Who may press Terminate now, in words (None: nobody — a group or a channel without
        TELEGRAM_ALLOWED_USERS), for `reaper serve`'s start line and a refused press."""
        if self.allowed_users is not None:
            users = ", ".join(str(u) for u in self.allowed_users)
            return f"Telegram users {users} (TELEGRAM_ALLOWED_USERS)"
        private = self.private_chat_user()
        if private is not None:
            return f"Telegram user {private} (the private chat TELEGRAM_CHAT_ID)"
        return None


def parse_allowed_users(text: str | None) -> tuple[int, ...] | None:
    """TELEGRAM_ALLOWED_USERS: user ids, comma-separated (None when unset). A user id is a
    positive number; a group's id or an @name is not a user and is refused, as is an empty
    list (it would allow nobody, which an unset variable already says in a group)."""
    if text is None:
        return None
    items = [item.strip() for item in text.split(",")]
    if not any(items) or not all(item.isdigit() and int(item) > 0 for item in items):
        raise ConfigError(
            "TELEGRAM_ALLOWED_USERS",
            "expected Telegram user ids (positive numbers), comma-separated",
        )
    return tuple(dict.fromkeys(int(item) for item in items))


def read_settings(env: Env) -> TelegramSettings | None:
    """`TELEGRAM_BOT_TOKEN` and `TELEGRAM_CHAT_ID` together, or neither."""
    api_url = env.get("TELEGRAM_API_URL")
    url = "https://api.telegram.org" if api_url is None else parse_url(api_url, "TELEGRAM_API_URL")
    token, chat = env.get("TELEGRAM_BOT_TOKEN"), env.get("TELEGRAM_CHAT_ID")
    secret = env.get("TELEGRAM_WEBHOOK_SECRET")
    if secret is not None:
        secret = secret.strip()
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,256}", secret):
            # Never echoed: it is a secret.
            raise ConfigError(
                "TELEGRAM_WEBHOOK_SECRET", "expected 1-256 of A-Z a-z 0-9 _ - (Telegram's rule)"
            )
        if not token or not chat:
            raise ConfigError(
                "TELEGRAM_WEBHOOK_SECRET", "needs TELEGRAM_BOT_TOKEN and TELEGRAM_CHAT_ID"
            )
    if env.get("TELEGRAM_ALLOWED_USERS") is not None and not (token and chat):
        raise ConfigError("TELEGRAM_ALLOWED_USERS", "needs TELEGRAM_BOT_TOKEN and TELEGRAM_CHAT_ID")
    if token and not chat:
        raise ConfigError("TELEGRAM_CHAT_ID", "required when TELEGRAM_BOT_TOKEN is set")
    if chat and not token:
        raise ConfigError("TELEGRAM_BOT_TOKEN", "required when TELEGRAM_CHAT_ID is set")
    if not token or not chat:
        return None
    if not re.fullmatch(r"\d+:[A-Za-z0-9_-]+", token.strip()):
        raise ConfigError("TELEGRAM_BOT_TOKEN", "expected a bot token like 123456:ABC-DEF...")
    if not re.fullmatch(r"-?\d+|@[A-Za-z0-9_]{5,}", chat.strip()):
        raise ConfigError("TELEGRAM_CHAT_ID", "expected a numeric chat id or @channelname")
    return TelegramSettings(
        token=token.strip(),
        chat_id=chat.strip(),
        api_url=url,
        webhook_secret=secret,
        allowed_users=parse_allowed_users(env.get("TELEGRAM_ALLOWED_USERS")),
    )


def build(settings: ChannelSettings) -> Channel:
    assert isinstance(settings, TelegramSettings)
    return TelegramChannel(token=settings.token, chat_id=settings.chat_id, api_url=settings.api_url)


SETTINGS = SettingsReader(
    channel_variables="TELEGRAM_BOT_TOKEN and TELEGRAM_CHAT_ID",
    variables=(
        "TELEGRAM_BOT_TOKEN",
        "TELEGRAM_CHAT_ID",
        "TELEGRAM_API_URL",
        "TELEGRAM_WEBHOOK_SECRET",
        "TELEGRAM_ALLOWED_USERS",
    ),
    # The chat id goes with its token (kept in SSM beside it), but is no secret.
    secret_variables=("TELEGRAM_BOT_TOKEN", "TELEGRAM_CHAT_ID", "TELEGRAM_WEBHOOK_SECRET"),
    not_secret=("TELEGRAM_CHAT_ID",),
    read=read_settings,
)
