"""The views: every text table and JSON object the commands and the HTTP API print, built only
from the typed results of the passes and the records of the store.

The JSON shapes are the README's contracts (`reap --json`, `watch --json`, `status --json`,
`audit --json`, `report --json`, `GET /status`): further keys may be added, these stay.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from reaper.config import Settings
from reaper.core.digest import BalanceLine, Digest
from reaper.core.leaks import hours_left, is_low
from reaper.core.license import License, license_for
from reaper.core.models import (
    ActionRecord,
    AuditRecord,
    History,
    Instance,
    Listing,
    Monitor,
    PingEvent,
    ReapRun,
)
from reaper.core.monitors import down_after, grace_of, heard_or_resumed, muted, timeout_of
from reaper.core.policy import protection_reason
from reaper.core.runway import runway_short
from reaper.core.units import ago, humanize, iso, money, parse_time, utc, when
from reaper.interfaces.table import format_table
from reaper.interfaces.web.readmodel import FleetView, read_view, saved_per_month
from reaper.passes.guards import GuardReport
from reaper.passes.reap import ActionResult, ReapReport
from reaper.passes.watch import WatchReport
from reaper.providers.plugins import provider_host
from reaper.store.base import Store

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
        "lease_note": report.lease_note,
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
                "runway_short": runway_short(hours_left(b), report.balance_hours),
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


def _reap_state(inst: Instance) -> str:
    same = inst.state == inst.raw_status.lower()
    return inst.state if same else f"{inst.state} ({inst.raw_status})"


def reap_summary(report: ReapReport) -> str:
    """The line before the table: what bills now, what is stopped, due, protected."""
    live = [i for i in report.instances if i.state != "terminated"]
    billing = sum(i.cost_per_hour or 0.0 for i in live)
    states = Counter(i.state for i in live)
    actions = Counter(a.action for a in report.actions)
    parts = [
        f"{states['running'] + states['starting']} running",
        f"{states['stopped']} stopped",
    ]
    if states["unknown"]:
        parts.append(f"{states['unknown']} unreadable")
    due = actions["terminate"] + actions["hold"]
    return (
        f"{len(live)} instances, billing {money(billing)}/h now: {', '.join(parts)};"
        f" {due} due, {actions['warn']} warned, {actions['protect']} protected"
    )


def _quiet(inst: Instance, action: ActionResult | None) -> bool:
    """A running instance with nothing to do: folded away unless `--all`."""
    return action is None and inst.state in ("running", "starting")


def reap_table(report: ReapReport, *, show_all: bool = False, width: int | None = None) -> str:
    """The terminal form of a reap pass: a summary line, then every instance that is stopped,
    unreadable or acted on (running ones with nothing to do only with `show_all`)."""
    actions = {(a.provider, a.id): a for a in report.actions}
    rows: list[list[str]] = []
    folded = 0
    for inst in sorted(report.instances, key=lambda i: (i.provider, i.account, i.id)):
        action = actions.get((inst.provider, inst.id))
        if not show_all and _quiet(inst, action):
            folded += 1
            continue
        stopped_for = humanize(report.at - inst.stopped_since) if inst.stopped_since else ""
        what = _action_label(action, report.dry_run) if action else ""
        rows.append(
            [
                inst.provider,
                inst.account,
                inst.id,
                inst.name,
                _reap_state(inst),
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
    lines = [f"reap {'dry run ' if report.dry_run else ''}at {utc(report.at)} (mode {report.mode})"]
    if report.instances:
        lines.append(reap_summary(report))
    if rows:
        lines.append(format_table(headers, rows, max_width=70, width=width, shrink_first=(8, 3, 4)))
    elif not report.instances:
        lines.append("no instances")
    if folded:
        lines.append(f"(+{folded} running with nothing to do; --all shows them)")
    for error in report.errors:
        lines.append(f"error: {error.provider}/{error.account}: {error.message}")
    if report.cap_exceeded:
        cap = "" if report.cap is None else f" ({report.cap})"
        lines.append(
            f"cap: more terminations were due than {report.cap_source}{cap} allows; none were done"
        )
    exempt = [a for a in report.actions if a.exempt is not None]
    if exempt:
        named = ", ".join(f"{a.provider}:{a.id} ({a.exempt})" for a in exempt)
        lines.append(f"needs you: past the deadline and not reaped: {named}")
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


def _names(listings: Sequence[Listing]) -> dict[str, Instance]:
    """The instances of the last complete listings, by `<provider>:<id>`."""
    return {inst.key: inst for listing in listings for inst in listing.instances}


def _monitor_name(host: str, listed: dict[str, Instance]) -> str:
    """The instance name behind a provider host (`runpod-<id>`), from the last listing."""
    found = provider_host(host)
    inst = listed.get(f"{found[0]}:{found[1]}") if found else None
    return inst.name if inst else ""


def monitor_json(
    monitor: Monitor, settings: Settings, now: datetime, name: str = ""
) -> dict[str, Any]:
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
        "name": name,
        **monitor_settings_json(monitor, settings, now),
    }


def monitor_state(m: dict[str, Any]) -> str:
    """One word for a monitor in a table: paused, muted, overdue, or its state."""
    if m["paused"]:
        return "paused"
    state = "overdue" if m["overdue"] else m["status"]
    return f"{state}, muted" if m["muted_until"] else state


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
            monitor_json(m, settings, now, _monitor_name(m.host, listed)) for m in monitors
        ],
        "reaping": bool(settings.accounts),
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
    return {
        "instance": key,
        "name": inst.name if inst else "",
        "stopped_since": iso(since),
        "due_at": iso(due_at),
        "overdue": due_at is not None and due_at <= now,
        "protected": protected,
        "warned_at": iso(warning.at) if warning else None,
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
    if item["overdue"]:
        return f"past its deadline ({utc(due)}, {ago(due, now)}): the next reap pass acts"
    warned = f"; warned {utc(w)}" if (w := parse_time(item["warned_at"])) else ""
    return f"due {utc(due)} ({ago(due, now)}){warned}"


def status_lines(data: dict[str, Any], *, width: int | None = None) -> list[str]:
    now = parse_time(data["at"]) or datetime.now(UTC)
    c = data["counts"]
    fleet = data["fleet"]
    stopped = fleet["stopped"]
    protected = sum(1 for s in stopped if s["protected"])
    due = sum(1 for s in stopped if s["due_at"])
    lines = [
        f"status at {utc(now)}: monitors {c['up']} up, {c['new']} new, {c['down']} down,"
        f" {c['retired']} retired; stopped {len(stopped)} ({due} due, {protected} protected),"
        f" kept {len(fleet['kept'])}"
    ]
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
        lines.append(
            format_table(["stopped", "name", "since", "deadline"], rows, max_width=90, width=width)
        )
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
                item["label"],
                item["subject"] or ", ".join(item["targets"]),
                item["by"],
                item["result"],
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


# --- audit ----------------------------------------------------------------------------------


def audit_json(
    records: Sequence[AuditRecord], actions: Sequence[ActionRecord] = ()
) -> dict[str, Any]:
    """The object of `reaper audit --json`: the terminations, the deletes that never left
    (`not_sent`: a pass died between recording one and sending it, and the next pass still
    listed the instance in the same stretch — no termination), and the actions people took
    (`actions`: when, what, on what, who asked, through what, done, what happened)."""
    return {
        "terminations": [r.model_dump(mode="json") for r in records if r.result != "not_sent"],
        "not_sent": [r.model_dump(mode="json") for r in records if r.result == "not_sent"],
        "actions": [action_json(a) for a in actions],
    }


def actions_table(actions: Sequence[ActionRecord], *, width: int | None = None) -> str:
    """`reaper audit`'s second table: every action a person took."""
    rows = [
        [
            utc(a.at),
            a.label,
            a.subject or ", ".join(a.targets),
            a.by,
            "yes" if a.done else "no",
            a.result,
        ]
        for a in actions
    ]
    return format_table(
        ["when", "action", "on", "by", "done", "result"], rows, max_width=80, width=width
    )


