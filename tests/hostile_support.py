"""A small hostile HTTP server on loopback: what a broken or malicious endpoint does to a client
that trusts it — answer nothing, trickle a byte at a time, send 500 MB, stream without end, or
answer with chosen headers. It speaks raw HTTP/1.1 over a socket (no framework that would
buffer or frame for it) and counts what it sent, so a test can see that a client stopped
reading rather than guess from its memory.

    with HostileServer("trickle", interval=0.05) as server:
        ... a client pointed at server.url ...
        server.requested.wait(5)

Modes: `hang` (reads the request, never answers), `trickle` (headers at once, then one body
byte every `interval` seconds), `huge` (a declared 500 MB body sent as fast as the socket
takes it), `endless` (a chunked body that never ends), `undeclared` (a large body without a
length, ended by closing), `answer` (`status`, `headers` and `body` as given).
"""

from __future__ import annotations

import socket
import socketserver
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Literal

Mode = Literal["hang", "trickle", "huge", "endless", "undeclared", "answer"]
HUGE = 500 * 1024 * 1024
_CHUNK = b"0" * 65536
_HEAD_LIMIT = 64 * 1024


class HostileServer:
    def __init__(
        self,
        mode: Mode,
        *,
        interval: float = 0.05,
        status: int = 200,
        headers: dict[str, str] | None = None,
        body: bytes = b"{}",
    ) -> None:
        self.mode = mode
        self.interval = interval
        self.status = status
        self.headers = dict(headers or {})
        self.body = body
        self.requested = threading.Event()
        # Set when a connection the server was writing to (or holding) was closed by the client.
        self.client_gone = threading.Event()
        self.requests: list[tuple[float, str]] = []
        self.bytes_sent = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        outer = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                outer._serve(self.request)

        socketserver.ThreadingTCPServer.allow_reuse_address = True
        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> HostileServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()

    # --- one connection -------------------------------------------------------------------

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(0.2)
        try:
            while not self._stop.is_set():
                line = self._read_request(conn)
                if line is None:
                    return
                with self._lock:
                    self.requests.append((time.monotonic(), line))
                self.requested.set()
                if not self._answer(conn):
                    return
        except OSError:
            self.client_gone.set()

    def _read_request(self, conn: socket.socket) -> str | None:
        """The request line, once the head (and any declared body) has arrived."""
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = self._recv(conn)
            if not chunk or len(data) > _HEAD_LIMIT:
                return None
            data += chunk
        head, _, rest = data.partition(b"\r\n\r\n")
        length = 0
        for header in head.split(b"\r\n")[1:]:
            name, _, value = header.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip() or 0)
        while len(rest) < length:
            chunk = self._recv(conn)
            if not chunk:
                return None
            rest += chunk
        return head.split(b"\r\n", 1)[0].decode("latin-1")

    def _recv(self, conn: socket.socket) -> bytes:
        while not self._stop.is_set():
            try:
                return conn.recv(65536)
            except TimeoutError:
                continue
        return b""

    def _send(self, conn: socket.socket, data: bytes) -> None:
        conn.sendall(data)
        with self._lock:
            self.bytes_sent += len(data)

    def _head(self, conn: socket.socket, status: int, headers: dict[str, str]) -> None:
        lines = [f"HTTP/1.1 {status} Whatever"] + [f"{k}: {v}" for k, v in headers.items()]
        self._send(conn, ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))

    def _answer(self, conn: socket.socket) -> bool:
        """Answer one request; True when the connection may carry another."""
        json_type = {"Content-Type": "application/json"}
        if self.mode == "answer":
            length = {"Content-Length": str(len(self.body))}
            self._head(conn, self.status, {**json_type, **length, **self.headers})
            self._send(conn, self.body)
            return True
        if self.mode == "hang":
            while not self._stop.is_set():
                if self._closed_by_client(conn):
                    self.client_gone.set()
                    return False
            return False
        conn.settimeout(5)
        if self.mode == "trickle":
            self._head(conn, 200, {**json_type, "Content-Length": "1000"})
            while not self._stop.wait(self.interval):
                self._send(conn, b" ")
        elif self.mode == "huge":
            self._head(conn, 200, {**json_type, "Content-Length": str(HUGE)})
            self._stream(conn, lambda chunk: chunk, HUGE)
        elif self.mode == "endless":
            self._head(conn, 200, {**json_type, "Transfer-Encoding": "chunked"})
            self._stream(conn, lambda chunk: b"%x\r\n%s\r\n" % (len(chunk), chunk), None)
        elif self.mode == "undeclared":
            self._head(conn, 200, {**json_type, "Connection": "close"})
            self._stream(conn, lambda chunk: chunk, HUGE)
        return False

    def _stream(
        self, conn: socket.socket, frame: Callable[[bytes], bytes], total: int | None
    ) -> None:
        sent = 0
        while not self._stop.is_set() and (total is None or sent < total):
            self._send(conn, frame(_CHUNK))
            sent += len(_CHUNK)

    def _closed_by_client(self, conn: socket.socket) -> bool:
        """Waits up to the socket's timeout for the client to close (or send more)."""
        try:
            return conn.recv(1, socket.MSG_PEEK) == b""
        except TimeoutError:
            return False
