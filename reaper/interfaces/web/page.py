"""The status page: what bills now, what will be reaped when (or why not), which watchdog is
silent, what was reaped and what it saved, balances with their runway, and spend over 7 and
30 days — from `FleetView` (the store's records), never from a provider.

Every value that came from a provider or a ping (names, ids, accounts, messages) goes through
`esc`. Every button is a POST form carrying the session's CSRF token.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from reaper.core.models import Instance
from reaper.core.monitors import down_after, muted
from reaper.core.policy import Outlook, no_channel_note
from reaper.core.snapshot import daily_spend
from reaper.core.units import HOURS_PER_MONTH, humanize, money, utc
from reaper.interfaces.readmodel import FleetView, Watchdog, listed_instance, saved_per_month
from reaper.interfaces.web.chart import RUNNING_COLOUR, STORAGE_COLOUR, chart_summary, spend_chart
from reaper.interfaces.web.layout import document, esc, post_button, stamp, when
from reaper.providers.plugins import label
from reaper.settings.model import Settings

# Keep buttons: the form value and its label ("" = until unkept).
KEEP_CHOICES: tuple[tuple[str, str], ...] = (("1d", "Keep 1 day"), ("7d", "Keep 1 week"))
KEEP_FOR: dict[str, timedelta | None] = {"1d": timedelta(days=1), "7d": timedelta(days=7), "": None}
MESSAGE_SHOWN = 300


def _empty(section: str, title: str, text: str) -> str:
    return (
        f'<section class="card" id="{esc(section)}"><h2>{esc(title)}</h2>'
        f'<p class="dim">{esc(text)}</p></section>'
    )


def _rate(value: float | None) -> str:
    return "cost unknown" if value is None else f"{money(value)}/h"


def _where(inst: Instance) -> str:
    return f"{esc(label(inst.provider))} · {esc(inst.account)} · <code>{esc(inst.id)}</code>"


def _anchor(key: str) -> str:
    return "i-" + "".join(c if c.isalnum() or c in "-_" else "-" for c in key)


def _watchdog_line(dog: Watchdog | None, view: FleetView) -> str:
    if dog is None:
        return '<span class="badge">no watchdog</span>'
    m = dog.monitor
    if dog.state in ("up", "new"):
        heard = when(m.last_ping_at, view.now) if m.last_ping_at else "never yet"
        return f'<span class="badge up">watchdog pinging</span> <span class="small">{heard}</span>'
    return (
        f'<span class="badge {esc(dog.state)}">watchdog silent {esc(humanize(dog.silent_for))}'
        "</span>"
    )


def _header(view: FleetView, settings: Settings, csrf: str) -> str:
    listed = view.listed_at
    if listed is None:
        age = "no reap pass has listed the providers yet"
    else:
        age = f"fleet as listed {when(listed, view.now)}"
    last = view.last_reap
    reap = (
        f" · last reap pass {when(last.finished_at, view.now)}"
        if last is not None
        else " · no reap pass recorded"
    )
    mode = ' · <b class="warn">observe mode</b>' if settings.mode == "observe" else ""
    stale = ""
    if listed is not None and view.now - listed > 2 * settings.reap_every:
        stale = (
            f'<p class="error">This data is {esc(humanize(view.now - listed))} old: '
            "the reap passes have not listed the providers since.</p>"
        )
    note = no_channel_note(settings) if settings.accounts else ""
    unheard = f'<p class="error" id="no-channel">{esc(note)}</p>' if note else ""
    return (
        '<header class="top"><h1>reaper</h1>'
        + post_button("/logout", "Sign out", {"csrf": csrf})
        + f'</header><p class="small dim" id="age">{age}{reap}{mode}</p>{stale}{unheard}'
    )


def _tiles(view: FleetView) -> str:
    running, storage = view.running_per_hour, view.storage_per_hour
    per_month = (running + storage) * HOURS_PER_MONTH
    tiles = [
        ("Bills now", f"{money(running + storage)}/h", f"≈ {money(per_month)}/month"),
        ("Running", f"{money(running)}/h", f"{len(view.running)} instances"),
        ("Stopped, storage", f"{money(storage)}/h", f"{len(view.stopped)} instances"),
        (
            "Reaping saved",
            f"{money(view.saved_per_month)}/mo",
            f"{sum(1 for r in view.audit if r.confirmed)} terminations, 30 days",
        ),
    ]
    cells = "".join(
        f'<div class="tile"><span class="dim small">{esc(t)}</span><b class="money">{esc(v)}</b>'
        f'<span class="small dim">{esc(n)}</span></div>'
        for t, v, n in tiles
    )
    return f'<section class="tiles" style="margin-bottom:12px">{cells}</section>'


def _running(view: FleetView) -> str:
    if not view.running:
        return _empty("running", "Running", "Nothing runs.")
    rows = []
    for inst in view.running:
        since = inst.started_at or inst.created_at
        for_how_long = f"for {esc(humanize(view.now - since))}" if since else "since unknown"
        state = (
            "" if inst.state == "running" else f' <span class="badge new">{esc(inst.state)}</span>'
        )
        dog = _watchdog_line(view.watchdog_of.get(inst.key), view)
        rows.append(
            f'<li id="{_anchor(inst.key)}" class="instance running">'
            f'<span class="name">{esc(inst.name or inst.id)}{state}</span>'
            f'<span class="money">{esc(_rate(inst.cost_per_hour))}</span>'
            f'<span class="line small dim">{_where(inst)} · {for_how_long}'
            f"{_instance_billed(view, inst)}</span>"
            f'<span class="line small">{dog}</span>'
            "</li>"
        )
    return (
        f'<section class="card" id="running"><h2>Running — {esc(money(view.running_per_hour))}/h'
        f'</h2><ul class="rows">{"".join(rows)}</ul></section>'
    )


def _instance_billed(view: FleetView, inst: Instance) -> str:
    amount = view.instance_billed.get(inst.key)
    if amount is None:
        return ""
    return f" · {esc(label(inst.provider))} billed {esc(money(amount))} for it in 30 days"


def _verdict(item: Outlook, view: FleetView, settings: Settings) -> str:
    kept = view.kept.get(item.instance.key)
    if kept is not None:
        until = f"until {when(kept.until, view.now)}" if kept.until else "until unkept"
        by = f" (by {esc(kept.by)})" if kept.by else ""
        return f'<span class="ok verdict">Kept {until}{by}</span>'
    if item.kind == "protect":
        return f'<span class="ok verdict">Not reaped: {esc(item.reason)}</span>'
    if item.kind == "hold":
        return f'<span class="warn verdict">Held: {esc(item.reason)}</span>'
    verb = "Would be terminated" if settings.mode == "observe" else "Will be terminated"
    if item.kind == "terminate":
        return f'<span class="warn verdict">{verb} at the next pass (due now)</span>'
    return (
        f'<span class="warn verdict">{verb} {when(item.terminate_at, view.now)}</span>'
        f' <span class="small dim">{esc(item.reason)}</span>'
    )


def _keep_buttons(item: Outlook, view: FleetView, csrf: str) -> str:
    key = item.instance.key
    if key in view.kept:
        return post_button("/unkeep", "Unkeep", {"instance": key, "csrf": csrf})
    if item.kind == "protect":
        return ""  # protected by its name or the provider's lock: a keep adds nothing
    return "".join(
        post_button("/keep", text, {"instance": key, "for": value, "csrf": csrf})
        for value, text in KEEP_CHOICES
    )


def _stopped(view: FleetView, settings: Settings, csrf: str) -> str:
    if not view.stopped:
        return _empty("stopped", "Stopped", "Nothing is stopped.")
    rows = []
    for item in view.stopped:
        inst = item.instance
        rows.append(
            f'<li id="{_anchor(inst.key)}" class="instance stopped">'
            f'<span class="name">{esc(inst.name or inst.id)}</span>'
            f'<span class="money">{esc(_rate(inst.cost_per_hour))} storage</span>'
            f'<span class="line small dim">{_where(inst)} · stopped since '
            f"{when(inst.stopped_since, view.now)}{_instance_billed(view, inst)}</span>"
            f'<span class="line">{_verdict(item, view, settings)}</span>'
            f'<span class="actions">{_keep_buttons(item, view, csrf)}</span>'
            "</li>"
        )
    return (
        f'<section class="card" id="stopped"><h2>Stopped — {esc(money(view.storage_per_hour))}/h'
        f' storage</h2><ul class="rows">{"".join(rows)}</ul></section>'
    )


# What a person can do about each exemption, on the page.
_NEEDS_YOU_ADVICE = {
    "unreadable_protection": "its protection cannot be read, so it is never terminated: check"
    " it in the console, and terminate it there or keep it on purpose",
    "cluster": "terminate its cluster in the console",
    "cap": "the termination cap holds it: raise REAPER_MAX_TERMINATIONS or run"
    " `reaper reap --max-terminations N`",
    "no_channel": "no alert channel reaches a person: configure one",
    "fresh_read": "the provider's read of it right before its delete did not show it (or its"
    " state): check it in the console; the next complete listing decides",
}


def _needs_you(view: FleetView) -> str:
    """Past the deadline and left alone for a reason a person may not intend: first on the
    page, since nothing will happen to them by itself."""
    items = view.needs_you
    if not items:
        return ""
    rows = []
    for item in items:
        inst = item.instance
        per_month = (
            ""
            if inst.cost_per_hour is None
            else f" ({money(inst.cost_per_hour * HOURS_PER_MONTH)}/month)"
        )
        advice = _NEEDS_YOU_ADVICE.get(item.exempt or "", "")
        rows.append(
            f'<li id="n-{_anchor(inst.key)}" class="instance needs-you">'
            f'<span class="name">{esc(inst.name or inst.id)}</span>'
            f'<span class="money">{esc(_rate(inst.cost_per_hour))}{esc(per_month)}</span>'
            f'<span class="line small dim">{_where(inst)} · stopped since '
            f"{when(inst.stopped_since, view.now)}</span>"
            f'<span class="line"><span class="warn verdict">{esc(item.reason)}</span></span>'
            f'<span class="line small">{esc(advice)}</span>'
            "</li>"
        )
    return (
        '<section class="card" id="needs-you"><h2>Needs you — past the deadline, not reaped'
        f'</h2><ul class="rows">{"".join(rows)}</ul></section>'
    )


def _other(view: FleetView) -> str:
    if not view.other:
        return ""
    rows = "".join(
        f'<li id="{_anchor(i.key)}" class="instance other"><span class="name">{esc(i.name or i.id)}'
        f'</span><span class="money">{esc(_rate(i.cost_per_hour))}</span>'
        f'<span class="line small dim">{_where(i)} · {esc(i.state)} ({esc(i.raw_status)}): '
        "never reaped while it cannot be read</span></li>"
        for i in view.other
    )
    head = '<section class="card" id="other"><h2>Other states</h2>'
    return f'{head}<ul class="rows">{rows}</ul></section>'


# The mute lengths the page offers, as its form sends them.
MUTE_FOR = {"1d": timedelta(days=1), "7d": timedelta(days=7)}


def monitor_actions(dog: Watchdog, now: datetime, csrf: str, *, back: str = "") -> str:
    """Pause or resume, mute for a day or unmute: each a POST form with `csrf`; `back`
    "monitor" brings the browser back to the monitor's own page instead of the status page."""
    m = dog.monitor
    if m.status == "retired":
        return ""
    fields = {"host": m.host, "csrf": csrf} | ({"back": back} if back else {})
    buttons = [
        post_button("/resume", "Resume", fields)
        if m.paused
        else post_button("/pause", "Pause", fields)
    ]
    if muted(m, now):
        buttons.append(post_button("/unmute", "Unmute", fields))
    elif not m.paused:
        buttons.append(post_button("/mute", "Mute 1 day", {**fields, "for": "1d"}))
    return "".join(buttons)


