"""Settings: every variable of the public contract, parsed and validated before anything runs.

A bad value must stop the program before it does anything, with one line that names the
variable and what it expected; so parsing raises `ConfigError` and the CLI turns that into
exit status 2. Nothing else in reaper reads the environment.

The settings of the core (modes, durations, state, keys of the HTTP API) are read here; each
provider and channel reads its own variables (`read_settings` of its plugin, found through the
registries), so that a new integration brings its settings with it. The parsing helpers below
are theirs to use.
"""

from __future__ import annotations

import ipaddress
import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import time, timedelta
from importlib import import_module
from pathlib import Path
from typing import ClassVar, Literal
from urllib.parse import urlsplit

from reaper.channels.registry import CHANNELS
from reaper.providers.registry import PROVIDERS


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
class StateURL:
    kind: Literal["sqlite", "dynamodb"]
    # A filesystem path for sqlite, a table name for dynamodb.
    location: str
    # dynamodb only: `?region=` of the URL; None = the usual AWS variables decide.
    region: str | None = None


@dataclass(frozen=True)
class Settings:
    # The configured providers and channels, each as its plugin read it.
    providers: tuple[ProviderSettings, ...] = ()
    channels: tuple[ChannelSettings, ...] = ()
    mode: Literal["enforce", "observe"] = "enforce"
    stopped_ttl: timedelta = timedelta(hours=24)
    warn_before: timedelta = timedelta(hours=1)
    max_terminations: int = 10
    protect_marker: str = "reaper:keep"
    state: StateURL = field(default_factory=lambda: StateURL("sqlite", str(default_state_path())))
    ping_key: str | None = field(default=None, repr=False)
    admin_key: str | None = field(default=None, repr=False)
    heartbeat_timeout: timedelta = timedelta(minutes=5)
    # None (`off`): no reminders; the down alert goes out once.
    heartbeat_repeat: timedelta | None = timedelta(hours=1)
    balance_min: float = 5.0
    max_monitors: int = 500
    heartbeat_required: bool = False
    reap_every: timedelta = timedelta(hours=1)
    watch_every: timedelta = timedelta(minutes=1)
    max_runtime: timedelta | None = None
    idle_alert_after: timedelta | None = timedelta(hours=1)
    # Beyond the contract: how long a volume may sit attached to nothing before it is a leak.
    volume_orphan_after: timedelta = timedelta(hours=24)
    # A termination needs a warning that reached a person; False accepts a warning written
    # only to the log.
    require_channel: bool = True
    # Stuck starting, scheduling, in error or abandoned this long: named in an alert.
    stuck_after: timedelta | None = timedelta(hours=6)
    # A reap pass's whole time; its listings are cut at half of it (reaper.passes.deadline).
    pass_deadline: timedelta = timedelta(minutes=10)
    # --- newcomer and operator (#19) -------------------------------------------------------
    # Runway: alert when a balance lasts fewer hours than this at the current spend; 0 = off.
    balance_hours: float = 12.0
    # Logs: the lowest level written, and the format (None: JSON on Lambda, text elsewhere).
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    log_format: Literal["text", "json"] | None = None
    # The daily digest's time of day (UTC), under `reaper serve` and on AWS alike.
    digest_at: time = time(8, 0)
    # REAPER_PUBLIC_URL: the base URL people reach (action links in alerts, the status page),
    # without a trailing slash; None: no link-based actions are offered.
    public_url: str | None = None
    # False: a ping to an unknown host answers 404 instead of creating its monitor.
    auto_create: bool = True
    # REAPER_ALLOW_UNKNOWN: an unknown REAPER_* name is only a warning, even for `reap` and
    # `serve` in enforce mode.
    allow_unknown: bool = False
    # The REAPER_* names of the environment that reaper does not know (typos: each one a
    # setting whose default silently applies), for whoever decides what they mean.
    unknown_names: tuple[str, ...] = ()

    @property
    def human_channel(self) -> bool:
        """Whether any configured channel reaches a person."""
        return any(c.reaches_person for c in self.channels)

    @property
    def channel_hint(self) -> str:
        """The variables that configure a channel that reaches a person, for "set ..." in a
        message."""
        readers = [plugin_settings(path) for path in CHANNELS.values()]
        firsts = [r.channel_variables for r in readers if r.channel_variables]
        return ", ".join(firsts[:-1]) + " or " + firsts[-1] if len(firsts) > 1 else "".join(firsts)

    @property
    def accounts(self) -> tuple[Account, ...]:
        return tuple(a for p in self.providers for a in p.accounts)

    def provider(self, name: str) -> ProviderSettings | None:
        """The settings of one provider, None when it is not configured."""
        return next((p for p in self.providers if p.provider == name), None)

    def channel(self, name: str) -> ChannelSettings | None:
        return next((c for c in self.channels if c.channel == name), None)

    def require_provider_keys(self) -> None:
        """`reaper reap` without any provider key is a config error, not an empty pass."""
        if not self.accounts:
            keys = " / ".join(key_variables())
            raise ConfigError(keys, "set at least one")

    def secrets(self) -> list[str]:
        """Every secret value, so that log and error output can be scrubbed of them."""
        values = [v for v in (self.ping_key, self.admin_key) if v]
        for provider in self.providers:
            values += provider.secrets()
        for channel in self.channels:
            values += channel.secrets()
        return [v for v in values if v]


