"""The HTTP Lambda handler: API Gateway HTTP API events (payload 2.0) in, the core's answers
out, state in (mocked) DynamoDB, secrets from (mocked) SSM."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

import handlers.http
from handlers.http import handler
from reaper.channels.base import ChannelOptions
from tests.aws_support import Account, aws_account, http_event, json_lines
from tests.fakes.bark import BarkFake
from tests.heartbeat_support import silent_server

PING_KEY = "ping-key-lambda-7Qx"
ADMIN_KEY = "admin-key-lambda-9Zr"


@pytest.fixture
def account(monkeypatch: pytest.MonkeyPatch) -> Iterator[Account]:
    with aws_account(monkeypatch) as account:
        account.put_secret("REAPER_PING_KEY", PING_KEY)
        account.put_secret("REAPER_ADMIN_KEY", ADMIN_KEY)
        yield account


def call(event: dict[str, Any]) -> dict[str, Any]:
    result = handler(event, None)
    assert set(result) == {"statusCode", "headers", "body", "isBase64Encoded"}
    return result


def body_json(result: dict[str, Any]) -> Any:
    return json.loads(result["body"])


def test_healthz(account: Account) -> None:
    result = call(http_event("GET", "/healthz", route_key="GET /healthz"))
    assert result["statusCode"] == 200
    assert body_json(result) == {"ok": True}
    assert result["headers"]["cache-control"] == "no-store"
    assert result["isBase64Encoded"] is False


def test_a_ping_creates_the_monitor_in_dynamodb(account: Account) -> None:
    result = call(http_event("GET", f"/ping/{PING_KEY}/trainer-1", route_key="ANY /ping/{proxy+}"))
    assert (result["statusCode"], result["body"].strip()) == (200, "OK")
    monitor = account.store().get_monitor("trainer-1")
    assert monitor is not None
    assert monitor.last_ping_kind == "ping"


def test_a_base64_post_body_becomes_the_last_message(account: Account) -> None:
    message = "epoch 3/10 loss=0.42 ✓"
    event = http_event(
        "POST", f"/ping/{PING_KEY}/trainer-2/fail", body=message.encode(), base64_body=True
    )
    assert call(event)["statusCode"] == 200
    monitor = account.store().get_monitor("trainer-2")
    assert monitor is not None
    assert (monitor.status, monitor.last_message) == ("down", message)


def test_a_body_over_a_megabyte_is_413(account: Account) -> None:
    event = http_event(
        "POST", f"/ping/{PING_KEY}/big", body=b"x" * (1024 * 1024 + 10), base64_body=True
    )
    assert call(event)["statusCode"] == 413
    assert account.store().get_monitor("big") is None


def test_an_alert_over_16_kb_is_413(account: Account) -> None:
    event = http_event("POST", f"/alert/{PING_KEY}", body=json.dumps({"text": "y" * 17000}))
    assert call(event)["statusCode"] == 413


def test_a_wrong_key_answers_exactly_like_an_unknown_route(account: Account) -> None:
    wrong = call(http_event("GET", "/ping/not-the-key/trainer-1"))
    unknown = call(http_event("GET", "/no/such/route"))
    assert wrong == unknown
    assert wrong["statusCode"] == 404
    assert account.store().list_monitors() == []


def test_head_answers_without_a_body(account: Account) -> None:
    result = call(http_event("HEAD", f"/ping/{PING_KEY}/trainer-3"))
    assert (result["statusCode"], result["body"]) == (200, "")
    assert "content-length" not in result["headers"], "API Gateway sets the length"


def test_status_needs_the_admin_key(account: Account) -> None:
    call(http_event("GET", f"/ping/{PING_KEY}/trainer-4"))
    assert call(http_event("GET", "/status"))["statusCode"] == 401
    wrong = {"authorization": f"Bearer {PING_KEY}"}
    assert call(http_event("GET", "/status", headers=wrong))["statusCode"] == 401
    right = {"authorization": f"Bearer {ADMIN_KEY}"}
    result = call(http_event("GET", "/status", headers=right))
    assert result["statusCode"] == 200
    assert [m["host"] for m in body_json(result)["monitors"]] == ["trainer-4"]


def test_an_alert_reaches_bark(account: Account) -> None:
    with BarkFake() as bark:
        account.put_secret("BARK_URL", bark.bark_url)
        event = http_event(
            "POST",
            f"/alert/{PING_KEY}",
            body=json.dumps({"title": "job failed", "body": "exit 3", "level": "critical"}),
            headers={"content-type": "application/json"},
        )
        result = call(event)
        assert result["statusCode"] == 200, result["body"]
        assert [push["title"] for push in bark.pushes] == ["job failed"]
        # The same alert again within a minute: de-duplicated through DynamoDB.
        again = call(event)
        assert body_json(again).get("deduplicated") is True
        assert len(bark.pushes) == 1


def test_a_hanging_channel_is_answered_before_the_function_times_out(
    account: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The function's timeout is 10 s: a channel that does not answer must not outlive it
    (the answer would be lost, and the claim made before sending would swallow the retry)."""
    tiny = ChannelOptions(timeout=0.2, max_attempts=1, deadline=0.3)
    monkeypatch.setattr(handlers.http, "REQUEST_CHANNEL_OPTIONS", tiny)
    with silent_server() as url:
        account.put_secret("BARK_URL", f"{url}/devicekey123")
        started = time.monotonic()
        result = call(http_event("POST", f"/alert/{PING_KEY}", body='{"text": "job failed"}'))
        assert time.monotonic() - started < 3  # the channel deadline, not the 6 s backstop
    assert result["statusCode"] == 502
    [channel] = body_json(result)["channels"]
    assert channel["channel"] == "bark" and "no answer within 0.2s" in channel["detail"]


