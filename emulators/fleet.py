"""A fleet for the emulators, from a small JSON file: what `reaper emulate --fleet FILE` serves.

    {
      "runpod": {
        "accounts": {"main": "rp-emulated-main"},
        "balances": {"main": 42.5},
        "pods": [{"id": "llm-a1", "name": "llm-finetune", "status": "RUNNING", "cost": 1.64}]
      },
      "vast": {
        "accounts": {"main": "vast-emulated-main"},
        "instances": [{"id": 4242001, "label": "eval", "actual_status": "stopped"}]
      }
    }

Every entry may also say how long it has been stopped when the emulators start
(`"stopped_for": "23h55m"`, a stopped one only): no provider reports when an instance stopped,
so `reaper emulate` seeds its own state with that clock, and warnings and terminations can be
seen without waiting a day.

Every section and field is optional (`fleet.example.json` beside this module shows them all);
an unknown field, a wrong type or an unknown status is one line naming where it is
(`runpod.pods[2].status: expected one of ...`), so that a typo never serves a different fleet
than the one written. Each provider's section is its emulator's own: the emulator class says
what its list is called and checks each entry (`Emulated`), and its `populate` puts the section
into a started emulator; the sections are those of the emulators given, by provider name.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

from reaper.settings.parse import ConfigError, parse_duration

EXAMPLE = Path(__file__).resolve().parent / "fleet.example.json"

_ACCOUNT = re.compile(r"[A-Za-z0-9_.-]{1,64}")
_KEY = re.compile(r"[A-Za-z0-9_.-]{8,200}")
# The field every entry may carry beside its emulator's own.
STOPPED_FOR = "stopped_for"
# Before its stopped stretch an instance was created (and last started) this long: a stretch
# never begins before the instance's own creation or start.
RAN_BEFORE = timedelta(hours=1)


class FleetError(ValueError):
    """One line: where in the file, and what was expected."""


@dataclass
class ProviderFleet:
    """`stopped_for`: per entry (same order), how long it has been stopped when the emulator
    starts, None where the file says nothing."""

    accounts: dict[str, str]
    balances: dict[str, float] = field(default_factory=dict)
    entries: list[dict[str, Any]] = field(default_factory=list)
    stopped_for: list[timedelta | None] = field(default_factory=list)

    def born(self, index: int, now: datetime) -> datetime | None:
        """When entry `index` was created and last started, for one stopped `stopped_for`
        ago: an hour before that (None: the emulator's own default, now)."""
        age = self.stopped_for[index] if index < len(self.stopped_for) else None
        return None if age is None else now - age - RAN_BEFORE


@dataclass
class Fleet:
    """One section per provider, by its name, in the order of the emulators that read them."""

    sections: dict[str, ProviderFleet]

    @property
    def size(self) -> tuple[int, ...]:
        return tuple(len(section.entries) for section in self.sections.values())


class Emulated(Protocol):
    """What an emulator class says of its section of the fleet file (see `RunPodEmulator`):
    the list it holds (`FLEET_LIST`: "pods"), the fields of one entry, which of them is the
    id, the key of its one account when the file names none, and how one entry is checked."""

    FLEET_LIST: str
    FLEET_FIELDS: tuple[str, ...]
    FLEET_ID: str
    DEFAULT_KEY: str
    # The field of an entry that holds its status, and the statuses reaper reads as stopped
    # (the only ones a `stopped_for` fits).
    FLEET_STATUS: str
    FLEET_STOPPED: tuple[str, ...]

    @staticmethod
    def fleet_entry(value: Any, where: str, accounts: Mapping[str, str]) -> dict[str, Any]: ...


def entry_fields(emulator: Emulated) -> tuple[str, ...]:
    """Every field an entry of `emulator`'s list may have: its own, and the one every entry
    may carry. The one list an unknown field is answered with, so that it names them all."""
    return (*emulator.FLEET_FIELDS, STOPPED_FOR)


# --- checking, one field at a time ---------------------------------------------------------


def checked_object(value: Any, where: str, allowed: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise FleetError(f"{where}: expected an object, got {_kind(value)}")
    for name in value:
        if name not in allowed:
            raise FleetError(f"{where}: unknown field {name!r} (expected {', '.join(allowed)})")
    return value


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "true/false"}.get(
        type(value), "null" if value is None else "a number"
    )


def checked_string(value: Any, where: str, pattern: re.Pattern[str] | None = None) -> str:
    if not isinstance(value, str):
        raise FleetError(f"{where}: expected a string, got {_kind(value)}")
    if pattern is not None and not pattern.fullmatch(value):
        raise FleetError(f"{where}: {value!r} is not valid here (expected {pattern.pattern})")
    return value


def checked_number(value: Any, where: str, *, low: float = 0.0, high: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise FleetError(f"{where}: expected a number, got {_kind(value)}")
    if value < low or (high is not None and value > high):
        bound = f"{low:g}-{high:g}" if high is not None else f">= {low:g}"
        raise FleetError(f"{where}: expected a number {bound}, got {value!r}")
    return float(value)


def checked_choice(value: Any, where: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise FleetError(f"{where}: expected one of {', '.join(choices)}, got {value!r}")
    return str(value)


def checked_bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise FleetError(f"{where}: expected true or false, got {_kind(value)}")
    return value


def _accounts(value: Any, where: str, default_key: str) -> dict[str, str]:
    if value is None:
        return {"emulated": default_key}
    if not isinstance(value, dict) or not value:
        raise FleetError(f"{where}: expected an object of account name -> key, at least one")
    keys = {}
    for name, key in value.items():
        checked_string(name, f"{where} name", _ACCOUNT)
        keys[name] = checked_string(key, f"{where}.{name}", _KEY)
    if len(set(keys.values())) != len(keys):
        raise FleetError(f"{where}: two accounts have the same key")
    return keys


def _balances(value: Any, where: str, accounts: Mapping[str, str]) -> dict[str, float]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise FleetError(f"{where}: expected an object of account name -> balance in USD")
    for name in value:
        if name not in accounts:
            raise FleetError(f"{where}: no account named {name!r}")
    return {name: checked_number(v, f"{where}.{name}", low=-1e9) for name, v in value.items()}


def checked_owner(value: Any, where: str, accounts: Mapping[str, str]) -> str:
    if value is None:
        return next(iter(accounts))
    name = checked_string(value, where)
    if name not in accounts:
        raise FleetError(f"{where}: no account named {name!r}")
    return name


def _provider(data: dict[str, Any], name: str, emulator: Emulated) -> ProviderFleet:
    listed, id_key = emulator.FLEET_LIST, emulator.FLEET_ID
    section = checked_object(data.get(name, {}), name, ("accounts", "balances", listed))
    accounts = _accounts(section.get("accounts"), f"{name}.accounts", emulator.DEFAULT_KEY)
    balances = _balances(section.get("balances"), f"{name}.balances", accounts)
    items = section.get(listed, [])
    if not isinstance(items, list):
        raise FleetError(f"{name}.{listed}: expected a list, got {_kind(items)}")
    entries: list[dict[str, Any]] = []
    stopped_for: list[timedelta | None] = []
    for i, item in enumerate(items):
        where = f"{name}.{listed}[{i}]"
        if isinstance(item, dict):
            checked_object(item, where, entry_fields(emulator))
        own = dict(item) if isinstance(item, dict) else item
        age = own.pop(STOPPED_FOR, None) if isinstance(own, dict) else None
        entries.append(emulator.fleet_entry(own, where, accounts))
        stopped_for.append(None if age is None else _stopped_for(age, own, where, emulator))
    ids = [e[id_key] for e in entries if id_key in e]
    for i, entry_id in enumerate(ids):
        if entry_id in ids[:i]:
            raise FleetError(f"{name}.{listed}: the id {entry_id!r} is used twice")
    return ProviderFleet(
        accounts=accounts, balances=balances, entries=entries, stopped_for=stopped_for
    )


def _stopped_for(value: Any, entry: dict[str, Any], where: str, emulator: Emulated) -> timedelta:
    """A duration, on an entry whose status reaper reads as stopped."""
    where = f"{where}.{STOPPED_FOR}"
    text = checked_string(value, where)
    try:
        age = parse_duration(text, where)
    except ConfigError:
        raise FleetError(
            f"{where}: expected a duration like 30m, 23h55m or 3d, got {text!r}"
        ) from None
    status = emulator.FLEET_STATUS
    if entry.get(status) not in emulator.FLEET_STOPPED:
        stopped = " or ".join(emulator.FLEET_STOPPED)
        raise FleetError(f"{where}: only a stopped one ({status} {stopped}) has a stopped time")
    return age


def parse_fleet(data: Any, emulators: Mapping[str, Emulated]) -> Fleet:
    """A checked `Fleet` from the file's JSON, one section per emulator (by its provider's
    name); `FleetError` (one line) for anything else."""
    top = checked_object(data, "the fleet", (*emulators, "comment"))
    return Fleet({name: _provider(top, name, emulator) for name, emulator in emulators.items()})


def load_fleet(path: Path, emulators: Mapping[str, Emulated]) -> Fleet:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise FleetError("no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise FleetError(f"cannot read it ({type(exc).__name__})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FleetError(f"not JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    return parse_fleet(data, emulators)
