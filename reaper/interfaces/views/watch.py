"""`reaper watch`: its `--json` object and its lines."""

from __future__ import annotations

from typing import Any

from reaper.core.units import iso
from reaper.passes.watch import WatchReport


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