def audit_table(
    records: Sequence[AuditRecord],
    actions: Sequence[ActionRecord] = (),
    *,
    width: int | None = None,
) -> str:
    tables = [_terminations_table(records, width)]
    if actions:
        tables.append(
            "actions by people (phone, status page, command line):\n"
            + actions_table(actions, width=width)
        )
    return "\n\n".join(tables)


def _terminations_table(records: Sequence[AuditRecord], width: int | None) -> str:
    never_sent = [r for r in records if r.result == "not_sent"]
    records = [r for r in records if r.result != "not_sent"]
    note = (
        f"\n{len(never_sent)} delete(s) recorded but never sent (settled by the next pass, no"
        " termination): " + ", ".join(f"{r.key} at {utc(r.requested_at)}" for r in never_sent)
        if never_sent
        else ""
    )
    if not records:
        return "no terminations recorded" + note
    rows = [
        [
            utc(r.requested_at),
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
    unconfirmed = sum(1 for r in records if not r.confirmed)
    summary = f"{len(records)} terminations: {len(records) - unconfirmed} confirmed" + (
        f", {unconfirmed} NOT confirmed (check them in the console)" if unconfirmed else ""
    )
    table = format_table(
        ["when", "provider", "account", "id", "name", "result", "confirmed", "why"],
        rows,
        max_width=80,
        width=width,
        shrink_first=(7, 4),
    )
    return f"{summary}\n{table}{note}"


# --- report ---------------------------------------------------------------------------------


def digest_json(digest: Digest) -> dict[str, Any]:
    """The object of `reaper report --json`."""
    data: dict[str, Any] = digest.model_dump(mode="json", exclude={"labels"})
    data["at"] = iso(digest.at)
    return data


def report_headline(digest: Digest) -> str:
    """`report at ...: spend now $X/h`, and which accounts did not answer: a total that
    silently leaves an account out would read as the whole spend."""
    line = f"report at {utc(digest.at)}: spend now {money(digest.spend_per_hour)}/h"
    failed = [f"{digest.labels.get(e.provider, e.provider)} {e.account}" for e in digest.errors]
    if failed:
        verb = "did not answer" if len(failed) == 1 else "did not answer (not counted)"
        line += f" — {', '.join(failed)} {verb}"
    return line


def _runway_status(b: BalanceLine) -> str:
    if b.low:
        return "LOW"
    return "SHORT" if b.runway_short else ""


def digest_text(digest: Digest, *, width: int | None = None) -> str:
    """The terminal form of `reaper report`: one short table per topic."""
    out = [report_headline(digest)]
    if digest.spend:
        rows = [
            [s.provider, s.account, f"{s.per_hour:.3f}", str(s.billing), str(s.unknown_cost)]
            for s in digest.spend
        ]
        out += [
            "",
            format_table(
                ["provider", "account", "$/h", "billing", "cost unknown"], rows, width=width
            ),
        ]
    out.append("")
    if digest.balances:
        rows = [
            [
                b.provider,
                b.account,
                "" if b.balance is None else f"{b.balance:.2f}",
                "" if b.spend_per_hour is None else f"{b.spend_per_hour:.3f}",
                "" if b.hours_left is None else humanize(timedelta(hours=b.hours_left)),
                _runway_status(b),
            ]
            for b in digest.balances
        ]
        out.append(
            format_table(
                ["provider", "account", "balance", "$/h", "runway", "status"], rows, width=width
            )
        )
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
        out.append(format_table(headers, rows, width=width, shrink_first=(5, 4)))
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
                utc(r.requested_at),
                r.reason,
            ]
            for r in digest.reaped_24h
        ]
        out.append(
            format_table(
                ["provider", "id", "name", "$/month", "at", "reason"],
                rows,
                width=width,
                shrink_first=(5, 2),
            )
        )
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
        state = monitor_state(m)
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
