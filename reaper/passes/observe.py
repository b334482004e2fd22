"""The one listing of every account: what every pass knows of the fleet comes from here.

All accounts of every provider are listed concurrently. An account whose listing failed is an
error for that account — never a shorter fleet — and the others go on. Under a pass deadline an
account still listing at its cutoff is such an error too, its requests cancelled: one slow or
hostile endpoint never holds the others' decisions past the cutoff. One id listed twice with
different facts (on two pages, or through two keys of one account) is one instance, unknown.
Balances and volumes, which the guards and the digest read beside the listing, come from here
too (`read_extras`), so that nothing lists the same accounts twice.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass, field

from reaper import log
from reaper.core.models import AccountError, Balance, BilledDay, Instance, Volume
from reaper.passes.deadline import PassDeadline
from reaper.providers.base import ProviderClient, ProviderError, error_text, merge_duplicates

# How much of the providers' own billing history a pass reads: the status page's longest chart.
BILLING_DAYS = 30


@dataclass
class Observation:
    """What one listing of the accounts showed."""

    instances: list[Instance] = field(default_factory=list)
    errors: list[AccountError] = field(default_factory=list)
    # (provider, account) of every account listed, and of those listed completely.
    listed: list[tuple[str, str]] = field(default_factory=list)
    complete: set[tuple[str, str]] = field(default_factory=set)

    @property
    def complete_providers(self) -> set[str]:
        """Providers of which every listed account listed completely."""
        failed = {e.provider for e in self.errors}
        return {provider for provider, _ in self.listed} - failed

    def of(self, provider: str, account: str) -> list[Instance]:
        return [i for i in self.instances if i.provider == provider and i.account == account]


async def observe(
    clients: Sequence[ProviderClient],
    *,
    providers: Collection[str] | None = None,
    deadline: PassDeadline | None = None,
) -> Observation:
    """One listing per account (of `providers` only, when given), all at once; with a
    `deadline`, each account's no later than its listing cutoff."""
    chosen = [c for c in clients if providers is None or c.provider in providers]
    results = await _listings(chosen, deadline)
    seen = Observation()
    listed: list[Instance] = []
    for client, result in zip(chosen, results, strict=True):
        account = (client.provider, client.account)
        seen.listed.append(account)
        if isinstance(result, BaseException):
            seen.errors.append(
                AccountError(
                    provider=client.provider, account=client.account, message=error_text(result)
                )
            )
            continue
        seen.complete.add(account)
        listed += result
    seen.instances = merge_duplicates(listed)
    return seen


async def _listings(
    clients: Sequence[ProviderClient], deadline: PassDeadline | None
) -> list[list[Instance] | BaseException]:
    """Each client's listing or its failure, in order. The ones still running at the cutoff
    are cancelled (their requests with them) and fail with the cutoff's reason; all of them are
    cancelled if the caller is (`reaper serve` stopping)."""
    tasks = [asyncio.ensure_future(c.list_instances()) for c in clients]
    try:
        if tasks:
            await asyncio.wait(tasks, timeout=None if deadline is None else deadline.listing_left())
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    results: list[list[Instance] | BaseException] = []
    for client, task in zip(clients, tasks, strict=True):
        if task.cancelled():
            late = deadline.listing_late() if deadline else "the listing was cancelled"
            results.append(ProviderError(client.provider, client.account, late))
        else:
            results.append(task.exception() or task.result())
    return results


@dataclass
class Extras:
    """Balances and volumes of the accounts, and what could not be read (by account)."""

    balances: list[Balance] = field(default_factory=list)
    volumes: list[Volume] = field(default_factory=list)
    # (provider, account) -> {"balance" | "volumes": one-line reason}
    failures: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)
    # Accounts whose volumes were read (an orphan-volume episode may close only there).
    volumes_read: set[tuple[str, str]] = field(default_factory=set)
    # The provider's own billing history per account, where it offers one and it was read
    # (a failed read is a log line: nothing depends on it but the status page's chart).
    billed: dict[tuple[str, str], list[BilledDay]] = field(default_factory=dict)
    # And per instance id over those days, where the provider bills each instance on its own.
    billed_instances: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)


async def _read(start: Callable[[], Awaitable[object]]) -> object:
    """One read, its failure kept as its result even when starting it fails (a client that
    lacks a read raises before any coroutine exists): one account's missing read never takes
    the others' down."""
    return await start()


def _billing_unread(account: tuple[str, str], of: str, error: BaseException) -> None:
    """A log line, and nothing else: only the status page's billing lines depend on it."""
    provider, name = account
    log.event(
        "billing", provider=provider, account=name, of=of, result="error", error=error_text(error)
    )


async def read_extras(
    clients: Sequence[ProviderClient], seen: Observation, *, billing: bool = False
) -> Extras:
    """Every account's balance and volumes, concurrently, and with `billing` the provider's
    own billing history too (only the reap pass's snapshot keeps it; the digest has no use
    for it). A provider that tells volume attachment from its instances gets this pass's
    listing of its provider (every account's: a volume is attached when any instance mounts
    it), so it need not list again; an account whose listing failed lists for itself."""

    async def none() -> None:
        return None

    async def one(client: ProviderClient) -> tuple[object, object, object, object]:
        account = (client.provider, client.account)
        instances = (
            [i for i in seen.instances if i.provider == client.provider]
            if account in seen.complete
            else None
        )
        balance, volumes, billed, per_instance = await asyncio.gather(
            _read(lambda: client.balance()),
            _read(lambda: client.volumes(instances)),
            _read(lambda: client.billing(BILLING_DAYS)) if billing else none(),
            _read(lambda: client.instance_billing(BILLING_DAYS)) if billing else none(),
            return_exceptions=True,
        )
        return balance, volumes, billed, per_instance

    extras = Extras()
    for client, (balance, volumes, billed, per_instance) in zip(
        clients, await asyncio.gather(*(one(c) for c in clients)), strict=True
    ):
        account = (client.provider, client.account)
        failures: dict[str, str] = {}
        if isinstance(balance, BaseException):
            failures["balance"] = error_text(balance)
        elif isinstance(balance, Balance):
            extras.balances.append(balance)
        if isinstance(volumes, BaseException):
            failures["volumes"] = error_text(volumes)
        elif isinstance(volumes, list):
            extras.volumes += volumes
            extras.volumes_read.add(account)
        if failures:
            extras.failures[account] = failures
        if isinstance(billed, BaseException):
            _billing_unread(account, "account", billed)
        elif isinstance(billed, list):
            extras.billed[account] = billed
        if isinstance(per_instance, BaseException):
            _billing_unread(account, "instances", per_instance)
        elif isinstance(per_instance, dict):
            extras.billed_instances[account] = per_instance
    return extras