def key_variables() -> list[str]:
    """The variables that configure a provider's accounts, in registry order."""
    return [plugin_settings(path).key_variable for path in PROVIDERS.values()]


@dataclass(frozen=True)
class SettingsReader:
    """What a provider or channel plugin exposes to the settings: its variables (for the
    unknown-variable warning and the secret list) and how to read them."""

    variables: tuple[str, ...]
    secret_variables: tuple[str, ...]
    read: Callable[[Env], ProviderSettings | ChannelSettings | None]
    # The variable that holds a provider's keys (empty for a channel).
    key_variable: str = ""
    # How a channel that reaches a person is configured, in words ("TELEGRAM_BOT_TOKEN and
    # TELEGRAM_CHAT_ID"); empty for one that reaches no person (a plain webhook), which no
    # "set ..." hint names.
    channel_variables: str = ""


def plugin_settings(path: str) -> SettingsReader:
    """The `SETTINGS` of the plugin module at `path` (imported on first use)."""
    reader: SettingsReader = import_module(path).SETTINGS
    return reader


def default_state_path() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "reaper" / "state.db"


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


def parse_state_url(text: str) -> StateURL:
    variable = "REAPER_STATE"
    if text.startswith("sqlite:///"):
        path = text[len("sqlite:///") :]
        if not path:
            raise ConfigError(variable, "expected sqlite:///<path>, the path is empty")
        # sqlite:////abs/path and sqlite:///relative/path, as SQLAlchemy spells them.
        return StateURL("sqlite", path)
    if text.startswith("dynamodb://"):
        table, _, query = text[len("dynamodb://") :].partition("?")
        if not re.fullmatch(r"[A-Za-z0-9_.-]{3,255}", table):
            raise ConfigError(variable, "expected dynamodb://<table> with a valid table name")
        region: str | None = None
        if query:
            name, _, value = query.partition("=")
            if name != "region" or not re.fullmatch(r"[a-z]{2}(-[a-z]+)+-\d", value):
                raise ConfigError(
                    variable, "expected dynamodb://<table> or dynamodb://<table>?region=<region>"
                )
            region = value
        return StateURL("dynamodb", table, region)
    raise ConfigError(variable, f"expected sqlite:///<path> or dynamodb://<table>, got {text!r}")


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


# The HTTP API's keys are refused below this length: the ping key sits in every URL an instance
# holds (on a third party's host), the admin key opens the status page and signs its sessions.
KEY_MIN_LENGTH = 16


def weak_key(settings: Settings) -> ConfigError | None:
    """The error refusing the first of REAPER_PING_KEY and REAPER_ADMIN_KEY shorter than
    KEY_MIN_LENGTH, or None. Only what serves HTTP asks (`reaper serve`, the Lambda HTTP
    function): the reap and watch passes use neither key, and run whatever they are."""
    for variable, key in (
        ("REAPER_PING_KEY", settings.ping_key),
        ("REAPER_ADMIN_KEY", settings.admin_key),
    ):
        if key is not None and len(key) < KEY_MIN_LENGTH:
            return ConfigError(
                variable,
                f"expected at least {KEY_MIN_LENGTH} characters (a short key can be guessed);"
                " make one with: openssl rand -hex 24",
            )
    return None


def read_dotenv(path: Path) -> dict[str, str]:
    """A small `.env` reader: KEY=VALUE lines, `export ` prefixes, quotes, `#` comments.

    Written here rather than pulled in as a dependency because this is all of it that reaper
    needs, and the Lambda package stays smaller.
    """
    values: dict[str, str] = {}
    try:
        # utf-8-sig: an editor on Windows saves a byte order mark first, which would otherwise
        # make the first line's name unreadable.
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        return values
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            str(path), f"cannot read the .env file ({exc.__class__.__name__})"
        ) from None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export ") :].lstrip()
        name, sep, value = line.partition("=")
        name = name.strip()
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise ConfigError(f"{path.name} line {number}", "expected NAME=value")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        elif " #" in value:
            value = value.split(" #", 1)[0].rstrip()
        values[name] = value
    return values


