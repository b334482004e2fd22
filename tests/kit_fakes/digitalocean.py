"""DigitalOcean as a droplet sees it, on loopback: the metadata service (which, at its real
address, also serves other clouds' metadata) and the two droplet calls the kit makes, as
DigitalOcean's published API answers them.

- Metadata: `GET /metadata/v1.json` → `{"droplet_id": <int>, ...}`, `GET /metadata/v1/id` →
  the id as text; anything else 404.
- API (Bearer token): `DELETE /v2/droplets/{id}` → 204, 404 `{"id": "not_found", ...}`;
  `POST /v2/droplets/{id}/actions` `{"type": "power_off"}` → 201 `{"action": {...}}`; a wrong
  token 401 `{"id": "unauthorized", ...}`; errors `{"id", "message", "request_id"}`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from tests.kit_fakes.recorder import Recorder, Request, Response


def _error(status: int, error_id: str, message: str) -> Response:
    body = {"id": error_id, "message": message, "request_id": "req-1"}
    return Response(status, json.dumps(body), "application/json")


class Metadata:
    """The metadata service on its own recorder: nothing is a droplet until `droplet` says so."""

    def __init__(self, http: Recorder) -> None:
        self.http = http
        http.on("GET", r".*", lambda _r, _m: Response(404, "404 page not found"))

    @property
    def url(self) -> str:
        return f"{self.http.base}/metadata/v1"

    def droplet(self, droplet_id: int) -> None:
        """This machine is droplet `droplet_id`."""
        listing = {"droplet_id": droplet_id, "hostname": "gpu-droplet", "region": "tor1"}
        self.answer("/metadata/v1.json", json.dumps(listing), "application/json")
        self.answer("/metadata/v1/id", str(droplet_id))

    def answer(self, path: str, body: str, content_type: str = "text/plain") -> None:
        self.http.on("GET", re.escape(path), lambda _r, _m: Response(200, body, content_type))


@dataclass
class Droplets:
    """The droplet API for one account's token, mounted under `prefix` on the kit's recorder."""

    token: str
    droplets: dict[str, str] = field(default_factory=dict)  # id -> status
    # (method, path, status) of every call that reached it
    calls: list[tuple[str, str, int]] = field(default_factory=list)
    # answers given instead of the real one to the next calls, first first
    injected: list[Response] = field(default_factory=list)
    prefix: str = "/do/v2"

    def install(self, http: Recorder) -> None:
        base = re.escape(self.prefix)
        http.on("DELETE", base + r"/droplets/([^/]+)", self._destroy)
        http.on("POST", base + r"/droplets/([^/]+)/actions", self._action)

    def fail_next(self, response: Response, count: int = 1) -> None:
        self.injected.extend([response] * count)

    def _answer(self, request: Request, droplet_id: str, real: Response) -> Response:
        if self.injected:
            real = self.injected.pop(0)
        elif request.bearer != self.token:
            real = _error(401, "unauthorized", "Unable to authenticate you.")
        elif droplet_id not in self.droplets:
            real = _error(404, "not_found", "The resource you were accessing could not be found.")
        self.calls.append((request.method, request.path.removeprefix(self.prefix), real.status))
        return real

    def _destroy(self, request: Request, match: re.Match[str]) -> Response:
        answer = self._answer(request, match[1], Response(204, ""))
        if answer.status == 204:
            del self.droplets[match[1]]
        return answer

    def _action(self, request: Request, match: re.Match[str]) -> Response:
        if json.loads(request.body or "{}") != {"type": "power_off"}:
            return _error(422, "unprocessable_entity", "unsupported action")
        action = {"id": 1, "status": "in-progress", "type": "power_off"}
        answer = self._answer(request, match[1], Response(201, json.dumps({"action": action})))
        if answer.status == 201:
            self.droplets[match[1]] = "off"
        return answer


def server_error() -> Response:
    return _error(500, "server_error", "Server was unable to give you a response.")
