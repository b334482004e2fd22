"""One pass's state — its context, options, start, lease, report and what it listed — with
the lease kept and alerts sent once per episode; and how far the listing and the clocks are
trusted before anything is decided."""

from __future__ import annotations

import asyncio
import os
import socket
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TypeVar

from reaper import log
from reaper.clock import Clock
from reaper.core import messages
from reaper.core.models import AccountError, Alert, Delivery, History, Instance
from reaper.core.units import humanize, iso, utc
from reaper.passes.context import Context
from reaper.passes.deadline import PassDeadline
from reaper.passes.observe import Observation, observe
from reaper.passes.reap.report import ActOptions, ConfirmOptions, ReapReport
from reaper.providers.base import error_text
from reaper.providers.plugins import label
from reaper.settings.model import Settings
from reaper.store.ports import Lease, Store

LEASE_NAME = "reap"
# The providers' clocks (their answers' `Date`) and ours may differ by this much; more, and a
# pass decides nothing: a clock a day ahead would make a pod stopped for two hours look due.
# Two reaper processes on one store may differ by as much, so a lease counts as expired only
# MAX_CLOCK_SKEW after its expiry (`take_lease`).
MAX_CLOCK_SKEW = timedelta(minutes=5)
# Short, so that a pass that was killed holds up the next for minutes (its TTL and the
# MAX_CLOCK_SKEW grace: about seven), not half an hour; kept alive while its pass runs:
# renewed before each step that acts and, in the background, every LEASE_RENEW_EVERY (a slow
# listing or a slow channel takes as long as it takes), and right before each DELETE leaves
# (`gate.Fence`). Each renewal is fenced: it only extends a lease this pass still holds and
# that has not expired.
LEASE_TTL = timedelta(minutes=2)
LEASE_RENEW_EVERY = 20.0
# One episode per provider whose clock is off.
PROVIDER_CLOCK_EPISODE = "reap:provider_clock:"
Sleep = Callable[[float], Awaitable[None]]


class LeaseLost(Exception):
    """The pass no longer holds the reap lease: it must stop acting at once."""


def lease_owner() -> str:
    """`<host>:<pid>:<token>`: unique per pass, and saying whose it is to a pass that finds
    it taken (a host name holds no `:`)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex}"


def take_lease(store: Store, owner: str, now: datetime) -> bool:
    """Take the reap lease until now + LEASE_TTL if it is free, ours, or expired by more than
    MAX_CLOCK_SKEW: a lease is judged by the taker's clock, and another process's clock may be
    minutes behind ours — its live lease must not look expired to us. (The store judges
    expiry at the `now` it is given, so it is given ours less the skew, with the TTL made
    longer by as much: the lease written still ends at now + LEASE_TTL.)"""
    return store.acquire_lease(LEASE_NAME, owner, now - MAX_CLOCK_SKEW, LEASE_TTL + MAX_CLOCK_SKEW)


def lease_note(lease: Lease | None) -> str:
    """ "another reap pass (host h, pid 42) holds the lease until 10:02 UTC (honoured until
    10:07 UTC …)", in a line."""
    if lease is None:
        return "another reap pass holds the lease"
    parts = lease.owner.split(":")
    whose = f" (host {parts[0]}, pid {parts[1]})" if len(parts) == 3 else ""
    return (
        f"another reap pass{whose} holds the lease until {utc(lease.expires_at)}"
        f" (honoured until {utc(lease.expires_at + MAX_CLOCK_SKEW)}: its clock may be behind)"
    )


