"""A stand-in for the alert channels: keeps every alert in memory (tests, the demo)."""

from __future__ import annotations

from reaper.channels.base import ActionSlots
from reaper.channels.plugins import body_budget as _budget
from reaper.core.models import Alert, Delivery


class RecordingNotifier:
    """Satisfies `reaper.channels.base.Notifier`. `heard` says whether it stands for a channel
    that reaches a person (the default) or for the log; what it carries is what the log
    carries (every channel's largest budget, no actions) unless told otherwise."""

    def __init__(
        self,
        *,
        heard: bool = True,
        body_budget: int | None = None,
        actions: ActionSlots | None = None,
    ) -> None:
        self.alerts: list[Alert] = []
        self.heard = heard
        self.body_budget = body_budget if body_budget is not None else unconfigured_budget()
        self.actions = actions or ActionSlots()

    async def send(self, alert: Alert) -> list[Delivery]:
        self.alerts.append(alert)
        return [Delivery(channel="recording", ok=True, heard=self.heard)]


def unconfigured_budget() -> int:
    """What one message carries where no channel is configured (the log)."""
    return _budget(())
