"""`reaper serve`: the HTTP API and the schedules in one process, state in SQLite.

uvicorn serves an ASGI adapter over `reaper.interfaces.http.handle` (the same core the Lambda
adapter calls). Known pitfalls this module exists to avoid:
- uvicorn's access log writes every request line — the ping key is in the path — so it is off,
  and each request is logged here as one line with the key replaced by `***`;
- uvicorn 0.54 with several workers leaves TCP_NODELAY unset (≈44 ms per keep-alive request):
  one worker, on a socket bound here with TCP_NODELAY set.
The lifespan runs the watch and reap schedules, the store's checkpoints (a thread copies
SQLite's WAL into the file, rather than the commit of whichever request crosses its size) and
the chat channel's long poll for button presses (when a bot is configured without a
webhook secret). SIGTERM/SIGINT (handled by uvicorn) stop the process within 10 s, even
mid-pass: the schedules stop at the signal itself, a running pass gets STOP_GRACE seconds to
finish and is then cancelled (its lease released; a delete it had asked for is left as a
`requested` audit record the next pass settles), while uvicorn drains the requests under way;
then the provider clients and the store are closed. A pass or request that meets a failing store
opens the episode `/healthz` reports (`reaper.store.failure`), closed by the next ping or reap
pass that writes again.
"""

from __future__ import annotations

import asyncio
import signal
import socket
import sqlite3
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, MutableMapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from datetime import time as dtime
from types import FrameType
from typing import Any

import uvicorn

from reaper import log
from reaper.app import wiring
from reaper.channels.base import Notifier, channels_configured
from reaper.clock import Clock, SystemClock
from reaper.core.units import humanize
from reaper.interfaces.api import MAX_BODY, REQUEST_CHANNEL_OPTIONS, App, Limits, Request, Response
from reaper.interfaces.http import handle, redact_path
from reaper.passes.deadline import BACKSTOP_GRACE, pass_seconds
from reaper.passes.digest import digest_once
from reaper.passes.watch import watch_pass
from reaper.providers.base import ProviderClient
from reaper.settings.model import Settings, weak_key
from reaper.settings.parse import ConfigError
from reaper.store.failure import StoreHealth, failure_alert, store_failure
from reaper.store.ports import Store
from reaper.store.sqlite import SQLiteStore, StoreSchemaError

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

# How long a stop waits for a running pass before cancelling it; with uvicorn's drain of the
# requests under way (GRACEFUL_SECONDS, at the same time), the process ends within 10 s of SIGTERM.
STOP_GRACE = 3.0
GRACEFUL_SECONDS = 7


# --- schedules ----------------------------------------------------------------------------


@dataclass
class Job:
    """A pass run every `every`, the first one at start-up; or, with `delay`, after waiting
    `delay()` seconds before each run (the daily digest: until the next REAPER_DIGEST_AT).
    `on_stop`: called when the schedule stops, before it waits for the running pass (a loop
    that runs until told, like a chat channel's long poll, ends there)."""

    name: str
    every: timedelta
    run: Callable[[], Awaitable[object]]
    on_stop: Callable[[], None] | None = None
    delay: Callable[[], float] | None = None


def next_daily(at: dtime, now: datetime) -> datetime:
    """The first moment after `now` whose UTC time of day is `at`: as EventBridge's
    `cron(M H * * ? *)` fires, not at start-up."""
    now = now.astimezone(UTC)
    today = datetime.combine(now.date(), at, tzinfo=UTC)
    return today if today > now else today + timedelta(days=1)


