"""Snapshots and what the page computes from them: each reap pass records one small row (not
a dry run, and never at the cost of the pass); the spend per day, the runway, the policy's
outlook for a stopped instance; REAPER_PUBLIC_URL's rules."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from reaper.app.settings import load_settings
from reaper.core.models import History, Instance, KeptInstance, WarningRecord
from reaper.core.policy import outlook
from reaper.core.runway import runway_hours
from reaper.core.snapshot import AccountSnapshot, Snapshot, daily_spend
from reaper.settings.parse import ConfigError
from reaper.store.sqlite import SQLiteStore
from tests.reap_support import START, world
from tests.settings_support import settings as settings_of

HOUR = timedelta(hours=1)


def test_each_reap_pass_records_a_snapshot_per_account(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        w.runpod.add_pod(status="RUNNING", cost=1.5)
        w.runpod.add_pod(status="EXITED", volume_gb=365)
        w.runpod.set_balance(client_balance=30.0, current_spend_per_hr=1.5)
        w.vast.add_instance(actual_status="running", dph_total=0.5)
        w.run()
        w.advance(1)
        w.vast.fail_next("list", status=500, count=10)
        w.run()
        store = w.store()
        try:
            first, second = store.snapshots(START - HOUR)
        finally:
            store.close()
    assert first.at == START and second.at == START + HOUR
    runpod, vast = first.accounts
    assert (runpod.provider, runpod.account) == ("runpod", "main")
    assert runpod.running_per_hour == 1.5
    assert runpod.storage_per_hour == pytest.approx(0.1, abs=0.001)  # 365 GB at $0.20/GB-month
    assert runpod.counts == {"running": 1, "stopped": 1}
    # The account's burn rate, storage included (RunPod's own $1.50/h counts running pods only).
    assert runpod.balance == 30.0 and runpod.spend_per_hour == pytest.approx(runpod.per_hour)
    assert vast.running_per_hour == 0.5 and vast.complete
    failed = second.accounts[1]
    assert not failed.complete and failed.per_hour is None, "unknown, never zero"


def test_a_dry_run_records_no_snapshot(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        w.runpod.add_pod(status="RUNNING")
        w.run()
        w.advance(1)
        w.run(dry_run=True)
        store = w.store()
        try:
            assert len(store.snapshots(START - HOUR)) == 1
        finally:
            store.close()


def test_a_snapshot_that_cannot_be_written_never_fails_the_pass(tmp_path: Path) -> None:
    class Broken(SQLiteStore):
        def record_snapshot(self, snapshot: Snapshot) -> None:
            raise RuntimeError("disk full")

    with world(tmp_path) as w:
        w.runpod.add_pod(status="RUNNING")
        w.state_path.parent.mkdir(parents=True, exist_ok=True)
        store = Broken(str(w.state_path))
        try:
            report = w.run(store=store)
            assert report.exit_code == 0
            assert store.last_reap() is not None
        finally:
            store.close()


def _snap(at: datetime, running: float, storage: float = 0.0) -> Snapshot:
    account = AccountSnapshot(
        provider="p", account="a", running_per_hour=running, storage_per_hour=storage
    )
    return Snapshot(at=at, accounts=[account])


def test_daily_spend_holds_each_rate_until_the_next_snapshot_and_splits_at_midnight() -> None:
    day = datetime(2026, 3, 2, tzinfo=UTC)
    snaps = [
        _snap(day + timedelta(hours=22), 2.0, 0.5),
        _snap(day + timedelta(hours=23), 4.0),
        _snap(day + timedelta(hours=25), 1.0),
    ]
    now = day + timedelta(hours=26)
    yesterday, today = daily_spend(snaps, now, 2)
    assert yesterday.day == day and today.day == day + timedelta(days=1)
    assert yesterday.running == 2.0 + 4.0 and yesterday.storage == 0.5
    assert today.running == 4.0 + 1.0 and today.covered_hours == 2.0


def test_daily_spend_does_not_invent_a_day_the_reaper_was_down() -> None:
    day = datetime(2026, 3, 2, tzinfo=UTC)
    now = day + timedelta(days=3)
    days = daily_spend([_snap(day, 10.0)], now, 4)
    assert [d.running for d in days] == [20.0, 0.0, 0.0, 0.0], "at most 2h past a snapshot"
    assert daily_spend([], now, 7)[-1].total == 0.0


@pytest.mark.parametrize(
    ("balance", "spend", "hours"),
    [
        (10.0, 2.0, 5.0),
        (0.0, 1.0, 0.0),
        (-3.0, 1.0, 0.0),
        (10.0, 0.0, None),
        (10.0, -1.0, None),
        (None, 1.0, None),
        (10.0, None, None),
        (float("nan"), 1.0, None),
        (10.0, float("inf"), None),
    ],
)
def test_runway_hours(balance: float | None, spend: float | None, hours: float | None) -> None:
    assert runway_hours(balance, spend) == hours


def _stopped(name: str = "job", **extra: object) -> Instance:
    return Instance.model_validate(
        {
            "provider": "p",
            "account": "a",
            "id": name,
            "name": name,
            "state": "stopped",
            "raw_status": "EXITED",
            **extra,
        }
    )


def test_the_outlook_is_the_policy_s_answer_with_its_time() -> None:
    # A channel that reaches a person: deadlines bring terminations (with none, holds).
    settings = settings_of(stopped_ttl=30 * HOUR, ntfy_url="http://127.0.0.1:9/phone")
    now = START
    since = now - 2 * HOUR
    fresh = _stopped("fresh")
    kept = _stopped("kept")
    warned = _stopped("warned")
    marked = _stopped("marked reaper:keep")
    history = History(
        first_seen_stopped={i.key: since for i in (fresh, kept, warned, marked)},
        kept={"p:kept": KeptInstance(key="p:kept", since=now, until=now + 24 * HOUR)},
        warnings={
            "p:warned": WarningRecord(
                at=since + HOUR,
                heard=True,
                mode="enforce",
                stretch=since,
                issued_at=since + HOUR,
                terminate_at=since + 30 * HOUR,
            )
        },
    )
    found = {
        o.instance.id: o for o in outlook([fresh, kept, warned, marked], history, now, settings)
    }
    assert found["fresh"].kind == "scheduled"
    assert found["fresh"].terminate_at == since + settings.stopped_ttl
    assert found["kept"].kind == "protect" and found["kept"].terminate_at is None
    assert "reaper keep" in found["kept"].reason
    assert found["warned"].terminate_at == since + 30 * HOUR, "the time the warning announced"
    assert found["marked reaper:keep"].kind == "protect"
    # Near the deadline the policy warns: the outlook says when that warning says.
    late = outlook([fresh], history, since + 29 * HOUR + 30 * 60 * timedelta(seconds=1), settings)
    assert late[0].kind == "warn" and late[0].terminate_at is not None


def test_the_outlook_names_the_cap_when_it_holds() -> None:
    settings = settings_of(max_terminations=0)
    pod = _stopped("capped")
    history = History(
        first_seen_stopped={pod.key: START - 30 * HOUR},
        warnings={
            pod.key: WarningRecord(
                at=START - 2 * HOUR,
                heard=True,
                mode="enforce",
                stretch=START - 30 * HOUR,
                issued_at=START - 2 * HOUR,
                terminate_at=START - HOUR,  # what the default settings announce then
            )
        },
    )
    [item] = outlook([pod], history, START, settings)
    assert item.kind == "hold" and "REAPER_MAX_TERMINATIONS=0" in item.reason
    assert item.terminate_at is None


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("https://reaper.example.com/", "https://reaper.example.com"),
        ("https://example.com/reaper", "https://example.com/reaper"),
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
        ("http://localhost:8080/", "http://localhost:8080"),
        ("http://[::1]:8080", "http://[::1]:8080"),
    ],
)
def test_public_url_accepts_https_and_loopback_http(value: str, expected: str) -> None:
    settings = load_settings({"REAPER_PUBLIC_URL": value}, dotenv=None)
    assert settings.public_url == expected


@pytest.mark.parametrize(
    "value",
    [
        "http://reaper.example.com",
        "http://192.168.1.5:8080",
        "ftp://reaper.example.com",
        "reaper.example.com",
        "https://reaper.example.com/?x=1",
        "https://reaper.example.com/#top",
        "https://",
    ],
)
def test_public_url_refuses_the_rest_in_one_line(value: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings({"REAPER_PUBLIC_URL": value}, dotenv=None)
    assert str(caught.value).startswith("REAPER_PUBLIC_URL")
    assert "\n" not in str(caught.value)
