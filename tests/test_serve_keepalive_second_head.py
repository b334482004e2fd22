"""`reaper serve`'s connection guard on a keep-alive connection: after one answered request, the
next request head has the head timeout too. uvicorn's keep-alive timer stops at the first byte
of the next head, so without this one complete request followed by a trickled second head held
a socket for ever — and, counted as "being answered", was never the one closed past the cap.
The guard's timeout and cap are shortened here (1 s, 20 connections)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from emulators.channels import RecordingNotifier
from emulators.clock import FakeClock
from reaper.interfaces.connections import ConnectionGuard
from reaper.interfaces.serve import RunningServer, build_asgi, serving
from reaper.store.sqlite import SQLiteStore
from tests.heartbeat_support import WIDE, make_settings
from tests.serve_support import closed_by_server, wait_until

HEAD_TIMEOUT = 1.0
CAP = 20
ONE_REQUEST = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
HALF_A_HEAD = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "


@pytest.fixture
def guarded(tmp_path: Path) -> Iterator[tuple[RunningServer, ConnectionGuard]]:
    settings = make_settings(tmp_path)
    store = SQLiteStore(settings.state.location)
    asgi = build_asgi(settings, store, RecordingNotifier(), FakeClock(), limits=WIDE)
    guard = ConnectionGuard(head_timeout=HEAD_TIMEOUT, max_open=CAP)
    with serving(asgi, guard=guard) as running:
        yield running, guard


def _answered_then_half_a_head(port: int) -> socket.socket:
    """One whole request answered on a keep-alive connection, then half of the next head."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    sock.sendall(ONE_REQUEST)
    answer = b""
    while b"\r\n\r\n" not in answer:
        chunk = sock.recv(65536)
        assert chunk, f"closed before its answer: {answer!r}"
        answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    length = int(
        next(
            line for line in head.lower().split(b"\r\n") if line.startswith(b"content-length:")
        ).split(b":")[1]
    )
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, "closed before its answer's body"
        body += chunk
    assert head.startswith(b"HTTP/1.1 200"), head
    assert b"connection: close" not in head.lower(), "not a keep-alive connection"
    sock.sendall(HALF_A_HEAD)
    return sock


def test_a_trickled_second_head_is_closed_after_the_head_timeout(
    guarded: tuple[RunningServer, ConnectionGuard],
) -> None:
    running, guard = guarded
    sock = _answered_then_half_a_head(running.port)
    try:
        for _ in range(3):  # a byte now and then: uvicorn's keep-alive timer stays off
            sock.sendall(b"x")
            if closed_by_server(sock):
                break
        assert wait_until(lambda: closed_by_server(sock), HEAD_TIMEOUT + 10)
        assert guard.closed_slow >= 1
    finally:
        sock.close()


def test_past_the_cap_a_trickled_second_head_makes_room_for_a_ping(
    guarded: tuple[RunningServer, ConnectionGuard],
) -> None:
    running, guard = guarded
    sockets = [_answered_then_half_a_head(running.port) for _ in range(CAP)]
    try:
        assert wait_until(lambda: len(guard) == CAP, 5), len(guard)
        with httpx.Client(base_url=running.url, timeout=5) as client:
            assert client.get("/healthz").status_code == 200
        assert guard.closed_over_cap >= 1, "a newcomer was refused, not a trickling one closed"
    finally:
        for sock in sockets:
            sock.close()
