"""The words of every alert: one function per event, each returning an `Alert`.

They are read on a phone lock screen, often half awake: the title is one line of what happened,
the body one line of what to do about it, with the facts needed to decide (which instance, what
it costs, when). Times are UTC, durations short ("23h", "1h30m"). Channels do the formatting;
these functions only choose words, so one test can render them all.

`dedup_key` is `<event>:<subject>`: a repeat of the same condition about the same thing replaces
the earlier notification on the phone where a channel can replace one; different events never
do. Provider words come with the instance (`provider_label`, `name_field`,
`termination_loses`) or as a `label` argument: nothing here names a provider.

One module per subject (`text`, `reap`, `heartbeat`, `money`, `actions`); this package
re-exports them all, so that call sites read `messages.terminated(...)`."""

from __future__ import annotations

from reaper.core.messages.actions import (
    ACTION_CHECKING,
    FOLD_ACTION_INSTANCES,
    KEEP_LONG,
    KEEP_SHORT,
    MUTE_FOR,
    REFUSED_CHAT,
    REFUSED_UNKNOWN,
    action_already_kept,
    action_confirm_label,
    action_confirm_prompt,
    action_describe,
    action_kept,
    action_muted,
    action_no_monitor,
    action_not_terminated,
    action_terminate_later,
    action_terminate_unconfirmed,
    action_terminated,
    fold_actions,
    refused_expired,
    refused_used,
    warning_actions,
    watchdog_actions,
)
from reaper.core.messages.heartbeat import (
    fold_heartbeat,
    instance_stopped_watchdog,
    monitor_created,
    monitor_down,
    monitor_down_after_mute,
    monitor_failed,
    monitor_recovered,
    monitor_still_down,
    reaper_silent,
    running_without_watchdog,
    watchdog_silent_billing,
    with_note,
)
from reaper.core.messages.money import balance_low, balance_runway, fetch_failed_alert, leak_alert
from reaper.core.messages.reap import (
    FOLD_BUDGET,
    cap_exceeded,
    clock_behind,
    fold_warnings,
    fold_would_terminate,
    needs_you,
    no_channel_hold,
    provider_clock_off,
    provider_failing,
    terminated,
    termination_unconfirmed,
    termination_warning,
    unknown_settings,
    would_terminate,
)
from reaper.core.messages.text import label, test_message, webhook

__all__ = [
    "ACTION_CHECKING",
    "FOLD_ACTION_INSTANCES",
    "FOLD_BUDGET",
    "KEEP_LONG",
    "KEEP_SHORT",
    "MUTE_FOR",
    "REFUSED_CHAT",
    "REFUSED_UNKNOWN",
    "action_already_kept",
    "action_confirm_label",
    "action_confirm_prompt",
    "action_describe",
    "action_kept",
    "action_muted",
    "action_no_monitor",
    "action_not_terminated",
    "action_terminate_later",
    "action_terminate_unconfirmed",
    "action_terminated",
    "balance_low",
    "balance_runway",
    "cap_exceeded",
    "clock_behind",
    "fetch_failed_alert",
    "fold_actions",
    "fold_heartbeat",
    "fold_warnings",
    "fold_would_terminate",
    "instance_stopped_watchdog",
    "label",
    "leak_alert",
    "monitor_created",
    "monitor_down",
    "monitor_down_after_mute",
    "monitor_failed",
    "monitor_recovered",
    "monitor_still_down",
    "needs_you",
    "no_channel_hold",
    "provider_clock_off",
    "provider_failing",
    "reaper_silent",
    "refused_expired",
    "refused_used",
    "running_without_watchdog",
    "terminated",
    "termination_unconfirmed",
    "termination_warning",
    "test_message",
    "unknown_settings",
    "warning_actions",
    "watchdog_actions",
    "watchdog_silent_billing",
    "webhook",
    "with_note",
    "would_terminate",
]