def monitor_line(dog: Watchdog, now: datetime, settings: Settings) -> str:
    m = dog.monitor
    last = when(m.last_ping_at, now) if m.last_ping_at else "never"
    down = f" · down since {when(m.down_since, now)}" if m.down_since else ""
    after = humanize(down_after(m, settings.heartbeat_timeout))
    mute = f" · muted until {when(m.muted_until, now)}" if muted(m, now) else ""
    return f"last ping {last}{down} · down after {esc(after)} of silence{mute}"


def _watchdogs(view: FleetView, settings: Settings, csrf: str) -> str:
    if not view.watchdogs:
        return _empty("monitors", "Watchdogs", "No monitor has pinged yet.")
    order = {"down": 0, "late": 1, "new": 2, "up": 3, "paused": 4}
    rows = []
    for dog in sorted(view.watchdogs, key=lambda d: (order.get(d.state, 5), d.monitor.host)):
        m = dog.monitor
        message = m.last_message[:MESSAGE_SHOWN] + (
            "…" if len(m.last_message) > MESSAGE_SHOWN else ""
        )
        msg = f'<pre class="msg">{esc(message)}</pre>' if message else ""
        actions = monitor_actions(dog, view.now, csrf)
        rows.append(
            f'<li class="monitor" id="m-{esc(m.host)}" data-state="{esc(dog.state)}">'
            f'<span class="name"><a href="/monitor/{esc(m.host)}">{esc(m.host)}</a></span>'
            f'<span class="badge {esc(dog.state)}">{esc(dog.state)}</span>'
            f'<span class="line small dim">{monitor_line(dog, view.now, settings)}</span>{msg}'
            f'<span class="actions">{actions}</span></li>'
        )
    return (
        '<section class="card" id="monitors"><h2>Watchdogs</h2>'
        f'<ul class="rows">{"".join(rows)}</ul></section>'
    )


