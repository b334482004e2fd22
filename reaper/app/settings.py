"""Loading the settings: the environment (and a `.env` file under it), read once, checked
before anything runs.

The core's variables (modes, durations, state, keys of the HTTP API) are read here; each
provider and channel reads its own (the `SETTINGS` reader of its plugin, found through the
registries), so that a new integration brings its settings with it. What the settings say
about the registries — which variables configure a channel that reaches a person, which hold a
provider's keys — is filled in here too, so that nothing below has to look a plugin up to word
a message. Nothing else in reaper reads the environment.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Mapping
from datetime import timedelta
from pathlib import Path

from reaper.app.known import (
    CORE_VARIABLES,
    OTHER_VARIABLES,
    OWN_PREFIX,
    nearest,
    unknown_setting_warnings,
)
from reaper.channels.plugins import channel_plugins
from reaper.providers.plugins import plugins
from reaper.settings.model import Settings, parse_state_url
from reaper.settings.parse import (
    ChannelSettings,
    ConfigError,
    Env,
    ProviderSettings,
    SettingsReader,
    parse_bool,
    parse_duration,
    parse_float,
    parse_hours,
    parse_int,
    parse_optional_duration,
    parse_public_url,
    parse_time_of_day,
    parse_url_key,
)


def provider_readers() -> list[SettingsReader]:
    """Each provider plugin's settings reader, in registry order (imported on first use)."""
    return [plugin.settings for plugin in plugins()]


def channel_readers() -> list[SettingsReader]:
    """Each channel plugin's settings reader, in registry (delivery) order."""
    return [plugin.settings for plugin in channel_plugins()]


def key_variables() -> list[str]:
    """The variables that configure a provider's accounts, in registry order."""
    return [reader.key_variable for reader in provider_readers()]


def channel_hint() -> str:
    """The variables that configure a channel that reaches a person, for "set ..." in a
    message."""
    firsts = [r.channel_variables for r in channel_readers() if r.channel_variables]
    return ", ".join(firsts[:-1]) + " or " + firsts[-1] if len(firsts) > 1 else "".join(firsts)


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
    providers = [reader.read(env) for reader in provider_readers()]
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

    channels = [reader.read(env) for reader in channel_readers()]
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

    kwargs["channel_hint"] = channel_hint()
    kwargs["key_variables"] = tuple(key_variables())
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
    names = set(CORE_VARIABLES) | set(OTHER_VARIABLES)
    for reader in (*provider_readers(), *channel_readers()):
        names |= set(reader.variables)
    for plugin in plugins():
        names |= set(plugin.kit.variables)
    return names


def _unknown_names(
    values: Mapping[str, str], from_file: set[str], dotenv: Path | None, *, refuse: bool
) -> tuple[str, ...]:
    """A misspelt setting is not read and its default applies: say so, one line each, on
    stderr — or, with `refuse`, raise a ConfigError for the first unknown REAPER_* name
    (REAPER_ is reaper's alone; other prefixes are shared with other tools and stay warnings).
    The unknown REAPER_* names, for the Lambda handlers' alert."""
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
