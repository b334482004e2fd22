"""The actions an alert offers the phone, and the one-line answers to using them."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta

from reaper.core.messages.text import _short, label
from reaper.core.models import Instance, PhoneAction
from reaper.core.terminated import Terminated
from reaper.core.units import humanize, utc

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
    return f"Kept {subject} until {utc(until)} by {by}."


def action_already_kept(subject: str, until: datetime | None) -> str:
    when = utc(until) if until is not None else "further notice"
    return f"{subject} was already kept until {when}: nothing changed."


def _terminated_when(gone: Terminated) -> str:
    if gone.confirmed:
        return f"terminated at {utc(gone.at)} (confirmed gone)"
    return f"terminated (the listing of {utc(gone.at)} shows it so)"


def _already_gone(subject: str, gone: Mapping[str, Terminated]) -> str:
    if len(gone) == 1:
        [only] = gone.values()
        return f"{subject} was already {_terminated_when(only)}"
    return f"{subject} were already terminated{_terminated_list(gone)}"


def action_not_kept(subject: str, gone: Mapping[str, Terminated]) -> str:
    """A keep refused: every instance it names is already terminated."""
    return f"Not kept: {_already_gone(subject, gone)}; nothing to keep."


def action_some_not_kept(gone: Mapping[str, Terminated]) -> str:
    """What a keep of several instances left out (nothing when it left out none)."""
    return f" Not kept, already terminated{_terminated_list(gone)}." if gone else ""


def _terminated_list(gone: Mapping[str, Terminated]) -> str:
    return ": " + ", ".join(f"{key} ({utc(t.at)})" for key, t in sorted(gone.items()))


def action_muted(subject: str, until: datetime, by: str) -> str:
    return f"Muted {subject} until {utc(until)} by {by}."


def action_no_monitor(host: str) -> str:
    return f"Not muted: there is no monitor {host} (deleted meanwhile?)."


def action_no_host_to_keep(host: str) -> str:
    return f"Not kept: there is no monitor {host} (deleted meanwhile?)."


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


def action_describe(
    action: PhoneAction, now: datetime, gone: Mapping[str, Terminated] | None = None
) -> str:
    """What pressing it does, in a sentence: for the action page. `gone`: the instances known
    to be terminated already (a keep of only those does nothing)."""
    gone = gone or {}
    if action.kind == "keep" and action.targets and all(t in gone for t in action.targets):
        named = {t: gone[t] for t in action.targets}
        return f"Does nothing: {_already_gone(action.subject, named)}."
    if action.kind == "keep" and action.duration is not None:
        return (
            f"Keeps {action.subject} from being terminated until"
            f" {utc(now + action.duration)} ({humanize(action.duration)} from now), the"
            " record `reaper keep` writes."
        )
    if action.kind == "mute" and action.duration is not None:
        return (
            f"Silences the alerts of {action.subject} until {utc(now + action.duration)}"
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
    return f"Already used ({utc(at)}): nothing done."


def refused_expired(at: datetime) -> str:
    return f"Expired at {utc(at)} (actions last 24 h): nothing done."
