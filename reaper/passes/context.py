"""One `Context` per pass, and the `Effects` through which a pass changes anything.

A pass reads the providers, the store and the clock, decides with the pure core, and then acts
— writes to the store, sends alerts, deletes instances — only through `ctx.effects` (the store
a pass writes to is `ctx.store`, which the effects chose). A dry run is the same pass with
`DryRunEffects`: its store (`reaper.store.recording`) forwards reads and records writes instead
of making them, its alerts
and deletes are recorded and never sent. So a dry run is a way of running a pass, not a branch
in every step of it, and what it would have done is in `effects.recorded`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from reaper.channels.base import Notifier, SilentNotifier
from reaper.clock import Clock
from reaper.core.models import (
    Alert,
    Delivery,
)
from reaper.passes.arm import arm_safely
from reaper.providers.base import ProviderClient, TerminateOutcome
from reaper.settings.model import Settings
from reaper.store.ports import Store
from reaper.store.recording import RecordingStore

# What a delete answered, or that a dry run did not send it.
DeleteOutcome = TerminateOutcome | Literal["dry_run"]


class Effects:
    """Acting for real: the store as it is, alerts through the notifier, deletes sent."""

    live = True
    # The log's words for what the pass did with an alert: a dry run's log says what it would
    # have done, so nobody reads "sent" for a message that never left.
    sent = "sent"
    alerted = "alerted"

    def __init__(self, store: Store, notifier: Notifier) -> None:
        self.store = store
        self.notifier = notifier

    async def send(self, alert: Alert) -> list[Delivery]:
        return await self.notifier.send(alert)

    async def delete(
        self,
        client: ProviderClient,
        instance_id: str,
        *,
        not_after: float,
        before_send: Callable[[], None],
    ) -> DeleteOutcome:
        return await client.terminate(instance_id, not_after=not_after, before_send=before_send)


class DryRunEffects(Effects):
    """Acting on paper: every write, alert and delete is recorded, none happens. An alert
    "delivered" here reached a person on paper, so that the pass takes the path it would take
    for real; the results say `done: false`."""

    live = False
    sent = "dry_run"
    alerted = "would_alert"

    def __init__(self, store: Store) -> None:
        self.recorded: list[str] = []
        super().__init__(RecordingStore(store, self.recorded), SilentNotifier())

    async def send(self, alert: Alert) -> list[Delivery]:
        self.recorded.append(f"alert {alert.event}: {alert.title}")
        return [Delivery(channel="dry run", ok=True, heard=True)]

    async def delete(
        self,
        client: ProviderClient,
        instance_id: str,
        *,
        not_after: float,
        before_send: Callable[[], None],
    ) -> DeleteOutcome:
        self.recorded.append(f"delete {client.provider}:{instance_id}")
        return "dry_run"


@dataclass
class Context:
    """Everything one pass works with, in one order everywhere."""

    settings: Settings
    store: Store
    clients: Sequence[ProviderClient]
    notifier: Notifier
    clock: Clock
    effects: Effects

    @classmethod
    def make(
        cls,
        settings: Settings,
        store: Store,
        clients: Sequence[ProviderClient],
        notifier: Notifier,
        clock: Clock,
        *,
        dry_run: bool = False,
    ) -> Context:
        """The context of a live pass, or of a dry run over the same (read-only) store."""
        effects = DryRunEffects(store) if dry_run else Effects(store, notifier)
        return cls(settings, effects.store, clients, notifier, clock, effects)

    @property
    def dry_run(self) -> bool:
        return not self.effects.live

    async def alert(self, alert: Alert) -> list[Delivery]:
        """Send an alert through the effects, its actions armed first (`passes.arm`); a dry
        run arms nothing, since arming stores grants."""
        if self.effects.live:
            room = self.notifier.actions
            alert = arm_safely(alert, self.store, self.settings, self.clock.now(), room)
        return await self.effects.send(alert)

    def client(self, provider: str, account: str) -> ProviderClient | None:
        return next(
            (c for c in self.clients if c.provider == provider and c.account == account), None
        )
