"""The digest pass and the data of `reaper report`: the providers read live, the store for what
only it knows (what was reaped, monitors, how long each leak has lasted). The digest itself is
pure (`reaper.core.digest`)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from reaper import log
from reaper.channels.base import Notifier
from reaper.clock import Clock
from reaper.core.digest import (
    DIGEST_WINDOW,
    Digest,
    ProblemLine,
    Survey,
    build_digest,
    digest_alert,
)
from reaper.core.leaks import LEAK_PREFIX
from reaper.passes.observe import observe, read_extras
from reaper.providers.base import ProviderClient
from reaper.providers.plugins import label
from reaper.settings.model import Settings
from reaper.store.ports import Store

# A second digest within this gap (a restarted `serve`, a retried Lambda) is skipped.
DIGEST_MIN_GAP = timedelta(hours=20)


async def survey(clients: Sequence[ProviderClient]) -> Survey:
    """Instances, balances and volumes of every account, from the one listing and its extras;
    failures are recorded per account, never raised."""
    seen = await observe(clients)
    extras = await read_extras(clients, seen)
    warnings = [
        ProblemLine(provider=provider, account=account, message=f"{what}: {message}")
        for (provider, account), failures in extras.failures.items()
        for what, message in failures.items()
    ]
    return Survey(
        instances=seen.instances,
        balances=extras.balances,
        volumes=extras.volumes,
        errors=[ProblemLine(**e.model_dump()) for e in seen.errors],
        warnings=warnings,
        listed=sorted(seen.complete),
        labels={c.provider: label(c.provider) for c in clients},
    )


async def collect(
    settings: Settings, store: Store, clients: Sequence[ProviderClient], now: datetime
) -> Digest:
    """Live provider data plus the store's records, as one `Digest`. Reads the store only."""
    live = await survey(clients)
    return build_digest(
        now,
        live,
        store.audit_log(since=now - DIGEST_WINDOW),
        store.list_monitors(),
        store.open_episodes(LEAK_PREFIX),
        settings,
    )


async def digest_once(
    settings: Settings,
    store: Store,
    notifier: Notifier,
    clock: Clock,
    *,
    clients: Sequence[ProviderClient],
) -> int:
    """The scheduled daily digest (`serve`, Lambda). At most one per DIGEST_MIN_GAP per store,
    so a restarted server or a retried invocation does not send it twice. Never raises for an
    expected outcome: 0 sent (or skipped), 1 when a provider listing failed."""
    now = clock.now()
    if not store.claim_alert("digest", now, DIGEST_MIN_GAP):
        log.event("digest", result="skipped", reason="sent within the last 20h")
        return 0
    digest = await collect(settings, store, clients, now)
    deliveries = await notifier.send(digest_alert(digest))
    log.event(
        "digest",
        result="sent" if any(d.ok for d in deliveries) else "undelivered",
        spend_per_hour=digest.spend_per_hour,
        leaks=len(digest.leaks),
        errors=len(digest.errors),
    )
    return 1 if digest.errors else 0
