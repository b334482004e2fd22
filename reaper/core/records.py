"""The two records a ping reads and writes — `Monitor` and `PingEvent` — as frozen dataclasses,
not pydantic models.

Why: a Lambda container started for a ping imports what the ping needs, and a ping is a key
check, a host check and one conditional write. Importing pydantic and building its first
model costs more than everything else a ping does (bench/lambda.py: about 90 of the 250 ms the
HTTP handler took to import); every other record stays a pydantic model, imported when a
route first needs one.

They keep the pydantic models' method names — `model_copy(update=...)`,
`model_dump_json(exclude_defaults=...)`, `model_validate_json`, `model_validate` — so that
the stores and the state machine treat every record alike, and their JSON is exactly what the
pydantic models wrote (datetimes as ISO 8601 with `Z`, durations as ISO 8601 durations such as
`PT2H` or `P1Y35D`): a state written before reads the same. Nothing from outside reaches them
unchecked: they are built from validated pings and settings, and read back from the store.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar, Literal, Protocol, Self

MonitorStatus = Literal["new", "up", "down", "retired"]
PingEventKind = Literal["ping", "start", "fail", "exit", "bye", "log"]
_STATUSES = frozenset({"new", "up", "down", "retired"})
_EVENT_KINDS = frozenset({"ping", "start", "fail", "exit", "bye", "log"})
_PING_KINDS = frozenset({"ping", "start", "fail", "exit", "bye"})


class Record(Protocol):
    """Any record a store keeps, these or the pydantic models: a copy with some fields changed."""

    def model_copy(self, *, update: Mapping[str, Any] | None = None) -> Self: ...


class RecordError(ValueError):
    """A stored record that cannot be read back: one line naming the field."""


# --- the JSON forms of a datetime and a duration ---------------------------------------------


def _datetime_json(value: datetime) -> str:
    text = value.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def _datetime(value: object, name: str) -> datetime:
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            raise RecordError(f"{name}: not an ISO 8601 time") from None
    else:
        raise RecordError(f"{name}: not a time")
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


_DAYS_PER_YEAR = 365  # as pydantic writes (and reads) a year of a duration
_DURATION = re.compile(
    r"(?P<sign>-)?P(?:(?P<y>[0-9]+)Y)?(?:(?P<w>[0-9]+)W)?(?:(?P<d>[0-9]+)D)?"
    r"(?:T(?:(?P<h>[0-9]+)H)?(?:(?P<m>[0-9]+)M)?(?:(?P<s>[0-9]+(?:\.[0-9]+)?)S)?)?"
)


def _duration_json(value: timedelta) -> str:
    """As pydantic writes it: "PT2H", "P1DT10M1.5S", "P1Y35D", "-PT5S", "PT0S"."""
    sign = "-" if value < timedelta(0) else ""
    value = abs(value)
    years, days = divmod(value.days, _DAYS_PER_YEAR)
    hours, rest = divmod(value.seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    date = (f"{years}Y" if years else "") + (f"{days}D" if days else "")
    second_text = ""
    if seconds or value.microseconds:
        whole = f"{seconds}.{value.microseconds:06d}".rstrip("0").rstrip(".")
        second_text = f"{whole}S"
    time = (f"{hours}H" if hours else "") + (f"{minutes}M" if minutes else "") + second_text
    if not date and not time:
        return "PT0S"
    return f"{sign}P{date}" + (f"T{time}" if time else "")


def _duration(value: object, name: str) -> timedelta:
    if isinstance(value, timedelta):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return timedelta(seconds=value)
    match = _DURATION.fullmatch(value) if isinstance(value, str) else None
    if match is None or value in ("P", "-P") or str(value).endswith("T"):
        raise RecordError(f"{name}: not an ISO 8601 duration")
    parts = {k: float(v) if v else 0.0 for k, v in match.groupdict().items() if k != "sign"}
    try:
        length = timedelta(
            days=parts["y"] * _DAYS_PER_YEAR + parts["w"] * 7 + parts["d"],
            hours=parts["h"],
            minutes=parts["m"],
            seconds=parts["s"],
        )
    except OverflowError:
        raise RecordError(f"{name}: a duration too long to hold") from None
    return -length if match["sign"] else length


def _int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise RecordError(f"{name}: not a whole number")
    return value


def _bool(value: object, name: str) -> bool:
    if not isinstance(value, bool):
        raise RecordError(f"{name}: not true or false")
    return value


def _str(value: object, name: str) -> str:
    if not isinstance(value, str):
        raise RecordError(f"{name}: not text")
    return value


def _one_of(allowed: frozenset[str]) -> Any:
    def read(value: object, name: str) -> str:
        if value not in allowed:
            raise RecordError(f"{name}: expected one of {', '.join(sorted(allowed))}")
        return str(value)

    return read


# --- the shared behaviour ---------------------------------------------------------------------


# pydantic's compact form; one encoder, not one per call (json.dumps builds one for any option).
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


# Per record class: its field names in order, the defaults, the fields without one, and which
# fields are times and which are text (read inline: see `model_validate`).
@dataclass(frozen=True)
class _Layout:
    defaults: dict[str, Any]
    required: frozenset[str]
    times: frozenset[str]
    texts: frozenset[str]
    # Each field in order with its default (`_NO_DEFAULT` for a required one).
    pairs: tuple[tuple[str, Any], ...]


_LAYOUTS: dict[type, _Layout] = {}
_NO_DEFAULT = object()


def _layout(cls: type) -> _Layout:
    found = _LAYOUTS.get(cls)
    if found is None:
        fields = dataclasses.fields(cls)
        readers: Mapping[str, Any] = getattr(cls, "_READERS", {})
        found = _LAYOUTS[cls] = _Layout(
            defaults={f.name: f.default for f in fields if f.default is not dataclasses.MISSING},
            required=frozenset(f.name for f in fields if f.default is dataclasses.MISSING),
            times=frozenset(n for n, r in readers.items() if r is _datetime),
            texts=frozenset(f.name for f in fields if f.name not in readers),
            pairs=tuple(
                (f.name, _NO_DEFAULT if f.default is dataclasses.MISSING else f.default)
                for f in fields
            ),
        )
    return found


class _Record:
    """What both records share: copies with changes, and the JSON the stores keep.

    Every ping reads, copies and writes a monitor, so these skip the generated `__init__`
    (a frozen dataclass sets each field through `object.__setattr__`) and fill the instance's
    `__dict__` at once: bench.heartbeat's saturation figure is what they are for."""

    # Each field's reader from JSON; a field not listed here is text.
    _READERS: ClassVar[Mapping[str, Any]]

    def model_copy(self, *, update: Mapping[str, Any] | None = None) -> Self:
        if not update:
            return self
        unknown = update.keys() - self.__dict__.keys()
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field {sorted(unknown)[0]!r}")
        copied = object.__new__(type(self))
        copied.__dict__.update(self.__dict__)
        copied.__dict__.update(update)
        return copied

    def _fields(self, exclude_defaults: bool) -> dict[str, Any]:
        values = self.__dict__
        data: dict[str, Any] = {}
        # One pass: a default left out, a time or a duration written as its text.
        for name, default in _layout(type(self)).pairs:
            value = values[name]
            if exclude_defaults and default is not _NO_DEFAULT and value == default:
                continue
            kind = type(value)
            if kind is datetime:
                value = _datetime_json(value)
            elif kind is timedelta:
                value = _duration_json(value)
            data[name] = value
        return data

    def model_dump_json(self, *, exclude_defaults: bool = False) -> str:
        return _ENCODER.encode(self._fields(exclude_defaults))

    def model_dump(self, *, mode: str = "json") -> dict[str, Any]:
        """Its fields as JSON values (the only mode reaper uses)."""
        return self._fields(False)

    @classmethod
    def model_validate(cls, data: Mapping[str, Any]) -> Self:
        if type(data) is not dict and not isinstance(data, Mapping):
            raise RecordError(f"{cls.__name__}: not an object")
        layout = _layout(cls)
        defaults, required, times, texts = (
            layout.defaults,
            layout.required,
            layout.times,
            layout.texts,
        )
        readers = cls._READERS
        values = dict(defaults)
        # Every ping reads a monitor and a watch pass reads all of them: text, the most of any
        # record's fields, is checked inline rather than through a reader.
        for name, value in data.items():
            if value is None:
                if name in defaults:
                    values[name] = None
                continue  # a required field's null is reported as missing below
            if name in times:
                values[name] = _datetime(value, name)
            elif name in texts:
                if type(value) is not str:
                    raise RecordError(f"{name}: not text")
                values[name] = value
            elif name in readers:
                values[name] = readers[name](value, name)
            # else: a field a later version added: ignored, as pydantic did
        if not required <= values.keys():
            missing = ", ".join(sorted(required - values.keys()))
            raise RecordError(f"{cls.__name__}: missing {missing}")
        record = object.__new__(cls)
        record.__dict__.update(values)
        return record

    @classmethod
    def model_validate_json(cls, text: str | bytes) -> Self:
        try:
            data = json.loads(text)
        except ValueError:
            raise RecordError(f"{cls.__name__}: not JSON") from None
        return cls.model_validate(data)


