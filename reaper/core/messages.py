"""The words of every alert: one function per event, each returning an `Alert`.

They are read on a phone lock screen, often half awake: the title is one line of what happened,
the body one line of what to do about it, with the facts needed to decide (which instance, what
it costs, when). Times are UTC, durations short ("23h", "1h30m"). Channels do the formatting;
these functions only choose words, so one test can render them all.

`dedup_key` is `<event>:<subject>`: a repeat of the same condition about the same thing replaces
the earlier notification on the phone where a channel can replace one; different events never
do. Provider words come with the instance (`provider_label`, `name_field`,
`termination_loses`) or as a `label` argument: nothing here names a provider.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime, timedelta

from reaper.core.leaks import IDLE_UTIL_PERCENT, Finding, leak_bills
from reaper.core.models import Alert, AlertLevel, Exemption, Instance, PhoneAction
from reaper.core.units import HOURS_PER_MONTH, humanize, money, utc, weekday_time

_NAME_MAX = 60
_MESSAGE_MAX = 300
_WEBHOOK_TITLE_MAX = 200


def _provider(inst: Instance) -> str:
    return inst.provider_label or inst.provider


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def label(inst: Instance) -> str:
    """`name (<provider>:<id>)`: the name people recognise, the id `reaper keep` takes."""
    name = _short(inst.name, _NAME_MAX)
    return f"{name} ({inst.key})" if name else inst.key


def _bills(inst: Instance) -> str:
    if inst.cost_per_hour is None:
        return "cost unknown"
    per_hour = inst.cost_per_hour
    return f"{money(per_hour)}/h ({money(per_hour * HOURS_PER_MONTH)}/month)"


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
    keep = f'`reaper keep {inst.key}`, or put "{protect_marker}" in its {inst.name_field}'
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
            f" {inst.termination_loses} {_how_to_keep(inst, protect_marker, next_check)}"
            + (" REAPER_MODE=observe destroys nothing." if observe else "")
        ),
        level="warning",
        event="termination_warning",
        dedup_key=f"termination_warning:{inst.key}",
        url=inst.console_url,
        actions=warning_actions(inst, observe=observe),
    )


# A folded message carries at most this many bytes of body unless told otherwise (the pass
# passes the smallest budget of the configured channels, so no channel cuts a name off a
# warning it delivers).
FOLD_BUDGET = 3000


def _chunks(
    entries: list[tuple[str, str, str]], footer: str, budget: int
) -> list[tuple[list[str], list[str]]]:
    """(key, group, line) entries — in order — into chunks of (keys, body lines) whose body,
    with a header line per group and the footer, fits `budget` bytes."""
    chunks: list[tuple[list[str], list[str]]] = []
    used = 0
    group: str | None = None
    for key, header, line in entries:
        size = len(line.encode()) + 1
        extra = len(header.encode()) + 1 if header != group else 0
        if not chunks or used + size + extra > budget:
            chunks.append(([], []))
            used = len(footer.encode()) + 1
            group = None
            extra = len(header.encode()) + 1
        if header != group:
            chunks[-1][1].append(header)
            group = header
        chunks[-1][0].append(key)
        chunks[-1][1].append(line)
        used += size + extra
    return chunks


def fold_warnings(
    items: list[tuple[Instance, datetime]],
    now: datetime,
    protect_marker: str,
    *,
    next_check: datetime,
    observe: bool = False,
    budget: int = FOLD_BUDGET,
) -> list[tuple[list[str], Alert]]:
    """Many warnings of one pass folded into one message — several only when the list is too
    long for the smallest configured channel (`budget` bytes of body) — naming every instance
    under its deadline, so that a chat's rate limit cannot delay the notice of the last one.
    Returns (instance keys, alert) per message: an instance is warned only by a delivered
    message that names it."""
    verb = "would be terminated (observe mode)" if observe else "will be terminated"
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
    ordered = sorted(items, key=lambda item: (item[1], item[0].key))
    entries = [
        (inst.key, f"At {utc(at)}:", f"- {label(inst)}, {_bills(inst).split(' (')[0]}{_note(inst)}")
        for inst, at in ordered
    ]
    deadline = {inst.key: at for inst, at in items}
    by_key = {inst.key: inst for inst, _at in items}
    chunks = _chunks(entries, how, budget)
    folded = []
    for number, (keys, body) in enumerate(chunks, start=1):
        first = min(deadline[k] for k in keys)
        part = f" ({number}/{len(chunks)})" if len(chunks) > 1 else ""
        alert = Alert(
            title=f"{len(keys)} stopped instances {verb}, the first {utc(first)}{part}",
            body="\n".join([*body, how]),
            level="warning",
            event="termination_warning",
            # Its own per pass and part: a fold never replaces another on the phone.
            dedup_key=f"termination_warnings:{now.isoformat()}:{number}",
            actions=fold_actions([by_key[k] for k in keys], observe=observe),
        )
        folded.append((keys, alert))
    return folded


def fold_would_terminate(
    instances: list[Instance], now: datetime, *, budget: int = FOLD_BUDGET
) -> list[Alert]:
    """Observe mode's "would terminate" for many instances of one pass, folded likewise."""
    how = "REAPER_MODE=observe destroys nothing: terminate them yourself, or `reaper keep` them."
    entries = [
        (i.key, "Stopped, due now:", f"- {label(i)}, {_bills(i).split(' (')[0]}") for i in instances
    ]
    chunks = _chunks(entries, how, budget)
    return [
        Alert(
            title=f"Would terminate {len(keys)} stopped instances (observe mode)"
            + (f" ({number}/{len(chunks)})" if len(chunks) > 1 else ""),
            body="\n".join([*body, how]),
            level="warning",
            event="would_terminate",
            dedup_key=f"would_terminate:{now.isoformat()}:{number}",
        )
        for number, (keys, body) in enumerate(chunks, start=1)
    ]


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
            f"{_provider(inst)} still lists it ({inst.raw_status}, bills"
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