class Scheduler:
    """Runs each job in its own loop until stopped; a stop waits `grace` seconds for the running
    pass, then cancels it.

    A pass that raises is logged and the loop goes on: one bad pass must not end the schedule.
    `on_pass` (tests) is called after every pass with the job's name.
    """

    def __init__(
        self,
        jobs: Sequence[Job],
        on_pass: Callable[[str], None] | None = None,
        *,
        grace: float = STOP_GRACE,
    ) -> None:
        self.jobs = list(jobs)
        self.passes: dict[str, int] = {job.name: 0 for job in jobs}
        self.grace = grace
        self._on_pass = on_pass
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        self._stop = asyncio.Event()
        self._tasks = [asyncio.create_task(self._loop(job), name=job.name) for job in self.jobs]

    async def stop(self) -> None:
        self._stop.set()
        for job in self.jobs:
            if job.on_stop is not None:
                job.on_stop()
        tasks, self._tasks = self._tasks, []
        if not tasks:
            return
        _, running = await asyncio.wait(tasks, timeout=self.grace)
        for task in running:
            log.event("pass_cancelled", job=task.get_name(), grace_s=self.grace)
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _wait(self, seconds: float) -> bool:
        """Sleep `seconds` or until stopped; True when stopped."""
        with suppress(TimeoutError):
            await asyncio.wait_for(self._stop.wait(), max(seconds, 0.0))
        return self._stop.is_set()

    async def _loop(self, job: Job) -> None:
        while not self._stop.is_set():
            if job.delay is not None and await self._wait(job.delay()):
                return
            started = time.perf_counter()
            try:
                await job.run()
            except Exception as exc:
                log.event("schedule_error", job=job.name, error=exc.__class__.__name__)
            self.passes[job.name] += 1
            log.event("pass_done", job=job.name, ms=round((time.perf_counter() - started) * 1000))
            if self._on_pass is not None:
                self._on_pass(job.name)
            if job.delay is None and await self._wait(job.every.total_seconds()):
                return


def watching_store(
    run: Callable[[], Awaitable[object]],
    health: StoreHealth,
    notifier: Notifier,
    *,
    writes: bool = False,
) -> Callable[[], Awaitable[None]]:
    """A job whose store failure opens (or continues) the process's episode — alerted once,
    through the notifier alone — instead of an ERROR line every period; `writes`: the job
    always writes, so its success closes the episode."""

    async def watched() -> None:
        try:
            await run()
        except Exception as exc:
            failure = store_failure(exc)
            if failure is None:
                raise
            if health.failed(failure):
                await notifier.send(failure_alert(failure))
            return
        if writes:
            health.recovered()

    return watched


def serve_jobs(
    settings: Settings,
    store: Store,
    notifier: Notifier,
    clock: Clock,
    clients: Sequence[ProviderClient],
    *,
    health: StoreHealth | None = None,
) -> list[Job]:
    """The watch schedule always; the reap schedule and the daily digest only when a provider
    key is set (the digest reports on the providers' spend and balances). `health`: the store's
    episode, shared with the HTTP API."""
    listening_since = clock.now()
    health = health or StoreHealth()
    runtime = wiring.Runtime(settings, store, notifier=notifier, clock=clock)

    async def watch() -> None:
        await watch_pass(settings, store, notifier, clock, clients, listening_since=listening_since)

    jobs = [Job("watch", settings.watch_every, watching_store(watch, health, notifier))]
    if settings.accounts:

        async def reap() -> None:
            # A backstop beyond the pass's own deadline: a pass never holds the schedule (and
            # its lease) for ever, whatever it waits on.
            limit = pass_seconds(settings.pass_deadline) + BACKSTOP_GRACE
            backstop = asyncio.timeout(limit)
            try:
                async with backstop:
                    await wiring.reap_once(runtime)
            except TimeoutError:
                if not backstop.expired():
                    raise
                log.event("reap", result="error", error=f"the pass was stopped after {limit:g} s")

        async def digest() -> None:
            # digest_once sends at most one digest a day, so a restart does not send another.
            await digest_once(settings, store, notifier, clock, clients=clients)

        def until_digest() -> float:
            now = clock.now()
            return (next_daily(settings.digest_at, now) - now).total_seconds()

        jobs.append(
            Job("reap", settings.reap_every, watching_store(reap, health, notifier, writes=True))
        )
        # At REAPER_DIGEST_AT (08:00 UTC), as on AWS; never at start-up.
        digest_job = watching_store(digest, health, notifier)
        jobs.append(Job("digest", timedelta(days=1), digest_job, delay=until_digest))
    jobs += press_jobs(settings, store, notifier, clock)
    return jobs


