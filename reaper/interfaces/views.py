"""The views: every text table and JSON object the commands and the HTTP API print, built only
from the typed results of the passes and the records of the store.

The JSON shapes are the README's contracts (`reap --json`, `watch --json`, `status --json`,
`audit --json`, `report --json`, `GET /status`): further keys may be added, these stay.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from reaper.config import Settings
from reaper.core.digest import Digest
from reaper.core.leaks import hours_left, is_low
from reaper.core.models import ActionRecord, AuditRecord, History, Instance, Monitor, ReapRun
from reaper.core.units import humanize, iso, money
from reaper.interfaces.table import format_table
from reaper.interfaces.web.readmodel import FleetView, saved_per_month
from reaper.passes.guards import GuardReport
from reaper.passes.reap import ActionResult, ReapReport
from reaper.passes.watch import WatchReport

# --- reap -----------------------------------------------------------------------------------


def reap_json(report: ReapReport) -> dict[str, Any]:
    """The object of `reaper reap --json`."""
    return {
        "dry_run": report.dry_run,
        "mode": report.mode,
        "at": iso(report.at),
        "instances": [
            {
                "provider": i.provider,
                "account": i.account,
                "id": i.id,
                "name": i.name,
                "state": i.state,
                "raw_status": i.raw_status,
                "stopped_since": iso(i.stopped_since),
                "cost_per_hour": i.cost_per_hour,
            }
            for i in report.instances
        ],
        "actions": [a.model_dump() for a in report.actions],
        "errors": [e.model_dump() for e in report.errors],
        "cap_exceeded": report.cap_exceeded,
        "lease_taken": report.lease_taken,
        "lease_lost": report.lease_lost,
        "clock_behind": report.clock_behind,
        "no_channel": report.no_channel,
        "reconciled": report.reconciled,
        "exit_code": report.exit_code,
        "guards": guards_json(report.guards) if report.guards else None,
    }


def guards_json(report: GuardReport) -> dict[str, Any]:
    """For `reap --json` under a `guards` key."""
    return {
        "at": iso(report.at),
        "leaks": [
            {
                "kind": f.kind,
                "provider": f.provider,
                "account": f.account,
                "id": f.id,
                "name": f.name,
                "detail": f.detail,
                "cost_per_hour": f.cost_per_hour,
                "level": f.level,
                "alerted": f.key in report.alerted,
            }
            for f in report.findings
        ],
        "balances": [
            {
                "provider": b.provider,
                "account": b.account,
                "balance": b.balance,
                "spend_per_hour": b.spend_per_hour,
                "hours_left": hours_left(b),
                "low": is_low(b, report.balance_min),
            }
            for b in report.balances
        ],
        "warnings": [w.model_dump() for w in report.warnings],
    }


def _action_label(action: ActionResult, dry_run: bool) -> str:
    if dry_run:
        return (
            f"{action.action} (dry run)"
            if action.action in ("terminate", "warn")
            else action.action
        )
    if action.action == "terminate":
        if action.confirmed:
            return "terminated"
        return "terminate (unconfirmed)" if action.done else "terminate (not done)"
    if action.action == "warn" and not action.done:
        return "warn (not sent)"
    return action.action


def reap_table(report: ReapReport) -> str:
    """The terminal form of a reap pass."""
    actions = {(a.provider, a.id): a for a in report.actions}
    rows: list[list[str]] = []
    for inst in sorted(report.instances, key=lambda i: (i.provider, i.account, i.id)):
        action = actions.get((inst.provider, inst.id))
        stopped_for = humanize(report.at - inst.stopped_since) if inst.stopped_since else ""
        what = _action_label(action, report.dry_run) if action else ""
        rows.append(
            [
                inst.provider,
                inst.account,
                inst.id,
                inst.name,
                inst.state
                if inst.state == inst.raw_status.lower()
                else f"{inst.state} ({inst.raw_status})",
                stopped_for,
                "" if inst.cost_per_hour is None else f"{inst.cost_per_hour:.3f}",
                what,
                action.reason if action else "",
            ]
        )
    headers = [
        "provider",
        "account",
        "id",
        "name",
        "state",
        "stopped for",
        "$/h",
        "action",
        "reason",
    ]
    lines = [f"reap {'dry run ' if report.dry_run else ''}at {iso(report.at)} (mode {report.mode})"]
    lines.append(format_table(headers, rows, max_width=70) if rows else "no instances")
    for error in report.errors:
        lines.append(f"error: {error.provider}/{error.account}: {error.message}")
    if report.cap_exceeded:
        lines.append(
            "cap: more terminations were due than REAPER_MAX_TERMINATIONS allows; none were done"
        )
    return "\n".join(lines)


# --- watch and status -----------------------------------------------------------------------


def watch_json(report: WatchReport) -> dict[str, Any]:
    """The object of `reaper watch --json`."""
    return {
        "at": iso(report.at),
        "monitors": report.monitors,
        "down": report.down,
        "went_down": report.went_down,
        "reminded": report.reminded,
        "billing_silent": report.billing_silent,
        "stopped": report.stopped,
        "retired": report.retired,
        "absent": report.absent,
        "unwatched": report.unwatched,
        "reaping": report.reaping,
        "reaper_silent": report.reaper_silent,
        "alerts": [{"event": a.event, "level": a.level, "title": a.title} for a in report.alerts],
        "errors": [
            {"provider": e.provider, "account": e.account, "message": e.message}
            for e in report.errors
        ],
        "exit_code": report.exit_code,
    }


def watch_lines(report: WatchReport) -> list[str]:
    lines = [f"watched {report.monitors} monitors: {len(report.down)} down"]
    for name, hosts in (
        ("went down", report.went_down),
        ("reminded", report.reminded),
        ("silent while billing", report.billing_silent),
        ("stopped", report.stopped),
        ("retired", report.retired),
        ("running without a watchdog", report.unwatched),
    ):
        if hosts:
            lines.append(f"  {name}: {', '.join(hosts)}")
    if report.reaper_silent:
        lines.append("  the reaper itself is silent")
    lines += [f"  {e.provider} ({e.account}): {e.message}" for e in report.errors]
    return lines


def monitor_json(monitor: Monitor, settings: Settings, now: datetime) -> dict[str, Any]:
    silent_for = now - (monitor.last_ping_at or monitor.created_at)
    return {
        "host": monitor.host,
        "status": monitor.status,
        "overdue": monitor.status in ("new", "up") and silent_for >= settings.heartbeat_timeout,
        "created_at": iso(monitor.created_at),
        "last_ping_at": iso(monitor.last_ping_at),
        "last_ping_kind": monitor.last_ping_kind,
        "last_exit_status": monitor.last_exit_status,
        "last_message": monitor.last_message,
        "job_started_at": iso(monitor.job_started_at),
        "job_running": monitor.job_started_at is not None,
        "down_since": iso(monitor.down_since),
        "last_alert_at": iso(monitor.last_alert_at),
        "bye_at": iso(monitor.bye_at),
    }


def status_json(
    settings: Settings,
    monitors: Sequence[Monitor],
    last: ReapRun | None,
    history: History,
    now: datetime,
    *,
    actions: Sequence[ActionRecord] = (),
) -> dict[str, Any]:
    """The object of `reaper status --json` and of `GET /status`, from what the store knows.
    `actions`: the recent actions people took (`recent_actions`)."""
    counts = {s: 0 for s in ("new", "up", "down", "retired")}
    for monitor in monitors:
        counts[monitor.status] += 1
    return {
        "at": iso(now),
        "counts": counts,
        "monitors": [monitor_json(m, settings, now) for m in monitors],
        "reaping": bool(settings.accounts),
        "last_reap": None if last is None else json.loads(last.model_dump_json()),
        "fleet": fleet_json(history, settings, now),
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


def fleet_json(history: History, settings: Settings, now: datetime) -> dict[str, Any]:
    """The fleet as the store knows it between passes: what is stopped since when, when it
    becomes due, which were warned, which are kept (the live listing is `reaper reap --dry-run`)."""
    stopped = [
        {
            "instance": key,
            "stopped_since": iso(since),
            "due_at": iso(since + settings.stopped_ttl),
            "warned_at": iso(w.at) if (w := history.warnings.get(key)) else None,
        }
        for key, since in sorted(history.first_seen_stopped.items(), key=lambda kv: kv[1])
    ]
    kept = [
        {"instance": k.key, "since": iso(k.since), "until": iso(k.until)}
        for k in sorted(history.kept.values(), key=lambda k: k.key)
        if k.active(now)
    ]
    return {"stopped": stopped, "kept": kept}


def status_lines(data: dict[str, Any]) -> list[str]:
    c = data["counts"]
    lines = [f"monitors: {c['up']} up, {c['new']} new, {c['down']} down, {c['retired']} retired"]
    for m in data["monitors"]:
        state = "overdue" if m["overdue"] else m["status"]
        job = f"  job running since {m['job_started_at']}" if m["job_running"] else ""
        lines.append(f"  {m['host']:<40} {state:<8} last ping {m['last_ping_at'] or 'never'}{job}")
    fleet = data["fleet"]
    lines.append(f"stopped instances: {len(fleet['stopped'])}, kept: {len(fleet['kept'])}")
    for item in fleet["stopped"]:
        warned = f", warned {item['warned_at']}" if item["warned_at"] else ""
        lines.append(
            f"  {item['instance']:<40} stopped since {item['stopped_since']}, "
            f"due {item['due_at']}{warned}"
        )
    for item in fleet["kept"]:
        lines.append(f"  {item['instance']:<40} kept until {item['until'] or 'further notice'}")
    if data.get("actions"):
        lines.append(f"actions by people (last {humanize(RECENT_ACTIONS)}):")
    for item in data.get("actions", []):
        lines.append(
            f"  {item['at']} {item['label']} {item['subject'] or ', '.join(item['targets'])}"
            f" by {item['by']}: {item['result']}"
        )
    last = data["last_reap"]
    if last is None:
        lines.append("last reap: none recorded" + ("" if data["reaping"] else " (reaping is off)"))
    else:
        lines.append(
            f"last reap: finished {last['finished_at']}, {last['instances']} instances, "
            f"{last['terminated']} terminated, exit {last['exit_code']}"
        )
    return lines


# --- audit ----------------------------------------------------------------------------------


def audit_json(
    records: Sequence[AuditRecord], actions: Sequence[ActionRecord] = ()
) -> dict[str, Any]:
    """The object of `reaper audit --json`: the terminations, and the actions people took
    (`actions`: when, what, on what, who asked, through what, done, what happened)."""
    return {
        "terminations": [r.model_dump(mode="json") for r in records],
        "actions": [action_json(a) for a in actions],
    }


def actions_table(actions: Sequence[ActionRecord]) -> str:
    """`reaper audit`'s second table: every action a person took."""
    rows = [
        [
            iso(a.at) or "",
            a.label,
            a.subject or ", ".join(a.targets),
            a.by,
            "yes" if a.done else "no",
            a.result,
        ]
        for a in actions
    ]
    return format_table(["when", "action", "on", "by", "done", "result"], rows, max_width=80)


