"""A ping, applied: the monitor written to the store and its alert sent.

The state machine is pure (`reaper.core.heartbeat`); this is its I/O, shared by `reaper serve`
and the Lambda HTTP function.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from reaper import log
from reaper.clock import Clock
from reaper.core.heartbeat import Ping, Transition, apply_log, apply_ping, failing
from reaper.core.records import Monitor
from reaper.passes import correlate
from reaper.providers.plugins import provider_host
from reaper.settings.model import Settings
from reaper.store.ports import Store

if TYPE_CHECKING:
    from collections.abc import Sequence

    from reaper.channels.base import Notifier
    from reaper.core.models import Alert
    from reaper.providers.base import ProviderClient

# An /alert not yet delivered (interfaces.http): an episode under this prefix + the alert's key.
UNDELIVERED_ALERT = "alert-undelivered:"
# How long a retired monitor stays after it was last heard from (see prune_retired).
RETIRED_KEPT = timedelta(days=7)
# Past the cap, a provider host the listings do not show is looked up at most this often
# (`lookup_room`), under this claim prefix + the host.
LOOKUP_EVERY = timedelta(hours=1)
MONITOR_LOOKUP = "monitor-lookup:"


@dataclass(frozen=True)
class PingOutcome:
    accepted: bool
    # Why a ping was refused (the monitor cap), one line for the HTTP answer.
    reason: str = ""
    monitor: Monitor | None = None
    alert: Alert | None = None
    # Refused because the host has no monitor and none may be created (404, not 403).
    missing: bool = False
    # Refused by REAPER_MAX_MONITORS (a lookup of the instance may still make room for it).
    capped: bool = False


def cross_checkable(host: str, settings: Settings) -> tuple[str, str] | None:
    """A provider host whose provider we hold a key for; only those get the `bye` protection."""
    parsed = provider_host(host)
    if parsed is None:
        return None
    configured = settings.provider(parsed[0])
    return parsed if configured is not None and configured.accounts else None


def _cap_reason(settings: Settings) -> str:
    return (
        f"monitor limit reached: {settings.max_monitors} monitors exist "
        "(REAPER_MAX_MONITORS); this host was not created"
    )


def _no_monitor(host: str, settings: Settings, ping: Ping) -> str:
    if ping.kind == "log":
        return f"no monitor {host}: /log never creates one (ping it first)"
    return (
        f"no monitor {host}: HEARTBEAT_AUTO_CREATE is off; create it with "
        f"`reaper monitor set {host}` or PUT /monitors/{host}"
    )


def place_ping(
    settings: Settings, store: Store, clock: Clock, ping: Ping, *, looked_up: int = 0
) -> PingOutcome:
    """Apply one ping to the store and its log; the outcome's `alert`, if any, is still to be
    sent (`send_ping_alert`).

    No `await` anywhere: within one event loop a watch pass or another ping never interleaves
    with the read and the write, and an ordinary ping — no alert — is answered without an
    event loop at all (a cold Lambda ping imports no asyncio). On DynamoDB an ordinary ping
    is one read, one conditional write of the monitor and one plain write of its log event (a
    slot of the monitor's ring of PING_LOG_KEPT items). `looked_up`: the room a lookup of the
    host's single instance gave it past the cap (`lookup_room`).
    """
    guarded = cross_checkable(ping.host, settings) is not None
    for _attempt in range(2):
        now = clock.now()
        current = store.get_monitor(ping.host)
        if current is None and ping.kind == "bye":
            return PingOutcome(accepted=True)  # nothing to retire
        if current is None and (ping.kind == "log" or not settings.auto_create):
            return PingOutcome(False, _no_monitor(ping.host, settings, ping), missing=True)
        if current is not None and ping.kind == "log":
            transition = apply_log(current, ping, now)
            _place(store, current, transition, settings.max_monitors)
            return PingOutcome(accepted=True, monitor=transition.monitor)
        transition = apply_ping(current, ping, now, guarded=guarded)
        placed = _place(store, current, transition, settings.max_monitors)
        if placed is False and (room := looked_up or listed_room(store, ping.host)):
            # A listed instance's watchdog: junk hosts that filled the cap do not count
            # against it (they can fill REAPER_MAX_MONITORS, never the room of listed ones).
            placed = _place(store, current, transition, settings.max_monitors + room)
        if placed is None:
            continue  # created meanwhile by another process: apply to that one
        if not placed:
            return PingOutcome(accepted=False, reason=_cap_reason(settings), capped=True)
        if transition.alert is not None:
            log.event("monitor", host=ping.host, change=transition.alert.event)
        return PingOutcome(accepted=True, monitor=transition.monitor, alert=transition.alert)
    return PingOutcome(accepted=False, reason=_cap_reason(settings), capped=True)


def listed_room(store: Store, host: str) -> int:
    """For the provider host of an instance in its provider's last listings (`<prefix>-<id>` of
    a listed pod): how many instances those listings show, the room they get beyond
    REAPER_MAX_MONITORS. 0 for any other host. Reads the listings: only a ping the cap (or an
    alert budget) refused pays for it."""
    parsed = provider_host(host)
    if parsed is None:
        return 0
    provider, instance_id = parsed
    shown = [i.id for x in store.listings() if x.provider == provider for i in x.instances]
    return len(shown) if instance_id in shown else 0


async def lookup_room(
    store: Store, clock: Clock, clients: Sequence[ProviderClient], host: str
) -> int:
    """Past the cap, for the provider host of an instance the last listings do not show (one
    started since): one read of that single instance, at most once per host an hour (the claim
    is the store's, so it holds across processes and Lambda containers). The room it gets
    beyond REAPER_MAX_MONITORS when an account of its provider shows it — every listed
    instance's and its own — else 0: a junk host costs one read an hour, never a place."""
    parsed = provider_host(host)
    if parsed is None:
        return 0
    provider, instance_id = parsed
    mine = [c for c in clients if c.provider == provider]
    if not mine or not store.claim_alert(f"{MONITOR_LOOKUP}{host}", clock.now(), LOOKUP_EVERY):
        return 0
    for client in mine:
        try:
            found = await client.lookup(instance_id)
        except Exception as exc:  # a failed read shows nothing: the cap stands
            log.event("monitor", host=host, lookup="failed", error=type(exc).__name__)
            continue
        if found is not None:
            listed = sum(len(x.instances) for x in store.listings())
            log.event("monitor", host=host, lookup="found", account=client.account)
            return listed + 1
    return 0


async def send_ping_alert(
    store: Store, notifier: Notifier, clock: Clock, ping: Ping, alert: Alert
) -> None:
    """Send the alert a placed ping made; the write came first, so a slow channel never holds
    the monitor's state back. A failure alerted marks the host: the instance's notify about
    the same failure a moment later is not sent again."""
    deliveries = await notifier.send(alert)
    if failing(ping) and any(d.ok for d in deliveries):
        correlate.failure_alerted(store, ping.host, clock.now())


async def record_ping(
    settings: Settings, store: Store, notifier: Notifier, clock: Clock, ping: Ping
) -> PingOutcome:
    """`place_ping`, then its alert sent: a ping as one awaitable step."""
    outcome = place_ping(settings, store, clock, ping)
    if outcome.alert is not None:
        await send_ping_alert(store, notifier, clock, ping, outcome.alert)
    return outcome


def _place(
    store: Store, current: Monitor | None, transition: Transition, limit: int
) -> bool | None:
    """Write the monitor, and its event to its log. A first ping and a retired monitor coming
    back both take a place under REAPER_MAX_MONITORS: otherwise ping + bye + ping on the same
    names would walk past the cap. True if written, False if the cap refused it (a refused
    revival leaves the retired monitor as it was), None if another process created the host
    meanwhile. A retired monitor that comes back starts a fresh log."""
    monitor, event = transition.monitor, transition.event
    reviving = current is not None and current.status == "retired" and monitor.status != "retired"
    if current is not None and not reviving:
        if event is None:
            store.put_monitor(monitor)
        else:
            store.put_monitor_logged(monitor, event)
        return True
    if reviving:
        store.delete_monitor(monitor.host)  # create_monitor counts, and wants a new host
    if store.create_monitor(monitor, limit):
        if event is not None:
            store.log_event(monitor.host, event)
        return True
    if store.get_monitor(monitor.host) is not None:
        return None
    if current is not None:
        store.put_monitor(current)
    return False


def prune_retired(settings: Settings, store: Store, now: datetime) -> int:
    """Retired monitors watch nothing. They stay for `reaper status` a week after they were
    last heard from, and only the REAPER_MAX_MONITORS most recently heard: ping + bye on new
    names with a leaked key cannot grow the store without bound, while a fleet of short-lived
    instances churns freely (a retired monitor never takes a place under the cap)."""
    return store.delete_retired(now - RETIRED_KEPT, keep=settings.max_monitors)