def press_jobs(settings: Settings, store: Store, notifier: Notifier, clock: Clock) -> list[Job]:
    """The long poll for button presses of each chat channel configured without a webhook
    secret (`reaper.interfaces.inbound`). It runs until the schedule stops; if it ends early
    (a bug), it starts again 30 s later."""
    from reaper.interfaces.inbound import pollers

    found = pollers(settings, lambda: wiring.act_context(settings, store, notifier, clock))
    return [
        Job(name, timedelta(seconds=30), poller.run, on_stop=poller.interrupt)
        for name, poller in found
    ]


# --- the ASGI adapter ---------------------------------------------------------------------


async def read_body(receive: Receive, limit: int = MAX_BODY) -> bytes:
    """The request body, but never more than `limit` + 1 bytes: past the limit reading stops
    (the answer is 413 anyway) instead of buffering whatever a client sends."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break  # the client went away
        chunk: bytes = message.get("body", b"")
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            return b"".join(chunks)[: limit + 1]
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _request(scope: Scope, body: bytes) -> Request:
    headers: dict[str, str] = {}
    for raw_name, raw_value in scope.get("headers", []):
        name = raw_name.decode("latin-1").lower()
        value = raw_value.decode("latin-1")
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    client = scope.get("client")
    return Request(
        method=scope["method"],
        path=scope["path"],
        headers=headers,
        body=body,
        client=str(client[0]) if client else "unknown",
        query=bytes(scope.get("query_string", b"")).decode("latin-1"),
    )


async def _send(send: Send, response: Response) -> None:
    headers = {"cache-control": "no-store", **response.headers}
    headers.setdefault("content-length", str(len(response.body)))
    await send(
        {
            "type": "http.response.start",
            "status": response.status,
            "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()],
        }
    )
    await send({"type": "http.response.body", "body": response.body})


class ReaperASGI:
    """The ASGI application: requests go to `handle`; the lifespan runs the schedules."""

    def __init__(
        self,
        app: App,
        scheduler: Scheduler | None = None,
        on_close: Sequence[Callable[[], Awaitable[None]]] = (),
    ) -> None:
        self.app = app
        self.scheduler = scheduler
        self._on_close = list(on_close)
        self._closed = False
        self._stopping: asyncio.Task[None] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http":
            await self._http(scope, receive, send)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        request = _request(scope, await read_body(receive))
        response = await handle(request, self.app)
        log.event(
            "http",
            method=request.method[:10],
            route=redact_path(request.path),
            status=response.status,
            ms=round((time.perf_counter() - started) * 1000, 1),
            client=request.client,
        )
        await _send(send, response)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                if isinstance(self.app.store, SQLiteStore):
                    self.app.store.checkpoint_apart()
                if self.scheduler is not None:
                    self.scheduler.start()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.close()
                await send({"type": "lifespan.shutdown.complete"})
                return

    def stop_schedules(self) -> None:
        """Start stopping the schedules now (at the signal), not after uvicorn has drained the
        requests: both then take their time side by side."""
        if self.scheduler is not None and self._stopping is None:
            self._stopping = asyncio.ensure_future(self.scheduler.stop())

    async def close(self) -> None:
        """Stop the schedules (a running pass has the scheduler's grace to finish, then is
        cancelled), then release clients and the store. Only the first call does anything: the
        lifespan shutdown and the server's own `finally` both call it."""
        if self._closed:
            return
        self._closed = True
        self.stop_schedules()
        if self._stopping is not None:
            await self._stopping
        for closer in self._on_close:
            try:
                await closer()
            except Exception as exc:
                log.event("close_error", error=exc.__class__.__name__)
        self.app.store.close()


