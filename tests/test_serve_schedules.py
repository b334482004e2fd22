"""The schedules of `reaper serve`: started in the lifespan, a pass at start and then every
period, one failing pass does not end the schedule, and a shutdown lets the running pass finish
before the store closes."""

from __future__ import annotations

import asyncio
import signal
import threading
from datetime import timedelta
from pathlib import Path

import pytest

from emulators.channels import RecordingNotifier
from emulators.clock import FakeClock
from reaper.interfaces.serve import Job, Scheduler, serve_jobs
from reaper.settings.parse import Account
from tests.heartbeat_support import make_settings, served


def test_a_stop_waits_for_the_running_pass() -> None:
    finished: list[str] = []

    async def scenario() -> None:
        entered, release = asyncio.Event(), asyncio.Event()

        async def slow_pass() -> None:
            entered.set()
            await release.wait()
            finished.append("pass")

        scheduler = Scheduler([Job("slow", timedelta(hours=1), slow_pass)])
        scheduler.start()
        await entered.wait()
        stopping = asyncio.create_task(scheduler.stop())
        await asyncio.sleep(0)
        assert not stopping.done()  # still waiting for the pass
        release.set()
        await stopping
        assert scheduler.passes == {"slow": 1}

    asyncio.run(asyncio.wait_for(scenario(), timeout=10))
    assert finished == ["pass"]


def test_a_failing_pass_does_not_end_the_schedule() -> None:
    calls: list[int] = []

    async def scenario() -> None:
        done = asyncio.Event()

        async def flaky() -> None:
            calls.append(1)
            if len(calls) == 1:
                raise RuntimeError("provider exploded")
            done.set()

        scheduler = Scheduler([Job("flaky", timedelta(milliseconds=1), flaky)])
        scheduler.start()
        await done.wait()
        await scheduler.stop()

    asyncio.run(asyncio.wait_for(scenario(), timeout=10))
    assert len(calls) >= 2


def test_the_lifespan_runs_the_jobs_and_shutdown_closes_the_store(tmp_path: Path) -> None:
    ran = threading.Event()

    async def job() -> None:
        ran.set()

    with served(make_settings(tmp_path), jobs=[Job("watch", timedelta(hours=1), job)]) as app:
        assert ran.wait(timeout=10)
        store = app.store
    with pytest.raises(RuntimeError, match="closed"):
        store.list_monitors()


def test_a_second_sigint_still_lets_the_pass_finish_and_closes_the_store(tmp_path: Path) -> None:
    """A second Ctrl+C makes uvicorn skip the lifespan shutdown; the end of its loop would
    cancel the running pass (a reap between a termination and its audit record)."""
    entered, release = threading.Event(), threading.Event()
    finished: list[str] = []

    async def slow_pass() -> None:
        entered.set()
        await asyncio.to_thread(release.wait, 10)
        finished.append("pass")

    with served(make_settings(tmp_path), jobs=[Job("reap", timedelta(hours=1), slow_pass)]) as app:
        assert entered.wait(timeout=10)
        server = app.running.server
        server.handle_exit(signal.SIGINT, None)
        server.handle_exit(signal.SIGINT, None)
        assert server.force_exit
        # Release the pass only once uvicorn has shut its listener: without the fix the loop
        # is ending and cancels the pass; with it, the pass finishes and the store is closed.
        for _ in range(1000):
            if server.servers and not any(s.is_serving() for s in server.servers):
                break
            threading.Event().wait(0.01)
        release.set()
        app.running.thread.join(timeout=20)
        assert not app.running.thread.is_alive()
        store = app.store
    assert finished == ["pass"]
    with pytest.raises(RuntimeError, match="closed"):
        store.list_monitors()


def test_serve_jobs_reap_only_with_provider_keys(tmp_path: Path) -> None:
    clock, notifier = FakeClock(), RecordingNotifier()
    plain = make_settings(tmp_path)
    keyed = make_settings(tmp_path, runpod_accounts=(Account("runpod", "m", "k" * 8),))
    names = [j.name for j in serve_jobs(plain, None, notifier, clock, [])]  # type: ignore[arg-type]
    assert names == ["watch"]
    jobs = serve_jobs(keyed, None, notifier, clock, [])  # type: ignore[arg-type]
    assert [(j.name, j.every) for j in jobs] == [
        ("watch", keyed.watch_every),
        ("reap", keyed.reap_every),
        ("digest", timedelta(days=1)),
    ]
