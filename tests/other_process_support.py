"""Another reaper process on the same store: its own store connection and clock, run in a
thread to its end while the test's pass waits on the provider (moved here from the review's
clock-skew test so that test modules import no other test module)."""

from __future__ import annotations

import asyncio
import threading
from datetime import timedelta

from emulators.clock import FakeClock
from reaper.app.wiring import make_clients
from reaper.passes.reap import ReapReport, reap_pass
from tests.reap_support import FAST_CONFIRM, FAST_HTTP, World


def other_process_pass(w: World, ahead: timedelta, into: list[ReapReport]) -> None:
    """A whole pass of the other process (its own store connection and clock), run to its
    end while the first process waits for an answer from the provider."""

    async def go() -> ReapReport:
        clients = make_clients(w.settings, FAST_HTTP)
        store = w.store()
        try:
            clock = FakeClock(w.clock.now() + ahead)
            return await reap_pass(
                w.settings, store, clients, w.notifier, clock, confirm=FAST_CONFIRM
            )
        finally:
            store.close()
            await asyncio.gather(*(c.aclose() for c in clients))

    result: list[ReapReport] = []
    thread = threading.Thread(target=lambda: result.append(asyncio.run(go())))
    thread.start()
    thread.join(timeout=60)
    into += result