def _spend(view: FleetView) -> str:
    if not view.snapshots:
        return (
            '<section class="card" id="spend"><h2>Spend</h2><p class="dim">No snapshot yet: '
            "each reap pass records one.</p></section>"
        )
    legend = (
        '<p class="legend"><span><span class="sw" style="background:'
        f'{RUNNING_COLOUR}"></span>running</span><span><span class="sw" style="background:'
        f'{STORAGE_COLOUR}"></span>storage and other states</span></p>'
    )
    charts = []
    for days, title in ((7, "Last 7 days"), (30, "Last 30 days")):
        series = daily_spend(view.snapshots, view.now, days)
        charts.append(
            f'<h2 style="margin-top:8px">{esc(title)}</h2>'
            f"{spend_chart(series, f'Spend per day, {title.lower()}')}"
            f'<p class="small dim">{esc(chart_summary(series))}</p>'
            f"{_billed(view, days)}"
        )
    return f'<section class="card" id="spend"><h2>Spend</h2>{legend}{"".join(charts)}</section>'


def _billed(view: FleetView, days: int) -> str:
    """What the providers that keep a billing history say they billed over these days: the
    chart above is reaper's own estimate from its snapshots, this is the provider's account."""
    lines = []
    for account in view.accounts:
        if account.billed is None:
            continue
        amount = account.billed_over(days, view.now)
        who = f"{label(account.provider)} ({account.account})"
        said = (
            f"{who} billed {money(amount)} over these {days} days, by its own billing history"
            if amount is not None
            else f"{who}: its billing history does not cover these {days} days yet"
        )
        lines.append(f'<p class="small billed">{esc(said)}</p>')
    return "".join(lines)


