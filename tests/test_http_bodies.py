"""Ping bodies: kept whole up to 10 KB, cut to 10 KB beyond, refused (413) over 1 MB — and the
server stops reading a huge body instead of buffering it."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reaper.interfaces.api import MAX_BODY, MESSAGE_LIMIT
from reaper.interfaces.serve import read_body
from tests.heartbeat_support import KEY, Served, make_settings, served


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Served]:
    with served(make_settings(tmp_path)) as running:
        yield running


def _message(app: Served, host: str) -> str:
    monitor = app.store.get_monitor(host)
    assert monitor is not None
    return monitor.last_message


def test_a_post_body_is_kept_as_the_last_message(app: Served) -> None:
    assert app.ping("h", method="POST", body="loss=0.12 ✓ 完成".encode()).status_code == 200
    assert _message(app, "h") == "loss=0.12 ✓ 完成"


def test_a_body_of_exactly_10_kb_is_kept_whole(app: Served) -> None:
    body = b"x" * MESSAGE_LIMIT
    assert app.ping("h", method="POST", body=body).status_code == 200
    assert _message(app, "h") == body.decode()


def test_a_longer_body_is_cut_to_10_kb_and_the_ping_counts(app: Served) -> None:
    body = b"a" * (MESSAGE_LIMIT - 1) + "é".encode() + b"tail" * 1000
    response = app.ping("h", "fail", method="POST", body=body)
    assert response.status_code == 200
    monitor = app.store.get_monitor("h")
    assert monitor is not None and monitor.status == "down"
    # The two-byte é straddles the limit: it is dropped, not turned into a broken character.
    assert monitor.last_message == "a" * (MESSAGE_LIMIT - 1)


def test_a_get_ping_keeps_the_previous_message(app: Served) -> None:
    app.ping("h", method="POST", body=b"epoch 3 done")
    app.ping("h")
    assert _message(app, "h") == "epoch 3 done"


def test_invalid_utf8_is_kept_with_replacement_characters(app: Served) -> None:
    app.ping("h", method="POST", body=b"ok \xff\xfe end")
    assert _message(app, "h") == "ok \ufffd\ufffd end"


def test_a_body_of_exactly_1_mb_is_accepted(app: Served) -> None:
    assert app.ping("h", method="POST", body=b"z" * MAX_BODY).status_code == 200


def test_over_1_mb_is_413_and_the_ping_does_not_count(app: Served) -> None:
    response = app.ping("h", method="POST", body=b"z" * (MAX_BODY + 1))
    assert response.status_code == 413
    assert response.text.count("\n") == 1
    assert app.store.get_monitor("h") is None
    assert app.ping("h").status_code == 200  # the server is fine afterwards


def test_a_huge_announced_body_is_refused_without_reading_it_all(app: Served) -> None:
    """Content-Length 1 GB, only ~1.1 MB sent: the 413 arrives anyway."""
    head = (
        f"POST /ping/{KEY}/h HTTP/1.1\r\nHost: t\r\nContent-Length: {1024**3}\r\n"
        "Content-Type: application/octet-stream\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", app.running.port), timeout=10) as sock:
        sock.sendall(head.encode())
        sock.sendall(b"q" * (MAX_BODY + 100_000))
        answer = sock.recv(4096)
    assert answer.startswith(b"HTTP/1.1 413")
    assert app.store.get_monitor("h") is None


def test_read_body_stops_one_byte_past_the_limit() -> None:
    chunk = b"c" * 65536
    calls = 0

    async def receive() -> dict[str, Any]:
        nonlocal calls
        calls += 1
        return {"type": "http.request", "body": chunk, "more_body": True}  # endless

    body = asyncio.run(read_body(receive, limit=MAX_BODY))
    assert len(body) == MAX_BODY + 1
    assert calls == MAX_BODY // len(chunk) + 1


def test_read_body_returns_what_came_before_a_disconnect() -> None:
    messages = iter(
        [
            {"type": "http.request", "body": b"part", "more_body": True},
            {"type": "http.disconnect"},
        ]
    )

    async def receive() -> dict[str, Any]:
        return next(messages)

    assert asyncio.run(read_body(receive)) == b"part"
