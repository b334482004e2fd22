"""The Lambda functions on a DynamoDB table that throttles (moto, with DynamoDB's own
throttling errors injected into the client every function uses): the HTTP function answers
503 with `Retry-After` and `/healthz` names the cause; the scheduled functions — reap
included — answer `{"ok": false, "store": ...}` and never raise (EventBridge would retry the
invocation, and a reap run twice could act twice). The cause is logged at ERROR and alerted
once per episode of the container, and the first invocation that stores again closes it. A
conditional write refused (another invocation holds the reap lease) is no failure at all."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from handlers import digest, reap, watch
from handlers import http as http_handler
from tests import aws_support
from tests.aws_support import Account, aws_account, http_event, json_lines, scheduled_event

PING_KEY = "ping-key-throttle-4Kd"
RUNPOD_KEY = "rp-throttle-key-0123456789"


class Throttle:
    """Makes the shared DynamoDB client fail as DynamoDB does: every call (or only `only`)
    raises `code` until `stop()`."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.code: str | None = None
        self.only: set[str] | None = None
        client = aws_support.client("dynamodb")
        call = client._make_api_call

        def maybe_refused(operation: str, params: dict[str, Any]) -> Any:
            if self.code is not None and (self.only is None or operation in self.only):
                error = {"Code": self.code, "Message": "Rate of requests exceeds the allowed"}
                raise ClientError({"Error": error}, operation)
            return call(operation, params)

        monkeypatch.setattr(client, "_make_api_call", maybe_refused)

    def start(self, code: str, only: set[str] | None = None) -> None:
        self.code, self.only = code, only

    def stop(self) -> None:
        self.code = None


@pytest.fixture
def account(monkeypatch: pytest.MonkeyPatch) -> Iterator[Account]:
    with aws_account(monkeypatch) as account:
        account.put_secret("REAPER_PING_KEY", PING_KEY)
        yield account


@pytest.fixture
def throttle(account: Account, monkeypatch: pytest.MonkeyPatch) -> Throttle:
    return Throttle(monkeypatch)


def ping(host: str = "box") -> dict[str, Any]:
    return http_handler.handler(http_event("GET", f"/ping/{PING_KEY}/{host}"), None)


def said(err: str, event: str) -> list[dict[str, Any]]:
    return [e for e in json_lines(err) if e.get("event") == event]


@pytest.mark.parametrize("code", ["ProvisionedThroughputExceededException", "ThrottlingException"])
def test_the_http_function_answers_503_while_dynamodb_throttles(
    account: Account, throttle: Throttle, capsys: pytest.CaptureFixture[str], code: str
) -> None:
    assert ping()["statusCode"] == 200
    throttle.start(code)
    refused = [ping(), ping("other")]
    health = http_handler.handler(http_event("GET", "/healthz"), None)
    throttle.stop()
    back = ping()
    healthy = http_handler.handler(http_event("GET", "/healthz"), None)

    assert [r["statusCode"] for r in refused] == [503, 503]
    assert all(r["headers"]["retry-after"] == "30" for r in refused)
    assert refused[0]["body"] == "the state store is failing (throttled); retry later\n"
    assert health["statusCode"] == 503
    assert health["body"] == '{"ok": false, "store": "throttled"}'
    assert back["statusCode"] == 200 and healthy["statusCode"] == 200
    err = capsys.readouterr().err
    [failing] = said(err, "store_failing")
    assert failing["level"] == "error" and failing["backend"] == "dynamodb"
    assert code in failing["error"]
    assert len(said(err, "store_recovered")) == 1
    # No channel is configured: the alert is on record in the log, once.
    alerted = [e for e in said(err, "alert") if e["alert_event"] == "store_failing"]
    assert len(alerted) == 1 and alerted[0]["level"] == "critical"
    assert PING_KEY not in err


def test_the_reap_function_never_raises_for_a_throttled_table(
    account: Account, throttle: Throttle, capsys: pytest.CaptureFixture[str]
) -> None:
    account.put_secret("RUNPOD_API_KEY", f"main={RUNPOD_KEY}")
    account.setenv("RUNPOD_API_URL", "http://127.0.0.1:9/v2")  # never reached
    throttle.start("ProvisionedThroughputExceededException")
    first = reap.handler(scheduled_event(), None)
    second = reap.handler(scheduled_event(), None)
    throttle.stop()
    err = capsys.readouterr().err
    for result in (first, second):
        assert result["ok"] is False
        assert result["exit_code"] == 1
        assert result["store"] == "throttled"
        assert result["error"].startswith("the state store is failing (throttled): DynamoDB")
    assert len(said(err, "store_failing")) == 1
    assert RUNPOD_KEY not in err


@pytest.mark.parametrize("function", [watch.handler, digest.handler])
def test_the_other_scheduled_functions_never_raise_either(
    account: Account, throttle: Throttle, function: Any
) -> None:
    throttle.start("ThrottlingException")
    result = function(scheduled_event(), None)
    assert result["ok"] is False and result["store"] == "throttled"


def test_a_refused_conditional_write_of_the_lease_is_another_pass_not_a_failure(
    account: Account, throttle: Throttle, capsys: pytest.CaptureFixture[str]
) -> None:
    account.put_secret("RUNPOD_API_KEY", f"main={RUNPOD_KEY}")
    account.setenv("RUNPOD_API_URL", "http://127.0.0.1:9/v2")
    throttle.start("ConditionalCheckFailedException", only={"PutItem"})
    result = reap.handler(scheduled_event(), None)
    assert result["ok"] is True and result["exit_code"] == 0
    assert said(capsys.readouterr().err, "store_failing") == []


def test_a_bug_still_raises(account: Account, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a store failure is answered: anything else is a bug, raised (and, with the
    schedule's retries set to zero in serverless.yml, run once)."""

    async def broken(*args: Any, **kwargs: Any) -> None:
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(watch, "run", broken)
    with pytest.raises(ZeroDivisionError):
        watch.handler(scheduled_event(), None)
