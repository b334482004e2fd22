"""A fake ntfy server answering JSON publishing (`POST /` with `{"topic", ...}`) as ntfy does.

Success is 200 with the message as ntfy stores it (an `id`, `time`, `event: "message"`, the
fields sent, each action given an `id`). What ntfy refuses is refused with its status and
error JSON (`{"code", "http", "error", "link"}`): a body that is not message JSON (40017), an
invalid topic (40009), a bad priority (40007), invalid actions (40018: more than 3, an unknown
action, no label, no url, a body on a GET), no or wrong credentials when the topic is protected
(403 40301 / 401 40101). A message over 4,096 bytes is not refused: ntfy turns it into an
attachment, and the fake records it as one (`Published.attachment`), which the channel must
never provoke. Every accepted publish is recorded with its Authorization header.
"""

from __future__ import annotations

import base64
import itertools
import re
import threading
import time
from dataclasses import dataclass
from typing import Any

from tests.fakes import FakeServer, Reply

MESSAGE_LIMIT = 4096
ACTIONS_MAX = 3
_TOPIC = re.compile(r"[-_A-Za-z0-9]{1,64}")


def _error(code: int, message: str, link: str = "") -> Reply:
    status = code // 100
    body: dict[str, Any] = {"code": code, "http": status, "error": message}
    if link:
        body["link"] = link
    return Reply(status, body)


@dataclass(frozen=True)
class Published:
    topic: str
    payload: dict[str, Any]
    authorization: str | None
    attachment: bool = False

    @property
    def actions(self) -> list[dict[str, Any]]:
        return list(self.payload.get("actions") or [])


class NtfyFake(FakeServer):
    """`token`: the access token (`tk_...`) or `user:password` a protected topic wants; None:
    the topic is open to anyone."""

    def __init__(self, topic: str = "reaper-alerts-7f3a9c", token: str | None = None) -> None:
        super().__init__()
        self.topic = topic
        self.token = token
        self.published: list[Published] = []
        self._ids = itertools.count(1)
        self._lock_published = threading.Lock()

    @property
    def topic_url(self) -> str:
        """What a user puts in NTFY_URL."""
        return f"{self.url}/{self.topic}"

    def fail(self, status: int = 500, times: int = 1) -> None:
        message = {
            429: (42901, "limit reached: too many requests"),
            500: (50001, "internal server error"),
            502: (50201, "bad gateway"),
        }.get(status, (status * 100 + 1, "error"))
        self.plan(_error(*message), times)

    def _authorised(self, authorization: str | None) -> Reply | None:
        if self.token is None:
            return None
        if authorization is None:
            return _error(40301, "forbidden", "https://ntfy.sh/docs/publish/#authentication")
        if ":" in self.token:
            expected = "Basic " + base64.b64encode(self.token.encode()).decode()
        else:
            expected = f"Bearer {self.token}"
        if authorization != expected:
            return _error(40101, "unauthorized", "https://ntfy.sh/docs/publish/#authentication")
        return None

    @staticmethod
    def _actions_error(actions: Any) -> str | None:
        if not isinstance(actions, list):
            return "actions must be a list"
        if len(actions) > ACTIONS_MAX:
            return f"only {ACTIONS_MAX} actions allowed"
        for action in actions:
            if not isinstance(action, dict):
                return "action must be an object"
            kind = str(action.get("action", "")).lower()
            method = str(action.get("method", "POST")).upper()
            if kind not in ("view", "broadcast", "http"):
                return f"action '{kind}' unknown"
            if not action.get("label"):
                return "parameter 'label' is required"
            if kind in ("view", "http") and not action.get("url"):
                return f"parameter 'url' is required for action '{kind}'"
            if kind == "http" and method in ("GET", "HEAD") and action.get("body"):
                return f"parameter 'body' cannot be set if method is {method}"
        return None

    def answer(self, path: str, headers: dict[str, str], payload: Any) -> Reply:
        if path != "/":
            return _error(40401, "page not found")
        if not isinstance(payload, dict):
            return _error(
                40017,
                "invalid request: request body must be message JSON",
                "https://ntfy.sh/docs/publish/#publish-as-json",
            )
        topic = payload.get("topic")
        if not isinstance(topic, str) or not _TOPIC.fullmatch(topic):
            return _error(40009, "invalid request: topic invalid")
        refused = self._authorised(headers.get("authorization"))
        if refused is not None:
            return refused
        priority = payload.get("priority", 3)
        if not isinstance(priority, int) or not 1 <= priority <= 5:
            return _error(40007, "invalid priority parameter")
        if "actions" in payload and (problem := self._actions_error(payload["actions"])):
            return _error(
                40018,
                f"invalid request: actions invalid; {problem}",
                "https://ntfy.sh/docs/publish/#action-buttons",
            )
        message = str(payload.get("message", ""))
        attachment = len(message.encode()) > MESSAGE_LIMIT
        with self._lock_published:
            self.published.append(
                Published(topic, payload, headers.get("authorization"), attachment)
            )
            number = next(self._ids)
        stored = {
            **payload,
            "id": f"msg{number:09d}",
            "time": int(time.time()),
            "expires": int(time.time()) + 43200,
            "event": "message",
        }
        if "actions" in payload:
            stored["actions"] = [
                {**a, "id": f"act{number}{i}"} for i, a in enumerate(payload["actions"])
            ]
        if attachment:
            stored["message"] = "You received a file: attachment.txt"
            stored["attachment"] = {"name": "attachment.txt", "size": len(message.encode())}
        return Reply(200, stored)
