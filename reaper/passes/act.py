"""Carrying out an action from the phone: a pressed button or a used action link.

The token is the only input, and it is never trusted: it must name a stored grant (by its
hash) that is unused and unexpired, and the grant says what may be done. Then the action goes
through the code the command line and the reap pass use, never a shortcut:
- keep: the record `reaper keep` writes (a longer keep already in place is never shortened);
- mute: the monitor's mute, through the store's `mute_monitor`;
- terminate now: a request recorded in the store, bound to the stopped stretch of the warning
  the button came with, carried out at once by `request_pass` — one instance's reap pass, with
  the lease, the policy, the one gate (the fresh read and the pure check right before the
  DELETE), the re-list that confirms it, the cap and the audit record. What it refuses, it
  refuses; a button of an earlier stretch (the instance was started and stopped again since)
  is refused and says so.
Each use is single: of two concurrent uses of one token exactly one acts (the store's
conditional write), and every action is an `ActionRecord` naming who asked. A use that was
checked and refused, having made nothing (a "terminate now" of a kept instance, a keep of an
instance already terminated), gives the token back: the request was not made, so once the
reason is gone the same button or link works, while it lasts. A "terminate now" that could not
be decided now (a pass held the lease, the provider failed) was made — the next pass carries it
out — and spends it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal

from reaper import log
from reaper.channels.base import Notifier
from reaper.clock import Clock
from reaper.core import messages
from reaper.core.models import (
    ActionGrant,
    ActionRecord,
    KeptInstance,
    PhoneAction,
    TerminationRequest,
)
from reaper.core.monitors import SettingsChange
from reaper.passes import keeping
from reaper.passes.arm import CALLBACK_PREFIX, grant_id, mint, valid_token
from reaper.passes.context import Context
from reaper.passes.reap import ConfirmOptions, RequestOutcome, request_pass
from reaper.providers.base import ProviderClient
from reaper.settings.model import Settings
from reaper.store.ports import Store

# A second press confirms "terminate now" within this (never past the first button's expiry).
CONFIRM_TTL = timedelta(minutes=10)
# A "terminate now" not carried out at once (a pass held the lease, the provider failed) is
# retried by the passes this long, while the instance stays stopped in the same stretch.
REQUEST_TTL = timedelta(hours=24)
# The request's own pass confirms within seconds, not minutes: whoever pressed waits for the
# answer, and a Lambda request has 10 s. A slower provider is confirmed by the next reap pass
# (its reconciliation of unconfirmed audit records).
ACT_CONFIRM = ConfirmOptions(attempts=4, first_delay=0.0, backoff=0.5, max_delay=2.0)

Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True)
class Actor:
    """Who asked, as the audit names them (`who`: "@name (… user 42)" or "action link"), and
    how the request came (`via`: "chat button" or "action link")."""

    who: str
    via: str


LINK = Actor(who="action link", via="action link")


@dataclass(frozen=True)
class Outcome:
    """`done`: the action happened; `not_done`: it was checked and refused (or could not be
    done now); `refused`: the token was not good (unknown, used, expired); `ask`: a second
    press is needed — `confirm` is the new button's data and `confirm_label` its text.
    `spent`: the use made something (an action, or a request the next pass carries out);
    False for a refusal that made nothing, which gives the token back."""

    status: Literal["done", "not_done", "refused", "ask"]
    text: str
    confirm: str | None = None
    confirm_label: str = ""
    spent: bool = True


@dataclass
class ActContext:
    """What carrying out an action needs. `clients`: fresh provider clients for a "terminate
    now" pass (it closes them; `reaper.app.wiring.act_context` makes them request-sized);
    `confirm`: how long the request's own pass waits for the re-list."""

    settings: Settings
    store: Store
    notifier: Notifier
    clock: Clock
    clients: Callable[[], Sequence[ProviderClient]]
    confirm: ConfirmOptions = ACT_CONFIRM
    sleep: Sleep = field(default=asyncio.sleep, repr=False)


def lookup(store: Store, token: str, now: datetime, *, link: bool = False) -> ActionGrant | str:
    """The grant a token may use now, or the one line saying why not. `link`: used as an
    action link, where a button that asks for a second press is no token at all."""
    grant = store.get_grant(grant_id(token)) if valid_token(token) else None
    if grant is None or (link and grant.ask_first):
        return messages.REFUSED_UNKNOWN
    if grant.used_at is not None:
        return messages.refused_used(grant.used_at)
    if now >= grant.expires_at:
        return messages.refused_expired(grant.expires_at)
    return grant


