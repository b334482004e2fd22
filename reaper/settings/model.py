"""The settings of one run, as the loader (`reaper.app.settings`) built them: every variable of
the public contract, parsed and checked, with each configured provider and channel as its own
plugin read it. Nothing here reads the environment or knows a plugin by name: what depends on
the registries (the variables that configure a channel or a provider's keys, for "set ..."
lines) is filled in at load.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from datetime import time, timedelta
from pathlib import Path
from typing import Literal

from reaper.settings.parse import Account, ChannelSettings, ConfigError, ProviderSettings


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
    # Filled at load from the registries: the variables that configure a channel that reaches a
    # person, for "set ..." in a message, and those that hold each provider's keys.
    channel_hint: str = ""
    key_variables: tuple[str, ...] = ()

    @property
    def human_channel(self) -> bool:
        """Whether any configured channel reaches a person."""
        return any(c.reaches_person for c in self.channels)

    @property
    def warning_mode(self) -> Literal["enforce", "observe"]:
        """The mode a warning is sent and recorded in. A cap of 0 turns terminations off, and
        its warnings say "would be terminated" as observe mode's do: such a warning licenses no
        termination once the cap is raised (the instance is warned anew, with a deadline)."""
        return "observe" if self.mode == "observe" or self.max_terminations == 0 else "enforce"

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
            keys = " / ".join(self.key_variables)
            raise ConfigError(keys, "set at least one")

    def secrets(self) -> list[str]:
        """Every secret value, so that log and error output can be scrubbed of them."""
        values = [v for v in (self.ping_key, self.admin_key) if v]
        for provider in self.providers:
            values += provider.secrets()
        for channel in self.channels:
            values += channel.secrets()
        return [v for v in values if v]


def default_state_path() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "reaper" / "state.db"


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
