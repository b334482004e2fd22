"""An `Upgrade: websocket` request is answered as plain HTTP: the API speaks no WebSocket, and
uvicorn is told so, so that a WebSocket library installed alongside (uvicorn[standard] brings
one) cannot hand the app a connection it never answers."""

from __future__ import annotations

from pathlib import Path

from reaper.interfaces.serve import uvicorn_config
from tests.heartbeat_support import KEY, make_settings, raw_request, served

UPGRADE = (
    f"GET /ping/{KEY}/h HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
)


def test_uvicorn_is_configured_without_websockets(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        assert uvicorn_config(app.running.asgi).ws == "none"


def test_a_websocket_upgrade_is_answered_as_a_ping(tmp_path: Path) -> None:
    with served(make_settings(tmp_path), dedicated=True) as app:
        status, body = raw_request(app.running.port, UPGRADE)
        assert (status, body) == (200, b"OK\n")
        assert app.store.get_monitor("h") is not None
