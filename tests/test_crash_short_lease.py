"""Issue 24.12: a killed pass holds up the next for minutes, not half an hour. The reap lease is
short (about 2 minutes, honoured 5 minutes more for another process's clock) and kept alive
while its pass runs — renewed at each step and in the background while a slow listing runs,
fenced as ever — and a pass that meets a lease held by another says whose it is (host, pid)
and when it expires."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from emulators.clock import FakeClock
from reaper.core.units import utc
from reaper.passes.reap.state import LEASE_NAME, LEASE_TTL, MAX_CLOCK_SKEW, keep_leased
from reaper.store.sqlite import SQLiteStore
from tests.reap_support import World, cli, world


def _holder(w: World) -> tuple[str, datetime] | None:
    if not w.state_path.exists():
        return None
    store = w.store(read_only=True)
    try:
        lease = store.lease_holder(LEASE_NAME)
    finally:
        store.close()
    return None if lease is None else (lease.owner, lease.expires_at)


def test_a_killed_pass_holds_the_next_up_for_minutes_and_is_named(tmp_path: Path) -> None:
    with world(tmp_path, start=datetime.now(UTC)) as w:
        w.runpod.add_pod(status="EXITED")
        w.runpod.slow_next("list", seconds=15)  # killed while it waits
        env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), **w.env()}
        doomed = subprocess.Popen(
            [sys.executable, "-m", "reaper", "reap"],
            env=env,
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 60
            while (held := _holder(w)) is None:
                assert doomed.poll() is None and time.monotonic() < deadline, "no lease taken"
                time.sleep(0.05)
        finally:
            doomed.send_signal(signal.SIGKILL)
            doomed.wait(timeout=30)
        _owner, expires = held
        assert expires - datetime.now(UTC) <= timedelta(minutes=2, seconds=5), "a short lease"

        second = cli(w, "reap")
        assert second.returncode == 0, second.stderr
        assert f"pid {doomed.pid}" in second.stderr and os.uname().nodename in second.stderr
        assert f"until {utc(expires)}" in second.stderr

        # Its clock may be minutes behind ours: its lease is honoured MAX_CLOCK_SKEW longer.
        w.clock.set(expires + MAX_CLOCK_SKEW - timedelta(seconds=10))
        assert w.run().lease_taken, "a lease within the clock-skew grace is still held"
        w.clock.set(expires + MAX_CLOCK_SKEW + timedelta(seconds=10))
        report = w.run()
        assert not report.lease_taken, "about seven minutes later the next pass runs"


def test_a_renewal_keeps_a_slow_pass_leased_and_stops_once_it_is_lost(tmp_path: Path) -> None:
    """The background renewal extends the lease while its owner holds it; once another pass
    holds it (it expired meanwhile) the renewal never takes it back and says it was lost."""
    clock = FakeClock(datetime(2026, 3, 2, 9, 0, tzinfo=UTC))
    store = SQLiteStore(str(tmp_path / "state.db"))
    steps = {"n": 0}

    async def fake_sleep(seconds: float) -> None:
        clock.advance(timedelta(seconds=seconds))
        steps["n"] += 1
        if steps["n"] == 20:  # the process stalls past its lease; another pass takes it
            clock.advance(LEASE_TTL)
            assert store.acquire_lease(LEASE_NAME, "other:1:x", clock.now(), LEASE_TTL)
        await asyncio.sleep(0)

    async def go() -> bool:
        assert store.acquire_lease(LEASE_NAME, "me:2:y", clock.now(), LEASE_TTL)
        lost = asyncio.Event()
        task = asyncio.create_task(
            keep_leased(store, LEASE_NAME, "me:2:y", clock, on_lost=lost.set, sleep=fake_sleep)
        )
        await asyncio.wait_for(lost.wait(), timeout=30)
        await task
        return lost.is_set()

    try:
        assert asyncio.run(go())
        assert steps["n"] >= 20, "renewed many times over more than a lease's length"
        lease = store.lease_holder(LEASE_NAME)
        assert lease is not None and lease.owner == "other:1:x", "never taken back"
    finally:
        store.close()
