"""A fake Bark server answering `POST <prefix>/push` as bark-server (Finb/bark-server) does.

Success is HTTP 200 `{"code": 200, "message": "success", "timestamp": ...}`; a missing device
key is 400 with code 400; what APNs would refuse (a payload over 4 KB, a collapse id over 64
bytes) is the 500 bark-server turns every APNs error into. Optional basic auth answers 418,
as bark-server does. Every accepted push is recorded.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from typing import Any

from tests.fakes import FakeServer, Reply

APNS_PAYLOAD_LIMIT = 4096
COLLAPSE_ID_MAX = 64


def _result(code: int, message: str) -> Reply:
    return Reply(code, {"code": code, "message": message, "timestamp": int(time.time())})


def go_json_size(value: Any) -> int:
    """Bytes of Go's encoding/json output, which escapes < > & as \\u003c and keeps UTF-8."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return len(text.encode("utf-8")) + 5 * sum(text.count(c) for c in "<>&")


class BarkFake(FakeServer):
    def __init__(
        self,
        device_keys: tuple[str, ...] = ("FakeDeviceKey7f3a9",),
        prefix: str = "",
        basic_auth: tuple[str, str] | None = None,
    ) -> None:
        super().__init__()
        self.device_keys = set(device_keys)
        self.prefix = prefix.rstrip("/")
        self.basic_auth = basic_auth
        self.pushes: list[dict[str, Any]] = []
        self._pushes_lock = threading.Lock()

    @property
    def bark_url(self) -> str:
        """What the Bark app shows the user: server, prefix, first device key."""
        return f"{self.url}{self.prefix}/{sorted(self.device_keys)[0]}"

    def fail(self, status: int = 500, times: int = 1, message: str = "push failed: fake") -> None:
        self.plan(_result(status, message), times)

    def answer(self, path: str, headers: dict[str, str], payload: Any) -> Reply:
        if self.basic_auth and not self._authorised(headers):
            return Reply(418, {"code": 418, "message": "I'm a teapot"})
        if path != f"{self.prefix}/push":
            return _result(404, f"Cannot POST {path}")
        if not headers.get("content-type", "").startswith("application/json"):
            return _result(400, "request bind failed: expected JSON")
        if not isinstance(payload, dict):
            return _result(400, "request bind failed: invalid JSON")
        key = payload.get("device_key")
        if not key:
            return _result(400, "device key is empty")
        if key not in self.device_keys:
            return _result(400, "failed to get device token: device not found")
        if len(str(payload.get("id", "")).encode()) > COLLAPSE_ID_MAX:
            return _result(500, "push failed: BadCollapseId")
        apns = {k: v for k, v in payload.items() if k != "device_key"}
        apns["aps"] = {
            "alert": {"title": "", "body": ""},
            "sound": "1107.caf",
            "mutable-content": 1,
        }
        if go_json_size(apns) > APNS_PAYLOAD_LIMIT:
            return _result(500, "push failed: PayloadTooLarge")
        with self._pushes_lock:
            self.pushes.append(payload)
        return _result(200, "success")

    def _authorised(self, headers: dict[str, str]) -> bool:
        assert self.basic_auth is not None
        expected = base64.b64encode(":".join(self.basic_auth).encode()).decode()
        return headers.get("authorization") == f"Basic {expected}"
