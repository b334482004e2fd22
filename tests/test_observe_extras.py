"""The extras a pass reads beside the listing — balance, volumes, the provider's billing — each
account's and each read's failure on its own: a failed or missing read is that read's failure,
never the others'."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from reaper.core.models import Balance, Volume
from reaper.passes.observe import Observation, read_extras
from reaper.providers.base import ProviderError


@dataclass
class OldClient:
    """A provider client written before billing existed: no `billing`, no `instance_billing`."""

    provider: str = "runpod"
    account: str = "main"

    async def balance(self) -> Balance:
        return Balance(provider="runpod", account=self.account, balance=12.5)

    async def volumes(self, instances: object = None) -> list[Volume]:
        return []


@dataclass
class FailingBilling(OldClient):
    account: str = "second"

    async def billing(self, days: int) -> None:
        raise ProviderError("runpod", self.account, "HTTP 500 reading the billing history")

    async def instance_billing(self, days: int) -> dict[str, float]:
        return {"pod-1": 4.0}


def test_a_missing_or_failed_billing_read_leaves_every_other_read_standing() -> None:
    clients = [OldClient(), FailingBilling()]
    extras = asyncio.run(read_extras(clients, Observation(), billing=True))  # type: ignore[arg-type]
    assert sorted((b.account, b.balance) for b in extras.balances) == [
        ("main", 12.5),
        ("second", 12.5),
    ]
    assert extras.volumes_read == {("runpod", "main"), ("runpod", "second")}
    assert extras.failures == {}, "billing is no guard: its failure alerts nobody"
    assert extras.billed == {}
    assert extras.billed_instances == {("runpod", "second"): {"pod-1": 4.0}}


def test_without_billing_no_billing_is_read() -> None:
    """The digest reads balances and volumes only: no request for a history it never shows."""
    asked: list[str] = []

    @dataclass
    class Counting(FailingBilling):
        async def billing(self, days: int) -> None:
            asked.append("billing")

        async def instance_billing(self, days: int) -> dict[str, float]:
            asked.append("instances")
            return {}

    extras = asyncio.run(read_extras([Counting()], Observation()))  # type: ignore[list-item]
    assert asked == [] and extras.billed == {} and extras.billed_instances == {}
    assert [b.account for b in extras.balances] == ["second"]
