"""Fake servers for the services reaper talks to, over real HTTP on 127.0.0.1.

`FakeServer` is the common part: a threaded stdlib HTTP server on an ephemeral port, a record of
every request, and a queue of injected failures (an HTTP status N times, or a hang that holds
the connection without answering until the client gives up).
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


@dataclass(frozen=True)
class Reply:
    """An answer: a JSON body, a text body (a `str`: Slack answers `ok` or an error word), or
    none at all (None: Discord's 204)."""

    status: int
    body: dict[str, Any] | str | None
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Hang:
    """Hold the request without answering (until the fake is closed, or `seconds`)."""

    seconds: float = 10.0


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    raw: bytes
    json: Any
    at: float


class FakeServer:
    """Subclasses implement `answer(path, headers, payload) -> Reply`."""

    def __init__(self) -> None:
        self.requests: list[Received] = []
        self._planned: deque[Reply | Hang] = deque()
        self._lock = threading.Lock()
        self._release = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    # Failure injection: applied to the next requests, in the order planned.
    def plan(self, outcome: Reply | Hang, times: int = 1) -> None:
        with self._lock:
            self._planned.extend([outcome] * times)

    def hang(self, times: int = 1) -> None:
        self.plan(Hang(), times)

    def _next_planned(self) -> Reply | Hang | None:
        with self._lock:
            return self._planned.popleft() if self._planned else None

    def answer(self, path: str, headers: dict[str, str], payload: Any) -> Reply:
        raise NotImplementedError

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep test output clean

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    payload = json.loads(raw) if raw else None
                except ValueError:
                    payload = None
                headers = {k.lower(): v for k, v in self.headers.items()}
                with fake._lock:
                    fake.requests.append(
                        Received(self.path, headers, raw, payload, time.monotonic())
                    )
                planned = fake._next_planned()
                if isinstance(planned, Hang):
                    fake._release.wait(planned.seconds)
                    self.close_connection = True
                    return
                reply = planned or fake.answer(self.path, headers, payload)
                self._send(reply)

            def do_GET(self) -> None:
                self._send(Reply(404, {"ok": False, "error_code": 404, "description": "Not Found"}))

            def _send(self, reply: Reply) -> None:
                kind, data = "application/json", json.dumps(reply.body).encode()
                if isinstance(reply.body, str):
                    kind, data = "text/plain; charset=utf-8", reply.body.encode()
                try:
                    self.send_response(reply.status)
                    if reply.body is None:
                        data = b""
                    else:
                        self.send_header("Content-Type", kind)
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in reply.headers:
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the client gave up (timeout): nothing to answer

        return Handler


class FakeSleep:
    """Stands in for `asyncio.sleep` in `ChannelOptions`: records the waits, waits for none."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)