async def keep_leased(
    store: Store,
    name: str,
    owner: str,
    clock: Clock,
    *,
    on_lost: Callable[[], None],
    sleep: Sleep = asyncio.sleep,
    every: float = LEASE_RENEW_EVERY,
) -> None:
    """Renew the lease every `every` seconds while the pass runs (cancel to stop). Fenced as
    every renewal is: it never takes back a lease that expired or changed hands — then it
    calls `on_lost` and ends, and the pass stops acting at its next step."""
    while True:
        await sleep(every)
        try:
            renewed = store.renew_lease(name, owner, clock.now(), LEASE_TTL)
        except Exception as exc:  # the store failing now: the next renewal (or step) decides
            log.event("reap", result="renewal_failed", error=error_text(exc))
            continue
        if not renewed:
            log.event("reap", result="lease_lost", phase="background renewal")
            on_lost()
            return


T = TypeVar("T")


def by_account(
    items: Sequence[T], key: Callable[[T], tuple[str, str]] | None = None
) -> dict[tuple[str, str], list[T]]:
    def default(item: T) -> tuple[str, str]:
        return (getattr(item, "provider"), getattr(item, "account"))  # noqa: B009

    grouped: dict[tuple[str, str], list[T]] = {}
    for item in items:
        grouped.setdefault((key or default)(item), []).append(item)
    return grouped


@dataclass
class PassState:
    """One pass as it goes: what it runs on (`ctx`), its options, when it began, the lease it
    holds and what it listed; the functions of the pass's modules take it first."""

    ctx: Context
    confirm: ConfirmOptions
    act: ActOptions
    sleep: Sleep
    # When the pass began: the "now" of every decision.
    started: datetime
    lease_owner: str
    report: ReapReport
    seen: Observation = field(default_factory=Observation)
    # The pass's time (REAPER_PASS_DEADLINE): its listing's cutoff and what acting may still
    # start; None only for passes that set no deadline of their own (tests of one step).
    deadline: PassDeadline | None = None
    # Set by the background renewal when it found the lease lost.
    lost: bool = False
    # The history the plan was decided on: a keep or unkeep recorded since shows against it.
    planned: History | None = None

    @property
    def settings(self) -> Settings:
        return self.ctx.settings

    @property
    def store(self) -> Store:
        return self.ctx.store

    def time_for_a_step(self, waiting: float = 0.0) -> bool:
        """Whether a step that must not be cut short (a fresh read and its deletes, a
        confirmation's re-list after `waiting`) may still start: the wait and the pass's
        wrap-up must fit before its deadline. A step that then hangs is cut by the backstop
        (`reaper serve`, Lambda), and what it left `requested` the next pass settles."""
        if self.deadline is None:
            return True
        return self.deadline.time_for(waiting + self.deadline.wrap_up)

    def still_leased(self) -> bool:
        """Renew the lease; False if it was lost (this pass ran past its TTL, or another took
        it). Renewing never takes back a lease that expired or changed hands."""
        if self.lost:
            return False
        return self.store.renew_lease(LEASE_NAME, self.lease_owner, self.ctx.clock.now(), LEASE_TTL)

    async def leased(self, body: Awaitable[T]) -> T:
        """Run `body` with the lease renewed in the background (`keep_leased`)."""

        def lost() -> None:
            self.lost = True

        renewal = asyncio.create_task(
            keep_leased(self.store, LEASE_NAME, self.lease_owner, self.ctx.clock, on_lost=lost)
        )
        try:
            return await body
        finally:
            renewal.cancel()
            await asyncio.gather(renewal, return_exceptions=True)

    def require_lease(self, phase: str) -> None:
        if not self.still_leased():
            self.report.lease_lost = True
            log.event("reap", result="lease_lost", phase=phase)
            raise LeaseLost(phase)

    async def alert(self, alert: Alert) -> list[Delivery]:
        return await self.ctx.alert(alert)

    async def alert_once(self, episode: str, alert: Alert, detail: str = "") -> None:
        """One alert per episode: opened now or earlier, alerted once until it closes."""
        opened = self.store.open_episode(episode, self.started, detail)
        if opened.alerted_at is None:
            await self.alert(alert)
            self.store.mark_episode_alerted(episode, self.started)