def audit_table(records: Sequence[AuditRecord], actions: Sequence[ActionRecord] = ()) -> str:
    tables = [_terminations_table(records)]
    if actions:
        tables.append(
            "actions by people (phone, status page, command line):\n" + actions_table(actions)
        )
    return "\n\n".join(tables)


def _terminations_table(records: Sequence[AuditRecord]) -> str:
    if not records:
        return "no terminations recorded"
    rows = [
        [
            iso(r.requested_at) or "",
            r.provider,
            r.account,
            r.id,
            r.name,
            r.result,
            "yes" if r.confirmed else "NO",
            r.reason + (f" ({r.detail})" if r.detail else ""),
        ]
        for r in records
    ]
    return format_table(
        ["when", "provider", "account", "id", "name", "result", "confirmed", "why"],
        rows,
        max_width=80,
    )


# --- report ---------------------------------------------------------------------------------


def digest_json(digest: Digest) -> dict[str, Any]:
    """The object of `reaper report --json`."""
    data: dict[str, Any] = digest.model_dump(mode="json", exclude={"labels"})
    data["at"] = iso(digest.at)
    return data


def digest_text(digest: Digest) -> str:
    """The terminal form of `reaper report`: one short table per topic."""
    out = [f"report at {iso(digest.at)}: spend now {money(digest.spend_per_hour)}/h"]
    if digest.spend:
        rows = [
            [s.provider, s.account, f"{s.per_hour:.3f}", str(s.billing), str(s.unknown_cost)]
            for s in digest.spend
        ]
        out += ["", format_table(["provider", "account", "$/h", "billing", "cost unknown"], rows)]
    out.append("")
    if digest.balances:
        rows = [
            [
                b.provider,
                b.account,
                "" if b.balance is None else f"{b.balance:.2f}",
                "" if b.spend_per_hour is None else f"{b.spend_per_hour:.3f}",
                "" if b.hours_left is None else humanize(timedelta(hours=b.hours_left)),
                "LOW" if b.low else "",
            ]
            for b in digest.balances
        ]
        out.append(format_table(["provider", "account", "balance", "$/h", "left", "status"], rows))
    else:
        out.append("balances: none readable")
    out.append("")
    if digest.leaks:
        rows = [
            [
                leak.kind,
                leak.provider,
                leak.account,
                leak.id,
                leak.name,
                leak.detail,
                humanize(digest.at - leak.since) if leak.since else "new",
                "yes" if leak.alerted else "no",
            ]
            for leak in digest.leaks
        ]
        headers = ["leak", "provider", "account", "id", "name", "detail", "for", "alerted"]
        out.append(format_table(headers, rows))
    else:
        out.append("leaks: none")
    out.append("")
    if digest.reaped_24h:
        out.append(
            f"reaped in 24h: {len(digest.reaped_24h)}, stopping"
            f" {money(digest.reaped_per_month)}/month"
        )
        rows = [
            [
                r.provider,
                r.id,
                r.name,
                "" if r.per_month is None else f"{r.per_month:.2f}",
                iso(r.requested_at) or "",
                r.reason,
            ]
            for r in digest.reaped_24h
        ]
        out.append(format_table(["provider", "id", "name", "$/month", "at", "reason"], rows))
    else:
        out.append("reaped in 24h: nothing")
    if digest.monitors_down:
        out.append("")
        hosts = ", ".join(m.host for m in digest.monitors_down)
        out.append(f"monitors down: {hosts}")
    for problem in digest.errors:
        out.append(f"error: {problem.provider}/{problem.account}: {problem.message}")
    for problem in digest.warnings:
        out.append(f"warning: {problem.provider}/{problem.account}: {problem.message}")
    return "\n".join(out)


# --- the status page's data for scripts (`GET /status`) -------------------------------------


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
            }
        )
    stopped = []
    for item in view.stopped:
        kept = view.kept.get(item.instance.key)
        stopped.append(
            {
                **_instance_json(item.instance),
                "stopped_since": iso(item.instance.stopped_since),
                "outlook": item.kind,
                "terminate_at": iso(item.terminate_at),
                "reason": item.reason,
                "kept": None
                if kept is None
                else {"since": iso(kept.since), "until": iso(kept.until), "by": kept.by},
            }
        )
    return {
        "listed_at": iso(view.listed_at),
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