@dataclass(frozen=True)
class Monitor(_Record):
    """A heartbeat monitor: one host pinging `/ping/<key>/<host>`."""

    host: str
    created_at: datetime
    status: MonitorStatus = "new"
    last_ping_at: datetime | None = None
    last_ping_kind: Literal["ping", "start", "fail", "exit", "bye"] | None = None
    last_exit_status: int | None = None
    last_message: str = ""
    # A `/start` not yet followed by a ping, a `/fail` or an exit status.
    job_started_at: datetime | None = None
    down_since: datetime | None = None
    last_alert_at: datetime | None = None
    bye_at: datetime | None = None
    # Set once the "instance stopped, the reaper takes over" note went out for this outage.
    stopped_noted: bool = False
    # When a complete listing first failed to show this provider host's instance: it retires as
    # gone only when a second complete listing, a watch period later, misses it too.
    absent_since: datetime | None = None

    # --- its own settings, pause, mute and the ping log --------------------------------------
    # Silence before it is down: `timeout` (None: HEARTBEAT_TIMEOUT) + `grace` (None: none),
    # Healthchecks' "period" and "grace".
    timeout: timedelta | None = None
    grace: timedelta | None = None
    # Paused: never alerts, and is not watched; any later ping resumes it.
    paused: bool = False
    # When it was last resumed (by `reaper monitor resume` or the admin API): silence counts
    # from then, so that a monitor paused for a week does not alert the minute it resumes.
    resumed_at: datetime | None = None
    # Muted (from the phone, `reaper monitor`, the admin API) until then: its state is tracked,
    # but no alert about it goes out.
    muted_until: datetime | None = None
    # An alert a mute held back while the monitor is down: said once when the mute ends.
    alert_held: bool = False
    # How many events its ping log has taken: event n is kept in slot n % PING_LOG_KEPT.
    events: int = 0
    # When a notify naming this host (`<host>: ...` to /alert) reached a channel, with no ping
    # since: a failure ping just after it sends no second alert (one alert per failure).
    notified_at: datetime | None = None
    # The two-way heartbeat (the instance reads these back on a ping that asks for JSON): kept
    # until then by `reaper keep host:<host>` or a Keep pressed on its idle warning, and the
    # idle limit `reaper idle` set ("90m", "never"; "" for the kit's own IDLE_LIMIT).
    keep_until: datetime | None = None
    idle_after: str = ""
    # Who set that keep ("" when not recorded), as the action record names them.
    keep_by: str = ""

    # The JSON key order is the field order; `status` is written after `created_at`.
    _READERS: ClassVar[Mapping[str, Any]] = {
        "status": _one_of(_STATUSES),
        "created_at": _datetime,
        "last_ping_at": _datetime,
        "last_ping_kind": _one_of(_PING_KINDS),
        "last_exit_status": _int,
        "job_started_at": _datetime,
        "down_since": _datetime,
        "last_alert_at": _datetime,
        "bye_at": _datetime,
        "stopped_noted": _bool,
        "absent_since": _datetime,
        "timeout": _duration,
        "grace": _duration,
        "paused": _bool,
        "resumed_at": _datetime,
        "muted_until": _datetime,
        "alert_held": _bool,
        "events": _int,
        "notified_at": _datetime,
        "keep_until": _datetime,
    }


@dataclass(frozen=True)
class PingEvent(_Record):
    """One entry of a monitor's ping log (its last 100 are kept): what arrived, when, from
    where, and what it did when that is not the obvious (an alert held or already sent)."""

    # The monitor's event number, from 1.
    seq: int
    at: datetime
    kind: PingEventKind
    exit_status: int | None = None
    # The first 1 KB of the body (or of `?msg=`).
    body: str = ""
    client: str = ""
    note: str = ""

    _READERS: ClassVar[Mapping[str, Any]] = {
        "seq": _int,
        "at": _datetime,
        "kind": _one_of(_EVENT_KINDS),
        "exit_status": _int,
    }


__all__ = ["Monitor", "MonitorStatus", "PingEvent", "PingEventKind", "Record", "RecordError"]