def load_settings(
    environ: Mapping[str, str] | None = None,
    *,
    dotenv: Path | None = Path(".env"),
    strict: bool = False,
) -> Settings:
    """Build the settings from the environment, with a `.env` file under it.

    Variables already in the environment win over the file, as with every dotenv tool. An
    empty value counts as unset. `strict` (what `reaper reap` and `serve` ask): in enforce
    mode, an unknown REAPER_* name is a ConfigError naming it and the nearest known name —
    `REAPER_STOPED_TTL=48h` would otherwise leave the 24h default in force and terminate a day
    early — unless REAPER_ALLOW_UNKNOWN=true; other names, and every name otherwise, are
    warnings on stderr.
    """
    from_file: dict[str, str] = read_dotenv(dotenv) if dotenv is not None else {}
    given = os.environ if environ is None else environ
    values = {**from_file, **given}
    env = Env(values)
    get = env.get

    kwargs: dict[str, object] = {}
    providers = [plugin_settings(path).read(env) for path in PROVIDERS.values()]
    kwargs["providers"] = tuple(p for p in providers if isinstance(p, ProviderSettings))

    if (raw := get("REAPER_MODE")) is not None:
        mode = raw.strip().lower()
        if mode not in ("enforce", "observe"):
            raise ConfigError("REAPER_MODE", f"expected enforce or observe, got {raw!r}")
        kwargs["mode"] = mode

    for variable, attr in (
        ("REAPER_STOPPED_TTL", "stopped_ttl"),
        ("REAPER_WARN_BEFORE", "warn_before"),
        ("HEARTBEAT_TIMEOUT", "heartbeat_timeout"),
        ("REAPER_REAP_EVERY", "reap_every"),
        ("REAPER_WATCH_EVERY", "watch_every"),
        ("REAPER_VOLUME_ORPHAN_AFTER", "volume_orphan_after"),
        ("REAPER_PASS_DEADLINE", "pass_deadline"),
    ):
        if (raw := get(variable)) is not None:
            kwargs[attr] = parse_duration(raw, variable)
    # Durations that turn an alert on also take `off`.
    for variable, attr in (
        ("HEARTBEAT_REPEAT", "heartbeat_repeat"),
        ("IDLE_ALERT_AFTER", "idle_alert_after"),
        ("REAPER_MAX_RUNTIME", "max_runtime"),
        ("REAPER_STUCK_AFTER", "stuck_after"),
    ):
        if (raw := get(variable)) is not None:
            kwargs[attr] = parse_optional_duration(raw, variable)
    if (raw := get("REAPER_REQUIRE_CHANNEL")) is not None:
        kwargs["require_channel"] = parse_bool(raw, "REAPER_REQUIRE_CHANNEL")

    if (raw := get("REAPER_MAX_TERMINATIONS")) is not None:
        kwargs["max_terminations"] = parse_int(raw, "REAPER_MAX_TERMINATIONS", 0)
    if (raw := get("REAPER_MAX_MONITORS")) is not None:
        kwargs["max_monitors"] = parse_int(raw, "REAPER_MAX_MONITORS", 1)
    if (raw := get("BALANCE_MIN")) is not None:
        kwargs["balance_min"] = parse_float(raw, "BALANCE_MIN")
    if (raw := get("HEARTBEAT_REQUIRED")) is not None:
        kwargs["heartbeat_required"] = parse_bool(raw, "HEARTBEAT_REQUIRED")
    if (raw := get("HEARTBEAT_AUTO_CREATE")) is not None:
        kwargs["auto_create"] = parse_bool(raw, "HEARTBEAT_AUTO_CREATE")
    if (raw := get("REAPER_PROTECT")) is not None:
        kwargs["protect_marker"] = raw.strip()
    if (raw := get("REAPER_STATE")) is not None:
        kwargs["state"] = parse_state_url(raw.strip())
    if (raw := get("REAPER_PING_KEY")) is not None:
        kwargs["ping_key"] = parse_url_key(raw, "REAPER_PING_KEY")
    if (raw := get("REAPER_ADMIN_KEY")) is not None:
        kwargs["admin_key"] = parse_url_key(raw, "REAPER_ADMIN_KEY")

    if (raw := get("REAPER_PUBLIC_URL")) is not None:
        kwargs["public_url"] = parse_public_url(raw, "REAPER_PUBLIC_URL")

    channels = [plugin_settings(path).read(env) for path in CHANNELS.values()]
    kwargs["channels"] = tuple(c for c in channels if isinstance(c, ChannelSettings))

    _read_operator_settings(get, kwargs)
    if (raw := get("REAPER_ALLOW_UNKNOWN")) is not None:
        kwargs["allow_unknown"] = parse_bool(raw, "REAPER_ALLOW_UNKNOWN")
    kwargs["unknown_names"] = _unknown_names(
        values,
        {n for n in from_file if n not in given},
        dotenv,
        refuse=strict
        and kwargs.get("mode", "enforce") == "enforce"
        and not kwargs.get("allow_unknown", False),
    )

    settings = Settings(**kwargs)  # type: ignore[arg-type]
    _check_relations(settings)
    return settings


