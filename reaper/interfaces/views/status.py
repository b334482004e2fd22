"""`reaper status` and `GET /status`: the fleet, the monitors and the last reap, as the store
knows them."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from reaper.core.license import License, license_for
from reaper.core.models import ActionRecord, History, Instance, Listing, Monitor, ReapRun
from reaper.core.policy import (
    held_for_channel,
    no_channel_note,
    no_channel_reason,
    protection_reason,
)
from reaper.core.units import ago, humanize, iso, money, parse_time, readable_times, utc, when
from reaper.interfaces.readmodel import FleetView, read_view, saved_per_month
from reaper.interfaces.table import format_table
from reaper.interfaces.views.monitors import _monitor_name, _names, monitor_json, monitor_state
from reaper.settings.model import Settings
from reaper.store.ports import Store


def status_json(
    settings: Settings,
    monitors: Sequence[Monitor],
    last: ReapRun | None,
    history: History,
    now: datetime,
    listings: Sequence[Listing] = (),
    *,
    actions: Sequence[ActionRecord] = (),
) -> dict[str, Any]:
    """The object of `reaper status --json` and of `GET /status`, from what the store knows.
    `listings` (the last complete listing of each account) gives names and protections;
    `actions`: the recent actions people took (`recent_actions`)."""
    counts = {s: 0 for s in ("new", "up", "down", "retired")}
    for monitor in monitors:
        counts[monitor.status] += 1
    listed = _names(listings)
    return {
        "at": iso(now),
        "counts": counts,
        "monitors": [
            monitor_json(m, settings, now, _monitor_name(m.host, listed), kept=history.kept)
            for m in monitors
        ],
        "reaping": bool(settings.accounts),
        "no_channel_note": no_channel_note(settings),
        "last_reap": None if last is None else json.loads(last.model_dump_json()),
        "fleet": fleet_json(history, settings, now, listings),
        "actions": [action_json(a) for a in actions],
    }


# `status` shows the actions people took of this long, at most this many (newest).
RECENT_ACTIONS = timedelta(days=7)
RECENT_ACTIONS_MAX = 20


def recent_actions(records: Sequence[ActionRecord]) -> list[ActionRecord]:
    return list(records[-RECENT_ACTIONS_MAX:])


def action_json(record: ActionRecord) -> dict[str, Any]:
    data: dict[str, Any] = record.model_dump(mode="json")
    data["at"] = iso(record.at)
    return data


def _stopped_json(
    key: str,
    since: datetime,
    history: History,
    settings: Settings,
    now: datetime,
    listed: dict[str, Instance],
) -> dict[str, Any]:
    """One stopped instance between passes. Protected or kept: no deadline, the reason
    instead. Otherwise the deadline its warning announced (else first seen + the TTL); a
    deadline already past is `overdue`: the next pass acts on it, it is not "due" then."""
    inst = listed.get(key)
    kept = history.kept.get(key)
    if inst is not None:
        protected = protection_reason(inst, history, now, settings.protect_marker)
    elif kept is not None and kept.active(now):
        protected = "kept by `reaper keep`" + (f" until {utc(kept.until)}" if kept.until else "")
    else:
        protected = None
    # The deadline of the license its warning gives (a warning of an earlier stretch, of
    # settings that moved its deadline, or past its window gives none), else the TTL's.
    licensed = license_for(key, since, history, now, settings)
    warning = licensed.warning if isinstance(licensed, License) else None
    deadline = licensed.deadline if isinstance(licensed, License) else since + settings.stopped_ttl
    due_at = None if protected else deadline
    # Without a license and with no channel that reaches a person, the deadline brings a hold,
    # not a termination: said instead of "scheduled".
    held = warning is None and not protected and held_for_channel(settings)
    return {
        "instance": key,
        "name": inst.name if inst else "",
        "stopped_since": iso(since),
        "due_at": iso(due_at),
        "overdue": due_at is not None and due_at <= now,
        "protected": protected,
        "warned_at": iso(warning.at) if warning else None,
        "held": no_channel_reason(settings) if held else None,
        "cost_per_hour": inst.cost_per_hour if inst else None,
    }


def fleet_json(
    history: History, settings: Settings, now: datetime, listings: Sequence[Listing] = ()
) -> dict[str, Any]:
    """The fleet as the store knows it between passes: what is stopped since when, when it
    becomes due, which were warned, which are protected or kept, and why (the live listing is
    `reaper reap --dry-run`)."""
    listed = _names(listings)
    stopped = [
        _stopped_json(key, since, history, settings, now, listed)
        for key, since in sorted(history.first_seen_stopped.items(), key=lambda kv: kv[1])
    ]
    kept = [
        {
            "instance": k.key,
            "name": inst.name if (inst := listed.get(k.key)) else "",
            "since": iso(k.since),
            "until": iso(k.until),
        }
        for k in sorted(history.kept.values(), key=lambda k: k.key)
        if k.active(now)
    ]
    return {"stopped": stopped, "kept": kept}


def _time(text: str | None, now: datetime, never: str = "never") -> str:
    return when(parse_time(text), now, never=never)


def _stopped_status(item: dict[str, Any], now: datetime) -> str:
    if item["protected"]:
        return f"protected: {item['protected']}"
    due = parse_time(item["due_at"])
    if due is None:
        return ""
    if item.get("held"):
        return f"held from {utc(due)} ({ago(due, now)}): {item['held']}"
    if item["overdue"]:
        return f"past its deadline ({utc(due)}, {ago(due, now)}): the next reap pass acts"
    warned = f"; warned {utc(w)}" if (w := parse_time(item["warned_at"])) else ""
    return f"scheduled {utc(due)} ({ago(due, now)}){warned}"


def _deadlines(stopped: list[dict[str, Any]]) -> str:
    """ "Due" is what `reaper reap` acts on in this pass; between passes an instance with a
    deadline ahead is "scheduled", and one past it waits for the next pass."""
    scheduled = sum(1 for s in stopped if s["due_at"] and not s["overdue"] and not s.get("held"))
    past = sum(1 for s in stopped if s["overdue"] and not s.get("held"))
    held = sum(1 for s in stopped if s.get("held"))
    return (
        f"{scheduled} scheduled"
        + (f", {past} past their deadline" if past else "")
        + (f", {held} held: no channel reaches a person" if held else "")
    )


def status_lines(data: dict[str, Any], *, width: int | None = None) -> list[str]:
    now = parse_time(data["at"]) or datetime.now(UTC)
    c = data["counts"]
    fleet = data["fleet"]
    stopped = fleet["stopped"]
    protected = sum(1 for s in stopped if s["protected"])
    lines = [
        f"status at {utc(now)}: monitors {c['up']} up, {c['new']} new, {c['down']} down,"
        f" {c['retired']} retired; stopped {len(stopped)} ({_deadlines(stopped)},"
        f" {protected} protected), kept {len(fleet['kept'])}"
    ]
    if data.get("no_channel_note") and data["reaping"]:
        lines.append(data["no_channel_note"])
    for item in data.get("needs_you", []):
        rate = (
            "cost unknown" if item["cost_per_hour"] is None else f"{money(item['cost_per_hour'])}/h"
        )
        lines.append(
            f"needs you: {item['name'] or item['id']} ({item['provider']}:{item['id']}), {rate},"
            f" past its deadline and not reaped: {item['reason']}"
        )
    if data["monitors"]:
        rows = [
            [
                m["host"],
                m.get("name", ""),
                monitor_state(m),
                _time(m["last_ping_at"], now),
                f"running since {_time(m['job_started_at'], now)}" if m["job_running"] else "",
            ]
            for m in data["monitors"]
        ]
        lines.append(
            format_table(["monitor", "name", "state", "last ping", "job"], rows, width=width)
        )
    if stopped:
        rows = [
            [
                item["instance"],
                item["name"],
                _time(item["stopped_since"], now),
                _stopped_status(item, now),
            ]
            for item in stopped
        ]
        lines.append(format_table(["stopped", "name", "since", "deadline"], rows, width=width))
    if fleet["kept"]:
        rows = [
            [item["instance"], item["name"], _time(item["until"], now, "further notice")]
            for item in fleet["kept"]
        ]
        lines.append(format_table(["kept", "name", "until"], rows, width=width))
    if data.get("actions"):
        rows = [
            [
                _time(item["at"], now),
                readable_times(item["label"]),
                item["subject"] or ", ".join(item["targets"]),
                item["by"],
                readable_times(item["result"]),
            ]
            for item in data["actions"]
        ]
        lines.append(f"actions by people (last {humanize(RECENT_ACTIONS)}):")
        lines.append(format_table(["when", "action", "on", "by", "result"], rows, width=width))
    last = data["last_reap"]
    if last is None:
        lines.append("last reap: none recorded" + ("" if data["reaping"] else " (reaping is off)"))
    else:
        lines.append(
            f"last reap: finished {_time(last['finished_at'], now)}, {last['instances']}"
            f" instances, {last['terminated']} terminated, exit {last['exit_code']}"
        )
    return lines


def _instance_json(inst: Instance) -> dict[str, Any]:
    return {
        "provider": inst.provider,
        "account": inst.account,
        "id": inst.id,
        "name": inst.name,
        "state": inst.state,
        "raw_status": inst.raw_status,
        "cost_per_hour": inst.cost_per_hour,
    }


# How many of the newest snapshots `/status` carries.
STATUS_SNAPSHOTS = 48


def status_report(settings: Settings, store: Store, now: datetime) -> dict[str, Any]:
    """What `reaper status --json` prints and `GET /status` answers: the monitors, the last
    reap, the stopped fleet and what people did, plus the status page's data by name (names,
    costs, deadlines, runway, snapshots). One function, so both say the same."""
    data = status_json(
        settings,
        store.list_monitors(),
        store.last_reap(),
        store.history(),
        now,
        store.listings(),
        actions=recent_actions(store.action_log(since=now - RECENT_ACTIONS)),
    )
    return data | fleet_view_json(read_view(store, settings, now))


def fleet_view_json(view: FleetView) -> dict[str, Any]:
    """The keys `GET /status` adds to `status_json`: what the status page shows, by name."""
    running = []
    for inst in view.running:
        dog = view.watchdog_of.get(inst.key)
        since = inst.started_at or inst.created_at
        running.append(
            {
                **_instance_json(inst),
                "since": iso(since),
                "watchdog": None if dog is None else {"host": dog.monitor.host, "state": dog.state},
                "billed_30d": view.instance_billed.get(inst.key),
            }
        )
    stopped = []
    for item in view.stopped:
        kept = view.kept.get(item.instance.key)
        stopped.append(
            {
                **_instance_json(item.instance),
                "stopped_since": iso(item.instance.stopped_since),
                "billed_30d": view.instance_billed.get(item.instance.key),
                "outlook": item.kind,
                "terminate_at": iso(item.terminate_at),
                "reason": item.reason,
                "kept": None
                if kept is None
                else {"since": iso(kept.since), "until": iso(kept.until), "by": kept.by},
            }
        )
    needs_you = [
        {
            **_instance_json(item.instance),
            "stopped_since": iso(item.instance.stopped_since),
            "exempt": item.exempt,
            "reason": item.reason,
        }
        for item in view.needs_you
    ]
    return {
        "listed_at": iso(view.listed_at),
        "needs_you": needs_you,
        "bills_per_hour": {
            "running": round(view.running_per_hour, 6),
            "storage": round(view.storage_per_hour, 6),
        },
        "running": running,
        "stopped": stopped,
        "other": [_instance_json(i) for i in view.other],
        "balances": [
            {
                "provider": a.provider,
                "account": a.account,
                "balance": a.balance,
                "spend_per_hour": a.spend_per_hour
                if a.spend_per_hour is not None
                else a.billing_per_hour,
                "runway_hours": None if a.runway_hours is None else round(a.runway_hours, 2),
                "listed_at": iso(a.listed_at),
                "billed_7d": a.billed_over(7, view.now),
                "billed_30d": a.billed_over(30, view.now),
                "billed": None
                if a.billed is None
                else [{"day": iso(b.day), "amount": b.amount} for b in a.billed],
            }
            for a in view.accounts
        ],
        "terminations": [
            {
                "provider": r.provider,
                "account": r.account,
                "id": r.id,
                "name": r.name,
                "requested_at": iso(r.requested_at),
                "result": r.result,
                "confirmed": r.confirmed,
                "saved_per_month": None if (s := saved_per_month(r)) is None else round(s, 2),
            }
            for r in view.audit
        ],
        "saved_per_month": round(view.saved_per_month, 2),
        "snapshots": [json.loads(s.model_dump_json()) for s in view.snapshots[-STATUS_SNAPSHOTS:]],
    }
