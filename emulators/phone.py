"""An emulated phone: an ntfy server on loopback that keeps what it is sent and shows it as a
page, with each notification's action buttons as links — what `reaper demo --serve` points
`NTFY_URL` at, so that the demo's alerts go through reaper's real ntfy channel and their
buttons (links to `/act/<token>` on the demo's own server) can be pressed from a browser.

Routes: `POST /` takes ntfy's JSON publishing (`{"topic", "title", "message", "priority",
"tags", "actions", ...}`) and answers the message as ntfy stores it (`id`, `time`,
`event: "message"`); `GET /` is the phone's screen, newest first; `GET /json` the messages as
JSON. A button on the screen opens the action's page on reaper's server, which says what it
will do and asks for the press that does it (a page on another origin may not post there).
"""

from __future__ import annotations

import html
import itertools
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

# What one publish may carry; ntfy itself turns a larger message into an attachment.
BODY_LIMIT = 64 * 1024
TOPIC = "reaper-demo-phone"


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the demo prints what matters."""

    def do_GET(self) -> None:
        phone = self.server.phone
        if self.path == "/json":
            self._answer(200, "application/json", json.dumps(phone.messages).encode())
        elif self.path in ("/", f"/{phone.topic}"):
            self._answer(200, "text/html; charset=utf-8", phone.screen().encode())
        else:
            self._answer(404, "application/json", b'{"code": 40401, "error": "page not found"}')

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if self.path != "/" or not 0 < length <= BODY_LIMIT:
            self._answer(400, "application/json", b'{"code": 40017, "error": "invalid message"}')
            return
        try:
            payload = json.loads(self.rfile.read(length))
        except (ValueError, UnicodeDecodeError):
            payload = None
        if not isinstance(payload, dict) or payload.get("topic") != self.server.phone.topic:
            self._answer(400, "application/json", b'{"code": 40009, "error": "invalid topic"}')
            return
        stored = self.server.phone.receive(payload)
        self._answer(200, "application/json", json.dumps(stored).encode())

    def _answer(self, status: int, kind: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, phone: PhoneEmulator, port: int) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.phone = phone


class PhoneEmulator:
    """Start it (a context manager), point reaper at it (`environment()`), read `messages`."""

    # The channel of reaper that delivers to it.
    channel = "ntfy"

    def __init__(self, *, topic: str = TOPIC, port: int = 0) -> None:
        self.topic = topic
        self.messages: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._server: _Server | None = None
        self._port = port

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    def start(self) -> Self:
        self._server = _Server(self, self._port)
        self._port = self._server.server_address[1]
        threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="phone-emulator",
            daemon=True,
        ).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    @property
    def topic_url(self) -> str:
        """What `NTFY_URL` is set to."""
        return f"{self.url}/{self.topic}"

    def environment(self) -> dict[str, str]:
        """The variables that point reaper's channel at this phone."""
        return {"NTFY_URL": self.topic_url}

    def receive(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Keep one published message; what ntfy answers for it."""
        with self._lock:
            number = next(self._ids)
            actions = [
                {"id": f"action-{number}-{i}", **action}
                for i, action in enumerate(payload.get("actions") or [])
                if isinstance(action, dict)
            ]
            stored = {
                **payload,
                "id": f"msg{number:05d}",
                "time": int(time.time()),
                "event": "message",
                "actions": actions,
            }
            self.messages.append(stored)
        return stored

    def screen(self) -> str:
        """The phone's screen: every notification, newest first, its buttons as links."""
        with self._lock:
            shown = list(reversed(self.messages))
        cards = "".join(_card(message) for message in shown) or "<p>No notification yet.</p>"
        return (
            "<!doctype html><html><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            "<meta http-equiv='refresh' content='15'>"
            "<title>Phone (emulated ntfy)</title><style>"
            "body{font-family:system-ui,sans-serif;max-width:30rem;margin:1rem auto;"
            "padding:0 .8rem;background:#f2f2f5}"
            ".card{background:#fff;border-radius:.8rem;padding:.8rem 1rem;margin:.6rem 0;"
            "box-shadow:0 1px 3px #0002}.card h2{font-size:1rem;margin:0 0 .3rem}"
            ".card p{white-space:pre-wrap;margin:0 0 .5rem;font-size:.9rem}"
            ".p5 h2{color:#b00020}.p4 h2{color:#a15c00}"
            ".card a{display:inline-block;margin:.2rem .4rem .2rem 0;padding:.35rem .7rem;"
            "border-radius:1rem;background:#e8e8ff;color:#223;text-decoration:none}"
            "</style></head><body><h1>📱 Phone</h1>"
            "<p>An emulated ntfy app: reaper's alerts as they arrive. A button opens its action's"
            " page on reaper's server, which asks before it acts.</p>"
            f"{cards}</body></html>"
        )


def _card(message: dict[str, Any]) -> str:
    buttons = "".join(
        f'<a href="{html.escape(str(action.get("url", "")))}">'
        f"{html.escape(str(action.get('label', '')))}</a>"
        for action in message.get("actions", [])
        if str(action.get("url", "")).startswith("http")
    )
    priority = message.get("priority", 3)
    return (
        f'<div class="card p{priority}"><h2>{html.escape(str(message.get("title", "")))}</h2>'
        f"<p>{html.escape(str(message.get('message', '')))}</p>{buttons}</div>"
    )
