"""The words of every alert: one function per event, each returning an `Alert`.

They are read on a phone lock screen, often half awake: the title is one line of what happened,
the body one line of what to do about it, with the facts needed to decide (which instance, what
it costs, when). Times are UTC, durations short ("23h", "1h30m"). Channels do the formatting;
these functions only choose words, so one test can render them all.

`dedup_key` is `<event>:<subject>`: a repeat of the same condition about the same thing replaces
the earlier notification on the phone (Bark `id`), different events never do.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta

from reaper.clock import as_utc
from reaper.models import Alert, AlertLevel, Instance

HOURS_PER_MONTH = 730
PROVIDER_NAMES = {"runpod": "RunPod", "vast": "Vast"}
_NAME_MAX = 60
_MESSAGE_MAX = 300
_WEBHOOK_TITLE_MAX = 200


def humanize(delta: timedelta) -> str:
    """A duration in at most two units: 45s, 7m, 1h30m, 23h, 2d3h."""
    seconds = int(abs(delta).total_seconds())
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d{hours}h" if hours else f"{days}d"
    if hours:
        return f"{hours}h{minutes}m" if minutes else f"{hours}h"
    if minutes:
        return f"{minutes}m"
    return f"{secs}s"


def utc(moment: datetime) -> str:
    return as_utc(moment).strftime("%Y-%m-%d %H:%M UTC")


def money(amount: float) -> str:
    """Dollars; cents are too coarse for storage, which bills fractions of a cent an hour."""
    if 0 < abs(amount) < 0.1:
        return f"${amount:.3f}"
    return f"${amount:,.2f}"


def provider_name(provider: str) -> str:
    return PROVIDER_NAMES.get(provider, provider)


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def label(inst: Instance) -> str:
    """`name (runpod:abc123)`: the name people recognise, the id `reaper keep` takes."""
    name = _short(inst.name, _NAME_MAX)
    return f"{name} ({inst.key})" if name else inst.key


def _bills(inst: Instance) -> str:
    if inst.cost_per_hour is None:
        return "cost unknown"
    per_hour = inst.cost_per_hour
    return f"{money(per_hour)}/h ({money(per_hour * HOURS_PER_MONTH)}/month)"


def _gb(size: float | None) -> str:
    return f" {size:g} GB" if size else ""


def _what_is_lost(inst: Instance) -> str:
    """What termination destroys and what it leaves, in the provider's own words."""
    if inst.provider == "runpod":
        network = (
            f"network volume {inst.network_volume_id} survives"
            if inst.network_volume_id
            else "network volumes survive"
        )
        return (
            f"Lost: container disk{_gb(inst.container_disk_gb)} and volume"
            f" disk{_gb(inst.volume_disk_gb)}; {network}."
        )
    return f"Lost: instance disk{_gb(inst.container_disk_gb)}; Vast volumes survive."


def _name_field(inst: Instance) -> str:
    return "name" if inst.provider == "runpod" else "label"


def _stopped_for(inst: Instance, now: datetime | None) -> str:
    if inst.stopped_since is None:
        return "Stopped"
    if now is None:
        return f"Stopped since {utc(inst.stopped_since)}"
    return f"Stopped for {humanize(now - inst.stopped_since)}"


def _how_to_keep(inst: Instance, protect_marker: str, next_check: datetime) -> str:
    """How to spare it. Starting it saves it only where the provider's answer shows a start;
    elsewhere a start and stop between two checks is invisible, so it must still be running
    at the next check."""
    keep = f'`reaper keep {inst.key}`, or put "{protect_marker}" in its {_name_field(inst)}'
    if inst.restart_visible:
        return f"To keep it: start it, {keep}."
    return (
        f"To keep it: {keep}, or start it and leave it running past the next check"
        f" ({utc(next_check)}): a start and stop between two checks cannot be seen."
    )


def _note(inst: Instance) -> str:
    return f" {inst.state_note.rstrip('.')}." if inst.state_note else ""


