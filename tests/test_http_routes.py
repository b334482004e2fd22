"""The routes of the HTTP API and their answers, over real HTTP against the served app."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.heartbeat_support import KEY, Served, make_settings, raw_request, served


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Served]:
    with served(make_settings(tmp_path)) as running:
        yield running


def _shape(response: httpx.Response) -> tuple[int, bytes, dict[str, str]]:
    headers = {k: v for k, v in response.headers.items() if k != "date"}
    return response.status_code, response.content, headers


def test_healthz_answers_without_a_key(app: Served) -> None:
    response = app.http.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"ok": True}


@pytest.mark.parametrize("method", ["GET", "POST", "HEAD"])
def test_a_ping_answers_ok_and_creates_the_monitor(app: Served, method: str) -> None:
    response = app.ping("gpu-box-1", method=method)
    assert response.status_code == 200
    assert response.content == (b"" if method == "HEAD" else b"OK\n")
    monitor = app.store.get_monitor("gpu-box-1")
    assert monitor is not None and monitor.last_ping_at == app.clock.now()


@pytest.mark.parametrize("method", ["GET", "POST", "HEAD", "PUT", "DELETE", "PATCH"])
def test_a_wrong_key_is_exactly_an_unknown_route(app: Served, method: str) -> None:
    wrong = app.ping("gpu-box-1", method=method, key="not-the-key")
    wrong_alert = app.http.request(method, "/alert/not-the-key")
    unknown = app.http.request(method, "/no/such/route")
    assert wrong.status_code == 404
    assert _shape(wrong) == _shape(unknown) == _shape(wrong_alert)
    assert app.store.list_monitors() == []


def test_a_key_that_only_shares_a_prefix_is_wrong(app: Served) -> None:
    assert app.ping("h", key=KEY[:-1]).status_code == 404
    assert app.ping("h", key=KEY + "x").status_code == 404


def test_unset_ping_key_turns_ping_and_alert_off(tmp_path: Path) -> None:
    with served(make_settings(tmp_path, ping_key=None)) as app:
        unknown = app.http.get("/no/such/route")
        for path in ("/ping/anything/host", "/ping//host", "/alert/anything", "/alert/"):
            for method in ("GET", "POST"):
                assert _shape(app.http.request(method, path)) == _shape(unknown)
        assert app.store.list_monitors() == []


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("PUT", f"/ping/{KEY}/h", "GET, POST, HEAD"),
        ("DELETE", f"/ping/{KEY}/h/start", "GET, POST, HEAD"),
        ("GET", f"/alert/{KEY}", "POST"),
        ("POST", "/healthz", "GET, HEAD"),
    ],
)
def test_a_method_the_route_does_not_take_is_405(
    app: Served, method: str, path: str, allow: str
) -> None:
    response = app.http.request(method, path)
    assert response.status_code == 405
    assert response.headers["allow"] == allow


@pytest.mark.parametrize(
    "host",
    [".", "..", "a" * 101, "white%20space", "semi;colon", "%C3%BCnicode", "tab%09", "nul%00"],
)
def test_a_malformed_host_is_400_with_one_line(app: Served, host: str) -> None:
    head = f"GET /ping/{KEY}/{host} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
    status, body = raw_request(app.running.port, head)
    assert status == 400
    assert body.count(b"\n") == 1 and b"host" in body
    assert app.store.list_monitors() == []


def test_an_encoded_slash_in_the_host_is_another_route(app: Served) -> None:
    head = f"GET /ping/{KEY}/a%2Fb HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
    assert raw_request(app.running.port, head)[0] == 404


def test_the_longest_valid_host_is_accepted(app: Served) -> None:
    host = "A-z_0.9" + "x" * 93
    assert app.ping(host).status_code == 200
    assert app.store.get_monitor(host) is not None


@pytest.mark.parametrize("suffix", ["256", "1000", "-1", "stop", "0x1", "", "start/more"])
def test_an_unknown_suffix_is_not_a_route(app: Served, suffix: str) -> None:
    assert app.ping("h", suffix).status_code == 404
    assert app.store.list_monitors() == []


@pytest.mark.parametrize("suffix", ["start", "fail", "bye", "0", "1", "255", "007"])
def test_every_suffix_route_answers_ok(app: Served, suffix: str) -> None:
    app.ping("h")  # exists, so that bye has something to retire
    response = app.ping("h", suffix)
    assert (response.status_code, response.text) == (200, "OK\n")


def test_no_answer_names_the_server(app: Served) -> None:
    for response in (app.ping("h"), app.http.get("/x"), app.http.get("/healthz")):
        assert "server" not in response.headers


def test_a_bug_becomes_a_generic_500_without_details(
    app: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(host: str) -> None:
        raise RuntimeError(f"boom {KEY}")

    monkeypatch.setattr(app.store, "get_monitor", broken)
    response = app.ping("h")
    assert (response.status_code, response.text) == (500, "internal error\n")
    assert KEY not in response.text


def test_settings_are_immutable_dataclasses() -> None:
    # served() relies on dataclasses.replace for per-test settings.
    assert dataclasses.is_dataclass(make_settings(Path("/tmp")))


@pytest.mark.parametrize(
    "target",
    [
        f"/ping/{KEY}/%FF%FE",  # percent-encoded bytes that are not UTF-8
        "/ping/%FF/host",
        "/ping/" + "k" * 20_000 + "/host",  # beyond what the server reads of a request line
        f"/ping/{KEY}/h?x=%00",
        "*",
    ],
)
def test_strange_request_targets_never_get_a_500(app: Served, target: str) -> None:
    head = f"GET {target} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
    status, _ = raw_request(app.running.port, head)
    assert 200 <= status < 500


def test_raw_non_ascii_bytes_in_the_path_are_a_400(app: Served) -> None:
    import socket

    with socket.create_connection(("127.0.0.1", app.running.port), timeout=10) as sock:
        sock.sendall(b"GET /ping/" + KEY.encode() + b"/h\xff HTTP/1.1\r\nHost: t\r\n\r\n")
        answer = sock.recv(4096)
    assert answer.startswith(b"HTTP/1.1 4")