def test_a_failed_alert_is_sent_again_by_another_container(account: Account) -> None:
    """The dedup claim lives in DynamoDB; so does the mark that releases it after a failure."""
    with BarkFake() as bark:
        account.put_secret("BARK_URL", bark.bark_url)
        event = http_event("POST", f"/alert/{PING_KEY}", body='{"text": "disk full"}')
        bark.fail(status=500, times=2)  # both attempts
        assert call(event)["statusCode"] == 502
        handlers.http.reset()  # the retry lands in another container
        retry = call(event)
        assert (retry["statusCode"], body_json(retry)["delivered"]) == (200, True)
        assert body_json(call(event)) == {"deduplicated": True}
        assert [push["title"] for push in bark.pushes] == ["disk full"]


def test_no_channel_is_503(account: Account) -> None:
    event = http_event("POST", f"/alert/{PING_KEY}", body='{"text": "hello"}')
    assert call(event)["statusCode"] == 503


def test_the_ping_key_never_reaches_the_log(
    account: Account, capsys: pytest.CaptureFixture[str]
) -> None:
    call(http_event("POST", f"/ping/{PING_KEY}/trainer-5/fail", body="boom"))
    call(http_event("GET", f"/ping/{PING_KEY}/bad host!"))
    logged = capsys.readouterr().err
    assert PING_KEY not in logged
    assert ADMIN_KEY not in logged
    json_lines(logged)  # on Lambda every log line is one JSON object


def test_a_binary_answer_is_base64(account: Account) -> None:
    from handlers.http import to_result
    from reaper.interfaces.api import Response

    result = to_result(Response(200, b"\xff\xfe\x00", {"content-type": "application/octet"}))
    assert result["isBase64Encoded"] is True
    assert base64.b64decode(result["body"]) == b"\xff\xfe\x00"


@pytest.mark.parametrize(
    "event",
    [
        {},
        {"requestContext": {}},
        {"version": "1.0", "httpMethod": "GET", "path": "/healthz"},
        "not a mapping",
    ],
)
def test_an_event_that_is_not_an_http_request_is_400(account: Account, event: Any) -> None:
    result = handler(event, None)
    assert result["statusCode"] == 400
    assert result["body"].startswith("bad request:")


def test_invalid_base64_is_400(account: Account) -> None:
    event = http_event("POST", f"/ping/{PING_KEY}/h", body="x")
    event.update(body="%%%not-base64", isBase64Encoded=True)
    assert handler(event, None)["statusCode"] == 400


def test_a_configuration_error_is_503_not_an_exception(
    account: Account, capsys: pytest.CaptureFixture[str]
) -> None:
    account.put_secret("REAPER_ADMIN_KEY", "has spaces in it")
    result = call(http_event("GET", "/healthz"))
    assert result["statusCode"] == 503
    assert "traceback" not in result["body"].lower()
    [line] = [e for e in json_lines(capsys.readouterr().err) if e.get("function") == "http"]
    assert line["result"] == "config_error"
    assert line["error"].startswith("/reaper/test/REAPER_ADMIN_KEY:")
    assert "has spaces in it" not in json.dumps(line)


def test_a_function_url_event_works_the_same(account: Account) -> None:
    """A Lambda function URL sends payload 2.0 too (docs/aws.md: the alternative)."""
    event = http_event("POST", f"/ping/{PING_KEY}/via-url", body="hello")
    event["requestContext"].update(
        accountId="anonymous",
        apiId="abcdefghijklmnopqrstuvwxyz",
        domainName="abcdefghijklmnopqrstuvwxyz.lambda-url.us-east-1.on.aws",
        domainPrefix="abcdefghijklmnopqrstuvwxyz",
    )
    event.update(pathParameters=None, stageVariables=None)
    assert call(event)["statusCode"] == 200
    monitor = account.store().get_monitor("via-url")
    assert monitor is not None and monitor.last_message == "hello"


@pytest.mark.parametrize(("provider_key", "retired"), [(True, False), (False, True)])
def test_bye_of_a_provider_host_waits_for_the_provider(
    account: Account, provider_key: bool, retired: bool
) -> None:
    """The HTTP function reads the provider keys too: with a RunPod key configured, a `bye`
    from runpod-<id> only marks the monitor (the watch pass retires it once RunPod shows the
    pod gone), so a leaked ping key cannot silence another pod's watchdog."""
    if provider_key:
        account.put_secret("RUNPOD_API_KEY", "main=rp-key-for-bye-0123456789")
    call(http_event("GET", f"/ping/{PING_KEY}/runpod-abc123"))
    assert call(http_event("POST", f"/ping/{PING_KEY}/runpod-abc123/bye"))["statusCode"] == 200
    monitor = account.store().get_monitor("runpod-abc123")
    assert monitor is not None and monitor.bye_at is not None
    assert (monitor.status == "retired") is retired
