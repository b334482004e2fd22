"""Lambda: the HTTP API (/healthz, /ping, /alert, /status, /monitors, the status page, /act,
/telegram) behind an API Gateway HTTP API.

Only an adapter: an HTTP API event (payload format 2.0, which Lambda function URLs use as
well) becomes a `reaper.interfaces.http.Request`, `handle` there answers it exactly as under
`reaper serve`, and the `Response` goes back in the format API Gateway expects. Every rule of
the contract (keys, 404 for a wrong key, body limits, rate limits) lives in
`reaper.interfaces.http`.

Bodies arrive as text or base64; the adapter keeps at most MAX_BODY + 1 bytes of them, which is
all the core needs to answer 413. The `App` (settings, store, notifier, in-memory rate limits)
lives as long as the warm container and is rebuilt when the settings change (a rotated secret).

A cold ping stays cheap (bench/lambda.py measures the import): a ping is a key check, a host
check and one conditional write, so this module imports neither asyncio nor pydantic nor a
channel or provider client. `respond` answers an ordinary ping at once; only an answer that
must wait (an alert to send, another route's work) runs in an event loop, and the channels
are built by the first alert this container sends.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Awaitable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from handlers import runtime
from reaper import log
from reaper.app import wiring
from reaper.channels.base import ActionSlots, channels_configured
from reaper.clock import SystemClock
from reaper.interfaces.api import MAX_BODY, REQUEST_CHANNEL_OPTIONS, App, Request, Response
from reaper.interfaces.http import respond
from reaper.settings.model import Settings, weak_key
from reaper.settings.parse import ConfigError

if TYPE_CHECKING:
    from reaper.channels.base import Notifier
    from reaper.core.models import Alert, Delivery

FUNCTION = "http"

_app: App | None = None


def _text(status: int, line: str) -> dict[str, Any]:
    return to_result(
        Response(status, (line + "\n").encode(), {"content-type": "text/plain; charset=utf-8"})
    )


def to_request(event: Mapping[str, Any]) -> Request:
    """ValueError for an event that is not an HTTP request of payload format 2.0."""
    context = event.get("requestContext")
    http = context.get("http") if isinstance(context, Mapping) else None
    if not isinstance(http, Mapping) or not isinstance(http.get("method"), str):
        raise ValueError("not an HTTP API (payload 2.0) event")
    raw_path = event.get("rawPath") or http.get("path") or "/"
    headers = {
        str(name).lower(): str(value)
        for name, value in (event.get("headers") or {}).items()
        if value is not None
    }
    # Payload 2.0 moves the request's cookies out of the headers into `cookies`.
    cookies = event.get("cookies")
    if isinstance(cookies, list) and cookies:
        joined = "; ".join(str(c) for c in cookies)
        headers["cookie"] = f"{headers['cookie']}; {joined}" if "cookie" in headers else joined
    return Request(
        method=http["method"].upper(),
        # Decoded, as an ASGI server decodes it for `reaper serve`.
        path=unquote(str(raw_path)),
        headers=headers,
        body=_body(event),
        client=str(http.get("sourceIp") or "unknown"),
        query=str(event.get("rawQueryString") or ""),
    )


def _body(event: Mapping[str, Any]) -> bytes:
    body = event.get("body")
    if not body:
        return b""
    if event.get("isBase64Encoded"):
        # Decode no more than needed to know the body is over the limit.
        head = str(body)[: (MAX_BODY + 1 + 2) // 3 * 4 + 4]
        try:
            return base64.b64decode(head + "=" * (-len(head) % 4))[: MAX_BODY + 1]
        except (binascii.Error, ValueError):
            raise ValueError("the body is not valid base64") from None
    return str(body)[: MAX_BODY + 1].encode("utf-8", "surrogatepass")[: MAX_BODY + 1]


def to_result(response: Response) -> dict[str, Any]:
    """The response in API Gateway's format: text bodies as text, anything else base64.
    API Gateway sets the length itself."""
    headers = {
        "cache-control": "no-store",
        **{
            k: v
            for k, v in response.headers.items()
            if k.lower() not in ("content-length", "set-cookie")
        },
    }
    # Payload 2.0 answers cookies in `cookies`, one Set-Cookie value each.
    cookies = [v for k, v in response.headers.items() if k.lower() == "set-cookie"]
    extra: dict[str, Any] = {"cookies": cookies} if cookies else {}
    try:
        return {
            "statusCode": response.status,
            "headers": headers,
            "body": response.body.decode("utf-8"),
            "isBase64Encoded": False,
            **extra,
        }
    except UnicodeDecodeError:
        return {
            "statusCode": response.status,
            "headers": headers,
            "body": base64.b64encode(response.body).decode("ascii"),
            "isBase64Encoded": True,
            **extra,
        }


class _ChannelsOnFirstAlert:
    """The container's channels, built when its first alert is sent: most containers only
    ever answer pings, which alert nobody."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._notifier: Notifier | None = None

    def _built(self) -> Notifier:
        if self._notifier is None:
            # Channels that give up in time: the function's timeout is 10 s (serverless.yml).
            self._notifier = wiring.make_notifier(self._settings, options=REQUEST_CHANNEL_OPTIONS)
        return self._notifier

    @property
    def body_budget(self) -> int:
        return self._built().body_budget

    @property
    def actions(self) -> ActionSlots:
        return self._built().actions

    async def send(self, alert: Alert) -> list[Delivery]:
        return await self._built().send(alert)


def app_for(settings: Settings) -> App:
    """The container's App, rebuilt only when the settings changed."""
    global _app
    if _app is None or _app.settings != settings:
        _app = App(
            settings,
            runtime.store(settings),
            _ChannelsOnFirstAlert(settings),
            SystemClock(),
            channels=channels_configured(settings),
        )
    return _app


def reset() -> None:
    """Forget the App (tests)."""
    global _app
    _app = None


def handler(event: object, context: object = None) -> dict[str, Any]:
    try:
        if not isinstance(event, Mapping):
            raise ValueError("not an HTTP API (payload 2.0) event")
        request = to_request(event)
    except ValueError as error:
        log.event("lambda", function=FUNCTION, result="bad_event", error=str(error))
        return _text(400, f"bad request: {error}")
    try:
        settings = runtime.load()
    except ConfigError as error:
        runtime.config_error(FUNCTION, error)
        return _text(503, "service not configured; see the function's log")
    if (weak := weak_key(settings)) is not None:
        # Every request, as long as it lasts: an HTTP API behind a guessable key serves nothing.
        log.event("weak_key", function=FUNCTION, variable=weak.variable, error=str(weak))
        return _text(503, f"service refused: {weak.variable} is too short; see the function's log")
    answer = respond(request, app_for(settings))
    if not isinstance(answer, Response):
        import asyncio

        answer = asyncio.run(_awaited(answer))
    return to_result(answer)


async def _awaited(answer: Awaitable[Response]) -> Response:
    return await answer
