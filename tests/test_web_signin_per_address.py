"""Sign-in throttling is per client address, never over all clients: wrong keys from other
addresses never make the owner's right key wait (under `reaper serve`, the peer address — or
what a proxy on loopback says in `X-Forwarded-For`; on Lambda, `requestContext.http.sourceIp`);
an IPv6 client is throttled by its /64; a one-time sign-in link always signs in, even from an
address that is throttled."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlencode

import pytest

from handlers.http import handler
from reaper.interfaces.ratelimit import client_network
from reaper.interfaces.web.session import create_login_link
from tests.aws_support import Account, aws_account, http_event
from tests.heartbeat_support import ADMIN, Served, make_settings, served

PUBLIC = "http://127.0.0.1:8080"


def _from(address: str) -> dict[str, str]:
    """A request a proxy on loopback forwarded from `address` (uvicorn trusts loopback)."""
    return {"x-forwarded-for": address}


def _login(app: Served, key: str, address: str) -> int:
    app.http.cookies.clear()
    return app.http.post("/login", data={"key": key}, headers=_from(address)).status_code


def test_seventy_wrong_keys_from_other_addresses_never_lock_the_owner_out(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        strangers = [_login(app, "guess", f"198.51.100.{n}") for n in range(70)]
        assert strangers == [403] * 70
        assert _login(app, ADMIN, "203.0.113.9") == 303


def test_one_address_is_throttled_and_only_it(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        answers = [_login(app, "guess", "198.51.100.1") for _ in range(12)]
        assert answers == [403] * 10 + [429] * 2
        assert _login(app, ADMIN, "198.51.100.1") == 429, "even the right key, from there"
        assert _login(app, ADMIN, "198.51.100.2") == 303
        app.advance(seconds=60)
        assert _login(app, ADMIN, "198.51.100.1") == 303


def test_an_ipv6_client_is_throttled_by_its_slash_64(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        hopping = [_login(app, "guess", f"2001:db8:1:2::{n:x}") for n in range(1, 12)]
        assert hopping == [403] * 10 + [429]
        assert _login(app, ADMIN, "2001:db8:1:3::1") == 303, "another /64"
    assert client_network("2001:db8:1:2:aaaa::1") == "2001:db8:1:2::/64"
    assert client_network("::ffff:198.51.100.7") == "198.51.100.7"
    assert client_network("198.51.100.7") == "198.51.100.7"
    assert client_network("unknown") == "unknown"


def test_a_sign_in_link_works_from_a_throttled_address(tmp_path: Path) -> None:
    """Behind a proxy every client shares one address: a stranger's flood throttles the owner's
    key too, and the link is the way in that stays open."""
    with served(make_settings(tmp_path, public_url=PUBLIC)) as app:
        assert [_login(app, "guess", "127.0.0.1") for _ in range(11)][-1] == 429
        path = create_login_link(app.settings, app.store, app.clock.now()).removeprefix(PUBLIC)
        app.http.cookies.clear()
        used = app.http.post(path)
        assert used.status_code == 303 and "HttpOnly" in used.headers["set-cookie"]


def test_made_up_links_count_as_sign_in_attempts_but_never_block_a_real_one(
    tmp_path: Path,
) -> None:
    with served(make_settings(tmp_path, public_url=PUBLIC)) as app:
        made_up = [
            app.http.post("/login/" + f"{n:02d}" * 21 + "x", headers=_from("198.51.100.5"))
            for n in range(11)
        ]
        assert [r.status_code for r in made_up] == [403] * 10 + [429]
        assert _login(app, ADMIN, "198.51.100.5") == 429
        path = create_login_link(app.settings, app.store, app.clock.now()).removeprefix(PUBLIC)
        assert app.http.post(path, headers=_from("198.51.100.5")).status_code == 303


# --- the same on Lambda: the client is the event's sourceIp ---------------------------------

FORM = {"content-type": "application/x-www-form-urlencoded"}


@pytest.fixture
def account(monkeypatch: pytest.MonkeyPatch) -> Iterator[Account]:
    with aws_account(monkeypatch) as account:
        account.put_secret("REAPER_ADMIN_KEY", ADMIN)
        account.setenv("REAPER_PUBLIC_URL", "https://reaper.example.com")
        yield account


def _lambda_login(key: str, address: str) -> int:
    event = http_event("POST", "/login", body=urlencode({"key": key}), headers=FORM)
    event["requestContext"]["http"]["sourceIp"] = address
    return int(handler(event, None)["statusCode"])


def test_on_lambda_seventy_wrong_keys_never_lock_the_owner_out(account: Account) -> None:
    assert [_lambda_login("guess", f"198.51.100.{n}") for n in range(70)] == [403] * 70
    assert [_lambda_login("guess", "198.51.100.200") for _ in range(11)][-1] == 429
    assert _lambda_login(ADMIN, "203.0.113.9") == 303


def test_on_lambda_a_link_works_from_a_throttled_address(account: Account) -> None:
    from handlers import runtime

    assert [_lambda_login("guess", "203.0.113.7") for _ in range(11)][-1] == 429
    link = create_login_link(runtime.load(), account.store(), datetime.now(UTC))
    path = link.removeprefix("https://reaper.example.com")
    assert handler(http_event("POST", path, source_ip="203.0.113.7"), None)["statusCode"] == 303
