"""A stand-in for the alert channels: keeps every alert in memory (tests, the demo)."""

from __future__ import annotations

from reaper.core.models import Alert, Delivery


class RecordingNotifier:
    """Satisfies `reaper.channels.base.Notifier`. `heard` says whether it stands for a channel
    that reaches a person (the default) or for the log."""

    def __init__(self, *, heard: bool = True) -> None:
        self.alerts: list[Alert] = []
        self.heard = heard

    async def send(self, alert: Alert) -> list[Delivery]:
        self.alerts.append(alert)
        return [Delivery(channel="recording", ok=True, heard=self.heard)]