def provider_failing(provider: str, label: str, account: str, message: str) -> Alert:
    """`label`: the provider's display name."""
    return Alert(
        title=f"{label} account {account}: API failing",
        body=(
            f"{_short(message, _MESSAGE_MAX)}. Nothing on this account is reaped until it"
            " answers: check its API key and the provider's status page."
        ),
        level="warning",
        event="provider_failing",
        dedup_key=f"provider_failing:{provider}:{account}",
    )


def _bill_lines(instances: list[Instance], shown: int = 20) -> str:
    """One line per instance with what it bills ($/h and per month), at most `shown`."""
    lines = [f"- {label(i)}: bills {_bills(i)}" for i in instances[:shown]]
    if len(instances) > shown:
        lines.append(f"- (+{len(instances) - shown} more)")
    return "\n".join(lines)


def cap_exceeded(due: int, cap: int, instances: list[Instance], source: str) -> Alert:
    """`source` names what set the cap (REAPER_MAX_TERMINATIONS or --max-terminations)."""
    if cap == 0:
        return Alert(
            title=f"Reaper held back {due} due terminations ({source}=0: terminations are off)",
            body=(
                f"Nothing was terminated, as {source}=0 asks. Due, and billing:\n"
                f"{_bill_lines(instances)}\nThis alert is not repeated until none is due."
            ),
            level="warning",
            event="cap_exceeded",
            dedup_key="cap_exceeded",
        )
    return Alert(
        title=f"Reaper held back {due} due terminations (cap {cap}, {source})",
        body=(
            f"Nothing was terminated. If they really are leftovers, run `reaper reap"
            f" --max-terminations {due}` or raise REAPER_MAX_TERMINATIONS. Due, and billing:\n"
            f"{_bill_lines(instances)}\nThis alert is not repeated until the cap no longer"
            " holds; every pass exits 1 while it does."
        ),
        level="critical",
        event="cap_exceeded",
        dedup_key="cap_exceeded",
    )


# What to do about each exemption, for its alert.
_EXEMPTION_ADVICE: dict[Exemption, str] = {
    "unreadable_protection": (
        "The provider's answer does not let reaper read the field that may protect it, so it"
        " counts as protected and is never terminated. Check it in the console: terminate it"
        " there, or protect it on purpose (`reaper keep <provider>:<id> --for forever`)."
    ),
    "cluster": (
        "The pod endpoints cannot delete a cluster member: terminate the cluster in the"
        " console (or keep it on purpose with `reaper keep`)."
    ),
    "cap": "The termination cap holds it back: see the cap's own alert.",
    "no_channel": "No alert channel reaches a person: see the no-channel alert.",
}


