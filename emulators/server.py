"""A small framework for local provider emulators: a threaded HTTP/1.1 server on loopback
with a Python control API.

Why stdlib `ThreadingHTTPServer`: it needs no dependency, serves keep-alive connections, and a
thread per connection copes with the ~100 concurrent connections the tests and the benchmark
open. Everything a test wants to provoke lives here, shared by both providers: per-account
Bearer keys, latency, injected failures (a status, a dropped connection, a slow answer), 429
storms, a quota, a provider that is down, counters of calls by kind and a log of every
request (so a test can assert that a dry run made no mutating call, or that no key ever
appeared in a URL). Each provider subclass supplies the routes and its own error shapes.
"""

from __future__ import annotations

import http.client
import json
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Generic, Literal, Self, TypeVar
from urllib.parse import parse_qs, urlsplit

DownMode = Literal["refuse", "503"]
ANY = "*"


@dataclass
class FleetEntry:
    """One instance an emulator lists: whose it is and its JSON as the provider shows it."""

    account: str
    data: dict[str, Any]
    # Reads left while a deleted entry is still listed; None while it lives.
    linger: int | None = field(default=None, kw_only=True)


# The provider's instance id (a RunPod pod id is a string, a Vast instance id an integer) and
# what the emulator keeps of each instance.
IdT = TypeVar("IdT", bound=Hashable)
EntryT = TypeVar("EntryT", bound=FleetEntry)


@dataclass
class Response:
    status: int
    body: bytes = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def json(
        cls,
        status: int,
        payload: Any,
        *,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> Response:
        body = json.dumps(payload).encode()
        return cls(status, body, content_type, dict(headers or {}))

    @classmethod
    def text(cls, status: int, text: str) -> Response:
        return cls(status, text.encode(), "text/plain; charset=utf-8")


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: dict[str, str]
    raw_query: str
    headers: dict[str, str]
    body: bytes
    kind: str
    account: str | None
    page: int | None = None
    # An injected "empty" answer: a listing that looks complete and holds nothing.
    empty: bool = False

    def json(self) -> Any:
        return json.loads(self.body or b"null")


@dataclass(frozen=True)
class RequestRecord:
    """What the emulator saw: enough to assert on, never the Authorization header."""

    method: str
    path: str
    query: str
    kind: str
    account: str | None
    status: int
    mutating: bool
    user_agent: str = ""

    @property
    def url(self) -> str:
        return f"{self.path}?{self.query}" if self.query else self.path


@dataclass
class _Fault:
    kind: str
    action: Literal["status", "drop", "slow", "rate_limit", "empty"]
    remaining: int
    status: int = 500
    seconds: float = 0.0
    retry_after: float | None = None
    page: int | None = None

    def matches(self, kind: str, page: int | None) -> bool:
        if self.remaining <= 0 or self.kind not in (ANY, kind):
            return False
        return self.page is None or self.page == page


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], emulator: EmulatorServer[Any, Any]) -> None:
        self.emulator = emulator
        super().__init__(address, _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up (a timeout test, a dropped keep-alive) is normal here; the
        default prints a traceback to stderr for each."""
        if not isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server
    # TCP_NODELAY: headers and body go out in separate writes, and with Nagle plus the
    # client's delayed ACK every keep-alive request after the first would wait ~40 ms.
    disable_nagle_algorithm = True
    # An idle keep-alive connection is closed after this; a client reconnects.
    timeout = 30

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: the request log is `EmulatorServer.requests`, not stderr."""

    def date_time_string(self, timestamp: float | None = None) -> str:
        """The `Date` header from the emulator's clock (a test's fake one), as a real provider
        dates its answers by its own clock."""
        if timestamp is not None:
            return super().date_time_string(timestamp)
        return super().date_time_string(self.server.emulator.clock_now().timestamp())

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length > 0 else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        response = self.server.emulator.handle(self.command, self.path, headers, body)
        if response is None:
            # Close without an answer: the client sees a dropped connection.
            self.close_connection = True
            return
        self.send_response(response.status)
        self.send_header("Content-Type", response.content_type)
        for name, value in response.headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(response.body)))
        self.end_headers()
        if response.body and self.command != "HEAD":
            self.wfile.write(response.body)

    do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = do_HEAD = _serve


