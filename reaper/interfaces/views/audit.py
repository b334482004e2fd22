"""`reaper audit`: every termination and every action from the phone."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from reaper.core.models import ActionRecord, AuditRecord
from reaper.core.units import readable_times, utc
from reaper.interfaces.table import format_table
from reaper.interfaces.views.status import action_json


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
            readable_times(a.label),
            a.subject or ", ".join(a.targets),
            a.by,
            "yes" if a.done else "no",
            readable_times(a.result),
        ]
        for a in actions
    ]
    return format_table(["when", "action", "on", "by", "done", "result"], rows, width=width)


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
            readable_times(r.reason + (f" ({r.detail})" if r.detail else "")),
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
        width=width,
        shrink_first=(7, 4),
    )
    return f"{summary}\n{table}{note}"
