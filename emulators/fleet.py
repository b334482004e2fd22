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

Every section and field is optional (`fleet.example.json` beside this module shows them all);
an unknown field, a wrong type or an unknown status is one line naming where it is
(`runpod.pods[2].status: expected one of ...`), so that a typo never serves a different fleet
than the one written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from emulators.runpod import RunPodEmulator
from emulators.vast import VastEmulator

EXAMPLE = Path(__file__).resolve().parent / "fleet.example.json"

RUNPOD_STATUSES = ("PROVISIONING", "STARTING", "RUNNING", "EXITED", "ERROR", "TERMINATED")
VAST_STATUSES = (
    "created",
    "loading",
    "running",
    "stopped",
    "exited",
    "frozen",
    "rebooting",
    "scheduling",
    "error",
    "unknown",
    "offline",
)
VAST_INTENTS = ("running", "stopped")
_ACCOUNT = re.compile(r"[A-Za-z0-9_.-]{1,64}")
_KEY = re.compile(r"[A-Za-z0-9_.-]{8,200}")
_POD_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
DEFAULT_KEYS = {"runpod": "rp-emulated-key-not-secret", "vast": "vast-emulated-key-not-secret"}


class FleetError(ValueError):
    """One line: where in the file, and what was expected."""


@dataclass
class ProviderFleet:
    accounts: dict[str, str]
    balances: dict[str, float] = field(default_factory=dict)
    entries: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Fleet:
    runpod: ProviderFleet
    vast: ProviderFleet

    @property
    def size(self) -> tuple[int, int]:
        return len(self.runpod.entries), len(self.vast.entries)


# --- checking, one field at a time ---------------------------------------------------------


def _object(value: Any, where: str, allowed: tuple[str, ...]) -> dict[str, Any]:
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


def _string(value: Any, where: str, pattern: re.Pattern[str] | None = None) -> str:
    if not isinstance(value, str):
        raise FleetError(f"{where}: expected a string, got {_kind(value)}")
    if pattern is not None and not pattern.fullmatch(value):
        raise FleetError(f"{where}: {value!r} is not valid here (expected {pattern.pattern})")
    return value


