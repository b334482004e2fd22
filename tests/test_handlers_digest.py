"""The digest Lambda handler: one digest a day through the configured channel, even when the
function is invoked twice (the claim lives in DynamoDB)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from emulators import RunPodEmulator
from handlers.digest import handler
from tests.aws_support import Account, aws_account, scheduled_event
from tests.fakes.bark import BarkFake

RUNPOD_KEY = "rp-digest-key-0123456789"


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Account, RunPodEmulator, BarkFake]]:
    with (
        RunPodEmulator({"main": RUNPOD_KEY}) as runpod,
        BarkFake() as bark,
        aws_account(monkeypatch) as account,
    ):
        runpod.add_pod("pod-a", status="RUNNING", cost=1.25)
        account.put_secret("RUNPOD_API_KEY", f"main={RUNPOD_KEY}")
        account.put_secret("BARK_URL", bark.bark_url)
        account.setenv("RUNPOD_API_URL", runpod.rest_url)
        account.setenv("RUNPOD_GRAPHQL_URL", runpod.graphql_url)
        yield account, runpod, bark


def test_one_digest_a_day(world: tuple[Account, RunPodEmulator, BarkFake]) -> None:
    _, _, bark = world
    event = scheduled_event("reaper-prod-DigestEventsRuleSchedule1-XYZ")
    first = handler(event, None)
    assert first == {"ok": True, "exit_code": 0}
    [push] = bark.pushes
    assert push["title"].startswith("Daily digest: $1.25/h now")
    second = handler(event, None)
    assert second["exit_code"] == 0
    assert len(bark.pushes) == 1, "a second invocation the same day sends nothing"


def test_a_configuration_error_is_returned(
    world: tuple[Account, RunPodEmulator, BarkFake],
) -> None:
    account, _, bark = world
    account.put_secret("BARK_URL", "bark-without-scheme")
    result = handler(scheduled_event(), None)
    assert (result["ok"], result["exit_code"]) == (False, 2)
    assert result["error"].startswith("/reaper/test/BARK_URL")
    assert bark.pushes == []