async def perform(
    ctx: ActContext, token: str, actor: Actor, choice: int = 0, *, link: bool = False
) -> Outcome:
    """Use the token (see the module docstring); `choice`: which of the grant's actions;
    `link`: it came as an action link (see `lookup`)."""
    now = ctx.clock.now()
    found = lookup(ctx.store, token, now, link=link)
    if isinstance(found, str):
        log.event("phone_action", via=actor.via, result="refused", reason=found)
        return Outcome("refused", found)
    grant = found
    if not 0 <= choice < len(grant.choices):
        return Outcome("refused", messages.REFUSED_UNKNOWN)
    action = grant.choices[choice]
    if grant.ask_first:
        confirm = mint(
            ctx.store, (action,), now, parent=grant.id, ttl=CONFIRM_TTL, not_after=grant.expires_at
        )
        minutes = int(CONFIRM_TTL.total_seconds() // 60)
        return Outcome(
            "ask",
            messages.action_confirm_prompt(action.subject, minutes),
            confirm=CALLBACK_PREFIX + confirm,
            confirm_label=messages.action_confirm_label(action.subject),
        )
    used = ctx.store.use_grant(grant.id, now)
    if used and grant.parent is not None:
        # A confirmation uses the button it confirms too: one "terminate now" per button.
        used = ctx.store.use_grant(grant.parent, now)
    if not used:
        log.event("phone_action", via=actor.via, result="refused", reason="already used")
        return Outcome("refused", messages.refused_used(now))
    outcome = await _carry_out(ctx, action, actor, now)
    if not outcome.spent:
        _give_back(ctx.store, grant, now)
    ctx.store.record_action(
        ActionRecord(
            at=now,
            kind=action.kind,
            label=action.label,
            targets=action.targets,
            subject=action.subject,
            by=actor.who,
            via=actor.via,
            done=outcome.status == "done",
            result=outcome.text,
        )
    )
    log.event(
        "phone_action",
        kind=action.kind,
        targets=list(action.targets),
        via=actor.via,
        result=outcome.status,
    )
    return outcome


def _give_back(store: Store, grant: ActionGrant, used_at: datetime) -> None:
    """Unuse what a refusal that made nothing used: the button or link pressed, or for a
    confirmation the button it confirms. The confirmation itself stays spent (its button is
    gone from the message, and a chat may deliver its press again after a restart): the
    next "terminate now" asks anew."""
    store.release_grant(grant.parent or grant.id, used_at)


async def _carry_out(ctx: ActContext, action: PhoneAction, actor: Actor, now: datetime) -> Outcome:
    if action.kind == "keep":
        return _keep(ctx.store, action, actor, now)
    if action.kind == "mute":
        return _mute(ctx.store, action, actor, now)
    if action.kind == "terminate":
        return await _terminate(ctx, action, actor, now)
    return Outcome("not_done", messages.REFUSED_UNKNOWN)


def _keep(store: Store, action: PhoneAction, actor: Actor, now: datetime) -> Outcome:
    """`reaper keep`'s record for each target, never shortening a keep already in place, and
    none for an instance already terminated (it would spare nothing and show as a keep); a
    `host:<host>` target (an idle warning's Keep) keeps that monitor's instance from its own
    idle destroy, read back on its next ping."""
    assert action.duration is not None
    until = now + action.duration
    instances = [k for k in action.targets if not k.startswith(messages.HOST_TARGET)]
    gone = keeping.terminated_among(store, instances)
    if gone and len(gone) == len(action.targets):
        return Outcome("not_done", messages.action_not_kept(action.subject, gone), spent=False)
    kept = store.history().kept
    longer: list[datetime | None] = []
    for key in action.targets:
        if key in gone:
            continue
        if key.startswith(messages.HOST_TARGET):
            host = key.removeprefix(messages.HOST_TARGET)
            if store.get_monitor(host) is None:  # deleted since the warning: nothing to keep
                return Outcome("not_done", messages.action_no_host_to_keep(host), spent=False)
            current_end = _host_keep(store, host, until, now, actor.who)
            if current_end is not None:
                longer.append(current_end)
            continue
        current = kept.get(key)
        if (
            current is not None
            and current.active(now)
            and (current.until is None or current.until >= until)
        ):
            longer.append(current.until)
            continue
        store.keep(KeptInstance(key=key, since=now, until=until, by=actor.who))
    skipped = messages.action_some_not_kept(gone)
    if len(longer) == len(action.targets) - len(gone):
        latest = None if None in longer else max(t for t in longer if t is not None)
        return Outcome("done", messages.action_already_kept(action.subject, latest) + skipped)
    return Outcome("done", messages.action_kept(action.subject, until, actor.who) + skipped)


def _host_keep(store: Store, host: str, until: datetime, now: datetime, by: str) -> datetime | None:
    """Keep the monitor `host` until `until`; the end of a longer keep already in place
    (nothing changed), else None."""
    monitor = store.get_monitor(host)
    current = monitor.keep_until if monitor is not None else None
    if current is not None and current >= until:
        return current
    change = SettingsChange(at=now, given=frozenset({"keep_until"}), keep_until=until, keep_by=by)
    store.set_monitor_settings(host, change)
    return None


def _mute(store: Store, action: PhoneAction, actor: Actor, now: datetime) -> Outcome:
    assert action.duration is not None and action.targets
    host = action.targets[0]
    until = now + action.duration
    if not store.mute_monitor(host, until):
        return Outcome("not_done", messages.action_no_monitor(host), spent=False)
    return Outcome("done", messages.action_muted(action.subject, until, actor.who))


async def _terminate(ctx: ActContext, action: PhoneAction, actor: Actor, now: datetime) -> Outcome:
    """Record the request, then run its pass at once with fresh provider clients."""
    [key] = action.targets
    settings = ctx.settings
    ctx.store.request_termination(
        TerminationRequest(
            key=key,
            requested_at=now,
            by=actor.who,
            mode=settings.mode,
            expires_at=now + REQUEST_TTL,
            stretch=action.stretch,
        )
    )
    clients = ctx.clients()
    try:
        context = Context.make(settings, ctx.store, clients, ctx.notifier, ctx.clock)
        result = await request_pass(context, key, confirm=ctx.confirm, sleep=ctx.sleep)
    finally:
        await asyncio.gather(*(c.aclose() for c in clients), return_exceptions=True)
    return _answer(result, action.subject, actor)


def _answer(result: RequestOutcome, subject: str, actor: Actor) -> Outcome:
    if result.result == "terminated":
        return Outcome("done", messages.action_terminated(subject, actor.who))
    if result.result == "unconfirmed":
        return Outcome("done", messages.action_terminate_unconfirmed(subject, actor.who))
    if result.result == "refused":  # checked and refused: the request is ended, nothing made
        return Outcome("not_done", messages.action_not_terminated(subject, result.why), spent=False)
    return Outcome("not_done", messages.action_terminate_later(subject, result.why))
