"""A small world for DigitalOcean tests: the DigitalOcean emulator, settings pointing at it
alone, a SQLite store, a fake clock and a recording notifier; and a client of one account for
the length of one call. Real HTTP on loopback; time moves only when told."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

from emulators.channels import RecordingNotifier
from emulators.clock import FakeClock
from emulators.digitalocean import DigitalOceanEmulator
from emulators.server import EmulatorServer
from reaper.channels.base import Notifier
from reaper.passes.reap import ReapReport
from reaper.providers.base import HttpOptions
from reaper.providers.digitalocean.client import DigitalOceanClient
from reaper.settings.model import Settings, StateURL
from reaper.settings.parse import Account
from reaper.store.sqlite import SQLiteStore
from tests.reap_support import FAST_HTTP, START, one_pass
from tests.settings_support import replaced
from tests.settings_support import settings as settings_of

TOKEN = "dop_v1_test_token_0123456789"
# Tiny backoffs so that retries cost milliseconds.
FAST = HttpOptions(timeout=2, max_attempts=2, backoff_base=0.001, backoff_cap=0.004)
T = TypeVar("T")


def account(name: str = "main", token: str = TOKEN) -> Account:
    return Account("digitalocean", name, token)


def on_digitalocean(
    server: EmulatorServer[Any, Any],
    action: Callable[[DigitalOceanClient], Awaitable[T]],
    *,
    token: str = TOKEN,
    options: HttpOptions = FAST,
) -> T:
    """Run `action` with a DigitalOcean client of account "main" holding `token`, pointed at
    `server`'s `/v2`, then close it."""

    async def go() -> T:
        client = DigitalOceanClient(account(token=token), f"{server.url}/v2", options)
        try:
            return await action(client)
        finally:
            await client.aclose()

    return asyncio.run(go())


@dataclass
class DOWorld:
    do: DigitalOceanEmulator
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
        http: HttpOptions = FAST_HTTP,
        **kwargs: Any,
    ) -> ReapReport:
        """One reap pass over this world's accounts."""
        store = self.store(read_only=dry_run)
        try:
            return one_pass(
                settings or self.settings,
                store,
                self.clock,
                notifier or self.notifier,
                http,
                dry_run=dry_run,
                **kwargs,
            )
        finally:
            store.close()

    def advance(self, hours: float) -> None:
        self.clock.advance(timedelta(hours=hours))

    def reach_deadline(self) -> None:
        """A pass at first sight, a pass 23h later that warns, then the clock at the deadline
        of the default 24h TTL, where the next pass terminates."""
        self.run()
        self.advance(23)
        self.run()
        self.advance(1)

    def deletes(self) -> list[str]:
        return [r.path for r in self.do.mutations if r.kind == "delete"]


@contextmanager
def do_world(
    tmp_path: Path,
    *,
    start: datetime = START,
    accounts: dict[str, str] | None = None,
    emulator: dict[str, Any] | None = None,
    **settings_overrides: Any,
) -> Iterator[DOWorld]:
    """The world with `accounts` (name -> token; one account "main" by default)."""
    keys = accounts or {"main": TOKEN}
    clock = FakeClock(start)
    with DigitalOceanEmulator(keys, now=clock.now, **(emulator or {})) as server:
        settings = settings_of(
            digitalocean_accounts=tuple(account(n, t) for n, t in keys.items()),
            digitalocean_api_url=server.api_url,
            state=StateURL("sqlite", str(tmp_path / "state" / "reaper.db")),
        )
        settings = replaced(settings, **settings_overrides)
        yield DOWorld(
            server, settings, clock, RecordingNotifier(), tmp_path / "state" / "reaper.db"
        )


def action_of(report: ReapReport, droplet_id: int | str) -> str | None:
    matches = [a.action for a in report.actions if a.id == str(droplet_id)]
    assert len(matches) <= 1
    return matches[0] if matches else None
