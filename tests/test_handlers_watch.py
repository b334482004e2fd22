"""The watch Lambda handler, every minute on EventBridge: silence becomes one alert, through the
configured channel, however often the function runs; state in (mocked) DynamoDB."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from handlers.watch import handler
from reaper.core.models import Monitor
from tests.aws_support import Account, aws_account, scheduled_event
from tests.fakes.bark import BarkFake


@pytest.fixture
def bark() -> Iterator[BarkFake]:
    with BarkFake() as fake:
        yield fake


@pytest.fixture
def account(monkeypatch: pytest.MonkeyPatch, bark: BarkFake) -> Iterator[Account]:
    with aws_account(monkeypatch) as account:
        account.put_secret("BARK_URL", bark.bark_url)
        yield account


def silent_monitor(host: str, minutes: int) -> Monitor:
    now = datetime.now(UTC)
    return Monitor(
        host=host,
        status="up",
        created_at=now - timedelta(hours=2),
        last_ping_at=now - timedelta(minutes=minutes),
    )


def test_a_silent_monitor_alerts_once(account: Account, bark: BarkFake) -> None:
    store = account.store()
    store.put_monitor(silent_monitor("trainer-1", minutes=12))
    store.put_monitor(silent_monitor("trainer-2", minutes=1))

    first = handler(scheduled_event("reaper-prod-WatchEventsRuleSchedule1-XYZ"), None)
    assert first["went_down"] == ["trainer-1"]
    assert first["exit_code"] == 1
    assert len(bark.pushes) == 1
    down = store.get_monitor("trainer-1")
    assert down is not None and down.status == "down"

    second = handler(scheduled_event("reaper-prod-WatchEventsRuleSchedule1-XYZ"), None)
    assert second["went_down"] == []
    assert second["down"] == ["trainer-1"]
    assert len(bark.pushes) == 1, "the next minute's pass does not alert again"


def test_without_provider_keys_the_reaper_is_not_watched(account: Account) -> None:
    result = handler(scheduled_event(), None)
    assert result["reaping"] is False
    assert result["reaper_silent"] is False
    assert result["ok"] is True


def test_a_configuration_error_is_returned(account: Account) -> None:
    account.put_secret("TELEGRAM_BOT_TOKEN", "123456:ABCDEF")  # without TELEGRAM_CHAT_ID
    result = handler(scheduled_event(), None)
    assert (result["ok"], result["exit_code"]) == (False, 2)
    assert result["error"] == (
        "/reaper/test/TELEGRAM_CHAT_ID: required when TELEGRAM_BOT_TOKEN is set"
    )