def needs_you(kind: Exemption, items: list[tuple[Instance, str]]) -> Alert:
    """Stopped instances past their deadline that reaper will not terminate, for a reason a
    person may not intend (`kind`), each with why and what it bills. Sent once per instance and
    episode; every pass exits 1 while one lasts."""
    instances = [inst for inst, _why in items]
    if len(items) == 1:
        title = f"Needs you: {label(instances[0])} is past its deadline and will not be reaped"
    else:
        title = f"Needs you: {len(items)} stopped instances past their deadline will not be reaped"
    lines = [f"- {label(i)}: bills {_bills(i)}; {why}" for i, why in items[:20]]
    if len(items) > 20:
        lines.append(f"- (+{len(items) - 20} more)")
    return Alert(
        title=title,
        body="\n".join([*lines, _EXEMPTION_ADVICE[kind]]),
        level="critical",
        event="needs_you",
        dedup_key=f"needs_you:{kind}:" + ",".join(sorted(i.key for i in instances)),
        url=instances[0].console_url if len(items) == 1 else None,
    )


def provider_clock_off(provider: str, label: str, message: str) -> Alert:
    """`label`: the provider's display name; `message`: both clocks, in a line."""
    return Alert(
        title=f"{label}'s clock is off: nothing on {label} is decided",
        body=(
            f"{message[0].upper()}{message[1:]}. The other providers go on; this alert is not"
            " repeated until the clocks agree again."
        ),
        level="critical",
        event="provider_clock_off",
        dedup_key=f"provider_clock_off:{provider}",
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


def clock_behind(problem: str) -> Alert:
    """`problem`: what is wrong with the clock, in a line."""
    return Alert(
        title="Reaper's clock cannot be trusted: the pass decided nothing",
        body=f"{problem[0].upper()}{problem[1:]}. Check the machine's clock (NTP).",
        level="critical",
        event="clock_behind",
        dedup_key="clock_behind",
    )


def unknown_settings(names: Sequence[str]) -> Alert:
    """REAPER_* names the settings do not know: each a setting whose default applies."""
    listed = ", ".join(names)
    return Alert(
        title=f"Unknown setting{'s' if len(names) > 1 else ''} {listed}: ignored",
        body=(
            f"reaper does not know {listed}: a misspelt name is not read, and the default of the"
            " setting meant applies (REAPER_STOPED_TTL=48h leaves the 24h TTL). Fix the name"
            " in the deployment, or set REAPER_ALLOW_UNKNOWN=true if it is meant."
        ),
        level="warning",
        event="unknown_settings",
        dedup_key="unknown_settings",
    )


def no_channel_hold(instances: list[Instance], channel_hint: str) -> Alert:
    """Written to the log only (no channel reaches anyone): why terminations wait."""
    return Alert(
        title=f"{len(instances)} due terminations held: no alert channel reaches a person",
        body=(
            f"Configure {channel_hint}, or set REAPER_REQUIRE_CHANNEL=false to accept warnings"
            f" written only to the log. Held, and billing:\n{_bill_lines(instances)}"
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
    provider: str,
    label: str,
    account: str,
    balance: float,
    spend_per_hour: float | None,
    minimum: float,
) -> Alert:
    """`label`: the provider's display name."""
    if spend_per_hour and spend_per_hour > 0:
        hours_left = max(balance, 0) / spend_per_hour
        left = f"About {humanize(timedelta(hours=hours_left))} left at {money(spend_per_hour)}/h."
    else:
        hours_left = float("inf")
        left = "Nothing is billing now."
    urgent = balance <= 0 or hours_left < 2
    return Alert(
        title=(f"{label} {account}: balance {money(balance)} (below {money(minimum)})"),
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


def leak_alert(
    finding: Finding,
    since: datetime,
    now: datetime,
    *,
    label: str,
    max_runtime: timedelta | None = None,
) -> Alert:
    """The words for one leak: title = what, body = what to do. `label`: the provider's name."""
    held = humanize(now - since)
    bills = leak_bills(finding.cost_per_hour)
    who = finding.subject
    provider = label
    title: str
    body: str
    if finding.kind == "frozen":
        title = f"{who} is frozen and still bills its GPU ({bills})"
        body = (
            f"Nothing reaps a frozen instance: destroy it in the {provider} console if its job is"
            " over."
        )
    elif finding.kind == "stuck" and finding.stalled:
        title = f"{who} stuck for {held}: {finding.stalled}"
        body = (
            f"It bills {bills} and may never become usable: check it in the {provider} console"
            " and terminate it if it is dead."
            + (
                " (A stopped one is reaped after REAPER_STOPPED_TTL, with a warning first.)"
                if finding.state == "stopped"
                else " The reaper never terminates it for this."
            )
        )
    elif finding.kind == "stuck":
        title = f"{who} stuck in {finding.raw_status or 'an unreadable state'} for {held}"
        body = (
            f"The reaper never terminates unknown or ERROR instances ({bills}): check it in the"
            f" {provider} console and terminate it if it is dead."
        )
    elif finding.kind == "orphan_volume":
        title = f"{provider} volume {who} unattached for {held} ({finding.detail})"
        body = (
            "Nothing references it: delete it in the console once its data is safe elsewhere,"
            " or attach it to a new instance."
        )
    elif finding.kind == "max_runtime":
        start = finding.started_at or since
        limit = humanize(max_runtime or timedelta(0))
        title = f"{who} running for {humanize(now - start)} at {bills}"
        body = f"Past REAPER_MAX_RUNTIME ({limit}): stop it if its job is done."
    elif finding.kind == "future_start":
        title = f"{who}: {provider} reports a start time in the future"
        body = (
            f"{finding.detail}: the reaper cannot read it as a restart and keeps the stopped clock"
            " it has; check this machine's clock (NTP) and the instance in the console."
        )
    else:
        title = f"{who} idle while billing {bills}"
        body = (
            f"Under {IDLE_UTIL_PERCENT:g}% GPU for {held} by {provider}'s metrics: stop it if its"
            " job is done (its own idle-watch decides on its own)."
        )
    return Alert(
        title=title,
        body=body,
        level=finding.level,
        event=finding.kind,
        dedup_key=f"{finding.kind}:{finding.provider}:{finding.id}",
        url=finding.console_url,
    )


def fetch_failed_alert(
    provider: str,
    account: str,
    what: str,
    message: str,
    *,
    label: str,
    note: tuple[str, str] | None = None,
) -> Alert:
    """A balance or volume read that failed. `note`: the provider's own (title, body) for it,
    when it has some (a read through an API being retired, say)."""
    if note is not None:
        title, body = note
    else:
        title = f"{label} {account}: {what} unreadable"
        body = (
            f"Reaping is unaffected; {what} checks skip this account until it answers: check the"
            " key's permissions."
        )
    return Alert(
        title=title,
        body=f"{body} ({' '.join(message.split())[:200]})",
        level="warning",
        event="guard_fetch_failed",
        dedup_key=f"guard_fetch_failed:{provider}:{account}:{what}",
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


# --- newcomer and operator (#19) ------------------------------------------------------------


def balance_runway(
    provider: str,
    label: str,
    account: str,
    balance: float,
    spend_per_hour: float,
    hours: float,
    threshold_hours: float,
) -> Alert:
    """A balance above BALANCE_MIN that lasts fewer than BALANCE_HOURS at what the account
    spends now (running instances and storage). `label`: the provider's display name."""
    left = humanize(timedelta(hours=hours))
    return Alert(
        title=f"{label} {account}: balance lasts about {left} at {money(spend_per_hour)}/h",
        body=(
            f"{money(balance)} left: under {threshold_hours:g}h (BALANCE_HOURS) at the current"
            " spend of running instances and storage. Top up, or stop what you do not need; at"
            " zero the provider stops instances."
        ),
        level="critical" if hours < 2 else "warning",
        event="balance_runway",
        dedup_key=f"balance_runway:{provider}:{account}",
    )


# --- actions from the phone ---------------------------------------------------------------
# The buttons an alert offers and the one-line answers a press or an action link gets. Every
# action is carried out (or refused) by the same checks as the command line; these only choose
# the words.

KEEP_SHORT = timedelta(days=1)
KEEP_LONG = timedelta(weeks=1)
MUTE_FOR = timedelta(days=1)
# A folded warning offers "keep all" and actions of their own to this many of its instances
# (a channel shows fewer when it has fewer slots).
FOLD_ACTION_INSTANCES = 10
_BUTTON_NAME_MAX = 20


def warning_actions(inst: Instance, *, observe: bool = False) -> tuple[PhoneAction, ...]:
    """Keep 1 day, keep 1 week, terminate now. Observe mode offers no "terminate now": it
    would terminate nothing."""
    subject = label(inst)
    actions = [
        PhoneAction(
            kind="keep",
            label="Keep 1 day",
            targets=(inst.key,),
            subject=subject,
            duration=KEEP_SHORT,
        ),
        PhoneAction(
            kind="keep",
            label="Keep 1 week",
            targets=(inst.key,),
            subject=subject,
            duration=KEEP_LONG,
        ),
    ]
    if not observe:
        actions.append(
            PhoneAction(
                kind="terminate",
                label="Terminate now",
                targets=(inst.key,),
                subject=subject,
                stretch=inst.stopped_since,
            )
        )
    return tuple(actions)


def fold_actions(instances: list[Instance], *, observe: bool = False) -> tuple[PhoneAction, ...]:
    """A folded warning: "keep all 1 day", then keep 1 day and terminate now for each of the
    first FOLD_ACTION_INSTANCES instances (earliest deadline first, as listed)."""
    everyone = PhoneAction(
        kind="keep",
        label="Keep all 1 day",
        targets=tuple(i.key for i in instances),
        subject=f"{len(instances)} stopped instances",
        duration=KEEP_SHORT,
    )
    actions = [everyone]
    for inst in instances[:FOLD_ACTION_INSTANCES]:
        short = _short(inst.name or inst.id, _BUTTON_NAME_MAX)
        subject = label(inst)
        actions.append(
            PhoneAction(
                kind="keep",
                label=f"Keep {short} 1 day",
                targets=(inst.key,),
                subject=subject,
                duration=KEEP_SHORT,
            )
        )
        if not observe:
            actions.append(
                PhoneAction(
                    kind="terminate",
                    label=f"Terminate {short}",
                    targets=(inst.key,),
                    subject=subject,
                    stretch=inst.stopped_since,
                )
            )
    return tuple(actions)


def watchdog_actions(host: str) -> tuple[PhoneAction, ...]:
    """Mute 1 day, open the status page (its address is filled in where one is configured)."""
    return (
        PhoneAction(
            kind="mute",
            label="Mute 1 day",
            targets=(host,),
            subject=f"monitor {host}",
            duration=MUTE_FOR,
        ),
        PhoneAction(kind="open", label="Status page", subject="the status page"),
    )


def action_kept(subject: str, until: datetime, by: str) -> str:
    return f"Kept {subject} until {weekday_time(until)} by {by}."


def action_already_kept(subject: str, until: datetime | None) -> str:
    when = weekday_time(until) if until is not None else "further notice"
    return f"{subject} was already kept until {when}: nothing changed."


def action_muted(subject: str, until: datetime, by: str) -> str:
    return f"Muted {subject} until {weekday_time(until)} by {by}."


def action_no_monitor(host: str) -> str:
    return f"Not muted: there is no monitor {host} (deleted meanwhile?)."


def action_terminated(subject: str, by: str) -> str:
    return f"Terminated {subject}, as {by} asked; confirmed gone by a new listing."


def action_terminate_unconfirmed(subject: str, by: str) -> str:
    return (
        f"Delete sent for {subject}, as {by} asked, but a new listing still shows it: the next"
        " pass checks again."
    )


def action_not_terminated(subject: str, why: str) -> str:
    return f"Not terminated {subject}: {why}."


def action_terminate_later(subject: str, why: str) -> str:
    return (
        f"Terminate {subject}: not done yet ({why}); the next pass tries again if it is still"
        " stopped."
    )


def action_confirm_prompt(subject: str, minutes: int) -> str:
    return f"Press “Yes, terminate” within {minutes} min to terminate {subject} now."


def action_confirm_label(subject: str) -> str:
    return f"⚠️ Yes, terminate {_short(subject, 40)}"


def action_describe(action: PhoneAction, now: datetime) -> str:
    """What pressing it does, in a sentence: for the action page."""
    if action.kind == "keep" and action.duration is not None:
        return (
            f"Keeps {action.subject} from being terminated until"
            f" {weekday_time(now + action.duration)} ({humanize(action.duration)} from now), the"
            " record `reaper keep` writes."
        )
    if action.kind == "mute" and action.duration is not None:
        return (
            f"Silences the alerts of {action.subject} until {weekday_time(now + action.duration)}"
            f" ({humanize(action.duration)} from now); its state is still tracked."
        )
    if action.kind == "terminate":
        return (
            f"Asks the reaper to terminate {action.subject} now. It reads the instance from the"
            " provider again first and terminates it only if it is still stopped, unprotected,"
            " not locked and not kept; what a termination destroys cannot be brought back."
        )
    return f"Opens {action.subject}."


ACTION_CHECKING = "Checking it with the provider, then terminating…"
REFUSED_UNKNOWN = "This action is unknown, used or expired."
REFUSED_CHAT = "Refused: this press did not come from the configured chat."


def refused_used(at: datetime) -> str:
    return f"Already used ({weekday_time(at)}): nothing done."


def refused_expired(at: datetime) -> str:
    return f"Expired at {weekday_time(at)} (actions last 24 h): nothing done."


# --- monitors: announced, held back by a mute ----------------------------------------------


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
