"""Signing out ends the session on the server: a copy of the cookie taken before the sign-out
(another tab, a stolen cookie, a shared machine) afterwards shows the sign-in page and a Keep
sent with it is not applied — under `reaper serve` (SQLite) and on Lambda (DynamoDB). Other
sessions go on; the store keeps a session's hash, never its cookie."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest

from handlers.http import handler
from reaper.core.models import Instance, Listing
from reaper.interfaces.web.session import SESSION_COOKIE
from tests.aws_support import Account, aws_account, http_event
from tests.heartbeat_support import ADMIN
from tests.web_support import csrf_of, fleet, page_of


def _cookie_of(client: httpx.Client) -> str:
    return f"{SESSION_COOKIE}={client.cookies[SESSION_COOKIE]}"


def test_after_sign_out_the_old_cookie_shows_nothing_and_keeps_nothing(tmp_path: Path) -> None:
    with fleet(tmp_path) as f:
        page = page_of(f)
        csrf, old = csrf_of(page), _cookie_of(f.http)
        out = f.http.post("/logout", data={"csrf": csrf})
        assert out.status_code == 303 and "Max-Age=0" in out.headers["set-cookie"]

        f.http.cookies.clear()
        shown = f.http.get("/", headers={"cookie": old})
        assert shown.status_code == 200 and 'action="/login"' in shown.text
        assert "Watchdogs" not in shown.text
        key = f"runpod:{f.stopped_id}"
        keep = f.http.post(
            "/keep", data={"instance": key, "for": "1d", "csrf": csrf}, headers={"cookie": old}
        )
        assert keep.status_code == 403 and 'action="/login"' in keep.text
        assert f.app.store.history().kept == {}
        assert f.app.store.action_log() == []
        monitor = f.http.get("/monitor/trainer-box", headers={"cookie": old})
        assert "Ping log" not in monitor.text and 'action="/login"' in monitor.text


def test_signing_out_one_browser_leaves_the_others_signed_in(tmp_path: Path) -> None:
    with fleet(tmp_path) as f:
        page = page_of(f)
        with httpx.Client(base_url=f.app.running.url, timeout=10) as other:
            assert other.post("/login", data={"key": ADMIN}).status_code == 303
            assert f.http.post("/logout", data={"csrf": csrf_of(page)}).status_code == 303
            assert "Watchdogs" in other.get("/").text
        f.http.cookies.clear()
        assert "Watchdogs" in page_of(f), "signing in again works"


def test_the_store_keeps_a_sessions_hash_not_its_cookie(tmp_path: Path) -> None:
    with fleet(tmp_path) as f:
        page_of(f)
        value = f.http.cookies[SESSION_COOKIE]
        path = f.app.settings.state.location
    rows = sqlite3.connect(path).execute("SELECT * FROM sessions").fetchall()
    nonce = value.split(".")[2]
    assert len(rows) == 1 and nonce not in repr(rows) and value not in repr(rows)


# --- on Lambda: the session in DynamoDB -----------------------------------------------------

FORM = {"content-type": "application/x-www-form-urlencoded"}


@pytest.fixture
def account(monkeypatch: pytest.MonkeyPatch) -> Iterator[Account]:
    with aws_account(monkeypatch) as account:
        account.put_secret("REAPER_ADMIN_KEY", ADMIN)
        yield account


def _call(method: str, path: str, cookie: str | None = None, **form: str) -> dict[str, Any]:
    event = http_event(method, path, body=urlencode(form) if form else None, headers=FORM)
    if cookie:
        event["cookies"] = [cookie]
    result: dict[str, Any] = handler(event, None)
    return result


def test_on_lambda_sign_out_ends_the_session(account: Account) -> None:
    pod = Instance(
        provider="runpod",
        account="main",
        id="pod-stopped-1",
        name="stopped-one",
        state="stopped",
        raw_status="EXITED",
    )
    store = account.store()
    store.record_listing(
        Listing(provider="runpod", account="main", at=datetime.now(UTC), instances=[pod])
    )
    signed_in = _call("POST", "/login", key=ADMIN)
    assert signed_in["statusCode"] == 303
    cookie = signed_in["cookies"][0].split(";")[0]
    page = _call("GET", "/", cookie)["body"]
    [csrf] = set(re.findall(r'name="csrf" value="([^"]+)"', page))
    assert _call("POST", "/logout", cookie, csrf=csrf)["statusCode"] == 303

    assert "Watchdogs" not in _call("GET", "/", cookie)["body"]
    keep = _call("POST", "/keep", cookie, instance="runpod:pod-stopped-1", csrf=csrf)
    assert keep["statusCode"] == 403
    assert store.history().kept == {}