def termination_warning(
    inst: Instance,
    terminate_at: datetime,
    now: datetime,
    protect_marker: str,
    *,
    next_check: datetime,
    observe: bool = False,
) -> Alert:
    """The notice before a termination. It names the time: the termination comes no sooner
    than that, and no sooner than REAPER_WARN_BEFORE after this message was delivered."""
    when = f"in {humanize(terminate_at - now)}" if terminate_at > now else "now"
    if observe:
        title = f"{label(inst)} would be terminated {when} ({utc(terminate_at)}; observe mode)"
    else:
        title = f"{label(inst)} will be terminated {when} ({utc(terminate_at)})"
    return Alert(
        title=title,
        body=(
            f"{_stopped_for(inst, now)}, bills {_bills(inst)} of storage.{_note(inst)}"
            f" {_what_is_lost(inst)} {_how_to_keep(inst, protect_marker, next_check)}"
            + (" REAPER_MODE=observe destroys nothing." if observe else "")
        ),
        level="warning",
        event="termination_warning",
        dedup_key=f"termination_warning:{inst.key}",
        url=inst.console_url,
    )


def termination_warnings(
    items: list[tuple[Instance, datetime]],
    now: datetime,
    protect_marker: str,
    *,
    next_check: datetime,
    observe: bool = False,
) -> Alert:
    """Many warnings of one pass folded into one message, each instance with its deadline, so
    that a chat's rate limit cannot delay the notice of the last one."""
    verb = "would be terminated (observe mode)" if observe else "will be terminated"
    first = min(at for _inst, at in items)
    lines = [f"- {label(inst)}: {utc(at)}, bills {_bills(inst)}{_note(inst)}" for inst, at in items]
    invisible = any(not inst.restart_visible for inst, _at in items)
    how = (
        "To keep one: `reaper keep <provider>:<id>`, or put"
        f' "{protect_marker}" in its name or label'
        + (
            f", or start it and leave it running past the next check ({utc(next_check)})."
            if invisible
            else ", or start it."
        )
    )
    return Alert(
        title=f"{len(items)} stopped instances {verb}, the first {utc(first)}",
        body="\n".join([*lines, how]),
        level="warning",
        event="termination_warning",
        dedup_key="termination_warnings",
    )


def terminated(inst: Instance, storage_per_month: float | None) -> Alert:
    if storage_per_month is None and inst.cost_per_hour is not None:
        storage_per_month = inst.cost_per_hour * HOURS_PER_MONTH
    saved = (
        f"; that stops {money(storage_per_month)}/month of storage"
        if storage_per_month is not None
        else ""
    )
    since = f" (stopped since {utc(inst.stopped_since)})" if inst.stopped_since else ""
    return Alert(
        title=f"Terminated {label(inst)}{since}",
        body=f"Nothing to do{saved}. `reaper audit` lists every termination.",
        level="info",
        event="terminated",
        dedup_key=f"terminated:{inst.key}",
    )


def termination_unconfirmed(inst: Instance) -> Alert:
    return Alert(
        title=f"Termination of {label(inst)} not confirmed",
        body=(
            f"{provider_name(inst.provider)} still lists it ({inst.raw_status}, bills"
            f" {_bills(inst)}) after the delete: check it in the console;"
            " the next pass tries again."
        ),
        level="critical",
        event="termination_unconfirmed",
        dedup_key=f"termination_unconfirmed:{inst.key}",
        url=inst.console_url,
    )


def would_terminate(inst: Instance) -> Alert:
    return Alert(
        title=f"Would terminate {label(inst)} (observe mode)",
        body=(
            f"{_stopped_for(inst, None)}, bills {_bills(inst)}. REAPER_MODE=observe destroys"
            f" nothing: terminate it yourself, or spare it with `reaper keep {inst.key}`."
        ),
        level="warning",
        event="would_terminate",
        dedup_key=f"would_terminate:{inst.key}",
        url=inst.console_url,
    )


def provider_failing(provider: str, account: str, message: str) -> Alert:
    return Alert(
        title=f"{provider_name(provider)} account {account}: API failing",
        body=(
            f"{_short(message, _MESSAGE_MAX)}. Nothing on this account is reaped until it"
            " answers: check its API key and the provider's status page."
        ),
        level="warning",
        event="provider_failing",
        dedup_key=f"provider_failing:{provider}:{account}",
    )