def build_asgi(
    settings: Settings,
    store: Store,
    notifier: Notifier,
    clock: Clock,
    *,
    channels: Sequence[str] = (),
    limits: Limits | None = None,
    jobs: Sequence[Job] = (),
    on_pass: Callable[[str], None] | None = None,
    on_close: Sequence[Callable[[], Awaitable[None]]] = (),
    health: StoreHealth | None = None,
) -> ReaperASGI:
    """The ASGI app of `reaper serve` from its parts; tests pass a FakeClock, a recording
    notifier and no jobs (or jobs of their own). `health`: the store's episode, shared with
    the jobs."""
    app = App(settings, store, notifier, clock, channels=channels, limits=limits)
    if health is not None:
        app.health = health
    scheduler = Scheduler(jobs, on_pass) if jobs else None
    return ReaperASGI(app, scheduler, on_close)


# --- running uvicorn ----------------------------------------------------------------------


def bind_socket(host: str, port: int) -> socket.socket:
    """Bind here rather than in uvicorn: a port of 0 is then known before serving, and
    TCP_NODELAY is set on the listening socket (accepted sockets inherit it)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host, port))
        sock.listen(2048)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


def uvicorn_config(asgi: ReaperASGI) -> uvicorn.Config:
    return uvicorn.Config(
        asgi,
        workers=1,
        access_log=False,  # it would write the ping key to disk
        server_header=False,
        log_level="warning",
        # No logging config of its own: its lines go through reaper's handler and format
        # (a timestamp and a level on each; JSON with LOG_FORMAT=json).
        log_config=None,
        lifespan="on",
        http="auto",  # httptools when installed, else h11
        # No WebSocket protocol: the API has none, and with a WebSocket library installed
        # (uvicorn[standard] brings one) an Upgrade request would reach the app as a scope
        # it does not answer. Without it, the request is answered as plain HTTP.
        ws="none",
        loop="auto",  # uvloop when installed, else asyncio
        timeout_graceful_shutdown=GRACEFUL_SECONDS,
    )


class _Server(uvicorn.Server):
    """uvicorn.Server that says when it is listening (tests wait on it instead of polling),
    whose SIGTERM/SIGINT end in a clean exit, and that always closes the app.

    uvicorn 0.54 re-raises a caught signal after its graceful shutdown, so the process dies
    of it (SIGTERM: status -15, SIGINT: KeyboardInterrupt) even though everything was closed
    properly; `reaper serve` returns 0 instead, as a finished command does.

    A second SIGINT makes uvicorn skip the lifespan shutdown, and the end of its event loop
    would then cancel a running pass without its grace and leave the store open. `serve`
    therefore closes the app in a `finally`, on the same loop: the pass gets its grace (then is
    cancelled, its lease released), clients and the store are closed. The schedules start
    stopping at the signal itself (`handle_exit`), beside uvicorn's drain of the requests.
    """

    def __init__(self, config: uvicorn.Config, asgi: ReaperASGI) -> None:
        super().__init__(config)
        self.ready = threading.Event()
        self._asgi = asgi
        self._loop: asyncio.AbstractEventLoop | None = None

    async def serve(self, sockets: list[socket.socket] | None = None) -> None:
        self._loop = asyncio.get_running_loop()
        try:
            await super().serve(sockets)
        finally:
            await self._asgi.close()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        self.ready.set()

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """The signal: uvicorn stops serving, and the schedules start stopping at once."""
        super().handle_exit(sig, frame)
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._asgi.stop_schedules)

    @contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield  # signals can only be handled in the main thread (tests run us in another)
            return
        handled = (signal.SIGINT, signal.SIGTERM)
        originals = {sig: signal.signal(sig, self.handle_exit) for sig in handled}
        try:
            yield
        finally:
            for sig, handler in originals.items():
                signal.signal(sig, handler)


@dataclass
class RunningServer:
    port: int
    asgi: ReaperASGI
    server: _Server = field(repr=False)
    thread: threading.Thread = field(repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        """What SIGTERM does: stop accepting, finish requests and passes, close the store."""
        self.server.should_exit = True
        self.thread.join(timeout=30)


@contextmanager
def serving(asgi: ReaperASGI, host: str = "127.0.0.1", port: int = 0) -> Iterator[RunningServer]:
    """Run the app under uvicorn in a thread, on an ephemeral port by default; for tests and
    the benchmark. Leaving the block shuts it down gracefully."""
    sock = bind_socket(host, port)
    server = _Server(uvicorn_config(asgi), asgi)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        if not server.ready.wait(timeout=15):
            raise RuntimeError("the server did not start")
        running = RunningServer(sock.getsockname()[1], asgi, server, thread)
        yield running
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


# --- the command --------------------------------------------------------------------------


def _require_sqlite(settings: Settings) -> None:
    if settings.state.kind != "sqlite":
        raise ConfigError(
            "REAPER_STATE",
            "reaper serve keeps its state in SQLite: expected sqlite:///<path> "
            "(dynamodb:// is for the AWS deployment)",
        )


def _announce(settings: Settings, host: str, port: int, channels: Sequence[str]) -> None:
    reaping = (
        f"every {humanize(settings.reap_every)}"
        if settings.accounts
        else f"off (no {' / '.join(settings.key_variables)} set)"
    )
    log.event(
        "serve",
        listening=f"http://{host}:{port}",
        state=settings.state.location,
        ping="on"
        if settings.ping_key
        else "off (REAPER_PING_KEY unset: /ping and /alert answer 404)",
        status="on" if settings.admin_key else "off (REAPER_ADMIN_KEY unset)",
        watch=f"every {humanize(settings.watch_every)}",
        reaping=reaping,
        channels=",".join(channels) or "none (alerts are only logged)",
        digest=f"daily at {settings.digest_at:%H:%M} UTC" if settings.accounts else None,
        presses=_presses(settings),
    )


def _presses(settings: Settings) -> str:
    from reaper.interfaces.inbound import presses_line

    return presses_line(settings)


def serve_command(settings: Settings, host: str, port: int) -> int:
    """`reaper serve`: blocks until SIGTERM/SIGINT; 0 after a clean shutdown."""
    _require_sqlite(settings)
    if (weak := weak_key(settings)) is not None:
        raise weak
    log.route_uvicorn()
    try:
        sock = bind_socket(host, port)
    except OSError as exc:
        print(f"reaper: cannot listen on {host}:{port}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    try:
        store = wiring.open_state(settings)
    except (OSError, sqlite3.Error, StoreSchemaError) as exc:
        sock.close()
        raise ConfigError("REAPER_STATE", f"cannot open {settings.state.location}: {exc}") from None
    clock = SystemClock()
    # The schedules wait for a slow channel (nobody waits on them); requests do not: the
    # kit's curl gives up after 5 s, and /alert must answer with the result per channel.
    runtime = wiring.Runtime(settings, store, clock=clock)
    notifier: Notifier = runtime.notifier
    request_notifier: Notifier = wiring.make_notifier(settings, options=REQUEST_CHANNEL_OPTIONS)
    channels: list[str] = list(channels_configured(settings))
    clients: list[ProviderClient] = runtime.make_clients() if settings.accounts else []
    health = StoreHealth()

    async def close_clients() -> None:
        for client in clients:
            await client.aclose()

    asgi = build_asgi(
        settings,
        store,
        request_notifier,
        clock,
        channels=channels,
        jobs=serve_jobs(settings, store, notifier, clock, clients, health=health),
        on_close=[close_clients],
        health=health,
    )
    _announce(settings, host, sock.getsockname()[1], channels)
    try:
        _Server(uvicorn_config(asgi), asgi).run(sockets=[sock])
    finally:
        sock.close()
    log.event("serve_stopped")
    return 0


__all__ = [
    "Job",
    "ReaperASGI",
    "RunningServer",
    "Scheduler",
    "build_asgi",
    "next_daily",
    "read_body",
    "serve_command",
    "serve_jobs",
    "serving",
]
