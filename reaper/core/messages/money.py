"""The money guards' words: low balances and runways, leaks, and reads that failed."""

from __future__ import annotations

from datetime import datetime, timedelta

from reaper.core.leaks import IDLE_UTIL_PERCENT, Finding, leak_bills
from reaper.core.models import Alert
from reaper.core.units import humanize, money


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


def leak_alert(
    finding: Finding,
    since: datetime,
    now: datetime,
    *,
    label: str,
    max_runtime: timedelta | None = None,
    protected: str | None = None,
) -> Alert:
    """The words for one leak: title = what, body = what to do. `label`: the provider's name;
    `protected`: why the instance is protected (the policy's words), if it is — its alert then
    says so and promises no reaping."""
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
    elif finding.kind == "stuck" and protected:
        title = (
            f"{who} stuck for {held}: {finding.stalled}"
            if finding.stalled
            else f"{who} stuck in {finding.raw_status or 'an unreadable state'} for {held}"
        )
        body = (
            f"It bills {bills} and is protected ({protected}): the reaper never terminates it."
            f" Check it in the {provider} console; it stays until you destroy it there or lift"
            " its protection."
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