def _runway(hours: float | None) -> str:
    if hours is None:
        return "runway unknown"
    if hours >= 24 * 365:
        return "runway over a year"
    text = f"runway {humanize(timedelta(hours=hours))}"
    return f'<b class="warn">{esc(text)}</b>' if hours < 24 else esc(text)


def _balances(view: FleetView) -> str:
    rows = []
    for account in view.accounts:
        balance = "balance unknown" if account.balance is None else money(account.balance)
        spend = (
            account.spend_per_hour
            if account.spend_per_hour is not None
            else account.billing_per_hour
        )
        rows.append(
            f'<li class="account"><span class="name">{esc(label(account.provider))} · '
            f'{esc(account.account)}</span><span class="money">{esc(balance)}</span>'
            f'<span class="line small">{esc(_rate(spend))} · {_runway(account.runway_hours)}'
            f' <span class="dim">listed {when(account.listed_at, view.now)}</span></span></li>'
        )
    if not rows:
        return ""
    return (
        '<section class="card" id="balances"><h2>Balances</h2>'
        f'<ul class="rows">{"".join(rows)}</ul></section>'
    )


def _terminations(view: FleetView) -> str:
    if not view.audit:
        return (
            '<section class="card" id="terminations"><h2>Terminations</h2>'
            '<p class="dim">None in the last 30 days.</p></section>'
        )
    rows = []
    for record in view.audit:
        saved = saved_per_month(record)
        state = (
            '<span class="badge up">confirmed</span>'
            if record.confirmed
            else f'<span class="badge late">{esc(record.result)}, unconfirmed</span>'
        )
        rows.append(
            f'<li class="termination"><span class="name">{esc(record.name or record.id)}</span>'
            f'<span class="money">{esc("—" if saved is None else money(saved) + "/mo")}</span>'
            f'<span class="line small dim">{esc(label(record.provider))} · {esc(record.account)}'
            f" · <code>{esc(record.id)}</code> · {when(record.requested_at, view.now)}</span>"
            f'<span class="line small">{state} {esc(record.reason)}</span></li>'
        )
    return (
        '<section class="card" id="terminations"><h2>Terminations — saved '
        f"{esc(money(view.saved_per_month))}/month</h2>"
        f'<ul class="rows">{"".join(rows)}</ul></section>'
    )


