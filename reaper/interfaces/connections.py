"""How `reaper serve` takes connections: its socket, uvicorn, and the connection guard in front
of uvicorn's HTTP protocol — no half-open siege.

uvicorn waits for a request head as long as a client cares to send it, and takes as many
connections as arrive: a few hundred sockets that send half a request head and then nothing
(slowloris) hold as many file descriptors for ever, until `/healthz` and the instances' pings
find no room. The guard wraps uvicorn's own HTTP protocol class (httptools or h11, whichever
uvicorn picked) and, per process:

- closes a connection whose request head is not complete within HEAD_TIMEOUT seconds of its
  opening, or of the previous response on a keep-alive connection (uvicorn's own keep-alive
  timeout closes a silent one sooner, but stops at the first byte of the next head: one
  answered request then a trickled second head would otherwise hold the socket for ever);
- caps open connections at MAX_OPEN: a connection past the cap closes the oldest one still
  waiting for its head — never one being answered — so that a flood makes room for the next
  real ping instead of refusing it; only when every open connection is being answered is the
  newcomer closed.

What it cannot do: a flood from many addresses that completes its heads is a request flood
(the rate limits' job), and bytes that never reach the process (a SYN flood) are the kernel's
and the network's. A public deployment still belongs behind a reverse proxy with its own
limits (nginx's `client_header_timeout`, `limit_conn`); on AWS, API Gateway buffers whole
requests before the function runs.
"""

from __future__ import annotations

import asyncio
import signal
import socket
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType
from typing import TYPE_CHECKING, Any

import uvicorn
from uvicorn.protocols.http.auto import AutoHTTPProtocol

from reaper import log

if TYPE_CHECKING:
    from reaper.interfaces.serve import ReaperASGI

# uvicorn drains the requests under way this long at a stop (`reaper serve`'s STOP_GRACE runs
# beside it): the process ends within 10 s of SIGTERM.
GRACEFUL_SECONDS = 7

# A request head (request line and headers) must be complete this long after the connection
# opened.
HEAD_TIMEOUT = 10.0
# Open connections at most, per process: well under a default `ulimit -n` of 1024, with room
# for the store, the provider clients and the channels.
MAX_OPEN = 512


class ConnectionGuard:
    """The open connections of one server, oldest first, each with its head timer."""

    def __init__(self, head_timeout: float = HEAD_TIMEOUT, max_open: int = MAX_OPEN) -> None:
        self.head_timeout = head_timeout
        self.max_open = max_open
        self._open: OrderedDict[int, tuple[Any, asyncio.TimerHandle]] = OrderedDict()
        # Connections closed for a slow head, and to make room past the cap (for the tests
        # and the log).
        self.closed_slow = 0
        self.closed_over_cap = 0

    def __len__(self) -> int:
        return len(self._open)

    def opened(self, protocol: Any) -> None:
        self._open[id(protocol)] = (protocol, self._timer(protocol))
        if len(self._open) > self.max_open:
            self._make_room(protocol)

    def answered(self, protocol: Any) -> None:
        """A response went out: the next request head has HEAD_TIMEOUT from now."""
        found = self._open.get(id(protocol))
        if found is not None:
            found[1].cancel()
            self._open[id(protocol)] = (protocol, self._timer(protocol))

    def _timer(self, protocol: Any) -> asyncio.TimerHandle:
        return asyncio.get_running_loop().call_later(self.head_timeout, self._head_late, protocol)

    def closed(self, protocol: Any) -> None:
        found = self._open.pop(id(protocol), None)
        if found is not None:
            found[1].cancel()

    def _head_late(self, protocol: Any) -> None:
        if _waiting_for_head(protocol):
            self.closed_slow += 1
            if self.closed_slow in (1, 10, 100) or self.closed_slow % 1000 == 0:
                log.event("connections_closed", why="request head too slow", count=self.closed_slow)
            _close(protocol)

    def _make_room(self, newcomer: Any) -> None:
        victim = next(
            (p for p, _ in self._open.values() if p is not newcomer and _waiting_for_head(p)),
            newcomer,
        )
        self.closed_over_cap += 1
        if self.closed_over_cap in (1, 10, 100) or self.closed_over_cap % 1000 == 0:
            log.event("connections_closed", why="connection cap", count=self.closed_over_cap)
        self.closed(victim)
        _close(victim)


def _waiting_for_head(protocol: Any) -> bool:
    """No request cycle under way: none yet (uvicorn starts one when a head is complete, in both
    protocols), or the last one answered (a keep-alive connection between requests)."""
    cycle = getattr(protocol, "cycle", None)
    return cycle is None or bool(getattr(cycle, "response_complete", False))


def _close(protocol: Any) -> None:
    transport = getattr(protocol, "transport", None)
    if transport is not None and not transport.is_closing():
        transport.close()


def guarded_protocol(base: Any, guard: ConnectionGuard) -> Any:
    """uvicorn's HTTP protocol class `base`, each of its connections known to `guard`."""

    class Guarded(base):  # type: ignore[misc]
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)
            guard.opened(self)

        def connection_lost(self, exc: Exception | None) -> None:
            guard.closed(self)
            super().connection_lost(exc)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            guard.answered(self)

    Guarded.__name__ = f"Guarded{base.__name__}"
    return Guarded


# --- running uvicorn behind the guard ------------------------------------------------------


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


def uvicorn_config(asgi: ReaperASGI, guard: ConnectionGuard | None = None) -> uvicorn.Config:
    """uvicorn as `reaper serve` runs it: one worker, no access log, its HTTP protocol (httptools
    when installed, else h11) behind the connection guard (`guard`: the tests' shorter one)."""
    return uvicorn.Config(
        asgi,
        workers=1,
        access_log=False,  # it would write the ping key to disk
        server_header=False,
        date_header=False,  # `_send` writes it: one Date, the answer's own when it has one
        log_level="warning",
        # No logging config of its own: its lines go through reaper's handler and format
        # (a timestamp and a level on each; JSON with LOG_FORMAT=json).
        log_config=None,
        lifespan="on",
        http=guarded_protocol(AutoHTTPProtocol, ConnectionGuard() if guard is None else guard),
        # No WebSocket protocol: the API has none, and with a WebSocket library installed
        # (uvicorn[standard] brings one) an Upgrade request would reach the app as a scope
        # it does not answer. Without it, the request is answered as plain HTTP.
        ws="none",
        loop="auto",  # uvloop when installed, else asyncio
        timeout_graceful_shutdown=GRACEFUL_SECONDS,
    )


class UvicornServer(uvicorn.Server):
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
    server: UvicornServer = field(repr=False)
    thread: threading.Thread = field(repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        """What SIGTERM does: stop accepting, finish requests and passes, close the store."""
        self.server.should_exit = True
        self.thread.join(timeout=30)


@contextmanager
def serving(
    asgi: ReaperASGI,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    guard: ConnectionGuard | None = None,
    sock: socket.socket | None = None,
) -> Iterator[RunningServer]:
    """Run the app under uvicorn in a thread, on an ephemeral port by default (or on `sock`,
    bound already by a caller that had to know its port first); for tests, the benchmark and
    the demo. Leaving the block shuts it down gracefully."""
    sock = sock if sock is not None else bind_socket(host, port)
    server = UvicornServer(uvicorn_config(asgi, guard), asgi)
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
