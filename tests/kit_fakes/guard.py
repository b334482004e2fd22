"""reaper's /ping and /alert routes as the public contract writes them, on the kit's loopback
recorder: what the on-instance kit talks to. Written from the contract, not from reaper's code,
so that the kit is held to the contract whatever the server does.

The contract, as the kit relies on it:
- `/ping/<key>/<host>[/start|/fail|/<0-255>|/bye]` (GET, POST, HEAD): 200 `OK`. When the
  request lists `application/json` explicitly in `Accept`, 200 `{"ok": true, "keep_until":
  "<ISO>"|null, "idle_after": "<duration>"|"never"|null}`, with the guard's own `Date`:
  `keep_until` while the host is kept, `idle_after` as `reaper idle` set it.
- `POST /alert/<key>` and `POST /alert/<key>/<host>`: `{"text"}` or `{"title", "body",
  "level"}`, and for one host `{"kind": "idle_soon", "text", "destroy_at"}`; 200.
- A wrong key answers 404, like an unknown route.

The guard's clock is its own (the instance's is never asked): it reads `start` at the first
ping that asks for JSON and moves on by `step` at each later one — one idle-watch check each.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from email.utils import format_datetime

from tests.kit_fakes.recorder import Recorder, Request, Response

_PING = r"/ping/(?P<key>[^/]+)/(?P<host>[^/]+)(?:/(?P<suffix>[^/]+))?"
_ALERT = r"/alert/(?P<key>[^/]+)(?:/(?P<host>[^/]+))?"


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def http_date(moment: datetime) -> str:
    return format_datetime(moment, usegmt=True)


def asks_for_json(request: Request) -> bool:
    """`application/json` listed explicitly (not `*/*`, not `application/*`)."""
    accept = request.headers.get("accept", "")
    return any(part.split(";")[0].strip() == "application/json" for part in accept.split(","))


@dataclass(frozen=True)
class Notify:
    """One request to /alert, read back: `host` is the path's host (None on /alert/<key>)."""

    host: str | None
    title: str
    body: str
    level: str | None
    kind: str | None
    destroy_at: str | None

    @property
    def text(self) -> str:
        return f"{self.title}\n{self.body}" if self.body else self.title


@dataclass
class Guard:
    key: str
    start: datetime
    step: timedelta = timedelta(minutes=1)
    # host -> keep_until (None: not kept); host -> idle_after ("30m", "never"; None: default)
    keeps: dict[str, datetime | None] = field(default_factory=dict)
    idle_after: dict[str, str | None] = field(default_factory=dict)
    # Before answering the Nth ping that asks for JSON: what happens on the guard meanwhile
    # (a Keep pressed, `reaper idle` run). Called with the guard.
    before_ping: dict[int, Callable[[Guard], None]] = field(default_factory=dict)
    # Answers the Nth ping that asks for JSON with this instead, when it returns one.
    override: Callable[[int, Guard], Response | None] | None = None
    # False: a reaper older than /alert/<key>/<host> (that route answers 404).
    host_alerts: bool = True
    json_pings: int = 0
    # Every notify the guard took (answered 200), in order.
    notifies: list[Notify] = field(default_factory=list)

    def at(self, n: int) -> datetime:
        """The guard's clock at the Nth ping that asks for JSON."""
        return self.start + self.step * (n - 1)

    def now(self) -> datetime:
        return self.at(max(self.json_pings, 1))

    def install(self, http: Recorder) -> None:
        for method in ("GET", "POST", "HEAD"):
            http.on(method, _PING, self._ping)
        http.on("POST", _ALERT, self._alert)

    # -- routes ---------------------------------------------------------------------------
    def _ping(self, request: Request, match: re.Match[str]) -> Response:
        if match["key"] != self.key:
            return Response(404, "Not Found")
        if not asks_for_json(request):
            return Response(200, "OK")
        self.json_pings += 1
        n = self.json_pings
        if n in self.before_ping:
            self.before_ping[n](self)
        if self.override is not None and (raw := self.override(n, self)) is not None:
            return raw
        return self.answer(match["host"])

    def answer(self, host: str) -> Response:
        """The contract's JSON answer for `host` now, with the guard's Date."""
        now = self.now()
        until = self.keeps.get(host)
        body = {
            "ok": True,
            "keep_until": iso(until) if until is not None and until > now else None,
            "idle_after": self.idle_after.get(host),
        }
        return self.json(body)

    def json(self, body: object, *, date: str | None = None) -> Response:
        """Any body as the guard would send it: JSON, with its Date (or the one given)."""
        headers = (("Date", http_date(self.now()) if date is None else date),)
        return Response(200, json.dumps(body), "application/json", headers)

    def _alert(self, request: Request, match: re.Match[str]) -> Response:
        if match["key"] != self.key or (match["host"] and not self.host_alerts):
            return Response(404, "Not Found")
        notify = read_notify(request)
        assert notify is not None
        self.notifies.append(notify)
        return Response(200, '{"delivered": true}', "application/json")


def read_notify(request: Request) -> Notify | None:
    """A request to /alert, as the kit sent it; None for any other request."""
    match = re.fullmatch(_ALERT, request.path)
    if request.method != "POST" or match is None:
        return None
    data = json.loads(request.body)
    if "text" in data:
        title, _, body = data["text"].partition("\n")
    else:
        title, body = data["title"], data.get("body", "")
    return Notify(
        host=match["host"],
        title=title,
        body=body,
        level=data.get("level"),
        kind=data.get("kind"),
        destroy_at=data.get("destroy_at"),
    )
