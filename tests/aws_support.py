"""A mocked AWS account (moto) laid out the way serverless.yml deploys reaper: the DynamoDB table
and the SSM parameter path, and the environment the functions see. Shared by the handler and
AWS tests.

Events are the real shapes AWS sends: `scheduled_event()` is EventBridge's, `http_event()` is an
API Gateway HTTP API's (payload format 2.0, which Lambda function URLs send too).
"""

from __future__ import annotations

import base64
import itertools
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3
import pytest
from moto import mock_aws

from handlers import http as http_handler
from handlers import runtime
from reaper import log
from reaper.app import ssm as secrets
from reaper.store import dynamodb
from reaper.store.dynamodb import DynamoDBStore, create_table

REGION = "us-east-1"
PREFIX = "/reaper/test/"
AWS_ENV = {
    # Fake credentials and a region, so that nothing can reach a real account.
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": REGION,
    "AWS_REGION": REGION,
}
# Every variable a function may read, cleared so the developer's own environment (or .env)
# cannot leak into a test.
CONTRACT_VARIABLES = (
    *secrets.SECRET_VARIABLES,
    "RUNPOD_API_URL",
    "RUNPOD_GRAPHQL_URL",
    "VAST_API_URL",
    "TELEGRAM_API_URL",
    "TELEGRAM_ALLOWED_USERS",
    "REAPER_MODE",
    "REAPER_STOPPED_TTL",
    "REAPER_WARN_BEFORE",
    "REAPER_MAX_TERMINATIONS",
    "REAPER_PROTECT",
    "REAPER_STATE",
    "REAPER_SSM_PREFIX",
    "REAPER_REAP_EVERY",
    "REAPER_WATCH_EVERY",
    "REAPER_MAX_MONITORS",
    "REAPER_MAX_RUNTIME",
    "HEARTBEAT_TIMEOUT",
    "HEARTBEAT_REPEAT",
    "HEARTBEAT_REQUIRED",
    "HEARTBEAT_AUTO_CREATE",
    "IDLE_ALERT_AFTER",
    "BALANCE_MIN",
    "REAPER_PUBLIC_URL",
)
_names = itertools.count(1)
_clients: dict[str, Any] = {}


def atomic(client: Any) -> Any:
    """`client` with each request served one at a time, as DynamoDB serves the writes to one
    item: moto evaluates a condition and writes without a lock, so two threads can both pass
    a condition that only one of them may. With this, the race tests check reaper's conditions
    (of many concurrent uses exactly one may meet them), not moto's thread safety."""
    lock = threading.Lock()
    make_call = client._make_api_call

    def one_at_a_time(operation: str, params: dict[str, Any]) -> Any:
        with lock:
            return make_call(operation, params)

    client._make_api_call = one_at_a_time
    return client


def client(service: str) -> Any:
    """One boto3 client per service for the whole test run: making one costs more than most
    tests (it loads the service model), and a client made under one `mock_aws` keeps working
    under the next, which starts from an empty account."""
    if service not in _clients:
        _clients[service] = boto3.client(service, region_name=REGION)
    return _clients[service]


class Account:
    """One mocked AWS account with reaper's table and parameters."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.monkeypatch = monkeypatch
        self.table = f"reaper-test-{next(_names)}"
        self.dynamodb = client("dynamodb")
        self.ssm = client("ssm")
        create_table(self.table, self.dynamodb)
        monkeypatch.setenv("REAPER_STATE", f"dynamodb://{self.table}")
        monkeypatch.setenv("REAPER_SSM_PREFIX", PREFIX)

    def put_secret(self, name: str, value: str) -> None:
        """As docs/aws.md tells the user: a SecureString under the stage's path."""
        self.ssm.put_parameter(Name=PREFIX + name, Value=value, Type="SecureString", Overwrite=True)

    def setenv(self, name: str, value: str) -> None:
        self.monkeypatch.setenv(name, value)

    def store(self, *, read_only: bool = False) -> DynamoDBStore:
        return DynamoDBStore(self.table, client=self.dynamodb, read_only=read_only)

    def items(self) -> list[dict[str, Any]]:
        return list(self.dynamodb.scan(TableName=self.table)["Items"])


@contextmanager
def aws_account(monkeypatch: pytest.MonkeyPatch) -> Iterator[Account]:
    """A fresh mocked account, a clean environment and cold caches (as a new container)."""
    for name in CONTRACT_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for name, value in AWS_ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "reaper-test")
    # load_settings reads no .env on Lambda (dotenv=None); the working directory stays clean.
    # Secrets registered for redaction stay with this test (the registry is process-wide).
    monkeypatch.setattr(log, "_secrets", set(log._secrets))
    # The functions make their own clients on AWS; here they share the run's (see `client`).
    monkeypatch.setattr(dynamodb, "make_client", lambda region=None: client("dynamodb"))
    monkeypatch.setattr(secrets, "make_client", lambda: client("ssm"))
    secrets.clear_cache()
    runtime.reset()
    http_handler.reset()
    with mock_aws():
        try:
            yield Account(monkeypatch)
        finally:
            secrets.clear_cache()
            runtime.reset()
            http_handler.reset()


def scheduled_event(rule: str = "reaper-prod-ReapEventsRuleSchedule1-ABC") -> dict[str, Any]:
    """What EventBridge sends a scheduled function."""
    return {
        "version": "0",
        "id": "53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa",
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": "123456789012",
        "time": "2026-03-01T12:00:00Z",
        "region": REGION,
        "resources": [f"arn:aws:events:{REGION}:123456789012:rule/{rule}"],
        "detail": {},
    }


def http_event(
    method: str,
    path: str,
    *,
    body: bytes | str | None = None,
    headers: dict[str, str] | None = None,
    base64_body: bool = False,
    source_ip: str = "203.0.113.7",
    route_key: str = "$default",
) -> dict[str, Any]:
    """An API Gateway HTTP API request, payload format 2.0."""
    all_headers = {
        "accept": "*/*",
        "content-length": str(len(body or "")),
        "host": "abc123.execute-api.us-east-1.amazonaws.com",
        "user-agent": "curl/8.5.0",
        "x-amzn-trace-id": "Root=1-67890abc-def0123456789abcdef01234",
        "x-forwarded-for": source_ip,
        "x-forwarded-port": "443",
        "x-forwarded-proto": "https",
        **(headers or {}),
    }
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": path,
        "rawQueryString": "",
        "headers": all_headers,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "abc123",
            "domainName": "abc123.execute-api.us-east-1.amazonaws.com",
            "domainPrefix": "abc123",
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": source_ip,
                "userAgent": "curl/8.5.0",
            },
            "requestId": "JKJaXmPLvHcESHA=",
            "routeKey": route_key,
            "stage": "$default",
            "time": "01/Mar/2026:12:00:00 +0000",
            "timeEpoch": 1772366400000,
        },
        "isBase64Encoded": base64_body,
    }
    if body is not None:
        raw = body.encode() if isinstance(body, str) else body
        event["body"] = base64.b64encode(raw).decode() if base64_body else raw.decode()
    return event


def json_lines(text: str) -> list[dict[str, Any]]:
    """The log lines a function wrote (JSON on Lambda); any other line fails the test."""
    return [json.loads(line) for line in text.splitlines() if line.strip()]