def cap_exceeded(due: int, cap: int, instances: list[Instance], source: str) -> Alert:
    """`source` names what set the cap (REAPER_MAX_TERMINATIONS or --max-terminations)."""
    shown = ", ".join(label(i) for i in instances[:3])
    more = f" (+{len(instances) - 3} more)" if len(instances) > 3 else ""
    return Alert(
        title=f"Reaper held back {due} due terminations (cap {cap}, {source})",
        body=(
            f"Nothing was terminated. If they really are leftovers, run `reaper reap"
            f" --max-terminations {due}` or raise REAPER_MAX_TERMINATIONS. Due: {shown}{more}."
            " This alert is not repeated until the cap no longer holds."
        ),
        level="critical",
        event="cap_exceeded",
        dedup_key="cap_exceeded",
    )


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
            f"No ping from {host} {since}; {provider_name(inst.provider)} shows it"
            f" {inst.raw_status}. Check it, or terminate it if its job is done."
        ),
        level="critical",
        event="watchdog_silent_billing",
        dedup_key=f"watchdog_silent_billing:{inst.key}",
        url=inst.console_url,
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


def clock_behind(now: datetime, last_pass: datetime) -> Alert:
    return Alert(
        title="Reaper's clock reads earlier than its last pass",
        body=(
            f"This pass read {utc(now)}, but a pass finished at {utc(last_pass)}. It decided"
            " nothing: check the machine's clock (NTP) before the next pass."
        ),
        level="critical",
        event="clock_behind",
        dedup_key="clock_behind",
    )


def no_channel_hold(count: int) -> Alert:
    """Written to the log only (no channel reaches anyone): why terminations wait."""
    return Alert(
        title=f"{count} due terminations held: no alert channel reaches a person",
        body=(
            "Configure TELEGRAM_BOT_TOKEN and TELEGRAM_CHAT_ID, BARK_URL or NTFY_URL, or set"
            " REAPER_REQUIRE_CHANNEL=false to accept warnings written only to the log."
        ),
        level="critical",
        event="no_channel_hold",
        dedup_key="no_channel_hold",
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


def balance_low(
    provider: str, account: str, balance: float, spend_per_hour: float | None, minimum: float
) -> Alert:
    if spend_per_hour and spend_per_hour > 0:
        hours_left = max(balance, 0) / spend_per_hour
        left = f"About {humanize(timedelta(hours=hours_left))} left at {money(spend_per_hour)}/h."
    else:
        hours_left = float("inf")
        left = "Nothing is billing now."
    urgent = balance <= 0 or hours_left < 2
    return Alert(
        title=(
            f"{provider_name(provider)} {account}: balance {money(balance)}"
            f" (below {money(minimum)})"
        ),
        body=f"{left} Top up, or stop what you do not need; at zero the provider stops instances.",
        level="critical" if urgent else "warning",
        event="balance_low",
        dedup_key=f"balance_low:{provider}:{account}",
    )


def test_message() -> Alert:
    return Alert(
        title="reaper test alert",
        body="Alerts from reaper reach this channel. Nothing to do.",
        level="info",
        event="test",
    )


def webhook(
    text: str | None = None,
    *,
    title: str | None = None,
    body: str = "",
    level: AlertLevel = "warning",
) -> Alert:
    """A message an instance sent to `NOTIFY_URL`, forwarded as it came.

    `{"text": ...}`: the first line becomes the title and the rest the body, so the chat shows
    the text exactly as sent (a first line too long for a title leaves the whole text in the
    body). `{"title", "body", "level"}` is taken as given.
    """
    if text is not None:
        text = text.replace("\r\n", "\n").strip()
        first, _, rest = text.partition("\n")
        if len(first) <= _WEBHOOK_TITLE_MAX:
            title, body = first, rest
        else:
            title, body = "Message from an instance", text
    title = (title or "").strip()
    body = body.strip()
    if not title and not body:
        raise ValueError("expected a non-empty text, or a title/body")
    if not title:
        title = "Message from an instance"
    content = f"{level}\n{title}\n{body}".encode("utf-8", "surrogatepass")
    digest = hashlib.sha256(content).hexdigest()[:16]
    return Alert(
        title=title, body=body, level=level, event="webhook", dedup_key=f"webhook:{digest}"
    )
