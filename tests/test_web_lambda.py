"""The status page on Lambda: the same routes through the HTTP handler, state in (mocked)
DynamoDB — cookies in payload 2.0's `cookies` lists both ways, a sign-in link spent once, a
keep written to the table."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

import pytest

from handlers.http import handler
from reaper.core.models import Instance, Listing
from reaper.core.snapshot import AccountSnapshot, Snapshot
from reaper.interfaces.web.session import create_login_link
from tests.aws_support import Account, aws_account, http_event

ADMIN_KEY = "admin-key-lambda-9Zr"
FORM = {"content-type": "application/x-www-form-urlencoded"}


@pytest.fixture
def account(monkeypatch: pytest.MonkeyPatch) -> Iterator[Account]:
    with aws_account(monkeypatch) as account:
        account.put_secret("REAPER_ADMIN_KEY", ADMIN_KEY)
        account.setenv("REAPER_PUBLIC_URL", "https://reaper.example.com")
        yield account


def _event(method: str, path: str, *, cookies: list[str] | None = None, **kw: Any) -> Any:
    event = http_event(method, path, **kw)
    if cookies:
        event["cookies"] = cookies
    return event


def _sign_in() -> str:
    result = handler(
        _event("POST", "/login", body=urlencode({"key": ADMIN_KEY}), headers=FORM), None
    )
    assert result["statusCode"] == 303
    assert "set-cookie" not in result["headers"]
    [cookie] = result["cookies"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Secure" in cookie
    return cookie.split(";")[0]


def test_sign_in_and_see_the_page_from_dynamodb(account: Account) -> None:
    now = datetime.now(UTC)
    store = account.store()
    pod = Instance(
        provider="runpod",
        account="main",
        id="pod-lambda-1",
        name="lambda-<b>pod</b>",
        state="running",
        raw_status="RUNNING",
        cost_per_hour=2.5,
    )
    store.record_listing(Listing(provider="runpod", account="main", at=now, instances=[pod]))
    store.record_snapshot(
        Snapshot(
            at=now,
            accounts=[
                AccountSnapshot(
                    provider="runpod", account="main", running_per_hour=2.5, balance=10.0
                )
            ],
        )
    )
    anonymous = handler(_event("GET", "/"), None)
    assert anonymous["statusCode"] == 200 and "lambda-" not in anonymous["body"]
    cookie = _sign_in()
    page = handler(_event("GET", "/", cookies=[cookie, "other=1"]), None)
    assert page["statusCode"] == 200
    assert "lambda-&lt;b&gt;pod&lt;/b&gt;" in page["body"] and "$2.50/h" in page["body"]
    assert "runway 4h" in page["body"]
    csrf = re.search(r'name="csrf" value="([^"]+)"', page["body"])
    assert csrf is not None


def test_a_keep_from_the_page_on_lambda(account: Account) -> None:
    now = datetime.now(UTC)
    store = account.store()
    pod = Instance(
        provider="runpod",
        account="main",
        id="pod-stopped-1",
        name="stopped-one",
        state="stopped",
        raw_status="EXITED",
        cost_per_hour=0.05,
    )
    store.record_listing(Listing(provider="runpod", account="main", at=now, instances=[pod]))
    cookie = _sign_in()
    page = handler(_event("GET", "/", cookies=[cookie]), None)["body"]
    [csrf] = set(re.findall(r'name="csrf" value="([^"]+)"', page))
    body = urlencode({"instance": "runpod:pod-stopped-1", "for": "7d", "csrf": csrf})
    refused = handler(
        _event("POST", "/keep", cookies=[cookie], body=urlencode({"instance": "x"}), headers=FORM),
        None,
    )
    assert refused["statusCode"] == 403
    kept = handler(_event("POST", "/keep", cookies=[cookie], body=body, headers=FORM), None)
    assert kept["statusCode"] == 303
    assert store.history().kept["runpod:pod-stopped-1"].by == "status page"


def test_a_sign_in_link_works_once_on_lambda(account: Account) -> None:
    from handlers import runtime

    settings = runtime.load()
    link = create_login_link(settings, account.store(), datetime.now(UTC))
    path = link.removeprefix("https://reaper.example.com")
    assert handler(_event("GET", path), None)["statusCode"] == 200
    first = handler(_event("POST", path), None)
    assert first["statusCode"] == 303 and first["cookies"]
    assert handler(_event("POST", path), None)["statusCode"] == 403


def test_a_page_view_is_the_same_few_dynamodb_calls_whatever_the_fleet(account: Account) -> None:
    """A fixed handful of reads per view (one Query per partition), not one per instance,
    monitor or snapshot: a fleet ten times larger costs the same calls."""
    from handlers import runtime
    from reaper.core.models import Monitor

    store = account.store()
    now = datetime.now(UTC)
    cookie = _sign_in()

    def fleet(size: int) -> None:
        pods = [
            Instance(
                provider="runpod",
                account="main",
                id=f"pod-{n}",
                name=f"pod {n}",
                state="running" if n % 2 else "stopped",
                raw_status="RUNNING" if n % 2 else "EXITED",
                cost_per_hour=0.5,
            )
            for n in range(size)
        ]
        store.record_listing(Listing(provider="runpod", account="main", at=now, instances=pods))
        for n in range(size):
            store.put_monitor(Monitor(host=f"job-{n}", status="up", created_at=now))
            store.record_snapshot(Snapshot(at=now, accounts=[]))

    def calls_of_one_view() -> list[str]:
        [dynamodb] = [s for s in runtime._stores.values()]
        seen: list[str] = []

        def count(event_name: str, **_kwargs: Any) -> None:
            seen.append(event_name.rsplit(".", 1)[-1])

        dynamodb._client.meta.events.register("before-call.dynamodb", count)
        try:
            page = handler(_event("GET", "/", cookies=[cookie]), None)
        finally:
            dynamodb._client.meta.events.unregister("before-call.dynamodb", count)
        assert page["statusCode"] == 200
        return seen

    fleet(5)
    small = calls_of_one_view()
    fleet(50)
    large = calls_of_one_view()
    assert small == large, (small, large)
    assert 0 < len(small) <= 8, small
