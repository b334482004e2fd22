"""A monitor's own settings, pure: when its silence counts as down, whether it may alert, and
the checks that every way of changing them (`reaper monitor ...`, `PUT /monitors/<host>`)
shares, so that both refuse the same bad input with the same one line.

- Down after `timeout` + `grace` of silence (Healthchecks' "period" and "grace"). `timeout`
  None is the environment's HEARTBEAT_TIMEOUT; `grace` None is none: a monitor nobody
  configured keeps HEARTBEAT_TIMEOUT exactly, as before per-monitor settings existed.
- Paused: never watched, never alerts; any later ping resumes it (as in Healthchecks), and a
  resume by hand counts silence from the resume.
- Muted until a time: its state is tracked as usual, but nothing about it reaches the phone
  until then; an outage the mute held back is said once when the mute ends.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from reaper.core.records import Monitor
from reaper.core.units import humanize, iso
from reaper.settings.parse import ConfigError, parse_duration

if TYPE_CHECKING:
    from reaper.core.models import KeptInstance

# The ping log keeps this many events per monitor, and this much of each one's body.
PING_LOG_KEPT = 100
LOG_BODY_LIMIT = 1024

# The ranges of a monitor's own settings. The watch pass runs every minute: a shorter timeout
# would only be rounded up to it. A year is longer than anyone means, and far from overflow.
TIMEOUT_MIN = timedelta(minutes=1)
LONGEST = timedelta(days=365)

# The fields a PUT body may carry.
SETTING_FIELDS = ("timeout", "grace", "paused", "muted_until")

# The instance's notify and its failure ping a moment apart are one failure, one alert: the
# kit sends them a second apart; two minutes leave room for a slow channel in between.
FAILURE_WINDOW = timedelta(minutes=2)


class BadSetting(ValueError):
    """One line saying what is wrong with a setting (HTTP 400, exit 2)."""


def timeout_of(monitor: Monitor, default: timedelta) -> timedelta:
    return monitor.timeout if monitor.timeout is not None else default


def grace_of(monitor: Monitor) -> timedelta:
    return monitor.grace if monitor.grace is not None else timedelta(0)


def down_after(monitor: Monitor, default: timedelta) -> timedelta:
    """The silence after which this monitor is down."""
    return timeout_of(monitor, default) + grace_of(monitor)


def muted(monitor: Monitor, now: datetime) -> bool:
    return monitor.muted_until is not None and now < monitor.muted_until


def notified_just_now(monitor: Monitor, now: datetime) -> bool:
    """The instance's own notify reached a channel within FAILURE_WINDOW, no ping since."""
    at = monitor.notified_at
    return at is not None and timedelta(0) <= now - at < FAILURE_WINDOW


def heard_or_resumed(monitor: Monitor) -> datetime:
    """Where its silence starts: the last ping (or its creation), or a later resume."""
    heard = monitor.last_ping_at or monitor.created_at
    resumed = monitor.resumed_at
    return max(heard, resumed) if resumed is not None else heard


def log_body(message: str | None) -> str:
    """The first LOG_BODY_LIMIT bytes of a message, never half a character."""
    if not message:
        return ""
    return message.encode("utf-8", "surrogatepass")[:LOG_BODY_LIMIT].decode("utf-8", "ignore")


# --- changing them -------------------------------------------------------------------------


@dataclass(frozen=True)
class SettingsChange:
    """What one request changes outside the state machine: only the fields named in `given`,
    each to its value (None: back to the default for `timeout`/`grace`, unmuted for
    `muted_until`). `at`: when it was asked, the start of the silence of a monitor it resumes.
    `notified_at` is no setting a person gives: the alert route records a delivered notify
    with it, in the same atomic way."""

    at: datetime
    given: frozenset[str] = frozenset()
    timeout: timedelta | None = None
    grace: timedelta | None = None
    paused: bool = False
    muted_until: datetime | None = None
    notified_at: datetime | None = None
    keep_until: datetime | None = None
    idle_after: str = ""
    # Who asks for a keep (`keep_until`): written beside it, so that every view can say it.
    keep_by: str = ""


def describe_change(change: SettingsChange) -> str:
    """The change as its audit record says it: "timeout 2h, grace default, paused"."""
    parts = []
    for name in ("timeout", "grace"):
        if name in change.given:
            value: timedelta | None = getattr(change, name)
            parts.append(f"{name} {'default' if value is None else humanize(value)}")
    if "paused" in change.given:
        parts.append("paused" if change.paused else "resumed")
    if "muted_until" in change.given:
        until = change.muted_until
        parts.append(f"muted until {iso(until)}" if until is not None else "unmuted")
    if "keep_until" in change.given:
        kept = change.keep_until
        parts.append(f"kept until {iso(kept)}" if kept is not None else "no longer kept")
    if "idle_after" in change.given:
        parts.append(f"idle after {change.idle_after or 'default'}")
    return ", ".join(parts) or "nothing"


# A monitor's keep with no end (`reaper keep host:<host> --for forever`), and what the two-way
# heartbeat answers for any keep without one: far enough that the kit says "with no end set",
# and a valid ISO time for any reader.
KEEP_FOREVER = datetime(9999, 12, 31, 23, 59, tzinfo=UTC)


