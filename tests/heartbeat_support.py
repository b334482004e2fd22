"""Shared set-up for the heartbeat, HTTP and serve tests: the real app under uvicorn on a
loopback ephemeral port, a FakeClock, a RecordingNotifier and a SQLite file in tmp_path."""

from __future__ import annotations

import asyncio
import atexit
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx

from emulators.channels import RecordingNotifier
from emulators.clock import FakeClock
from reaper.channels.base import Notifier
from reaper.core.models import Alert, Delivery
from reaper.interfaces.api import Limits
from reaper.interfaces.ratelimit import Rate
from reaper.interfaces.serve import Job, ReaperASGI, RunningServer, build_asgi, serving
from reaper.passes.watch import WatchReport, watch_pass
from reaper.providers.base import ProviderClient
from reaper.settings.model import Settings, StateURL
from reaper.store.sqlite import SQLiteStore
from tests.fakes.notifiers import StandIn
from tests.settings_support import bare, replaced

KEY = "ping-key-for-tests-0123"
ADMIN = "admin-key-for-tests-4567"
# Generous limits so that only the rate-limit tests meet them.
WIDE = Limits(
    per_client=Rate(100_000, 100_000),
    per_host=Rate(100_000, 100_000),
    alerts=Rate(100_000, 100_000),
)


def make_settings(tmp_path: Path, **overrides: Any) -> Settings:
    base = replaced(
        bare(),
        state=StateURL("sqlite", str(tmp_path / "state.db")),
        ping_key=KEY,
        admin_key=ADMIN,
        heartbeat_timeout=timedelta(minutes=5),
        heartbeat_repeat=timedelta(hours=1),
    )
    return replaced(base, **overrides)


class FailingNotifier(StandIn):
    """Every channel fails, as when Telegram and Bark are both unreachable."""

    def __init__(self) -> None:
        self.alerts: list[Alert] = []

    async def send(self, alert: Alert) -> list[Delivery]:
        self.alerts.append(alert)
        return [
            Delivery(channel="telegram", ok=False, detail="HTTP 500"),
            Delivery(channel="bark", ok=False, detail="timeout"),
        ]


@dataclass
class Served:
    settings: Settings
    store: SQLiteStore
    notifier: RecordingNotifier
    clock: FakeClock
    running: RunningServer
    http: httpx.Client

    def ping(
        self,
        host: str,
        suffix: str | None = None,
        *,
        method: str = "GET",
        body: bytes | None = None,
        key: str = KEY,
        headers: dict[str, str] | None = None,
    ) -> httpx.Response:
        path = f"/ping/{key}/{host}" + (f"/{suffix}" if suffix is not None else "")
        return self.http.request(method, path, content=body, headers=headers)

    def watch(self, clients: Sequence[ProviderClient] = (), **kwargs: Any) -> WatchReport:
        return asyncio.run(
            watch_pass(self.settings, self.store, self.notifier, self.clock, clients, **kwargs)
        )

    def events(self, *, announced: bool = False) -> list[str]:
        """The events of the alerts sent, in order. The announcement of a new monitor (once per
        host, at its first ping) is left out unless `announced`: the tests of the states follow
        a monitor through its life; the announcement has a test module of its own."""
        return [a.event for a in self.notifier.alerts if announced or a.event != "monitor_created"]

    def advance(self, **kwargs: float) -> None:
        self.clock.advance(timedelta(**kwargs))


_shared: tuple[ReaperASGI, RunningServer] | None = None
_shared_exit = ExitStack()


def _shared_server(asgi: ReaperASGI) -> RunningServer:
    """One uvicorn for the whole test run: starting and stopping one per test costs ~0.3 s
    each, which is most of the suite's time. Each test swaps in its own `App` (settings,
    store, notifier, clock, rate limits), so nothing but the listening socket is shared."""
    global _shared
    if _shared is None:
        running = _shared_exit.enter_context(serving(asgi))
        atexit.register(_shared_exit.close)
        _shared = (asgi, running)
    shared_asgi, running = _shared
    shared_asgi.app = asgi.app
    return running


@contextmanager
def served(
    settings: Settings,
    *,
    notifier: Notifier | None = None,
    limits: Limits | None = WIDE,
    channels: Sequence[str] = ("recording",),
    clock: FakeClock | None = None,
    jobs: Sequence[Job] = (),
    dedicated: bool = False,
) -> Iterator[Served]:
    """The app on loopback. `dedicated` (or jobs) runs its own uvicorn, with a lifespan that
    starts the jobs and, at the end, closes the store as `reaper serve` does on SIGTERM."""
    store = SQLiteStore(settings.state.location)
    recorder = notifier if notifier is not None else RecordingNotifier()
    fake = clock or FakeClock()
    asgi = build_asgi(settings, store, recorder, fake, channels=channels, limits=limits, jobs=jobs)
    with ExitStack() as stack:
        if dedicated or jobs:
            running = stack.enter_context(serving(asgi))
        else:
            running = _shared_server(asgi)
            stack.callback(store.close)
        client = stack.enter_context(httpx.Client(base_url=running.url, timeout=10))
        yield Served(settings, store, recorder, fake, running, client)  # type: ignore[arg-type]


def raw_request(port: int, head: str, body: bytes = b"") -> tuple[int, bytes]:
    """Send bytes exactly as given (no client-side path normalisation); the status and body."""
    import socket

    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head.encode("latin-1") + body)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    status_line, _, rest = data.partition(b"\r\n")
    _, _, payload = rest.partition(b"\r\n\r\n")
    return int(status_line.split()[1]), payload


@contextmanager
def silent_server() -> Iterator[str]:
    """The base URL of a loopback server that takes connections and never answers: an alert
    channel that hangs (the kernel completes the handshake; nobody ever reads or replies)."""
    import socket

    hole = socket.socket()
    try:
        hole.bind(("127.0.0.1", 0))
        hole.listen(16)
        yield f"http://127.0.0.1:{hole.getsockname()[1]}"
    finally:
        hole.close()


def watch_with_providers(app: Served, **kwargs: Any) -> WatchReport:
    """One watch pass with real provider clients (made and closed inside the pass's loop)."""
    from reaper.app.wiring import make_clients
    from reaper.providers.base import HttpOptions

    async def run() -> WatchReport:
        options = HttpOptions(timeout=5, max_attempts=1, backoff_base=0.001, backoff_cap=0.01)
        clients = make_clients(app.settings, options)
        try:
            return await watch_pass(
                app.settings, app.store, app.notifier, app.clock, clients, **kwargs
            )
        finally:
            for client in clients:
                await client.aclose()

    return asyncio.run(run())
