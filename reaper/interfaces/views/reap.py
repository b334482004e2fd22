"""`reaper reap`: the contract's `--json` object and the table people read."""

from __future__ import annotations

from collections import Counter
from typing import Any

from reaper.core.leaks import hours_left, is_low
from reaper.core.models import Instance
from reaper.core.runway import runway_short
from reaper.core.units import humanize, iso, money, utc
from reaper.interfaces.table import format_table
from reaper.interfaces.views.failures import did_not_answer
from reaper.passes.guards import GuardReport
from reaper.passes.reap import ActionResult, ReapReport


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
        "no_channel_note": report.no_channel_note,
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


def _action_label(action: ActionResult, dry_run: bool, no_channel: bool) -> str:
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
    if action.action == "warn" and no_channel:
        return "warn (log only)"
    return action.action


def _reap_state(inst: Instance) -> str:
    same = inst.state == inst.raw_status.lower()
    return inst.state if same else f"{inst.state} ({inst.raw_status})"


def reap_summary(report: ReapReport) -> str:
    """The line before the table: what bills now, what is stopped, due, protected, and which
    accounts did not answer (their instances are in none of these counts)."""
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
    failed = f"; did not answer: {did_not_answer(report.errors)}" if report.errors else ""
    log_only = " (log only)" if report.no_channel and actions["warn"] else ""
    return (
        f"{len(live)} instances, billing {money(billing)}/h now: {', '.join(parts)};"
        f" {due} due, {actions['warn']} warned{log_only}, {actions['protect']} protected{failed}"
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
        what = _action_label(action, report.dry_run, report.no_channel) if action else ""
        rows.append(
            [
                inst.provider,
                inst.account,
                inst.id,
                inst.name,
                _reap_state(inst),
                stopped_for,
                "" if inst.cost_per_hour is None else money(inst.cost_per_hour),
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
    if report.instances or report.errors:
        lines.append(reap_summary(report))
    if rows:
        lines.append(format_table(headers, rows, width=width, shrink_first=(8, 3, 4)))
    elif not report.instances and not report.errors:
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
    if report.no_channel_note and any(a.action in ("warn", "hold") for a in report.actions):
        # Whatever this pass warned or held: what follows from a warning nobody can read.
        lines.append(report.no_channel_note)
    return "\n".join(lines)
