"""What the incoming-webhook channels share (the two chat services' and the plain webhook).

An incoming webhook's URL is its only credential: whoever holds it posts to the channel. So the
URL is a secret as a whole (kept in SSM on AWS, scrubbed from every log line and detail), and a
malformed value is never echoed in an error. The token inside it (a chat service's last path
segment) is registered on its own too: an error message of an HTTP library may quote a path
without its host.

The human channels (the chat services) show an alert's armed actions as links to the action page
`/act/<token>`, which says what will happen and asks for the press that does it; "terminate now"
is labelled with an ellipsis, as the page asks to confirm. Without REAPER_PUBLIC_URL no action is
armed with a link, and the message carries none.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from reaper.settings.parse import Env, parse_url

if TYPE_CHECKING:  # pydantic models: reading the settings must not import them
    from reaper.core.models import Alert

# A path segment at least this long is a token (the chat services' have 24 and 68 characters);
# shorter ones are words (`services`, `webhooks`, an id) that would scrub innocent text from
# the log.
TOKEN_MIN = 16
CUT = "… [cut]"


def url_secrets(url: str) -> tuple[str, ...]:
    """The URL, and what in it could leak on its own: its password, its query, a token."""
    parts = urlsplit(url)
    found = [url]
    if parts.password:
        found.append(parts.password)
    if len(parts.query) >= TOKEN_MIN:
        found.append(parts.query)
    found += [s for s in parts.path.split("/") if len(s) >= TOKEN_MIN]
    return tuple(found)


def read_url(env: Env, variable: str) -> str | None:
    """The webhook URL in `variable`, None when unset; ConfigError, without the value, when it
    is not an http(s) URL."""
    raw = env.get(variable)
    return None if raw is None else parse_url(raw, variable, echo=False)


def links(alert: Alert) -> list[tuple[str, str]]:
    """(label, url) for each action of the alert that has a link, then its own link."""
    found: list[tuple[str, str]] = []
    for action in alert.actions:
        if action.kind == "open" and action.url:
            found.append((action.label, action.url))
        elif action.link and action.kind == "terminate":
            found.append((f"{action.label}…", action.link))
        elif action.link:
            found.append((action.label, action.link))
    if alert.url:
        found.append(("Open", alert.url))
    return found


def length(text: str) -> int:
    """Characters as a JavaScript string counts them (UTF-16 code units): never fewer than
    Python's, so a text that fits by this count fits by the service's whatever it counts."""
    return len(text.encode("utf-16-le")) // 2


def fit(text: str, budget: int, escape: Callable[[str], str]) -> str:
    """`escape(text)`, or the escape of its longest prefix followed by `CUT`, within `budget`
    characters (`length`). The text is cut before escaping, so an escape is never cut in half;
    `escape` works character by character (the escape of a text is its characters' escapes)."""
    whole = escape(text)
    if length(whole) <= budget:
        return whole
    room = budget - length(CUT)
    used = 0
    end = 0
    for end, char in enumerate(text):  # noqa: B007 - `end` is the cut position
        used += length(escape(char))
        if used > room:
            break
    return escape(text[:end]) + CUT


def one_line(text: str) -> str:
    """A title on one line."""
    return " ".join(text.strip().splitlines())


__all__ = ["CUT", "fit", "length", "links", "one_line", "read_url", "url_secrets"]