@dataclass(frozen=True)
class HostKeep:
    """A keep as the instance that pings as a host reads it back: until when (KEEP_FOREVER:
    no end) and who set it ("" when not recorded)."""

    until: datetime
    by: str


def host_keep(
    monitor: Monitor, instance_keep: KeptInstance | None, now: datetime
) -> HostKeep | None:
    """The keep the two-way heartbeat answers for the monitor's host, and every view shows: its
    own (`reaper keep host:<host>`, a Keep pressed on its idle warning) and, for a provider
    host, its instance's (`reaper keep <provider>:<id>`, the status page, a termination
    warning's button) — the later end wins. None when neither is in force now."""
    keeps = []
    if monitor.keep_until is not None and monitor.keep_until > now:
        keeps.append(HostKeep(monitor.keep_until, monitor.keep_by))
    if instance_keep is not None and instance_keep.active(now):
        keeps.append(HostKeep(instance_keep.until or KEEP_FOREVER, instance_keep.by))
    return max(keeps, key=lambda keep: keep.until, default=None)


def idle_after_text(after: timedelta | None, *, never: bool = False) -> str:
    """What the two-way heartbeat answers as `idle_after`: whole minutes ("90m"), "never", or
    "" (the kit's own IDLE_LIMIT). A limit under a minute, over LONGEST_IDLE or not in whole
    minutes is a BadSetting: the kit counts idleness in whole minutes."""
    if never:
        return "never"
    if after is None:
        return ""
    minutes, rest = divmod(after, timedelta(minutes=1))
    if rest or not timedelta(minutes=1) <= after <= LONGEST:
        raise BadSetting("--after: expected whole minutes from 1m to 365d, like 30m or 2h")
    return f"{minutes}m"


def apply_change(monitor: Monitor, change: SettingsChange) -> Monitor:
    """The monitor with the change made; its state (status, pings, alerts) as it was."""
    update: dict[str, object] = {name: getattr(change, name) for name in change.given}
    if "keep_until" in change.given:
        update["keep_by"] = change.keep_by if change.keep_until is not None else ""
    if "paused" in change.given and monitor.paused and not change.paused:
        update["resumed_at"] = change.at
    return monitor.model_copy(update=update) if update else monitor


def _duration_text(text: str, name: str, *, zero: bool) -> timedelta:
    if zero and text.strip().lower() in ("0", "0s", "0m", "0h", "0d"):
        return timedelta(0)
    try:
        return parse_duration(text, name)
    except ConfigError as exc:
        raise BadSetting(f"{name}: {exc.expected}") from None


def duration_setting(value: object, name: str) -> timedelta | None:
    """`timeout` or `grace` as a request gives it: a duration like "2h" or "1h30m", a whole
    number of seconds, or None (null, or "default") for the default. Out of range is refused:
    timeout 1m to 365d, grace 0 to 365d."""
    zero = name == "grace"
    if value is None or (isinstance(value, str) and value.strip().lower() == "default"):
        return None
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise BadSetting(f'{name}: expected a duration like "10m" or whole seconds, or null')
    if isinstance(value, int):
        if value < 0 or value > LONGEST.total_seconds():
            raise BadSetting(f"{name}: expected 0 to {int(LONGEST.total_seconds())} seconds")
        duration = timedelta(seconds=value)
    else:
        duration = _duration_text(value, name, zero=zero)
    low = timedelta(0) if zero else TIMEOUT_MIN
    if not low <= duration <= LONGEST:
        lowest = "0" if zero else "1m"
        raise BadSetting(f"{name}: expected {lowest} to 365d, got {value!r}")
    return duration


def mute_setting(value: object, now: datetime) -> datetime | None:
    """`muted_until`: an ISO 8601 time with its zone, in the future and at most a year away;
    None (null) unmutes."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise BadSetting('muted_until: expected a time like "2026-03-02T09:00:00Z", or null')
    try:
        until = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise BadSetting('muted_until: expected a time like "2026-03-02T09:00:00Z"') from None
    if until.tzinfo is None:
        raise BadSetting('muted_until: give the time with its zone, e.g. "...T09:00:00Z"')
    until = until.astimezone(UTC)
    if until <= now:
        raise BadSetting("muted_until: that time is not in the future (null unmutes)")
    if until - now > LONGEST:
        raise BadSetting("muted_until: at most 365 days ahead")
    return until


def parse_change(data: object, now: datetime) -> SettingsChange:
    """A PUT body: a JSON object of known fields only, every one checked before anything is
    applied (a request with one bad field changes nothing)."""
    if not isinstance(data, Mapping):
        raise BadSetting('expected a JSON object like {"timeout": "2h", "grace": "10m"}')
    unknown = sorted(str(k) for k in data if k not in SETTING_FIELDS)
    if unknown:
        known = ", ".join(SETTING_FIELDS)
        raise BadSetting(f"unknown field {unknown[0]!r} (known: {known})")
    values: dict[str, object] = {}
    for name in ("timeout", "grace"):
        if name in data:
            values[name] = duration_setting(data[name], name)
    if "paused" in data:
        if not isinstance(data["paused"], bool):
            raise BadSetting("paused: expected true or false")
        values["paused"] = data["paused"]
    if "muted_until" in data:
        values["muted_until"] = mute_setting(data["muted_until"], now)
    return SettingsChange(at=now, given=frozenset(values), **values)  # type: ignore[arg-type]
