"""`reaper serve` under a half-open flood (slowloris), bounded in count and time, on loopback:
a connection whose request head is not complete within the head timeout is closed, open
connections are capped by closing the oldest one still waiting for its head, and `/healthz`
and real pings keep answering throughout. The guard's timeout and cap are shortened here
(1 s, 100 connections); `reaper serve` runs 10 s and 512."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from emulators.channels import RecordingNotifier
from emulators.clock import FakeClock
from reaper.interfaces.connections import ConnectionGuard
from reaper.interfaces.serve import RunningServer, build_asgi, serving
from reaper.store.sqlite import SQLiteStore
from tests.heartbeat_support import KEY, WIDE, make_settings
from tests.serve_support import closed_by_server, wait_until

FLOOD = 300
CAP = 100
HEAD_TIMEOUT = 1.0
HALF_A_HEAD = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "


@pytest.fixture
def guarded(tmp_path: Path) -> Iterator[tuple[RunningServer, ConnectionGuard]]:
    settings = make_settings(tmp_path)
    store = SQLiteStore(settings.state.location)
    asgi = build_asgi(settings, store, RecordingNotifier(), FakeClock(), limits=WIDE)
    guard = ConnectionGuard(head_timeout=HEAD_TIMEOUT, max_open=CAP)
    with serving(asgi, guard=guard) as running:
        yield running, guard


def _flood(port: int) -> list[socket.socket]:
    sockets = []
    for _ in range(FLOOD):
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        sock.sendall(HALF_A_HEAD)
        sockets.append(sock)
    return sockets


def test_a_half_open_flood_never_stops_healthz_or_pings(
    guarded: tuple[RunningServer, ConnectionGuard],
) -> None:
    running, guard = guarded
    sockets = _flood(running.port)
    try:
        # every one taken by the server: the cap held, the oldest half-open ones made room
        assert wait_until(lambda: guard.closed_over_cap >= FLOOD - CAP, 10), guard.closed_over_cap
        assert len(guard) <= CAP
        with httpx.Client(base_url=running.url, timeout=5) as client:
            started = time.monotonic()
            assert client.get("/healthz").status_code == 200
            assert client.post(f"/ping/{KEY}/runpod-real", content=b"alive").text == "OK\n"
            assert time.monotonic() - started < 5
        # and the head timeout closes the rest
        assert wait_until(lambda: all(closed_by_server(s) for s in sockets), HEAD_TIMEOUT + 10)
        assert guard.closed_slow >= 1
        assert wait_until(lambda: len(guard) == 0, 5)
    finally:
        for sock in sockets:
            sock.close()


def test_a_slow_but_complete_request_is_answered(
    guarded: tuple[RunningServer, ConnectionGuard],
) -> None:
    running, _ = guarded
    with socket.create_connection(("127.0.0.1", running.port), timeout=5) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\n")
        time.sleep(0.2)  # well within the head timeout: a slow client, not a siege
        sock.sendall(b"Host: 127.0.0.1\r\nConnection: close\r\n\r\n")
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 200")
