"""The dead-man's switch's words: monitors down, back, failing, created, held by a mute, and
the watchdogs of instances that still bill."""

from __future__ import annotations

from datetime import datetime, timedelta

from reaper.core.messages.actions import watchdog_actions
from reaper.core.messages.text import _MESSAGE_MAX, _bills, _provider, _short, label
from reaper.core.models import Alert, Instance
from reaper.core.units import humanize, money, utc


def monitor_down(host: str, last_ping_at: datetime | None, now: datetime) -> Alert:
    if last_ping_at is None:
        title, last = f"{host}: no heartbeat yet", "It never pinged."
    else:
        title = f"{host}: no heartbeat for {humanize(now - last_ping_at)}"
        last = f"Last ping {utc(last_ping_at)}."
    return Alert(
        title=title,
        body=f"{last} Check the instance and its idle-watch; the next ping clears this.",
        level="warning",
        event="monitor_down",
        dedup_key=f"monitor_down:{host}",
        actions=watchdog_actions(host),
    )


def monitor_still_down(host: str, down_since: datetime, now: datetime) -> Alert:
    return Alert(
        title=f"{host}: still no heartbeat (down {humanize(now - down_since)})",
        body=(
            f"Down since {utc(down_since)}. Check it; if it is gone on purpose,"
            " ping /bye to retire the monitor."
        ),
        level="warning",
        event="monitor_still_down",
        # A reminder is a repeat of the down alert: it replaces it on the phone.
        dedup_key=f"monitor_down:{host}",
        actions=watchdog_actions(host),
    )


def monitor_recovered(host: str, downtime: timedelta) -> Alert:
    return Alert(
        title=f"{host}: heartbeat back after {humanize(downtime)}",
        body="Nothing to do.",
        level="info",
        event="monitor_recovered",
        dedup_key=f"monitor_recovered:{host}",
    )


def monitor_failed(host: str, exit_status: int | None, message: str) -> Alert:
    status = f" (exit {exit_status})" if exit_status is not None else ""
    said = f"{_short(message, _MESSAGE_MAX)} — " if message.strip() else ""
    return Alert(
        title=f"{host}: job failed{status}",
        body=f"{said}Check its logs; the next ping clears this.",
        level="warning",
        event="monitor_failed",
        dedup_key=f"monitor_failed:{host}",
    )


def watchdog_silent_billing(host: str, inst: Instance, last_ping_at: datetime | None) -> Alert:
    bills = (
        f"bills {money(inst.cost_per_hour)}/h" if inst.cost_per_hour is not None else "is running"
    )
    since = f"since {utc(last_ping_at)}" if last_ping_at else "ever"
    return Alert(
        title=f"Watchdog silent while {label(inst)} {bills}",
        body=(
            f"No ping from {host} {since}; {_provider(inst)} shows it"
            f" {inst.raw_status}. Check it, or terminate it if its job is done."
        ),
        level="critical",
        event="watchdog_silent_billing",
        dedup_key=f"watchdog_silent_billing:{inst.key}",
        url=inst.console_url,
        actions=watchdog_actions(host),
    )


def instance_stopped_watchdog(host: str, inst: Instance) -> Alert:
    return Alert(
        title=f"{label(inst)} stopped; the reaper takes over",
        body=(
            f"Its watchdog {host} went quiet with it. It is terminated after REAPER_STOPPED_TTL"
            f" unless started or kept (`reaper keep {inst.key}`)."
        ),
        level="info",
        event="instance_stopped_watchdog",
        dedup_key=f"instance_stopped_watchdog:{inst.key}",
        url=inst.console_url,
    )


def running_without_watchdog(inst: Instance, now: datetime) -> Alert:
    running = f" for {humanize(now - inst.started_at)}" if inst.started_at else ""
    return Alert(
        title=f"{label(inst)} runs without a watchdog",
        body=(
            f"Running{running} at {_bills(inst)}, never pinged. Start idle-watch.sh on it,"
            " or stop it when its job is done."
        ),
        level="warning",
        event="running_without_watchdog",
        dedup_key=f"running_without_watchdog:{inst.key}",
        url=inst.console_url,
    )


def reaper_silent(last_reap_at: datetime | None, now: datetime) -> Alert:
    if last_reap_at is None:
        title, last = "Reaper has never completed a pass", "No completed reap on record."
    else:
        title = f"Reaper silent for {humanize(now - last_reap_at)}"
        last = f"Last completed reap {utc(last_reap_at)}."
    return Alert(
        title=title,
        body=f"{last} Stopped instances are not being reaped: check its schedule and logs.",
        level="critical",
        event="reaper_silent",
        dedup_key="reaper_silent",
    )


def fold_heartbeat(alerts: list[Alert], limit: int) -> list[Alert]:
    """Past `limit` alerts in one watch pass, the rest become one summary: a storm helps
    nobody read it."""
    if len(alerts) <= limit:
        return alerts
    rest = alerts[limit - 1 :]
    titles = "\n".join(a.title for a in rest[:10])
    more = f"\n… and {len(rest) - 10} more" if len(rest) > 10 else ""
    summary = Alert(
        title=f"{len(rest)} more heartbeat alerts in this check",
        body=f"{titles}{more}\nSee `reaper status` for all monitors.",
        level=max((a.level for a in rest), key=("info", "warning", "critical").index),
        dedup_key="heartbeat:summary",
        event="heartbeat_summary",
    )
    return [*alerts[: limit - 1], summary]


def with_note(alert: Alert, note: str) -> Alert:
    """The alert with one more sentence of body."""
    return alert.model_copy(update={"body": f"{alert.body} {note}" if alert.body else note})


def monitor_created(host: str) -> Alert:
    """A first ping made a monitor: said once, so that a typo'd host is seen at once."""
    return Alert(
        title=f"New monitor {host} created by a first ping",
        body=(
            "Nothing to do if you expected it. A typo? `reaper monitor delete "
            f"{host}`; HEARTBEAT_AUTO_CREATE=false makes unknown hosts answer 404."
        ),
        level="info",
        event="monitor_created",
        dedup_key=f"monitor_created:{host}",
    )


def monitor_down_after_mute(host: str, down_since: datetime, muted_until: datetime) -> Alert:
    """A failure or silence that a mute held back, said once the mute ended."""
    return Alert(
        title=f"{host}: down since {utc(down_since)} (held while muted)",
        body=(
            f"The mute ended at {utc(muted_until)} and it is still down. Check it; the next"
            " ping clears this."
        ),
        level="warning",
        event="monitor_down_after_mute",
        dedup_key=f"monitor_down:{host}",
    )