def _check_relations(settings: Settings) -> None:
    if settings.stopped_ttl < timedelta(hours=1):
        raise ConfigError("REAPER_STOPPED_TTL", "must be at least 1h")
    if settings.warn_before >= settings.stopped_ttl:
        raise ConfigError(
            "REAPER_WARN_BEFORE", "must be less than REAPER_STOPPED_TTL (the warning comes first)"
        )
    if settings.ping_key and settings.ping_key == settings.admin_key:
        # Instances hold the ping key; a shared value would let any instance host read /status.
        raise ConfigError("REAPER_ADMIN_KEY", "must differ from REAPER_PING_KEY")
    if not settings.protect_marker:
        raise ConfigError("REAPER_PROTECT", "expected a non-empty marker such as reaper:keep")


# --- newcomer and operator (#19): runway, logs, the digest's time, unknown names -------------


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


_LOG_LEVELS = ("debug", "info", "warning", "error")
_LOG_FORMATS = ("text", "json")


def _read_operator_settings(get: Callable[[str], str | None], kwargs: dict[str, object]) -> None:
    if (raw := get("BALANCE_HOURS")) is not None:
        kwargs["balance_hours"] = parse_hours(raw, "BALANCE_HOURS")
    if (raw := get("LOG_LEVEL")) is not None:
        level = raw.strip().lower()
        if level not in _LOG_LEVELS:
            raise ConfigError("LOG_LEVEL", f"expected debug, info, warning or error, got {raw!r}")
        kwargs["log_level"] = level
    if (raw := get("LOG_FORMAT")) is not None:
        fmt = raw.strip().lower()
        if fmt not in _LOG_FORMATS:
            raise ConfigError("LOG_FORMAT", f"expected text or json, got {raw!r}")
        kwargs["log_format"] = fmt
    if (raw := get("REAPER_DIGEST_AT")) is not None:
        kwargs["digest_at"] = parse_time_of_day(raw, "REAPER_DIGEST_AT")


def known_variables() -> set[str]:
    """Every variable name reaper, its plugins, its deployment and its kit read."""
    from reaper.known_settings import CORE_VARIABLES, OTHER_VARIABLES

    names = set(CORE_VARIABLES) | set(OTHER_VARIABLES)
    for path in (*PROVIDERS.values(), *CHANNELS.values()):
        names |= set(plugin_settings(path).variables)
    return names


def _unknown_names(
    values: Mapping[str, str], from_file: set[str], dotenv: Path | None, *, refuse: bool
) -> tuple[str, ...]:
    """A misspelt setting is not read and its default applies: say so, one line each, on
    stderr — or, with `refuse`, raise a ConfigError for the first unknown REAPER_* name
    (REAPER_ is reaper's alone; other prefixes are shared with other tools and stay warnings).
    The unknown REAPER_* names, for the Lambda handlers' alert."""
    from reaper.known_settings import OWN_PREFIX, nearest, unknown_setting_warnings

    known = known_variables()
    own = tuple(sorted(n for n in values if n.upper().startswith(OWN_PREFIX) and n not in known))
    if refuse and own:
        name = own[0]
        suggestion = nearest(name.upper(), known)
        hint = f"; did you mean {suggestion}?" if suggestion else "."
        where = f" (in {dotenv.name})" if dotenv is not None and name in from_file else ""
        raise ConfigError(
            name,
            f"not a setting reaper knows{where}{hint} In enforce mode `reap` and `serve` refuse"
            " an unknown REAPER_* name (its default would apply silently); fix it, or set"
            " REAPER_ALLOW_UNKNOWN=true to only warn",
        )
    source = {name: dotenv.name for name in from_file} if dotenv is not None else {}
    for line in unknown_setting_warnings(values, known, source=source):
        print(f"reaper: {line}", file=sys.stderr)
    return own
