"""A small world for reap-pass tests: both emulators, settings pointing at them, a SQLite store,
a fake clock and a recording notifier. Real HTTP on loopback; time moves only when told."""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from emulators import RunPodEmulator, VastEmulator
from emulators.channels import RecordingNotifier
from emulators.clock import FakeClock
from reaper.app.wiring import make_clients
from reaper.channels.base import Notifier
from reaper.core.models import Alert, Delivery
from reaper.passes.reap import ConfirmOptions, ReapReport, reap_pass
from reaper.providers.base import HttpOptions
from reaper.settings.model import Settings, StateURL
from reaper.settings.parse import Account
from reaper.store.sqlite import SQLiteStore
from tests.cli_process import run_reaper
from tests.settings_support import replaced
from tests.settings_support import settings as settings_of

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
RUNPOD_KEY = "rp-test-key-0123456789"
VAST_KEY = "vast-test-key-0123456789"
FAST_HTTP = HttpOptions(timeout=2.0, max_attempts=2, backoff_base=0.01, backoff_cap=0.02)
FAST_CONFIRM = ConfirmOptions(attempts=4, first_delay=0.0, backoff=0.01, max_delay=0.02)


def one_pass(
    settings: Settings,
    store: SQLiteStore,
    clock: FakeClock,
    notifier: Notifier,
    http: HttpOptions = FAST_HTTP,
    **kwargs: Any,
) -> ReapReport:
    """One reap pass with clients of `settings`' accounts, closed after it; quick confirmations."""

    async def go() -> ReapReport:
        clients = make_clients(settings, http)
        try:
            return await reap_pass(
                settings, store, clients, notifier, clock, confirm=FAST_CONFIRM, **kwargs
            )
        finally:
            await asyncio.gather(*(c.aclose() for c in clients))

    return asyncio.run(go())


@dataclass
class World:
    runpod: RunPodEmulator
    vast: VastEmulator
    settings: Settings
    clock: FakeClock
    notifier: RecordingNotifier
    state_path: Path

    def store(self, *, read_only: bool = False) -> SQLiteStore:
        return SQLiteStore(str(self.state_path), read_only=read_only)

    def run(
        self,
        *,
        dry_run: bool = False,
        settings: Settings | None = None,
        notifier: Notifier | None = None,
        store: SQLiteStore | None = None,
        http: HttpOptions = FAST_HTTP,
        **kwargs: Any,
    ) -> ReapReport:
        """One pass; with `store`, on that store (left open for the caller)."""
        used = store or self.store(read_only=dry_run)
        try:
            return one_pass(
                settings or self.settings,
                used,
                self.clock,
                notifier or self.notifier,
                http,
                dry_run=dry_run,
                **kwargs,
            )
        finally:
            if store is None:
                used.close()

    def set_clock(self, clock: FakeClock) -> None:
        """Run on another clock, the emulators' answers dated by it too."""
        self.clock = clock
        self.runpod._now = clock.now
        self.vast._now = clock.now

    def advance(self, hours: float) -> None:
        self.clock.advance(timedelta(hours=hours))

    def reach_deadline(self) -> None:
        """Three steps of the default 24h TTL: a pass at first sight, a pass 23h later that
        warns, then the clock moved to the deadline, where the next pass terminates."""
        self.run()
        self.advance(23)
        self.run()
        self.advance(1)

    def env(self) -> dict[str, str]:
        """The same configuration as environment variables, for CLI subprocess tests."""
        return {
            "RUNPOD_API_KEY": f"main={RUNPOD_KEY}",
            "VAST_API_KEY": f"main={VAST_KEY}",
            "RUNPOD_API_URL": self.runpod.rest_url,
            "RUNPOD_GRAPHQL_URL": self.runpod.graphql_url,
            "VAST_API_URL": self.vast.url,
            "REAPER_STATE": f"sqlite:///{self.state_path}",
        }


def action_of(report: ReapReport, instance_id: str) -> str | None:
    matches = [a.action for a in report.actions if a.id == instance_id]
    assert len(matches) <= 1
    return matches[0] if matches else None


@contextmanager
def world(tmp_path: Path, *, start: datetime = START, **settings_overrides: Any) -> Iterator[World]:
    clock = FakeClock(start)
    with (
        RunPodEmulator({"main": RUNPOD_KEY}, now=clock.now) as runpod,
        VastEmulator({"main": VAST_KEY}, now=clock.now) as vast,
    ):
        settings = settings_of(
            runpod_accounts=(Account("runpod", "main", RUNPOD_KEY),),
            vast_accounts=(Account("vast", "main", VAST_KEY),),
            runpod_api_url=runpod.rest_url,
            runpod_graphql_url=runpod.graphql_url,
            vast_api_url=vast.url,
            state=StateURL("sqlite", str(tmp_path / "state" / "reaper.db")),
        )
        settings = replaced(settings, **settings_overrides)
        yield World(
            runpod, vast, settings, clock, RecordingNotifier(), tmp_path / "state" / "reaper.db"
        )


class ActingNotifier(RecordingNotifier):
    """A channel that reaches a person, and lets a test act while a message is on its way:
    the user starting a pod, the clock moving on, another pass taking the lease. `on_send`
    gets each alert before it counts as delivered; `delay` seconds of real time are spent on
    each (to see sends overlap)."""

    def __init__(
        self,
        on_send: Callable[[Alert], None] | None = None,
        *,
        delay: float = 0.0,
        heard: bool = True,
    ) -> None:
        super().__init__(heard=heard)
        self.on_send = on_send
        self.delay = delay
        self.in_flight = 0
        self.peak_in_flight = 0

    async def send(self, alert: Alert) -> list[Delivery]:
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
            if self.on_send is not None:
                self.on_send(alert)
            return await super().send(alert)
        finally:
            self.in_flight -= 1


def events(notifier: RecordingNotifier) -> list[str]:
    return [a.event for a in notifier.alerts]


def cli(
    w: World, *args: str, extra_env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`reaper <args>` in a subprocess, configured for this world's emulators and state. The
    subprocess reads the real clock: a world whose reap passes run there starts at the real
    time (`world(..., start=datetime.now(UTC))`), or the providers' clocks look far off."""
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(w.state_path.parent.parent),
        **w.env(),
        **(extra_env or {}),
    }
    return run_reaper(args, env=env, cwd=w.state_path.parent.parent)
