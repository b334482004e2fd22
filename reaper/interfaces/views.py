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
from reaper.core.models import AuditRecord, History, Monitor, PingEvent, ReapRun
from reaper.core.monitors import down_after, grace_of, heard_or_resumed, muted, timeout_of
from reaper.core.units import humanize, iso, money
from reaper.interfaces.table import format_table
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
        "paused": report.paused,
        "muted": report.muted,
        "dry_run": report.dry_run,
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
    for name, hosts in (("paused", report.paused), ("muted (alerts held)", report.muted)):
        if hosts:
            lines.append(f"  {name}: {', '.join(hosts)}")
    if report.reaper_silent:
        lines.append("  the reaper itself is silent")
    lines += [f"  {e.provider} ({e.account}): {e.message}" for e in report.errors]
    return lines


def monitor_json(monitor: Monitor, settings: Settings, now: datetime) -> dict[str, Any]:
    silent_for = now - heard_or_resumed(monitor)
    limit = down_after(monitor, settings.heartbeat_timeout)
    return {
        "host": monitor.host,
        "status": monitor.status,
        "overdue": monitor.status in ("new", "up") and not monitor.paused and silent_for >= limit,
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
        **monitor_settings_json(monitor, settings, now),
    }


def monitor_settings_json(monitor: Monitor, settings: Settings, now: datetime) -> dict[str, Any]:
    """A monitor's own settings, in force: durations in whole seconds."""
    return {
        "timeout": int(timeout_of(monitor, settings.heartbeat_timeout).total_seconds()),
        "timeout_default": monitor.timeout is None,
        "grace": int(grace_of(monitor).total_seconds()),
        "paused": monitor.paused,
        "muted_until": iso(monitor.muted_until) if muted(monitor, now) else None,
        "alert_held": monitor.alert_held,
        "events": monitor.events,
    }


def status_json(
    settings: Settings,
    monitors: Sequence[Monitor],
    last: ReapRun | None,
    history: History,
    now: datetime,
) -> dict[str, Any]:
    """The object of `reaper status --json` and of `GET /status`, from what the store knows."""
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
    }


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
        state = "paused" if m["paused"] else "overdue" if m["overdue"] else m["status"]
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


def audit_json(records: Sequence[AuditRecord]) -> dict[str, Any]:
    """The object of `reaper audit --json`."""
    return {"terminations": [r.model_dump(mode="json") for r in records]}


def audit_table(records: Sequence[AuditRecord]) -> str:
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


# --- monitors, one by one (`reaper monitor ...`, `/monitors/<host>`) --------------------------


def event_json(event: PingEvent) -> dict[str, Any]:
    return {
        "seq": event.seq,
        "at": iso(event.at),
        "kind": event.kind,
        "exit_status": event.exit_status,
        "body": event.body,
        "client": event.client,
        "note": event.note,
    }


def monitor_detail_json(
    monitor: Monitor, events: Sequence[PingEvent], settings: Settings, now: datetime
) -> dict[str, Any]:
    """The object of `GET /monitors/<host>` and `reaper monitor log --json`: the monitor (as
    in `status --json`) and its ping log, oldest first."""
    return {
        "monitor": monitor_json(monitor, settings, now),
        "events": [event_json(e) for e in events],
    }


def _seconds(seconds: int) -> str:
    return humanize(timedelta(seconds=seconds)) if seconds else "0"


def monitors_table(monitors: Sequence[Monitor], settings: Settings, now: datetime) -> str:
    """`reaper monitor list`: every monitor with its own settings."""
    if not monitors:
        return "no monitors"
    rows = []
    for monitor in monitors:
        m = monitor_json(monitor, settings, now)
        state = "paused" if m["paused"] else "overdue" if m["overdue"] else m["status"]
        timeout = _seconds(m["timeout"]) + ("" if m["timeout_default"] else " (own)")
        muted_until = m["muted_until"] or ""
        rows.append(
            [
                m["host"],
                state,
                m["last_ping_at"] or "never",
                timeout,
                _seconds(m["grace"]),
                muted_until,
            ]
        )
    headers = ["host", "state", "last ping", "timeout", "grace", "muted until"]
    return format_table(headers, rows, max_width=60)


def monitor_log_lines(monitor: Monitor, events: Sequence[PingEvent]) -> list[str]:
    """`reaper monitor log <host>`: one line per event, oldest first."""
    kept = f"the last {len(events)} of {monitor.events}" if monitor.events > len(events) else "all"
    lines = [f"{monitor.host}: {len(events)} events ({kept}; the log keeps 100)"]
    for e in events:
        kind = f"exit {e.exit_status}" if e.kind == "exit" else e.kind
        body = " ".join(e.body.split())
        body = body if len(body) <= 80 else body[:79] + "…"
        note = f" [{e.note}]" if e.note else ""
        lines.append(f"  {iso(e.at)}  #{e.seq:<5} {kind:<8} {e.client:<15} {body}{note}")
    return lines
