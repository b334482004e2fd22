"""Actions from the phone on AWS: the HTTP Lambda serves `/act/<token>` and
`/telegram/<secret>` from API Gateway events, state in (mocked) DynamoDB, secrets from (mocked)
SSM — a keep by link, a keep and a terminate-now by a webhook press, a wrong secret exactly the
unknown route."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from emulators import RunPodEmulator
from handlers.http import handler
from reaper.core.models import PhoneAction
from reaper.passes.arm import CALLBACK_PREFIX, mint
from tests.aws_support import Account, aws_account, http_event
from tests.fakes.telegram import FAKE_CHAT, FAKE_TOKEN, TelegramFake

SECRET = "lambda-hook-secret_0123456789"
RUNPOD_KEY = "rp-lambda-key-0123456789"


@pytest.fixture
def runpod() -> Iterator[RunPodEmulator]:
    with RunPodEmulator({"main": RUNPOD_KEY}) as emulator:
        yield emulator


@pytest.fixture
def telegram() -> Iterator[TelegramFake]:
    with TelegramFake() as fake:
        yield fake


@pytest.fixture
def account(
    monkeypatch: pytest.MonkeyPatch, runpod: RunPodEmulator, telegram: TelegramFake
) -> Iterator[Account]:
    with aws_account(monkeypatch) as account:
        account.put_secret("RUNPOD_API_KEY", f"main={RUNPOD_KEY}")
        account.put_secret("TELEGRAM_BOT_TOKEN", FAKE_TOKEN)
        account.put_secret("TELEGRAM_CHAT_ID", FAKE_CHAT)
        account.put_secret("TELEGRAM_WEBHOOK_SECRET", SECRET)
        account.setenv("RUNPOD_API_URL", runpod.rest_url)
        account.setenv("RUNPOD_GRAPHQL_URL", runpod.graphql_url)
        account.setenv("TELEGRAM_API_URL", telegram.url)
        account.setenv("REAPER_PUBLIC_URL", "https://abc123.execute-api.us-east-1.amazonaws.com")
        yield account


def _keep(key: str) -> PhoneAction:
    return PhoneAction(
        kind="keep", label="Keep 1 day", targets=(key,), subject=key, duration=timedelta(days=1)
    )


def _message_with(telegram: TelegramFake, label: str, callback: str) -> int:
    answer = httpx.post(
        f"{telegram.url}/bot{FAKE_TOKEN}/sendMessage",
        json={
            "chat_id": FAKE_CHAT,
            "text": "trainer will be terminated in 1h",
            "reply_markup": {"inline_keyboard": [[{"text": label, "callback_data": callback}]]},
        },
    )
    return int(answer.json()["result"]["message_id"])


def _webhook(update: dict[str, Any], secret: str = SECRET) -> dict[str, Any]:
    import json

    event = http_event(
        "POST",
        f"/telegram/{secret}",
        body=json.dumps(update),
        headers={"x-telegram-bot-api-secret-token": secret, "content-type": "application/json"},
    )
    return handler(event, None)


def test_an_action_link_keeps_through_the_lambda(account: Account) -> None:
    token = mint(account.store(), (_keep("runpod:abc"),), datetime.now(UTC))
    page = handler(http_event("GET", f"/act/{token}", headers={"accept": "text/html"}), None)
    assert page["statusCode"] == 200 and "Keep 1 day" in page["body"]
    assert page["headers"]["x-frame-options"] == "DENY"
    done = handler(http_event("POST", f"/act/{token}"), None)
    again = handler(http_event("POST", f"/act/{token}"), None)
    assert done["statusCode"] == 200, done["body"]
    assert (again["statusCode"], again["body"]) == (404, "unknown, used or expired action link\n")
    assert "runpod:abc" in account.store().history().kept
    [record] = account.store().action_log()
    assert record.by == "action link"


def test_a_webhook_press_keeps_through_the_lambda(account: Account, telegram: TelegramFake) -> None:
    token = mint(account.store(), (_keep("runpod:abc"),), datetime.now(UTC))
    message = _message_with(telegram, "Keep 1 day", CALLBACK_PREFIX + token)
    update = telegram.press(message, "Keep 1 day", queue=False)
    result = _webhook(update)
    assert (result["statusCode"], result["body"]) == (200, "OK\n")
    assert telegram.answers[0]["text"].startswith("Kept runpod:abc until ")
    assert telegram.message(message).text.endswith("by @alice (Telegram user 42).")
    assert "runpod:abc" in account.store().history().kept


def test_a_webhook_without_the_secret_is_the_unknown_route(
    account: Account, telegram: TelegramFake
) -> None:
    token = mint(account.store(), (_keep("runpod:abc"),), datetime.now(UTC))
    update = telegram.press(
        _message_with(telegram, "Keep 1 day", CALLBACK_PREFIX + token), "Keep 1 day", queue=False
    )
    unknown = handler(http_event("POST", "/no/such/route"), None)
    assert _webhook(update, secret="guessed") == unknown
    headerless = http_event("POST", f"/telegram/{SECRET}", body="{}")
    assert handler(headerless, None) == unknown
    assert account.store().history().kept == {}


def test_terminate_now_through_the_webhook_on_dynamodb(
    account: Account, telegram: TelegramFake, runpod: RunPodEmulator
) -> None:
    now = datetime.now(UTC)
    started = now - timedelta(days=2)
    pod = runpod.add_pod(status="EXITED", name="trainer-7", created_at=started)
    store = account.store()
    # As the reap pass that first saw it stopped recorded it, with the pod's start time.
    store.start_stopped_clock(f"runpod:{pod}", now - timedelta(hours=23), started_at=started)
    terminate = PhoneAction(
        kind="terminate",
        label="Terminate now",
        targets=(f"runpod:{pod}",),
        subject="trainer-7",
        stretch=now - timedelta(hours=23),  # the stretch of the warning it came with
    )
    token = mint(store, (terminate,), now, ask_first=True)
    message = _message_with(telegram, "Terminate now", CALLBACK_PREFIX + token)
    assert _webhook(telegram.press(message, "Terminate now", queue=False))["statusCode"] == 200
    assert runpod.mutations == []
    confirm = _webhook(telegram.press(message, "⚠️ Yes, terminate", queue=False))
    assert confirm["statusCode"] == 200
    assert [r.method for r in runpod.mutations] == ["DELETE"]
    [record] = account.store().audit_log()
    assert record.confirmed and record.reason.startswith("terminate now asked by @alice")
    assert telegram.message(message).text.endswith("confirmed gone by a new listing.")
    assert account.store().termination_requests(datetime.now(UTC)) == []
