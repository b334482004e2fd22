"""The reap Lambda handler: EventBridge's scheduled event and the `{"dry_run": true}` test event,
against the RunPod emulator on loopback, (mocked) DynamoDB and SSM. It never raises for an
expected outcome: EventBridge would retry the invocation, and a pass run twice could act twice."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from emulators import RunPodEmulator
from handlers.reap import handler
from reaper.core.license import announced_deadline
from reaper.core.models import KeptInstance, WarningRecord
from reaper.settings.model import Settings
from tests.aws_support import Account, aws_account, json_lines, scheduled_event

RUNPOD_KEY = "rp-lambda-key-0123456789"


@pytest.fixture
def runpod() -> Iterator[RunPodEmulator]:
    with RunPodEmulator({"main": RUNPOD_KEY}) as emulator:
        emulator.add_pod("pod-running", status="RUNNING")
        # Created (and last started) long before the stopped stretch the tests record.
        long_ago = datetime.now(UTC) - timedelta(days=3)
        emulator.add_pod("pod-stopped", status="EXITED", cost=0.0, created_at=long_ago)
        yield emulator


@pytest.fixture
def account(monkeypatch: pytest.MonkeyPatch, runpod: RunPodEmulator) -> Iterator[Account]:
    with aws_account(monkeypatch) as account:
        account.put_secret("RUNPOD_API_KEY", f"main={RUNPOD_KEY}")
        account.setenv("RUNPOD_API_URL", runpod.rest_url)
        account.setenv("RUNPOD_GRAPHQL_URL", runpod.graphql_url)
        yield account


def test_a_scheduled_pass_records_in_dynamodb(account: Account, runpod: RunPodEmulator) -> None:
    result = handler(scheduled_event(), None)
    assert result["ok"] is True
    assert result["exit_code"] == 0
    assert result["dry_run"] is False
    assert {i["id"]: i["state"] for i in result["instances"]} == {
        "pod-running": "running",
        "pod-stopped": "stopped",
    }
    store = account.store()
    assert set(store.history().first_seen_stopped) == {"runpod:pod-stopped"}
    last = store.last_reap()
    assert last is not None and last.instances == 2
    assert account.store().acquire_lease("reap", "someone-else", datetime.now(UTC), timedelta(1))


def heard_warning(at: datetime, stretch: datetime) -> WarningRecord:
    """As a pass records it: for `stretch`, announcing the deadline the default settings give."""
    return WarningRecord(
        at=at,
        heard=True,
        mode="enforce",
        stretch=stretch,
        issued_at=at,
        terminate_at=announced_deadline(stretch, at, Settings()),
    )


def test_a_dry_run_writes_nothing_and_calls_nothing_mutating(
    account: Account, runpod: RunPodEmulator
) -> None:
    """A pod due for termination (stopped 30h, warned 2h ago) is listed as such, untouched."""
    now = datetime.now(UTC)
    store = account.store()
    stretch = now - timedelta(hours=30)
    store.start_stopped_clock("runpod:pod-stopped", stretch)
    store.record_warning("runpod:pod-stopped", heard_warning(now - timedelta(hours=2), stretch))
    before = account.items()

    result = handler({"dry_run": True}, None)

    assert result["dry_run"] is True
    [action] = [a for a in result["actions"] if a["id"] == "pod-stopped"]
    assert (action["action"], action["done"]) == ("terminate", False)
    assert runpod.mutations == []
    assert account.items() == before, "a dry run writes nothing, not even a lease"


def test_max_terminations_zero_holds(account: Account, runpod: RunPodEmulator) -> None:
    now = datetime.now(UTC)
    store = account.store()
    stretch = now - timedelta(hours=30)
    store.start_stopped_clock("runpod:pod-stopped", stretch)
    store.record_warning("runpod:pod-stopped", heard_warning(now - timedelta(hours=2), stretch))
    result = handler({"max_terminations": 0}, None)
    [action] = [a for a in result["actions"] if a["id"] == "pod-stopped"]
    assert action["action"] == "hold"
    assert runpod.mutations == []


def test_a_provider_failure_is_returned_not_raised(
    account: Account, runpod: RunPodEmulator
) -> None:
    account.put_secret("RUNPOD_API_KEY", "main=rp-revoked-key-000000")
    result = handler(scheduled_event(), None)
    assert result["ok"] is False
    assert result["exit_code"] == 1
    [error] = result["errors"]
    assert (error["provider"], error["account"]) == ("runpod", "main")
    assert "rp-revoked-key-000000" not in str(result)


def test_no_provider_key_is_a_config_error_naming_the_parameters(
    account: Account, capsys: pytest.CaptureFixture[str]
) -> None:
    account.ssm.delete_parameter(Name="/reaper/test/RUNPOD_API_KEY")
    result = handler(scheduled_event(), None)
    assert result["ok"] is False
    assert result["exit_code"] == 2
    assert result["error"].startswith(
        "/reaper/test/RUNPOD_API_KEY / /reaper/test/VAST_API_KEY"
        " / /reaper/test/DIGITALOCEAN_TOKEN: set at least one"
    )
    [line] = [e for e in json_lines(capsys.readouterr().err) if e.get("function") == "reap"]
    assert line["result"] == "config_error"


@pytest.mark.parametrize(
    ("event", "reason"),
    [
        ({"dryrun": True}, "unknown event keys: dryrun"),
        ({"dry_run": "true"}, "dry_run: expected true or false"),
        ({"max_terminations": -1}, "max_terminations: expected a whole number >= 0"),
        ({"max_terminations": True}, "max_terminations: expected a whole number >= 0"),
        (["dry_run"], "expected a JSON object"),
    ],
)
def test_a_mistyped_event_is_refused_before_anything_runs(
    account: Account, runpod: RunPodEmulator, event: object, reason: str
) -> None:
    """A typo must not turn a test into a real pass that terminates."""
    result = handler(event, None)
    assert (result["ok"], result["exit_code"]) == (False, 2)
    assert result["error"].startswith(reason)
    assert runpod.requests == []


def test_a_taken_lease_is_an_answer_not_an_error(account: Account) -> None:
    account.store().acquire_lease("reap", "another-pass", datetime.now(UTC), timedelta(minutes=30))
    result = handler(scheduled_event(), None)
    assert result["lease_taken"] is True
    assert result["exit_code"] == 0
    assert result["instances"] == []


def test_kept_instances_are_protected(account: Account) -> None:
    now = datetime.now(UTC)
    store = account.store()
    store.keep(KeptInstance(key="runpod:pod-stopped", since=now))
    result = handler({}, None)
    [action] = [a for a in result["actions"] if a["id"] == "pod-stopped"]
    assert action["action"] == "protect"


def test_an_unknown_reaper_name_is_alerted_once_and_the_pass_goes_on(
    account: Account, runpod: RunPodEmulator
) -> None:
    """On Lambda nobody reads a command's stderr, and the function never stops for a typo: the
    first pass alerts once (a typo's default applies silently), the next ones do not repeat it,
    and every pass runs."""
    from tests.fakes.telegram import FAKE_CHAT, FAKE_TOKEN, TelegramFake

    with TelegramFake() as telegram:
        account.put_secret("TELEGRAM_BOT_TOKEN", FAKE_TOKEN)
        account.put_secret("TELEGRAM_CHAT_ID", FAKE_CHAT)
        account.setenv("TELEGRAM_API_URL", telegram.url)
        account.setenv("REAPER_STOPED_TTL", "48h")
        first, second = handler(scheduled_event(), None), handler(scheduled_event(), None)
        assert first["ok"] is True and second["ok"] is True
        titles = [m.text for m in telegram.messages if "REAPER_STOPED_TTL" in m.text]
        assert len(titles) == 1 and "Unknown setting REAPER_STOPED_TTL" in titles[0]
