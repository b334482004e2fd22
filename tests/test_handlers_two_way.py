"""The two-way heartbeat and `/alert/<key>/<host>` through the Lambda HTTP handler, on
DynamoDB (moto): a ping that asks for JSON reads the keep of its instance and the idle limit
of its monitor, with the function's own Date; a plain ping stays `OK`; an idle warning for one
host is marked as that instance's."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any

import pytest

from handlers.http import handler
from reaper.core.monitors import SettingsChange
from reaper.core.units import iso
from reaper.passes import keeping
from tests.aws_support import Account, aws_account, client, http_event

PING_KEY = "ping-key-lambda-7Qx0123"
HOST = "runpod-abc123xyz"
PING_ROUTE = "ANY /ping/{proxy+}"


@pytest.fixture
def account(monkeypatch: pytest.MonkeyPatch) -> Iterator[Account]:
    with aws_account(monkeypatch) as account:
        account.put_secret("REAPER_PING_KEY", PING_KEY)
        yield account


def ping(accept: str) -> dict[str, Any]:
    event = http_event(
        "POST", f"/ping/{PING_KEY}/{HOST}", body="idle 3/7", headers={"accept": accept}
    )
    result: dict[str, Any] = handler(event, None)
    assert result["statusCode"] == 200
    return result


def test_a_json_ping_reads_the_keep_and_the_idle_limit(account: Account) -> None:
    assert ping("*/*")["body"].strip() == "OK"
    store = account.store()
    now = datetime.now(UTC)
    keeping.keep(
        store, "runpod:abc123xyz", now=now, until=now + timedelta(hours=1), by="t", via="t"
    )
    change = SettingsChange(at=now, given=frozenset({"idle_after"}), idle_after="never")
    store.set_monitor_settings(HOST, change)

    answered = ping("application/json")
    date = parsedate_to_datetime(answered["headers"]["date"])
    assert abs((date - now).total_seconds()) < 60
    assert json.loads(answered["body"]) == {
        "ok": True,
        "keep_until": iso(now + timedelta(hours=1)),
        "idle_after": "never",
    }
    assert ping("text/plain")["body"].strip() == "OK"


def test_an_idle_warning_for_one_host_is_marked_as_the_instances(account: Account) -> None:
    body = {"kind": "idle_soon", "text": "idle 15 min", "destroy_at": "2030-01-01T00:00:00Z"}
    bad = {"kind": "idle_soon", "text": "idle 15 min", "destroy_at": "later"}
    route = f"/alert/{PING_KEY}/{HOST}"
    refused = handler(http_event("POST", route, body=json.dumps(bad)), None)
    assert refused["statusCode"] == 400 and '"destroy_at"' in refused["body"]
    # No channel configured: the route exists and answers as /alert does (503), not 404.
    answered = handler(http_event("POST", route, body=json.dumps(body)), None)
    assert answered["statusCode"] == 503


def test_a_json_ping_reads_its_own_instance_not_the_whole_history(account: Account) -> None:
    """A JSON ping comes every minute from every instance: it reads its instance's keep by
    key (point reads), never the history of the whole fleet — the same calls with one instance
    recorded or a hundred (the whole history is a Query that grows with the fleet)."""
    store = account.store()
    now = datetime.now(UTC)
    keeping.keep(
        store, "runpod:abc123xyz", now=now, until=now + timedelta(hours=1), by="t", via="t"
    )
    ping("application/json")
    dynamodb = client("dynamodb")

    def calls_of_one_ping() -> list[str]:
        seen: list[str] = []

        def count(event_name: str, **_kwargs: Any) -> None:
            seen.append(event_name.rsplit(".", 1)[-1])

        dynamodb.meta.events.register("before-call.dynamodb", count)
        try:
            answered = json.loads(ping("application/json")["body"])
        finally:
            dynamodb.meta.events.unregister("before-call.dynamodb", count)
        assert answered["keep_until"] == iso(now + timedelta(hours=1))
        return seen

    few = calls_of_one_ping()
    for n in range(100):
        store.start_stopped_clock(f"runpod:other{n}", now)
        keeping.keep(store, f"runpod:other{n}", now=now, until=None, by="t", via="t")
    many = calls_of_one_ping()
    assert few == many, (few, many)
    assert "Query" not in few and "Scan" not in few, few
