"""The budget of the alerts pings raise (a new monitor, down by `/fail`, back up): a ping-key
holder (any instance host) may make noise, never drown the phone.

Each host has a small budget and all hosts share one; an alert past either is held, not
dropped: the held ones go out folded into one message ("40 monitors appeared in one minute:
…") once FOLD_WINDOW has passed since the first — sent by the next alerting ping after it,
and under `reaper serve` by a timer at its end. An alert about the provider host of an instance
in the last listing (`<prefix>-<id>` of a listed instance) always goes out: junk hosts cannot
crowd out a real instance's. The buckets live in the process (on Lambda: per warm container,
where a fold waits for the container's next alerting ping).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from reaper import log
from reaper.clock import Clock
from reaper.interfaces.ratelimit import Rate, TokenBuckets

if TYPE_CHECKING:
    from reaper.core.heartbeat import Ping
    from reaper.core.models import Alert
    from reaper.interfaces.api import App

PER_HOST = Rate(capacity=3, per_second=1 / 60)
OVERALL = Rate(capacity=10, per_second=10 / 60)
FOLD_WINDOW = timedelta(minutes=1)


class PingAlertBudget:
    """Admits or holds the alerts of pings; `fold_due` hands the held ones back as one."""

    def __init__(
        self,
        clock: Clock,
        per_host: Rate = PER_HOST,
        overall: Rate = OVERALL,
        window: timedelta = FOLD_WINDOW,
    ) -> None:
        self._clock = clock
        self._per_host = TokenBuckets(per_host, clock)
        self._overall = TokenBuckets(overall, clock, max_keys=1)
        self.window = window
        self.held: list[Alert] = []
        self._held_since: datetime | None = None

    def admit(self, host: str) -> bool:
        """True: send it now; False: past a budget (the caller holds it or sends it anyway)."""
        return not self._per_host.take(host) and not self._overall.take("all")

    def hold(self, alert: Alert) -> bool:
        """Hold `alert` for the fold; True when it opened a new fold window."""
        self.held.append(alert)
        if self._held_since is None:
            self._held_since = self._clock.now()
            return True
        return False

    def fold_due(self, *, now: datetime | None = None, force: bool = False) -> list[Alert]:
        """The held alerts, once the window has passed since the first (or `force`d): the
        caller folds and sends them. Empty otherwise."""
        if self._held_since is None:
            return []
        moment = now or self._clock.now()
        if not force and moment - self._held_since < self.window:
            return []
        held, self.held, self._held_since = self.held, [], None
        return held


async def send_or_hold(app: App, ping: Ping, alert: Alert) -> None:
    """Send a ping's alert within the budgets (or about a listed instance), else hold it; and
    send the fold when one is due."""
    from reaper.passes.ping import listed_room, send_ping_alert

    budget: PingAlertBudget = app.ping_alerts
    if budget.admit(ping.host) or listed_room(app.store, ping.host):
        await send_ping_alert(app.store, app.notifier, app.clock, ping, alert)
    else:
        log.event("ping_alert", result="held", host=ping.host, alert_event=alert.event)
        if budget.hold(alert):
            _flush_later(app, budget)
    await send_fold(app, budget)


async def send_fold(app: App, budget: PingAlertBudget, *, force: bool = False) -> None:
    from reaper.core import messages

    held = budget.fold_due(force=force)
    if held:
        await app.notifier.send(messages.fold_ping_alerts(held, budget.window))


def _flush_later(app: App, budget: PingAlertBudget) -> None:
    """Under `reaper serve`, the fold goes out at the end of its window even if no alerting
    ping comes after it (on Lambda the loop ends with the request, and the timer with it)."""
    import asyncio  # here, not at import: a cold ping loads no event loop

    loop = asyncio.get_running_loop()
    tasks: set[asyncio.Task[None]] = set()

    def flush() -> None:
        task = loop.create_task(send_fold(app, budget, force=True))
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    loop.call_later(budget.window.total_seconds(), flush)