async def list_all(run: PassState) -> list[Instance]:
    run.seen = await observe(run.ctx.clients, deadline=run.deadline)
    run.report.errors = list(run.seen.errors)
    failed = {(e.provider, e.account): e.message for e in run.seen.errors}
    for client in run.ctx.clients:
        episode = f"provider:{client.provider}:{client.account}"
        message = failed.get((client.provider, client.account))
        log.event(
            "list",
            provider=client.provider,
            account=client.account,
            result="error" if message else "ok",
            error=message,
            count=None if message else len(run.seen.of(client.provider, client.account)),
        )
        if message is None:
            run.store.close_episode(episode)
            continue
        failing = messages.provider_failing(
            client.provider, label(client.provider), client.account, message
        )
        await run.alert_once(episode, failing)
    return run.seen.instances


def clock_problem(run: PassState) -> str:
    """Why this pass's own clock cannot be trusted, or "" when it can: earlier than the last
    completed pass, or far from every provider's clock the same way (`provider_clocks`)."""
    now = run.started
    last = run.store.last_reap()
    if last is not None and now < last.finished_at:
        return (
            f"this pass's clock ({iso(now)}) reads earlier than the last pass"
            f" ({iso(last.finished_at)})"
        )
    off = provider_clocks(run)
    answered = {c.provider for c in run.ctx.clients if c.server_time() is not None}
    directions = {direction for _theirs, direction in off.values()}
    if off and set(off) == answered and len(directions) == 1:
        provider, (theirs, _direction) = sorted(off.items())[0]
        return (
            f"this pass's clock ({iso(now)}) is {abs(theirs - now)} away from"
            f" {label(provider)}'s ({iso(theirs)})"
        )
    return ""


def provider_clocks(run: PassState) -> dict[str, tuple[datetime, str]]:
    """The providers whose clock (their answers' `Date`) is more than MAX_CLOCK_SKEW from
    this pass's: their time, and whether it is "ahead" or "behind". A listing takes time,
    so theirs is compared with this pass's clock from its start to now. A provider that
    sends no `Date` is not judged."""
    earliest, latest = run.started - MAX_CLOCK_SKEW, run.ctx.clock.now() + MAX_CLOCK_SKEW
    off: dict[str, tuple[datetime, str]] = {}
    for client in run.ctx.clients:
        theirs = client.server_time()
        if theirs is None or earliest <= theirs <= latest:
            continue
        direction = "ahead of" if theirs > latest else "behind"
        if off.get(client.provider, (theirs, direction))[1] != direction:
            direction = "away from"
        off[client.provider] = (theirs, direction)
    return off


async def set_aside_skewed(run: PassState) -> None:
    """The accounts of a provider whose clock is off (but not every provider's the same
    way: then ours is to blame) decide nothing in this pass: each is an error naming the
    provider and both times, alerted once per episode; the other providers go on."""
    off = provider_clocks(run)
    for client in run.ctx.clients:
        if client.provider in off or client.server_time() is None:
            continue
        run.store.close_episode(PROVIDER_CLOCK_EPISODE + client.provider)
    if not off:
        return
    seen = run.seen
    for provider, (theirs, direction) in sorted(off.items()):
        name = label(provider)
        gap = humanize(theirs - run.started)
        message = (
            f"{name}'s clock ({iso(theirs)}) is {gap} {direction} this pass's"
            f" ({iso(run.started)}): nothing on {name} is decided until they agree"
        )
        log.event("list", provider=provider, result="clock_off", error=message)
        accounts = sorted(a for p, a in seen.complete if p == provider)
        seen.errors += [
            AccountError(provider=provider, account=a, message=message) for a in accounts
        ]
        seen.complete -= {(provider, a) for a in accounts}
        alert = messages.provider_clock_off(provider, name, message)
        await run.alert_once(PROVIDER_CLOCK_EPISODE + provider, alert)
    seen.instances = [i for i in seen.instances if i.provider not in off]
    run.report.errors = list(seen.errors)
