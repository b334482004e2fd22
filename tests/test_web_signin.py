"""Signing in to the status page over plain HTTP on loopback: the admin key form, the session
cookie and its flags, forged and expired cookies, the login flood, one-time sign-in links, and
every bad input answered with a one-line 4xx or the sign-in page — never a 5xx, never a key."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from reaper import log
from reaper.interfaces.web.session import (
    SESSION_COOKIE,
    create_login_link,
    start_session,
)
from tests.heartbeat_support import ADMIN, KEY, Served, make_settings, raw_request, served
from tests.log_support import json_log
from tests.web_support import fleet


class captured_log:
    """The log lines written inside the block, as a callable."""

    def __enter__(self) -> Callable[[], list[str]]:
        self._ctx = json_log()
        stream = self._ctx.__enter__()
        return lambda: stream.getvalue().splitlines()

    def __exit__(self, *exc: object) -> None:
        self._ctx.__exit__(None, None, None)


def _cookie(response: httpx.Response) -> str:
    return response.headers["set-cookie"]


def _session_value(response: httpx.Response) -> str:
    return _cookie(response).split(";")[0].split("=", 1)[1]


def test_the_page_without_a_session_is_the_sign_in_page_and_reveals_nothing(
    tmp_path: Path,
) -> None:
    with fleet(tmp_path) as f:
        response = f.http.get("/")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert '<form method="post" action="/login">' in response.text
    assert "script-src" not in response.headers["content-security-policy"]
    assert "default-src 'none'" in response.headers["content-security-policy"]
    assert response.headers["referrer-policy"] == "same-origin"
    assert response.headers["cache-control"] == "no-store"
    for word in ("llm-finetune", "old-run", "trainer-box", "eval-harness", "$", "Watchdogs"):
        assert word not in response.text


def test_the_admin_key_signs_in_with_a_strict_httponly_cookie(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        response = app.http.post("/login", data={"key": ADMIN})
        assert response.status_code == 303 and response.headers["location"] == "/"
        cookie = _cookie(response)
        parts = [p.strip() for p in cookie.split(";")]
        assert parts[0].startswith(f"{SESSION_COOKIE}=v1.")
        assert {"HttpOnly", "SameSite=Strict", "Path=/", "Max-Age=604800"} <= set(parts)
        assert "Secure" not in parts, "served on loopback: not Secure"
        assert ADMIN not in cookie
        page = app.http.get("/")
    assert page.status_code == 200
    assert "Watchdogs" in page.text and "Sign out" in page.text


@pytest.mark.parametrize(
    ("headers", "public_url", "secure"),
    [
        ({"host": "reaper.example.com"}, None, True),
        ({"host": "127.0.0.1:8080", "x-forwarded-proto": "https"}, None, True),
        ({"host": "localhost:8080"}, None, False),
        ({"host": "[::1]:8080"}, None, False),
        ({"host": "127.0.0.1:8080"}, "https://reaper.example.com", True),
        ({"host": "reaper.example.com"}, "http://127.0.0.1:8080", False),
    ],
)
def test_the_cookie_is_secure_except_on_loopback(
    tmp_path: Path, headers: dict[str, str], public_url: str | None, secure: bool
) -> None:
    with served(make_settings(tmp_path, public_url=public_url)) as app:
        response = app.http.post("/login", data={"key": ADMIN}, headers=headers)
    assert response.status_code == 303
    assert ("; Secure" in _cookie(response)) is secure


def test_a_wrong_key_is_the_sign_in_page_with_one_line_and_no_key_anywhere(
    tmp_path: Path,
) -> None:
    with captured_log() as lines, served(make_settings(tmp_path)) as app:
        for wrong in ("nope", KEY, ADMIN + "x", ADMIN[:-1], "", " "):
            response = app.http.post("/login", data={"key": wrong})
            assert response.status_code == 403
            assert "That is not the admin key." in response.text
            assert "set-cookie" not in response.headers
            assert ADMIN not in response.text
            assert "Watchdogs" not in response.text
            assert app.http.get("/").text.count('action="/login"') == 1
        # The key field missing altogether is a wrong key too.
        assert app.http.post("/login", data={"other": "x"}).status_code == 403
    assert all(ADMIN not in line and KEY not in line for line in lines())


def test_a_login_flood_is_429_and_even_the_right_key_waits(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        answers = [app.http.post("/login", data={"key": "guess"}).status_code for _ in range(10)]
        assert answers == [403] * 10
        flooded = app.http.post("/login", data={"key": ADMIN})
        assert flooded.status_code == 429
        assert int(flooded.headers["retry-after"]) >= 1
        assert "Too many sign-in attempts" in flooded.text
        assert "set-cookie" not in flooded.headers
        # Another address (uvicorn takes it from a proxy on loopback) has its own bucket.
        other = app.http.post(
            "/login", data={"key": ADMIN}, headers={"x-forwarded-for": "203.0.113.9"}
        )
        assert other.status_code == 303
        app.http.cookies.clear()
        assert app.http.post("/login", data={"key": ADMIN}).status_code == 429
        app.advance(seconds=60)
        assert app.http.post("/login", data={"key": ADMIN}).status_code == 303


@pytest.mark.parametrize(
    "value",
    [
        "v1.1772528400.abc.forged",
        "v1.notanumber.abc.sig",
        "v2.1.a.b",
        "garbage",
        "",
        "v1..." + "x" * 300,
        "v1.1772528400.abc.é",
    ],
)
def test_a_forged_cookie_is_the_sign_in_page(tmp_path: Path, value: str) -> None:
    with served(make_settings(tmp_path)) as app:
        cookie = f"{SESSION_COOKIE}={value}".encode()
        response = app.http.get("/", headers={"cookie": cookie})
    assert response.status_code == 200
    assert 'action="/login"' in response.text and "Watchdogs" not in response.text


def test_a_cookie_signed_under_another_admin_key_is_refused(tmp_path: Path) -> None:
    """Rotating REAPER_ADMIN_KEY signs everyone out."""
    with served(make_settings(tmp_path)) as app:
        value = start_session(app.store, "the-old-admin-key", app.clock.now())
        response = app.http.get("/", headers={"cookie": f"{SESSION_COOKIE}={value}"})
        assert "Watchdogs" not in response.text
        good = start_session(app.store, ADMIN, app.clock.now())
        assert "Watchdogs" in app.http.get("/", headers={"cookie": f"{SESSION_COOKIE}={good}"}).text


def test_a_session_expires_after_seven_days(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        value = _session_value(app.http.post("/login", data={"key": ADMIN}))
        app.http.cookies.clear()
        headers = {"cookie": f"{SESSION_COOKIE}={value}"}
        app.advance(days=7, seconds=-60)
        assert "Watchdogs" in app.http.get("/", headers=headers).text
        app.advance(seconds=61)
        assert "Watchdogs" not in app.http.get("/", headers=headers).text


def test_without_an_admin_key_every_page_route_is_the_unknown_route(tmp_path: Path) -> None:
    with served(make_settings(tmp_path, admin_key=None)) as app:
        unknown = app.http.get("/no-such-route")
        for method, path in (
            ("GET", "/"),
            ("HEAD", "/"),
            ("POST", "/login"),
            ("GET", "/login/" + "a" * 43),
            ("POST", "/login/" + "a" * 43),
            ("POST", "/keep"),
            ("POST", "/unkeep"),
            ("POST", "/logout"),
        ):
            response = app.http.request(method, path, data={"key": "x"})
            assert response.status_code == 404, (method, path)
            if method != "HEAD":
                assert response.content == unknown.content


@pytest.mark.parametrize(
    "path",
    [
        "/index.html",
        "/login/",
        "/login/short",
        "/login/" + "a" * 44,
        "/keep/x",
        "/static/x.css",
    ],
)
def test_odd_paths_under_the_root_are_the_unknown_route(tmp_path: Path, path: str) -> None:
    with served(make_settings(tmp_path)) as app:
        unknown = app.http.get("/no-such-route")
        response = app.http.get(path)
    assert response.status_code == 404 and response.content == unknown.content


def test_raw_odd_paths_are_the_unknown_route(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        port = app.running.port
        _status, unknown = raw_request(
            port, "GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        for path in ("//", "/./", "/%2e%2e/", "/login//" + "a" * 43, "/?x=<script>"):
            head = f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            status, body = raw_request(port, head)
            if path.startswith("/?"):
                assert status == 200 and b"<script>" not in body, "a query is ignored"
            else:
                assert (status, body) == (404, unknown), path


def test_the_page_routes_refuse_other_methods_with_405(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        assert app.http.post("/").status_code == 405
        assert app.http.get("/login").status_code == 405
        assert app.http.get("/keep").status_code == 405
        assert app.http.delete("/").headers["allow"] == "GET, HEAD"


@pytest.mark.parametrize(
    ("body", "content_type", "status"),
    [
        (b"key=" + b"x" * 9000, "application/x-www-form-urlencoded", 413),
        (b"x" * (2 * 1024 * 1024), "application/x-www-form-urlencoded", 413),
        (b'{"key": "x"}', "application/json", 415),
        (b"key=\xff\xfe", "application/x-www-form-urlencoded", 400),
        (b"key=%ff", "application/x-www-form-urlencoded", 400),
        (b"key=a&key=b", "application/x-www-form-urlencoded", 400),
        (b"&".join(b"f%d=1" % n for n in range(30)), "application/x-www-form-urlencoded", 400),
    ],
)
def test_a_bad_login_form_is_a_one_line_4xx(
    tmp_path: Path, body: bytes, content_type: str, status: int
) -> None:
    with served(make_settings(tmp_path)) as app:
        response = app.http.post("/login", content=body, headers={"content-type": content_type})
    assert response.status_code == status
    assert response.text.count("\n") == 1 and len(response.text) < 200
    assert "set-cookie" not in response.headers


# --- one-time sign-in links ------------------------------------------------------------------


def _link(app_settings: object, app: Served) -> str:
    return create_login_link(app.settings, app.store, app.clock.now())


def test_a_sign_in_link_shows_a_button_and_signs_in_once(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, public_url="http://127.0.0.1:8080")
    with served(settings) as app:
        link = _link(settings, app)
        assert link.startswith("http://127.0.0.1:8080/login/")
        path = link.removeprefix("http://127.0.0.1:8080")
        # A GET (a chat app's preview) spends nothing.
        for _ in range(3):
            shown = app.http.get(path)
            assert shown.status_code == 200
            assert f'action="{path}"' in shown.text and "set-cookie" not in shown.headers
        used = app.http.post(path)
        assert used.status_code == 303 and "HttpOnly" in _cookie(used)
        assert "Watchdogs" in app.http.get("/").text
        app.http.cookies.clear()
        again = app.http.post(path)
        assert again.status_code == 403 and "used already or has expired" in again.text
        assert "set-cookie" not in again.headers


def test_a_sign_in_link_expires_after_15_minutes(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, public_url="http://127.0.0.1:8080")
    with served(settings) as app:
        early = _link(settings, app).removeprefix("http://127.0.0.1:8080")
        late = _link(settings, app).removeprefix("http://127.0.0.1:8080")
        app.advance(minutes=14, seconds=59)
        assert app.http.post(early).status_code == 303
        app.http.cookies.clear()
        app.advance(seconds=1)
        assert app.http.post(late).status_code == 403


def test_a_sign_in_link_raced_from_two_browsers_signs_in_one(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, public_url="http://127.0.0.1:8080")
    with served(settings) as app:
        path = _link(settings, app).removeprefix("http://127.0.0.1:8080")
        statuses: list[int] = []
        start = threading.Barrier(6)

        def use() -> None:
            with httpx.Client(base_url=app.running.url, timeout=10) as client:
                start.wait()
                statuses.append(client.post(path).status_code)

        threads = [threading.Thread(target=use) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
    assert sorted(statuses) == [303] + [403] * 5


def test_a_made_up_link_is_refused_and_the_token_is_never_logged(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, public_url="http://127.0.0.1:8080")
    with captured_log() as lines, served(settings) as app:
        made_up = "/login/" + "b" * 43
        assert app.http.post(made_up).status_code == 403
        real = _link(settings, app).removeprefix("http://127.0.0.1:8080")
        token = real.rsplit("/", 1)[1]
        app.http.get(real)
        app.http.post(real)
    assert not any(token in line for line in lines())
    assert any("/login/***" in line for line in lines())


def test_the_store_keeps_only_the_hash_of_a_link(tmp_path: Path) -> None:
    import sqlite3

    settings = make_settings(tmp_path, public_url="https://reaper.example.com")
    with served(settings) as app:
        token = _link(settings, app).rsplit("/", 1)[1]
    rows = sqlite3.connect(settings.state.location).execute("SELECT * FROM login_tokens").fetchall()
    assert len(rows) == 1 and token not in repr(rows)


def test_sign_out_clears_the_cookie_and_needs_the_csrf_token(tmp_path: Path) -> None:
    import re

    with served(make_settings(tmp_path)) as app:
        app.http.post("/login", data={"key": ADMIN})
        page = app.http.get("/").text
        [csrf] = set(re.findall(r'name="csrf" value="([^"]+)"', page))
        refused = app.http.post("/logout", data={"csrf": "wrong"})
        assert refused.status_code == 403
        assert "Watchdogs" in app.http.get("/").text
        out = app.http.post("/logout", data={"csrf": csrf})
        assert out.status_code == 303 and "Max-Age=0" in _cookie(out)
        assert "Watchdogs" not in app.http.get("/").text


def test_login_events_name_no_secret(tmp_path: Path) -> None:
    log.register_secrets([ADMIN])
    with captured_log() as lines, served(make_settings(tmp_path)) as app:
        app.http.post("/login", data={"key": ADMIN})
        app.http.post("/login", data={"key": "wrong"})
    text = "\n".join(lines())
    assert "signin" in text and "wrong_key" in text
    assert ADMIN not in text


def test_config_error_when_a_link_has_no_public_url(tmp_path: Path) -> None:
    from reaper.settings.parse import ConfigError

    settings = make_settings(tmp_path)
    with served(settings) as app, pytest.raises(ConfigError, match="REAPER_PUBLIC_URL"):
        create_login_link(settings, app.store, app.clock.now())
