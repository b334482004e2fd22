"""The vocabulary of settings: the error that names a variable, the shapes a plugin reads its
variables into, and the parsers every reader uses.

A bad value must stop the program before it does anything, with one line that names the
variable and what it expected; so parsing raises `ConfigError` and the command line turns that
into exit status 2. This is the ground floor: the core, the plugins and the loader
(`reaper.app.settings`) all stand on it, and it imports nothing of reaper's.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import time, timedelta
from typing import ClassVar
from urllib.parse import urlsplit


class ConfigError(Exception):
    """A setting is missing or malformed; `str()` is the one line shown to the user."""

    def __init__(self, variable: str, expected: str) -> None:
        super().__init__(f"{variable}: {expected}")
        self.variable = variable
        self.expected = expected


@dataclass(frozen=True)
class Account:
    """One provider account. The key never appears in a repr, a log line or an error."""

    provider: str
    name: str
    key: str = field(repr=False)


@dataclass(frozen=True)
class ProviderSettings:
    """What one provider plugin read from the environment: its accounts, and whatever else it
    needs (its plugin subclasses this)."""

    provider: ClassVar[str] = ""
    accounts: tuple[Account, ...] = ()

    def secrets(self) -> list[str]:
        return [a.key for a in self.accounts]


@dataclass(frozen=True)
class ChannelSettings:
    """What one alert channel read from the environment (its plugin subclasses this).
    `reaches_person`: a message delivered there can be read by a person (the log's cannot)."""

    channel: ClassVar[str] = ""
    reaches_person: ClassVar[bool] = True

    def secrets(self) -> list[str]:
        return []


class Env:
    """The environment as the settings read it: an empty value counts as unset."""

    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def get(self, name: str) -> str | None:
        value = self.values.get(name)
        return value if value is not None and value.strip() != "" else None


@dataclass(frozen=True)
class SettingsReader:
    """What a provider or channel plugin exposes to the settings: its variables (for the
    unknown-variable warning and the secret list) and how to read them."""

    variables: tuple[str, ...]
    # Read from SSM on AWS (and ignored in the plain environment there).
    secret_variables: tuple[str, ...]
    read: Callable[[Env], ProviderSettings | ChannelSettings | None]
    # The variable that holds a provider's keys (empty for a channel).
    key_variable: str = ""
    # How a channel that reaches a person is configured, in words ("<X>_BOT_TOKEN and
    # <X>_CHAT_ID"); empty for one that reaches no person (a plain webhook), which no
    # "set ..." hint names.
    channel_variables: str = ""
    # Of `secret_variables`, those kept beside a secret that are not secret themselves (an id
    # that goes with its token): never redacted, which would garble every log line.
    not_secret: tuple[str, ...] = ()


_DURATION_PART = re.compile(r"(\d+)([smhdw])")
_DURATION_WHOLE = re.compile(r"(?:\d+[smhdw])+")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


# Longer than any schedule or TTL anyone means (ten years), and far inside what a timedelta
# and a datetime can add without overflowing.
MAX_DURATION_SECONDS = 10 * 366 * 86400


def parse_duration(text: str, variable: str) -> timedelta:
    """`<int>` + `s`/`m`/`h`/`d`/`w`, compounds like `1h30m`. Bare numbers and zero are errors:
    a bare `24` could mean hours or seconds, and guessing wrong destroys someone's pod."""
    cleaned = text.strip().lower()
    expected = "a duration like 30m, 24h, 1h30m, 3d or 2w (a number with s/m/h/d/w, above zero)"
    if not _DURATION_WHOLE.fullmatch(cleaned):
        raise ConfigError(variable, f"expected {expected}, got {text!r}")
    seconds = sum(int(n) * _UNIT_SECONDS[u] for n, u in _DURATION_PART.findall(cleaned))
    if seconds <= 0:
        raise ConfigError(variable, f"expected {expected}, got {text!r}")
    if seconds > MAX_DURATION_SECONDS:
        raise ConfigError(variable, f"expected at most ten years (3660d), got {text!r}")
    return timedelta(seconds=seconds)


def parse_optional_duration(text: str, variable: str) -> timedelta | None:
    """A duration that turns an alert on, or `off` for none."""
    if text.strip().lower() == "off":
        return None
    return parse_duration(text, variable)


_ACCOUNT_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")


def split_named(item: str) -> tuple[str | None, str]:
    """`name=key` as (name, key), or (None, item) when the entry is one unnamed key.

    An entry is named only when an account name (1-64 of A-Z a-z 0-9 _ . -) comes before its
    first `=` and a key after it that is not only `=`: a key with base64 padding (`Zm9v...=`,
    `...==`) is never split into a "name" made of the key's text — which would then be printed
    as an account name — and `Bearer =`."""
    name, sep, key = item.partition("=")
    if sep and _ACCOUNT_NAME.fullmatch(name.strip()) and key.strip().strip("="):
        return name.strip(), key.strip()
    return None, item


def parse_accounts(text: str, variable: str, provider: str) -> tuple[Account, ...]:
    """Comma-separated keys, each optionally `name=key` (see `split_named`); unnamed ones are
    named by their position: 1, 2, ..."""
    accounts: list[Account] = []
    for position, item in enumerate(text.split(","), start=1):
        item = item.strip()
        if not item:
            raise ConfigError(variable, f"entry {position} is empty (expected key or name=key)")
        if not item.isascii() or not item.isprintable():
            # A pasted smart quote or a zero-width space: HTTP headers are ASCII, and sending
            # it would fail mid-pass. The key itself is never echoed.
            raise ConfigError(
                variable,
                f"entry {position}: the key has a character that is not printable ASCII "
                "(a pasted quote or space?)",
            )
        named, key = split_named(item)
        name = named or str(position)
        if not key or any(c.isspace() for c in key):
            raise ConfigError(
                variable, f"entry {position} ({name}): the key is empty or has spaces"
            )
        if any(a.name == name for a in accounts):
            raise ConfigError(variable, f"account name {name!r} is used twice")
        accounts.append(Account(provider=provider, name=name, key=key))
    return tuple(accounts)


def parse_url(text: str, variable: str, *, echo: bool = True) -> str:
    """An http(s) URL with a host and no whitespace. `echo=False` for URLs that hold a secret:
    the error then says what is wrong without repeating the value."""
    value = text.strip()
    got = f", got {text!r}" if echo else ""
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - a malformed port raises here
    except ValueError:
        raise ConfigError(variable, f"expected an http(s) URL{got}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(variable, f"expected an http(s) URL{got}")
    if any(c.isspace() for c in value) or not value.isprintable():
        raise ConfigError(variable, f"expected a URL without spaces{got}")
    return value.rstrip("/")


def is_loopback_host(host: str | None) -> bool:
    """`localhost`, 127.0.0.0/8 or ::1: a host only this machine reaches."""
    if not host:
        return False
    name = host.strip("[]").lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def parse_public_url(text: str, variable: str = "REAPER_PUBLIC_URL") -> str:
    """The base URL people reach: https, or http only on a loopback host (a local `serve`:
    session cookies and one-time action tokens must not cross a network in the clear). A
    trailing slash is dropped; a query, fragment or user has no place in a base URL."""
    value = parse_url(text, variable)
    parts = urlsplit(value)
    if parts.query or parts.fragment or "?" in value or "#" in value:
        raise ConfigError(variable, f"expected a base URL without ? or #, got {text!r}")
    if parts.username or parts.password:
        raise ConfigError(variable, f"expected a base URL without a user, got {text!r}")
    if parts.scheme != "https" and not is_loopback_host(parts.hostname):
        raise ConfigError(
            variable, f"expected https://... (http only on 127.0.0.1 or localhost), got {text!r}"
        )
    return value


def parse_int(text: str, variable: str, minimum: int) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise ConfigError(variable, f"expected a whole number >= {minimum}, got {text!r}") from None
    if value < minimum:
        raise ConfigError(variable, f"expected a whole number >= {minimum}, got {text!r}")
    return value


def parse_float(text: str, variable: str) -> float:
    try:
        value = float(text.strip())
    except ValueError:
        raise ConfigError(
            variable, f"expected an amount in USD like 5 or 2.50, got {text!r}"
        ) from None
    if not value >= 0 or value == float("inf"):
        raise ConfigError(variable, f"expected an amount in USD >= 0, got {text!r}")
    return value


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def parse_bool(text: str, variable: str) -> bool:
    lowered = text.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ConfigError(variable, f"expected true or false, got {text!r}")


def parse_url_key(text: str, variable: str) -> str:
    """Ping and admin keys travel in URL paths and headers: no spaces, no slashes."""
    value = text.strip()
    if not re.fullmatch(r"[A-Za-z0-9._~+=-]+", value):
        raise ConfigError(
            variable, "expected letters, digits and . _ ~ + = - only (it goes in URLs)"
        )
    return value


def parse_hours(text: str, variable: str) -> float:
    """A number of hours (12, 1.5); 0 turns the alert off."""
    try:
        value = float(text.strip())
    except ValueError:
        raise ConfigError(
            variable, f"expected a number of hours like 12 or 1.5 (0 = off), got {text!r}"
        ) from None
    if not 0 <= value < float("inf"):
        raise ConfigError(variable, f"expected a number of hours >= 0, got {text!r}")
    return value


def parse_time_of_day(text: str, variable: str) -> time:
    """`HH:MM` on the 24-hour clock, in UTC."""
    match = re.fullmatch(r"(\d{1,2}):(\d{2})", text.strip())
    if not match or int(match[1]) > 23 or int(match[2]) > 59:
        raise ConfigError(variable, f"expected a UTC time of day like 08:00 or 17:30, got {text!r}")
    return time(int(match[1]), int(match[2]))
