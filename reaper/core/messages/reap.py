"""The reap pass's words: warnings (alone and folded), terminations, what it holds back and
why, and what stops a pass from deciding (a provider failing, a clock that is off)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from reaper.core.messages.actions import fold_actions, warning_actions
from reaper.core.messages.text import (
    _MESSAGE_MAX,
    _bills,
    _note,
    _provider,
    _short,
    _stopped_for,
    label,
)
from reaper.core.models import Alert, Exemption, Instance
from reaper.core.units import HOURS_PER_MONTH, humanize, money, utc


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


def _of_storage(inst: Instance) -> str:
    """What a stopped one bills is its storage, except where it bills its whole price."""
    return " of storage" if inst.stopped_bills_storage else ""


def termination_warning(
    inst: Instance,
    terminate_at: datetime,
    now: datetime,
    protect_marker: str,
    *,
    next_check: datetime,
    observe: bool = False,
    off: str = "",
) -> Alert:
    """The notice before a termination. It names the time: the termination comes no sooner
    than that, and no sooner than REAPER_WARN_BEFORE after this message was delivered.
    `off`: what turns terminations off besides observe mode ("REAPER_MAX_TERMINATIONS=0"):
    the warning then promises nothing, as in observe mode, and offers no "terminate now"."""
    when = f"in {humanize(terminate_at - now)}" if terminate_at > now else "now"
    if observe or off:
        tag = "observe mode" if observe else "terminations are off"
        title = f"{label(inst)} would be terminated {when} ({utc(terminate_at)}; {tag})"
    else:
        title = f"{label(inst)} will be terminated {when} ({utc(terminate_at)})"
    return Alert(
        title=title,
        body=(
            f"{_stopped_for(inst, now)}, bills {_bills(inst)}{_of_storage(inst)}.{_note(inst)}"
            f" {inst.termination_loses} {_how_to_keep(inst, protect_marker, next_check)}"
            + _destroys_nothing(observe, off)
        ),
        level="warning",
        event="termination_warning",
        dedup_key=f"termination_warning:{inst.key}",
        url=inst.console_url,
        actions=warning_actions(inst, observe=observe or bool(off)),
    )


def _destroys_nothing(observe: bool, off: str) -> str:
    if observe:
        return " REAPER_MODE=observe destroys nothing."
    return f" {off} turns terminations off: nothing is destroyed." if off else ""


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
    off: str = "",
    budget: int = FOLD_BUDGET,
) -> list[tuple[list[str], Alert]]:
    """Many warnings of one pass folded into one message — several only when the list is too
    long for the smallest configured channel (`budget` bytes of body) — naming every instance
    under its deadline, so that a chat's rate limit cannot delay the notice of the last one.
    Returns (instance keys, alert) per message: an instance is warned only by a delivered
    message that names it. `off`: as for `termination_warning`."""
    if observe or off:
        tag = "observe mode" if observe else "terminations are off"
        verb = f"would be terminated ({tag})"
    else:
        verb = "will be terminated"
    invisible = any(not inst.restart_visible for inst, _at in items)
    how = (
        "To keep one: `reaper keep <provider>:<id>`, or put"
        f' "{protect_marker}" in its name or label'
        + (
            f", or start it and leave it running past the next check ({utc(next_check)})."
            if invisible
            else ", or start it."
        )
        + _destroys_nothing(False, off)
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
            actions=fold_actions([by_key[k] for k in keys], observe=observe or bool(off)),
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
        # What it billed stopped: storage on most providers, the whole price on some (the
        # record it is announced from does not say which).
        f"; that stops {money(storage_per_month)}/month" if storage_per_month is not None else ""
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
    "fresh_read": (
        "The provider's listing shows it due, but its read of this one instance right before"
        " the delete does not show it (or shows a state reaper cannot read), so nothing is"
        " sent. Check it in the console: terminate it there, or keep it on purpose."
    ),
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
            f"Configure {channel_hint} (or repair the one that fails: its warnings reached"
            " nobody), or set REAPER_REQUIRE_CHANNEL=false to accept warnings written only to"
            f" the log. Held, and billing:\n{_bill_lines(instances)}"
        ),
        level="critical",
        event="no_channel_hold",
        dedup_key="no_channel_hold",
    )
