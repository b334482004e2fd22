"""The views: every text table and JSON object the commands and the HTTP API print, built only
from the typed results of the passes and the records of the store.

The JSON shapes are the contracts of docs/commands.md and docs/http-api.md (`reap --json`,
`watch --json`, `status --json`, `audit --json`, `report --json`, `GET /status`): further keys
may be added, these stay.

One module per subject (`reap`, `watch`, `monitors`, `status`, `audit`, `digest`), re-exported
here, so that call sites read `views.reap_json(...)`."""

from __future__ import annotations

from reaper.interfaces.views.audit import actions_table, audit_json, audit_table
from reaper.interfaces.views.digest import digest_json, digest_text, report_headline
from reaper.interfaces.views.monitors import (
    event_json,
    monitor_detail_json,
    monitor_json,
    monitor_log_lines,
    monitor_settings_json,
    monitor_state,
    monitors_table,
)
from reaper.interfaces.views.reap import guards_json, reap_json, reap_summary, reap_table
from reaper.interfaces.views.status import (
    RECENT_ACTIONS,
    RECENT_ACTIONS_MAX,
    STATUS_SNAPSHOTS,
    action_json,
    fleet_json,
    fleet_view_json,
    recent_actions,
    status_json,
    status_lines,
    status_report,
)
from reaper.interfaces.views.watch import watch_json, watch_lines

__all__ = [
    "RECENT_ACTIONS",
    "RECENT_ACTIONS_MAX",
    "STATUS_SNAPSHOTS",
    "action_json",
    "actions_table",
    "audit_json",
    "audit_table",
    "digest_json",
    "digest_text",
    "event_json",
    "fleet_json",
    "fleet_view_json",
    "guards_json",
    "monitor_detail_json",
    "monitor_json",
    "monitor_log_lines",
    "monitor_settings_json",
    "monitor_state",
    "monitors_table",
    "reap_json",
    "reap_summary",
    "reap_table",
    "recent_actions",
    "report_headline",
    "status_json",
    "status_lines",
    "status_report",
    "watch_json",
    "watch_lines",
]
