"""The notifier interface every alert goes through.

The reap pass and the watcher only know `Notifier.send`; which channels exist (Telegram, Bark,
or none — then alerts are only logged) is decided once, from the settings.
"""

from __future__ import annotations

from typing import Protocol

from reaper import log
from reaper.models import Alert, Delivery


class Notifier(Protocol):
    async def send(self, alert: Alert) -> list[Delivery]:
        """Deliver to every configured channel; one failing never blocks another. Never raises."""
        ...


class LogNotifier:
    """No channel configured: the alert is written to the log, so it is at least on record."""

    async def send(self, alert: Alert) -> list[Delivery]:
        log.event(
            "alert",
            result="logged",
            alert_event=alert.event,
            level=alert.level,
            title=alert.title,
            body=alert.body,
        )
        return [Delivery(channel="log", ok=True)]


class RecordingNotifier:
    """Keeps every alert in memory; for tests and the demo. `heard` says whether it stands for
    a channel that reaches a person (the default) or for the log."""

    def __init__(self, *, heard: bool = True) -> None:
        self.alerts: list[Alert] = []
        self.heard = heard

    async def send(self, alert: Alert) -> list[Delivery]:
        self.alerts.append(alert)
        return [Delivery(channel="recording", ok=True, heard=self.heard)]
