"""State-changing requests check `Origin` against REAPER_PUBLIC_URL's origin when it is set:
`/act` POSTs, `/login`, `/login/<token>`, `/logout` and the page's forms. A DNS-rebinding pair —
a page of evil.example whose name now resolves to this server, so that its POST names
evil.example as both `Host` and `Origin` and fetch metadata says same-origin — is refused, and
nothing it sent is applied. Without REAPER_PUBLIC_URL the `Host` check of before stands."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import pytest

from handlers.http import handler
from reaper.interfaces.web.origin import origin_of, same_origin
from reaper.interfaces.web.session import SESSION_COOKIE, create_login_link
from tests.aws_support import Account, aws_account, http_event
from tests.heartbeat_support import ADMIN
from tests.phone_support import link_path, phone
from tests.web_support import csrf_of, fleet, page_of

PUBLIC = "https://reaper.example.com"
OWN = {"Origin": PUBLIC, "Sec-Fetch-Site": "same-origin"}
# The attacker's page, served from this server under the attacker's name.
REBOUND = {"Host": "evil.example", "Origin": "http://evil.example", "Sec-Fetch-Site": "same-origin"}
# The same page hiding its origin (Referrer-Policy: no-referrer).
REBOUND_HIDDEN = {**REBOUND, "Origin": "null"}


@pytest.mark.parametrize(
    ("headers", "public_url", "allowed"),
    [
        (OWN, PUBLIC, True),
        ({"Origin": "https://REAPER.example.com:443"}, PUBLIC, True),
        (REBOUND, PUBLIC, False),
        (REBOUND_HIDDEN, PUBLIC, False),
        ({**REBOUND_HIDDEN, "Host": "reaper.example.com"}, PUBLIC, True),
        ({"Origin": "http://reaper.example.com"}, PUBLIC, False),
        ({"Origin": "https://reaper.example.com.evil.example"}, PUBLIC, False),
        ({"Host": "reaper.example.com"}, PUBLIC, True),  # no Origin: the ntfy app, curl
        ({"Origin": "null"}, PUBLIC, False),
        ({"Origin": PUBLIC, "Sec-Fetch-Site": "cross-site"}, PUBLIC, False),
        # Unset: the request's own Host decides, as before (a rebinding pair passes).
        (REBOUND, None, True),
        ({"Host": "127.0.0.1:8080", "Origin": "http://127.0.0.1:8080"}, None, True),
        ({"Host": "127.0.0.1:8080", "Origin": "https://evil.example"}, None, False),
        ({"Host": "", "Origin": "not a url"}, None, False),
        ({"Origin": "null"}, None, False),
        ({}, None, True),
    ],
)
def test_same_origin(headers: dict[str, str], public_url: str | None, allowed: bool) -> None:
    lowered = {name.lower(): value for name, value in headers.items()}
    assert same_origin(lowered, public_url) is allowed


def test_origins_are_compared_without_default_ports() -> None:
    assert origin_of("https://Reaper.Example.com:443/prod/") == "https://reaper.example.com"
    assert origin_of("http://127.0.0.1:8080") == "http://127.0.0.1:8080"
    assert origin_of("http://[::1]:80") == "http://[::1]"
    assert origin_of("null") is None and origin_of("https://x:99999") is None


def _cookie(value: str) -> dict[str, str]:
    return {"cookie": f"{SESSION_COOKIE}={value}"}


def test_the_forms_sign_in_and_sign_out_refuse_a_rebinding_pair(tmp_path: Path) -> None:
    with fleet(tmp_path, public_url=PUBLIC) as f:
        # The cookie is Secure (an https public URL): sent by hand over loopback's http.
        signed_in = f.http.post("/login", data={"key": ADMIN}, headers=OWN)
        assert signed_in.status_code == 303
        value = signed_in.headers["set-cookie"].split(";")[0].split("=", 1)[1]
        f.http.cookies.clear()
        page = f.http.get("/", headers=_cookie(value)).text
        csrf, key = csrf_of(page), f"runpod:{f.stopped_id}"

        rebound_login = f.http.post("/login", data={"key": ADMIN}, headers=REBOUND)
        assert rebound_login.status_code == 403 and "set-cookie" not in rebound_login.headers
        for headers in (REBOUND, REBOUND_HIDDEN):
            keep = f.http.post(
                "/keep",
                data={"instance": key, "for": "1d", "csrf": csrf},
                headers={**headers, **_cookie(value)},
            )
            assert keep.status_code == 403, keep.text
            pause = f.http.post(
                "/pause",
                data={"host": "trainer-box", "csrf": csrf},
                headers={**headers, **_cookie(value)},
            )
            assert pause.status_code == 403
            out = f.http.post("/logout", data={"csrf": csrf}, headers={**headers, **_cookie(value)})
            assert out.status_code == 403
        assert f.app.store.history().kept == {} and f.app.store.action_log() == []
        monitor = f.app.store.get_monitor("trainer-box")
        assert monitor is not None and not monitor.paused
        assert "Watchdogs" in f.http.get("/", headers=_cookie(value)).text, "still signed in"

        kept = f.http.post(
            "/keep",
            data={"instance": key, "for": "1d", "csrf": csrf},
            headers={**OWN, **_cookie(value)},
        )
        assert kept.status_code == 303 and key in f.app.store.history().kept


def test_a_sign_in_link_refuses_a_rebinding_pair_and_stays_unspent(tmp_path: Path) -> None:
    with fleet(tmp_path, public_url=PUBLIC) as f:
        path = create_login_link(f.app.settings, f.app.store, f.app.clock.now()).removeprefix(
            PUBLIC
        )
        refused = f.http.post(path, headers=REBOUND)
        assert refused.status_code == 403 and "set-cookie" not in refused.headers
        assert f.http.post(path, headers=OWN).status_code == 303


def test_an_action_link_refuses_a_rebinding_pair(tmp_path: Path) -> None:
    with phone(tmp_path, telegram=False, ntfy=True, public_url=PUBLIC) as p:
        assert p.ntfy is not None
        p.w.runpod.add_pod(status="EXITED", name="trainer-7")
        p.warn()
        [published] = [x for x in p.ntfy.published if "will be terminated" in x.payload["title"]]
        path = link_path(published.actions[0]["url"])
        with p.served() as app:
            for headers in (REBOUND, REBOUND_HIDDEN):
                refused = app.http.post(path, headers=headers)
                assert refused.status_code == 403 and refused.text == (
                    "refused: a POST from another site\n"
                )
            assert p.actions() == []
            assert app.http.post(path, headers=OWN).status_code == 200, "the link still works"
        assert len(p.actions()) == 1


def test_without_a_public_url_the_host_check_stands(tmp_path: Path) -> None:
    with fleet(tmp_path) as f:
        foreign = f.http.post(
            "/login", data={"key": ADMIN}, headers={"Origin": "https://evil.example"}
        )
        assert foreign.status_code == 403
        assert f.http.post("/login", data={"key": ADMIN}).status_code == 303
        assert "Watchdogs" in page_of(f)


# --- on Lambda ------------------------------------------------------------------------------


@pytest.fixture
def account(monkeypatch: pytest.MonkeyPatch) -> Iterator[Account]:
    with aws_account(monkeypatch) as account:
        account.put_secret("REAPER_ADMIN_KEY", ADMIN)
        account.setenv("REAPER_PUBLIC_URL", PUBLIC)
        yield account


def test_on_lambda_a_rebinding_pair_cannot_sign_in(account: Account) -> None:
    form = {"content-type": "application/x-www-form-urlencoded"}
    body = urlencode({"key": ADMIN})
    rebound = {name.lower(): value for name, value in REBOUND.items()}
    refused = handler(http_event("POST", "/login", body=body, headers={**form, **rebound}), None)
    assert refused["statusCode"] == 403 and "cookies" not in refused
    own = {name.lower(): value for name, value in OWN.items()}
    signed_in = handler(http_event("POST", "/login", body=body, headers={**form, **own}), None)
    assert signed_in["statusCode"] == 303 and signed_in["cookies"]
