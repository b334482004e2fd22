"""The Lambda HTTP handler serves the monitor routes as `reaper serve` does: `/monitors/<host>`
with the admin Bearer, `/ping/.../log`, and the push query (`rawQueryString`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from handlers.http import handler
from tests.aws_support import Account, aws_account, http_event

PING_KEY = "ping-key-lambda-7Qx"
ADMIN_KEY = "admin-key-lambda-9Zr"
AUTH = {"authorization": f"Bearer {ADMIN_KEY}"}


@pytest.fixture
def account(monkeypatch: pytest.MonkeyPatch) -> Iterator[Account]:
    with aws_account(monkeypatch) as account:
        account.put_secret("REAPER_PING_KEY", PING_KEY)
        account.put_secret("REAPER_ADMIN_KEY", ADMIN_KEY)
        yield account


def call(method: str, path: str, query: str = "", **kwargs: Any) -> dict[str, Any]:
    event = http_event(method, path, **kwargs)
    event["rawQueryString"] = query
    result: dict[str, Any] = handler(event, None)
    return result


def test_put_get_and_delete_a_monitor(account: Account) -> None:
    body = json.dumps({"timeout": "2h", "grace": "10m"})
    put = call("PUT", "/monitors/trainer", body=body, headers=AUTH)
    assert put["statusCode"] == 200, put["body"]
    assert json.loads(put["body"])["created"] is True
    assert call("GET", f"/ping/{PING_KEY}/trainer")["statusCode"] == 200
    assert call("POST", f"/ping/{PING_KEY}/trainer/log", body="saved")["statusCode"] == 200
    got = json.loads(call("GET", "/monitors/trainer", headers=AUTH)["body"])
    assert got["monitor"]["timeout"] == 7200 and got["monitor"]["grace"] == 600
    assert [(e["kind"], e["body"]) for e in got["events"]] == [("ping", ""), ("log", "saved")]
    assert got["events"][0]["client"] == "203.0.113.7"
    monitor = account.store().get_monitor("trainer")
    assert monitor is not None and monitor.timeout == timedelta(hours=2)
    assert call("DELETE", "/monitors/trainer", headers=AUTH)["statusCode"] == 200
    assert account.store().get_monitor("trainer") is None
    assert account.store().monitor_log("trainer") == []


def test_bad_input_and_keys(account: Account) -> None:
    wrong = call("GET", "/monitors/trainer", headers={"authorization": "Bearer nope"})
    assert wrong["statusCode"] == 401
    bad = call("PUT", "/monitors/trainer", body='{"timeout": "5s"}', headers=AUTH)
    assert bad["statusCode"] == 400 and "timeout: expected 1m to 365d" in bad["body"]
    unknown = call("PUT", "/monitors/trainer", body='{"period": "1h"}', headers=AUTH)
    assert unknown["statusCode"] == 400 and "unknown field 'period'" in unknown["body"]
    assert account.store().get_monitor("trainer") is None


def test_the_push_query_reaches_the_core(account: Account) -> None:
    call("GET", f"/ping/{PING_KEY}/kuma")
    down = call("GET", f"/ping/{PING_KEY}/kuma", query="status=down&msg=disk%20full")
    assert down["statusCode"] == 200
    monitor = account.store().get_monitor("kuma")
    assert monitor is not None and monitor.status == "down"
    assert monitor.last_message == "disk full"
    odd = call("GET", f"/ping/{PING_KEY}/kuma", query="status=maybe")
    assert odd["statusCode"] == 400