def _number(value: Any, where: str, *, low: float = 0.0, high: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise FleetError(f"{where}: expected a number, got {_kind(value)}")
    if value < low or (high is not None and value > high):
        bound = f"{low:g}-{high:g}" if high is not None else f">= {low:g}"
        raise FleetError(f"{where}: expected a number {bound}, got {value!r}")
    return float(value)


def _choice(value: Any, where: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise FleetError(f"{where}: expected one of {', '.join(choices)}, got {value!r}")
    return str(value)


def _bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise FleetError(f"{where}: expected true or false, got {_kind(value)}")
    return value


def _accounts(value: Any, where: str, provider: str) -> dict[str, str]:
    if value is None:
        return {"emulated": DEFAULT_KEYS[provider]}
    if not isinstance(value, dict) or not value:
        raise FleetError(f"{where}: expected an object of account name -> key, at least one")
    keys = {}
    for name, key in value.items():
        _string(name, f"{where} name", _ACCOUNT)
        keys[name] = _string(key, f"{where}.{name}", _KEY)
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
    return {name: _number(v, f"{where}.{name}", low=-1e9) for name, v in value.items()}


_POD_FIELDS = ("id", "account", "name", "status", "cost", "locked", "gpu_util", "disk", "volume_gb")
_INSTANCE_FIELDS = (
    "id",
    "account",
    "label",
    "actual_status",
    "intended_status",
    "dph_total",
    "disk_space",
    "gpu_util",
)


def _pod(value: Any, where: str, accounts: Mapping[str, str]) -> dict[str, Any]:
    raw = _object(value, where, _POD_FIELDS)
    pod: dict[str, Any] = {}
    if "id" in raw:
        pod["pod_id"] = _string(raw["id"], f"{where}.id", _POD_ID)
    pod["account"] = _owner(raw.get("account"), f"{where}.account", accounts)
    if "name" in raw:
        pod["name"] = _string(raw["name"], f"{where}.name")
    if "status" in raw:
        pod["status"] = _choice(raw["status"], f"{where}.status", RUNPOD_STATUSES)
    if "cost" in raw:
        pod["cost"] = _number(raw["cost"], f"{where}.cost", high=1000)
    if "locked" in raw:
        pod["locked"] = _bool(raw["locked"], f"{where}.locked")
    if "gpu_util" in raw:
        utils = raw["gpu_util"]
        if not isinstance(utils, list) or not utils:
            raise FleetError(f"{where}.gpu_util: expected a list of percents, one per GPU")
        pod["gpu_utils"] = [
            int(_number(u, f"{where}.gpu_util[{i}]", high=100)) for i, u in enumerate(utils)
        ]
    if "disk" in raw:
        pod["disk"] = int(_number(raw["disk"], f"{where}.disk", high=100_000))
    if "volume_gb" in raw:
        size = raw["volume_gb"]
        pod["volume_gb"] = None if size is None else int(_number(size, f"{where}.volume_gb"))
    return pod


def _instance(value: Any, where: str, accounts: Mapping[str, str]) -> dict[str, Any]:
    raw = _object(value, where, _INSTANCE_FIELDS)
    inst: dict[str, Any] = {}
    if "id" in raw:
        if isinstance(raw["id"], bool) or not isinstance(raw["id"], int) or raw["id"] <= 0:
            raise FleetError(f"{where}.id: expected a whole number above 0, got {raw['id']!r}")
        inst["instance_id"] = raw["id"]
    inst["account"] = _owner(raw.get("account"), f"{where}.account", accounts)
    if "label" in raw:
        inst["label"] = None if raw["label"] is None else _string(raw["label"], f"{where}.label")
    if "actual_status" in raw:
        status = raw["actual_status"]
        inst["actual_status"] = (
            None if status is None else _choice(status, f"{where}.actual_status", VAST_STATUSES)
        )
    if "intended_status" in raw:
        inst["intended_status"] = _choice(
            raw["intended_status"], f"{where}.intended_status", VAST_INTENTS
        )
    if "dph_total" in raw:
        inst["dph_total"] = _number(raw["dph_total"], f"{where}.dph_total", high=1000)
    if "disk_space" in raw:
        inst["disk_space"] = _number(raw["disk_space"], f"{where}.disk_space", high=100_000)
    if "gpu_util" in raw:
        # Percent in the file, as for RunPod; Vast's API answers a fraction.
        inst["gpu_util"] = _number(raw["gpu_util"], f"{where}.gpu_util", high=100) / 100
    return inst


def _owner(value: Any, where: str, accounts: Mapping[str, str]) -> str:
    if value is None:
        return next(iter(accounts))
    name = _string(value, where)
    if name not in accounts:
        raise FleetError(f"{where}: no account named {name!r}")
    return name


def _provider(
    data: dict[str, Any],
    name: str,
    listed: str,
    entry: Callable[[Any, str, Mapping[str, str]], dict[str, Any]],
    id_key: str,
) -> ProviderFleet:
    section = _object(data.get(name, {}), name, ("accounts", "balances", listed))
    accounts = _accounts(section.get("accounts"), f"{name}.accounts", name)
    balances = _balances(section.get("balances"), f"{name}.balances", accounts)
    items = section.get(listed, [])
    if not isinstance(items, list):
        raise FleetError(f"{name}.{listed}: expected a list, got {_kind(items)}")
    entries = [entry(item, f"{name}.{listed}[{i}]", accounts) for i, item in enumerate(items)]
    ids = [e[id_key] for e in entries if id_key in e]
    for i, entry_id in enumerate(ids):
        if entry_id in ids[:i]:
            raise FleetError(f"{name}.{listed}: the id {entry_id!r} is used twice")
    return ProviderFleet(accounts=accounts, balances=balances, entries=entries)


def parse_fleet(data: Any) -> Fleet:
    """A checked `Fleet` from the file's JSON; `FleetError` (one line) for anything else."""
    top = _object(data, "the fleet", ("runpod", "vast", "comment"))
    return Fleet(
        runpod=_provider(top, "runpod", "pods", _pod, "pod_id"),
        vast=_provider(top, "vast", "instances", _instance, "instance_id"),
    )


def load_fleet(path: Path) -> Fleet:
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
    return parse_fleet(data)


def populate(fleet: Fleet, runpod: RunPodEmulator, vast: VastEmulator) -> None:
    """Put the fleet into two started emulators (made with `fleet.*.accounts` as their keys)."""
    for pod in fleet.runpod.entries:
        runpod.add_pod(**pod)
    for name, amount in fleet.runpod.balances.items():
        runpod.set_balance(name, client_balance=amount)
    for inst in fleet.vast.entries:
        vast.add_instance(**inst)
    for name, amount in fleet.vast.balances.items():
        vast.set_user(name, balance=amount, credit=amount)
