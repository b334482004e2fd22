"""A reap pass never outlives its time, whatever it waits on: on Lambda it is stopped before the
invocation's own timeout (the smaller of REAPER_PASS_DEADLINE and the remaining time less a
margin, plus a short backstop), under `reaper serve` at REAPER_PASS_DEADLINE plus the backstop
— with its lease released, an answer instead of a killed invocation, and the schedule going on.
Here the provider never answers, and the request's own deadline (30 s) is far away."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from emulators.channels import RecordingNotifier
from emulators.clock import FakeClock
from handlers import reap
from reaper.interfaces import serve
from reaper.passes.deadline import LAMBDA_MARGIN
from reaper.settings.model import StateURL
from reaper.settings.parse import Account as Key
from reaper.store.sqlite import SQLiteStore
from tests.aws_support import Account, aws_account, scheduled_event
from tests.hostile_support import HostileServer
from tests.settings_support import settings as settings_of

RUNPOD_KEY = "rp-backstop-key-0123456789"


class LambdaContext:
    """The part of Lambda's context object the handler reads."""

    def __init__(self, remaining: float) -> None:
        self.remaining = remaining

    def get_remaining_time_in_millis(self) -> int:
        return int(self.remaining * 1000)


@pytest.fixture
def hanging() -> Iterator[HostileServer]:
    with HostileServer("hang") as server:
        yield server


@pytest.fixture
def account(monkeypatch: pytest.MonkeyPatch, hanging: HostileServer) -> Iterator[Account]:
    with aws_account(monkeypatch) as account:
        account.put_secret("RUNPOD_API_KEY", f"main={RUNPOD_KEY}")
        account.setenv("RUNPOD_API_URL", f"{hanging.url}/v2")
        account.setenv("RUNPOD_GRAPHQL_URL", f"{hanging.url}/graphql")
        yield account


def test_on_lambda_the_invocations_remaining_time_bounds_the_pass(
    account: Account, hanging: HostileServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reap, "BACKSTOP_GRACE", 0.5)
    # 1 s of pass is what 21 s of invocation leaves after the margin (the setting is 10m).
    context = LambdaContext(remaining=LAMBDA_MARGIN + 1)
    started = time.monotonic()
    result = reap.handler(scheduled_event(), context)
    took = time.monotonic() - started
    assert hanging.requested.is_set()
    # Stopped at its backstop — or, where the pass keeps its own deadline, ended by it: either
    # way an answer within the invocation, and a pass that needs attention.
    assert result["ok"] is False and result["exit_code"] == 1
    assert took < 1.5 + 5
    # Released on the way out: the next invocation need not wait for it to expire.
    store = account.store()
    assert store.acquire_lease("reap", "next-pass", datetime.now(UTC), timedelta(minutes=2))


def test_the_remaining_time_is_read_from_the_context_when_there_is_one() -> None:
    assert reap.remaining_seconds(LambdaContext(remaining=12.5)) == 12.5
    assert reap.remaining_seconds(None) is None
    assert reap.remaining_seconds(object()) is None


def test_under_serve_the_reap_job_is_stopped_at_its_backstop(
    tmp_path: Path, hanging: HostileServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(serve, "BACKSTOP_GRACE", 0.5)
    settings = settings_of(
        state=StateURL("sqlite", str(tmp_path / "state.db")),
        runpod_accounts=(Key("runpod", "main", RUNPOD_KEY),),
        runpod_api_url=f"{hanging.url}/v2",
        runpod_graphql_url=f"{hanging.url}/graphql",
        pass_deadline=timedelta(seconds=1),
    )
    store = SQLiteStore(settings.state.location)
    jobs = {
        job.name: job
        for job in serve.serve_jobs(settings, store, RecordingNotifier(), FakeClock(), [])
    }
    started = time.monotonic()
    asyncio.run(jobs["reap"].run())
    took = time.monotonic() - started
    try:
        assert store.acquire_lease("reap", "next-pass", datetime.now(UTC), timedelta(minutes=2))
    finally:
        store.close()
    assert hanging.requested.is_set()
    assert took < 1.5 + 5
