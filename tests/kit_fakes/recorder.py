"""A recording HTTP server on 127.0.0.1:0 in front of everything the kit talks to: the
heartbeat, the alert webhook, a Jupyter server, a push target, and — forwarded to the
project's emulators — RunPod and Vast.

One server for all of them keeps a single ordered log of every request, which is what the
kit's tests assert on: the exit path's order is the order of the requests. The provider
answers themselves come from `emulators` (`forward`).
"""

from __future__ import annotations

import contextlib
import http.client
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: str

    @property
    def bearer(self) -> str | None:
        auth = self.headers.get("authorization", "")
        return auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else None


@dataclass(frozen=True)
class Response:
    status: int = 200
    body: str = "OK"
    content_type: str = "text/plain"
    # Further headers. A "Date" replaces the server's own (an empty one: no Date at all).
    headers: tuple[tuple[str, str], ...] = ()


Responder = Callable[[Request, re.Match[str]], Response]
_FORWARDED = ("authorization", "content-type")


@dataclass
class Recorder:
    """The log of requests and the rules that answer them (first match wins)."""

    requests: list[Request] = field(default_factory=list)
    rules: list[tuple[str, re.Pattern[str], Responder]] = field(default_factory=list)
    port: int = 0
    _changed: threading.Condition = field(default_factory=threading.Condition)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def on(self, method: str, path_regex: str, responder: Responder) -> None:
        """Answer `method path` (full match) with `responder`; later rules take precedence."""
        self.rules.insert(0, (method, re.compile(path_regex), responder))

    def forward(self, prefix: str, target: str) -> None:
        """Requests under `prefix` are logged here and answered by `target` (an emulator's
        base URL), with the prefix taken off the path."""
        where = urlsplit(target)

        def relay(request: Request, _match: re.Match[str]) -> Response:
            connection = http.client.HTTPConnection(where.hostname or "", where.port, timeout=10)
            try:
                headers = {k: v for k, v in request.headers.items() if k in _FORWARDED}
                body = request.body.encode() if request.body else None
                path = request.path.removeprefix(prefix)
                connection.request(request.method, path, body=body, headers=headers)
                answer = connection.getresponse()
                content_type = answer.getheader("Content-Type", "application/json")
                return Response(answer.status, answer.read().decode(), content_type)
            finally:
                connection.close()

        for method in ("GET", "POST", "DELETE", "PUT"):
            self.on(method, re.escape(prefix) + r"/.*", relay)

    def answer(self, request: Request) -> Response:
        with self._changed:
            self.requests.append(request)
            self._changed.notify_all()
        for method, pattern, responder in self.rules:
            match = pattern.fullmatch(request.path)
            if method == request.method and match:
                return responder(request, match)
        return Response()

    def wait_for(self, predicate: Callable[[list[Request]], bool], timeout: float = 10) -> bool:
        """Block until the log satisfies `predicate` (an event, not a clock: returns early)."""
        with self._changed:
            return self._changed.wait_for(lambda: predicate(self.requests), timeout)

    def matching(self, method: str, path_regex: str) -> list[Request]:
        pattern = re.compile(path_regex)
        with self._changed:
            return [r for r in self.requests if r.method == method and pattern.fullmatch(r.path)]


def _handler(recorder: Recorder) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out in two writes

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length).decode("utf-8", "replace") if length else ""
            request = Request(
                method=self.command,
                path=self.path,
                headers={k.lower(): v for k, v in self.headers.items()},
                body=body,
            )
            response = recorder.answer(request)
            payload = b"" if response.status in (204, 304) else response.body.encode()
            if any(name.lower() == "date" for name, _ in response.headers):
                self.send_response_only(response.status)
            else:
                self.send_response(response.status)
            for name, value in response.headers:
                if value:
                    self.send_header(name, value)
            self.send_header("Content-Type", response.content_type)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if self.command != "HEAD":
                # a client that gave up (the kit's timeout) has closed the connection
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(payload)

        do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _serve

        def log_message(self, format: str, *args: object) -> None:
            return

    return Handler


@contextmanager
def recording_server() -> Iterator[Recorder]:
    recorder = Recorder()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(recorder))
    server.daemon_threads = True
    recorder.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield recorder
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