def keep_notice(view: FleetView, *, kept: str | None, unkept: str | None) -> str:
    """The line the page shows after its Keep or Unkeep button: what the store now holds for
    that instance (nothing when the address names one the store does not bear out)."""
    key = kept or unkept or ""
    inst = listed_instance(view, key)
    if inst is None:
        return ""
    name = f"{inst.name or inst.id} ({key})"
    keep = view.kept.get(key)
    if kept and keep is not None:
        until = f"until {utc(keep.until)}" if keep.until else "until you unkeep it"
        return f"Kept {name} {until}: no reap pass terminates it before then."
    if unkept and keep is None:
        return f"{name} is no longer kept: the next reap pass decides on it as on any other."
    return ""


def status_page(view: FleetView, settings: Settings, csrf: str, notice: str = "") -> bytes:
    said = f'<p class="notice" id="notice" role="status">{esc(notice)}</p>' if notice else ""
    body = "".join(
        (
            _header(view, settings, csrf),
            said,
            _tiles(view),
            _needs_you(view),
            _running(view),
            _stopped(view, settings, csrf),
            _other(view),
            _watchdogs(view, settings, csrf),
            _terminations(view),
            _balances(view),
            _spend(view),
            f'<p class="small dim">Page made {stamp(view.now)} from the store; it never asks '
            "the providers.</p>",
        )
    )
    return document("reaper", body)


__all__ = [
    "KEEP_CHOICES",
    "KEEP_FOR",
    "MUTE_FOR",
    "keep_notice",
    "monitor_actions",
    "monitor_line",
    "status_page",
]