class EmulatorServer(Generic[IdT, EntryT]):
    """The shared machinery; `RunPodEmulator` and `VastEmulator` supply routes and shapes.

    `keys` maps account name -> API key; each account sees only its own instances.
    `delete_linger_reads`: a deleted instance stays listed for that many listings, then
    disappears. `delete_never_confirms`: a delete is acknowledged but the instance stays.
    """

    provider = "emulator"

    def __init__(
        self,
        keys: Mapping[str, str] | None = None,
        *,
        host: str = "127.0.0.1",
        delete_linger_reads: int = 0,
        delete_never_confirms: bool = False,
        now: Callable[[], datetime] | None = None,
        port: int = 0,
    ) -> None:
        self.keys = dict(keys or {"1": f"{self.provider}-emulator-key-1"})
        if not self.keys:
            raise ValueError("an emulator needs at least one account key")
        self.host = host
        self.latency = 0.0
        self.requests: list[RequestRecord] = []
        self.calls: Counter[str] = Counter()
        self.in_flight = 0
        self.peak_in_flight = 0
        self.lock = threading.RLock()
        self._faults: list[_Fault] = []
        self._hooks: list[list[Any]] = []
        self._down: DownMode | None = None
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        # 0: any free port, chosen when started (`reaper emulate --runpod-port` picks one).
        self._port = port
        self._quota: tuple[int, float] | None = None
        self._window: dict[str, tuple[float, int]] = {}
        self.delete_linger_reads = delete_linger_reads
        self.delete_never_confirms = delete_never_confirms
        self._now = now or (lambda: datetime.now(UTC))
        self._entries: dict[IdT, EntryT] = {}
        self._raw: list[tuple[str, Any]] = []
        # Canned answers by (kind, account): see `answer_as`.
        self._canned: dict[tuple[str, str | None], Response] = {}

    # ---- lifecycle -------------------------------------------------------------------------

    def start(self) -> Self:
        if self._server is not None:
            return self
        self._server = _Server((self.host, self._port), self)
        self._port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.01},
            name=f"{self.provider}-emulator",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def url(self) -> str:
        if not self._port:
            raise RuntimeError("start() the emulator first")
        return f"http://{self.host}:{self._port}"

    @property
    def port(self) -> int:
        return self._port

    # ---- knobs -----------------------------------------------------------------------------

    def clock_now(self) -> datetime:
        """What this emulator's clock reads (its `Date` header)."""
        return self._now()

    def default_account(self) -> str:
        return next(iter(self.keys))

    def key(self, account: str | None = None) -> str:
        return self.keys[account or self.default_account()]

    def set_latency(self, seconds: float) -> None:
        """Every call takes at least this long (seconds)."""
        self.latency = max(0.0, seconds)

    def fail_next(
        self,
        kind: str = ANY,
        status: int = 500,
        count: int = 1,
        *,
        page: int | None = None,
    ) -> None:
        """The next `count` calls of `kind` ("list", "delete", ... or "*") answer `status`
        with the provider's error body. `page` limits it to that page of a listing."""
        self._add(_Fault(kind, "status", count, status=status, page=page))

    def drop_next(self, kind: str = ANY, count: int = 1) -> None:
        """The next `count` calls close the connection without answering."""
        self._add(_Fault(kind, "drop", count))

    def slow_next(
        self, kind: str = ANY, seconds: float = 1.0, count: int = 1, *, page: int | None = None
    ) -> None:
        """The next `count` calls wait `seconds` before answering (to provoke timeouts, or a
        reading that is stale by the time its pass acts); `page` limits it to that page."""
        self._add(_Fault(kind, "slow", count, seconds=seconds, page=page))

    def empty_next(self, kind: str = "list", count: int = 1) -> None:
        """The next `count` listings answer as a complete, empty fleet: a provider that lost
        its way, whose answer must never read as "everything is gone"."""
        self._add(_Fault(kind, "empty", count))

    def after_next(self, kind: str, action: Callable[[], None], count: int = 1) -> None:
        """Run `action` right after the next `count` calls of `kind` are answered: a state
        that changes between two requests (a user starting a pod mid-pass)."""
        with self.lock:
            self._hooks.append([kind, count, action])

    def rate_limit_next(
        self, count: int, *, kind: str = ANY, retry_after: float | None = None
    ) -> None:
        """A 429 storm: the next `count` calls answer 429, with `Retry-After` when the
        provider sends one and `retry_after` is given."""
        self._add(_Fault(kind, "rate_limit", count, retry_after=retry_after))

    def set_quota(self, requests: int | None, window_seconds: float = 60.0) -> None:
        """A real per-account quota: past `requests` in a window, 429 until it resets."""
        with self.lock:
            self._quota = None if requests is None else (requests, window_seconds)
            self._window.clear()

    def set_down(self, mode: DownMode | None) -> None:
        """ "refuse": the port stops listening (connection refused, open connections are
        dropped); "503": every call answers 503; None: back up on the same port."""
        with self.lock:
            previous, self._down = self._down, mode
        if mode == "refuse" and previous != "refuse" and self._server is not None:
            server, self._server = self._server, None
            server.shutdown()
            server.server_close()
            if self._thread is not None:
                self._thread.join(timeout=5)
        elif mode != "refuse" and previous == "refuse":
            self.start()

    def answer_as(
        self, kind: str, response: Response | None, *, account: str | None = None
    ) -> None:
        """From now on every authenticated call of `kind` ("*": every kind) by `account` (None:
        by any account) answers `response` exactly, until set to None: an answer a live API was
        seen giving, which no fleet knob produces (`tests/corpus/answers/`)."""
        with self.lock:
            if response is None:
                self._canned.pop((kind, account), None)
            else:
                self._canned[(kind, account)] = response

    def clear_faults(self) -> None:
        with self.lock:
            self._faults.clear()
            self._hooks.clear()
            self._canned.clear()

    def _add(self, fault: _Fault) -> None:
        with self.lock:
            self._faults.append(fault)

    # ---- fleet ----------------------------------------------------------------------------

    def modify_entry(self, entry_id: IdT, **fields: Any) -> None:
        """Set raw fields as they are (None included), e.g. to make an instance malformed."""
        with self.lock:
            self._entries[entry_id].data.update(fields)

    def drop_field(self, entry_id: IdT, *names: str) -> None:
        with self.lock:
            for name in names:
                self._entries[entry_id].data.pop(name, None)

    def add_raw_entry(self, raw: Any, *, account: str | None = None) -> None:
        """List `raw` verbatim (any JSON value) at the end of the listing, to test malformed
        answers."""
        with self.lock:
            self._raw.append((account or self.default_account(), raw))

    def clear_raw_entries(self) -> None:
        with self.lock:
            self._raw.clear()

    def remove_entry(self, entry_id: IdT) -> None:
        with self.lock:
            self._entries.pop(entry_id, None)

    def entry(self, entry_id: IdT) -> dict[str, Any] | None:
        """A copy of the instance's JSON as it stands."""
        with self.lock:
            entry = self._entries.get(entry_id)
            return dict(entry.data) if entry else None

    def entry_ids(self, account: str | None = None) -> list[IdT]:
        """The ids in the order they were added, of one account or of all."""
        with self.lock:
            return [
                i
                for i, entry in self._entries.items()
                if account is None or entry.account == account
            ]

    def _owned(self, account: str, entry_id: IdT) -> EntryT | None:
        """The account's live instance: another account's, or a deleted one, is not found."""
        entry = self._entries.get(entry_id)
        if entry is None or entry.account != account or entry.linger is not None:
            return None
        return entry

    def _list_entry(self, entry_id: IdT, entry: EntryT) -> dict[str, Any]:
        """The entry as a listing shows it; a deleted one that lingers counts down and goes."""
        listed = dict(entry.data)
        if entry.linger is not None:
            entry.linger -= 1
            if entry.linger <= 0:
                del self._entries[entry_id]
        return listed

    def _raw_listed(self, account: str) -> list[Any]:
        return [raw for owner, raw in self._raw if owner == account]

    def _delete_entry(
        self,
        entry_id: IdT,
        entry: EntryT,
        *,
        stays: Callable[[EntryT], None],
        lingers: Callable[[EntryT], None],
    ) -> None:
        """Delete as the knobs say: acknowledged but still there (`stays` shapes it), listed
        a few more reads (`lingers` shapes it), or gone at once."""
        if self.delete_never_confirms:
            stays(entry)
        elif self.delete_linger_reads > 0:
            lingers(entry)
            entry.linger = self.delete_linger_reads
        else:
            del self._entries[entry_id]

    # ---- what happened ---------------------------------------------------------------------

    @property
    def mutations(self) -> list[RequestRecord]:
        """Every mutating call received (whatever it answered)."""
        with self.lock:
            return [r for r in self.requests if r.mutating]

    def count(self, kind: str) -> int:
        with self.lock:
            return self.calls[kind]

    def reset_log(self) -> None:
        with self.lock:
            self.requests.clear()
            self.calls.clear()
            self.peak_in_flight = self.in_flight

    # ---- request handling ------------------------------------------------------------------

    def handle(
        self, method: str, target: str, headers: dict[str, str], body: bytes
    ) -> Response | None:
        with self.lock:
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
            down = self._down
        try:
            if down == "refuse" or self._server is None:
                # Down or stopped: connections still open from before are dropped too.
                return None
            return self._handle(method, target, headers, body, down)
        finally:
            with self.lock:
                self.in_flight -= 1

    def _handle(
        self,
        method: str,
        target: str,
        headers: dict[str, str],
        body: bytes,
        down: DownMode | None,
    ) -> Response | None:
        parts = urlsplit(target)
        query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        kind = self.classify(method, parts.path)
        account = self._account_for(headers.get("authorization", ""))
        request = Request(method, parts.path, query, parts.query, headers, body, kind, account)
        request = self.annotate(request)
        if self.latency:
            time.sleep(self.latency)
        with self.lock:
            self.calls[kind] += 1
            fault = self._take_fault(kind, request.page)
        if fault is not None and fault.action == "slow":
            time.sleep(fault.seconds)
            fault = None
        if fault is not None and fault.action == "drop":
            self._record(request, 0)
            return None
        if fault is not None and fault.action == "empty":
            request = replace(request, empty=True)
            fault = None
        response = self._answer(request, fault, down)
        self._record(request, response.status)
        self._run_hooks(kind)
        return response

    def _run_hooks(self, kind: str) -> None:
        with self.lock:
            due = [hook for hook in self._hooks if hook[0] in (ANY, kind) and hook[1] > 0]
            for hook in due:
                hook[1] -= 1
            self._hooks = [hook for hook in self._hooks if hook[1] > 0]
        for _kind, _left, action in due:
            action()

    def _answer(self, request: Request, fault: _Fault | None, down: DownMode | None) -> Response:
        if down == "503":
            return self.error(request, 503, "service unavailable")
        if fault is not None and fault.action == "rate_limit":
            return self.rate_limited(request, fault.retry_after)
        if fault is not None:
            return self.error(request, fault.status, "injected failure")
        if request.account is None:
            return self.unauthorized(request)
        quota_wait = self._spend_quota(request.account)
        if quota_wait is not None:
            return self.rate_limited(request, quota_wait)
        with self.lock:
            canned = self._canned_for(request.kind, request.account)
            response = canned if canned is not None else self.dispatch(request)
        response.headers.update(self.extra_headers(request))
        return response

    def _canned_for(self, kind: str, account: str) -> Response | None:
        for key in ((kind, account), (ANY, account), (kind, None), (ANY, None)):
            canned = self._canned.get(key)
            if canned is not None:
                return replace(canned, headers=dict(canned.headers))
        return None

    def _take_fault(self, kind: str, page: int | None) -> _Fault | None:
        for fault in self._faults:
            if fault.matches(kind, page):
                fault.remaining -= 1
                if fault.remaining <= 0:
                    self._faults.remove(fault)
                return fault
        return None

    def _spend_quota(self, account: str) -> float | None:
        """Seconds until the window resets when the quota is spent; None when allowed."""
        with self.lock:
            if self._quota is None:
                return None
            limit, window = self._quota
            now = time.monotonic()
            start, used = self._window.get(account, (now, 0))
            if now - start >= window:
                start, used = now, 0
            if used >= limit:
                self._window[account] = (start, used)
                return max(0.0, window - (now - start))
            self._window[account] = (start, used + 1)
            return None

    def quota_state(self, account: str | None) -> tuple[int, int, float]:
        """(quota, remaining, seconds to reset) of the account's current window."""
        with self.lock:
            limit, window = self._quota or (60, 60.0)
            now = time.monotonic()
            start, used = self._window.get(account or "", (now, 0))
            if now - start >= window:
                start, used = now, 0
            return limit, max(0, limit - used), max(0.0, window - (now - start))

    def _account_for(self, authorization: str) -> str | None:
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        token = token.strip()
        return next((name for name, key in self.keys.items() if key == token), None)

    def _record(self, request: Request, status: int) -> None:
        record = RequestRecord(
            method=request.method,
            path=request.path,
            query=request.raw_query,
            kind=request.kind,
            account=request.account,
            status=status,
            mutating=self.is_mutating(request),
            user_agent=request.headers.get("user-agent", ""),
        )
        with self.lock:
            self.requests.append(record)

    # ---- provider hooks --------------------------------------------------------------------

    def classify(self, method: str, path: str) -> str:
        """The kind of call, for counters and faults ("list", "delete", "balance", ...)."""
        return "other"

    def annotate(self, request: Request) -> Request:
        """Add what only the provider can tell (the page number of a listing)."""
        return request

    def is_mutating(self, request: Request) -> bool:
        return request.method not in ("GET", "HEAD", "OPTIONS")

    def dispatch(self, request: Request) -> Response:
        """Answer an authenticated request (called with the lock held)."""
        return self.error(request, 404, "no such route")

    def error(self, request: Request, status: int, detail: str) -> Response:
        return Response.json(status, {"error": detail})

    def unauthorized(self, request: Request) -> Response:
        return self.error(request, 401, "unauthorized")

    def rate_limited(self, request: Request, retry_after: float | None) -> Response:
        return self.error(request, 429, "too many requests")

    def extra_headers(self, request: Request) -> dict[str, str]:
        return {}


def iso(moment: datetime | None) -> str | None:
    """ISO 8601 in UTC with a `Z`, as the providers spell their times."""
    if moment is None:
        return None
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def status_title(status: int) -> str:
    try:
        return http.client.responses[status]
    except KeyError:
        return "Error"
