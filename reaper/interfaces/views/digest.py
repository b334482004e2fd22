"""`reaper report` and the daily digest: spend, leaks, balances, what was reaped."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from reaper.core.digest import BalanceLine, Digest
from reaper.core.units import humanize, iso, money, utc
from reaper.interfaces.table import format_table
from reaper.interfaces.views.failures import did_not_answer


def digest_json(digest: Digest) -> dict[str, Any]:
    """The object of `reaper report --json`."""
    data: dict[str, Any] = digest.model_dump(mode="json", exclude={"labels"})
    data["at"] = iso(digest.at)
    return data


def report_headline(digest: Digest) -> str:
    """`report at ...: spend now $X/h`, and which accounts did not answer: a total that
    silently leaves an account out would read as the whole spend."""
    line = f"report at {utc(digest.at)}: spend now {money(digest.spend_per_hour)}/h"
    if digest.errors:
        line += f" — not counted, did not answer: {did_not_answer(digest.errors)}"
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
            [s.provider, s.account, money(s.per_hour), str(s.billing), str(s.unknown_cost)]
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
                "" if b.balance is None else money(b.balance),
                "" if b.spend_per_hour is None else money(b.spend_per_hour),
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
                "" if r.per_month is None else money(r.per_month),
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
