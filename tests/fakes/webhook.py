"""A fake receiver of the plain webhook (`WEBHOOK_URL`): another program's endpoint.

It takes `POST <path>` with a JSON object and answers 200 `{"received": true}`; anything at
another path is 404. Every event received is recorded as sent, with its headers, so that a test
reads the exact body a program would get.
"""

from __future__ import annotations

import threading
from typing import Any

from tests.fakes import FakeServer, Reply


class WebhookReceiver(FakeServer):
    def __init__(self, path: str = "/hooks/reaper?token=receiver-token-0123456789") -> None:
        super().__init__()
        self.path = path
        self.events: list[dict[str, Any]] = []
        self._lock_events = threading.Lock()

    @property
    def webhook_url(self) -> str:
        """What a user puts in WEBHOOK_URL."""
        return self.url + self.path

    def answer(self, path: str, headers: dict[str, str], payload: Any) -> Reply:
        if path != self.path:
            return Reply(404, {"error": "not found"})
        if not isinstance(payload, dict):
            return Reply(400, {"error": "expected a JSON object"})
        with self._lock_events:
            self.events.append(payload)
        return Reply(200, {"received": True})
