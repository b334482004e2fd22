"""The daily digest and `reaper report`: spend now by account, what was reaped in 24h and the
$/month it stopped, monitors down, balances, open leaks (issue 9)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from emulators import RunPodEmulator, VastEmulator
from emulators.channels import RecordingNotifier
from emulators.clock import FakeClock
from reaper.app.wiring import make_clients
from reaper.core.leaks import leak_key
from reaper.core.models import AuditRecord, Balance, Episode, Instance, Monitor, Volume
from reaper.interfaces.commands import report_command as report_impl
from reaper.passes.digest import ProblemLine, Survey, build_digest, digest_alert, digest_once
from reaper.providers.base import HttpOptions
from reaper.settings.model import Settings, StateURL
from reaper.settings.parse import Account, ConfigError
from reaper.store.sqlite import SQLiteStore
from tests.settings_support import settings as settings_of

NOW = datetime(2026, 6, 2, 9, 0, tzinfo=UTC)
H = timedelta(hours=1)
FAST = HttpOptions(timeout=2, max_attempts=2, backoff_base=0.001, backoff_cap=0.005)
SETTINGS = settings_of(balance_min=5.0, idle_alert_after=H)


def inst(provider: str, account: str, id_: str, state: str, cost: float | None, **kw: object):  # type: ignore[no-untyped-def]
    fields: dict[str, object] = {
        "provider": provider,
        "account": account,
        "id": id_,
        "name": f"job-{id_}",
        "state": state,
        "raw_status": kw.get("raw", state),
        "cost_per_hour": cost,
        # As the Vast client reads it: paused with its GPU still billed.
        "frozen": provider == "vast" and kw.pop("raw", state) == "frozen",
    }
    fields.update(kw)
    return Instance.model_validate(fields)


def record(id_: str, ago: timedelta, cost: float | None, confirmed: bool = True) -> AuditRecord:
    return AuditRecord(
        provider="runpod",
        account="main",
        id=id_,
        name=f"old-{id_}",
        reason="stopped 25h",
        requested_at=NOW - ago,
        cost_per_hour=cost,
        result="deleted",
        confirmed=confirmed,
    )


def monitor(host: str, status: str) -> Monitor:
    return Monitor.model_validate(
        {
            "host": host,
            "status": status,
            "created_at": NOW - 48 * H,
            "last_ping_at": NOW - 3 * H,
            "down_since": NOW - 2 * H if status == "down" else None,
        }
    )


def test_build_digest_sums_spend_reaped_balances_and_leaks() -> None:
    live = Survey(
        labels={"runpod": "RunPod", "vast": "Vast"},
        instances=[
            inst("runpod", "main", "a", "running", 1.5, gpu_util=50.0),
            inst("runpod", "main", "b", "stopped", 0.01),
            inst("runpod", "main", "c", "terminated", 0.0),
            inst("vast", "main", "7", "unknown", None, raw="frozen"),
            inst("vast", "main", "8", "running", 0.5, gpu_util=0.0),
        ],
        balances=[
            Balance(provider="runpod", account="main", balance=30.0, spend_per_hour=1.51),
            Balance(provider="vast", account="main", balance=2.0),
        ],
        volumes=[
            Volume(provider="runpod", account="main", id="v1", attached=False, cost_per_month=7)
        ],
        listed=[("runpod", "main"), ("vast", "main"), ("vast", "empty")],
        warnings=[ProblemLine(provider="runpod", account="main", message="balance: HTTP 410")],
    )
    audit = [
        record("r1", 2 * H, 0.01),
        record("r1", 1 * H, 0.02),  # the same pod's later record wins
        record("r2", 5 * H, 0.1),
        record("r3", 3 * H, 0.5, confirmed=False),
        record("r4", 30 * H, 9.0),
    ]
    idle_key = leak_key("idle", "vast", "main", "8")
    orphan_key = leak_key("orphan_volume", "runpod", "main", "v1")
    episodes = [
        Episode(key=idle_key, opened_at=NOW - 2 * H, detail="x", alerted_at=NOW - H),
        Episode(key=orphan_key, opened_at=NOW - H, detail="x"),  # 1h of the 24h it needs
    ]
    digest = build_digest(
        NOW, live, audit, [monitor("up-1", "up"), monitor("down-1", "down")], episodes, SETTINGS
    )

    spend = {(s.provider, s.account): s for s in digest.spend}
    assert spend[("runpod", "main")].per_hour == 1.51
    assert spend[("runpod", "main")].billing == 2
    assert spend[("vast", "main")].per_hour == 0.5
    assert spend[("vast", "main")].unknown_cost == 1
    assert spend[("vast", "empty")].per_hour == 0.0
    assert digest.spend_per_hour == 2.01
    assert [(r.id, r.cost_per_hour) for r in digest.reaped_24h] == [("r2", 0.1), ("r1", 0.02)]
    assert digest.reaped_per_month == round((0.1 + 0.02) * 730, 2)
    assert [m.host for m in digest.monitors_down] == ["down-1"]
    vast = next(b for b in digest.balances if b.provider == "vast")
    assert vast.low is True and vast.spend_per_hour == 0.5 and vast.hours_left == 4.0
    leaks = {(leak.kind, leak.id): leak for leak in digest.leaks}
    assert set(leaks) == {("frozen", "7"), ("idle", "8")}
    assert leaks[("idle", "8")].alerted and leaks[("idle", "8")].since == NOW - 2 * H
    assert leaks[("frozen", "7")].since is None
    assert digest.needs_attention

    alert = digest_alert(digest)
    assert alert.title == "Daily digest: $2.01/h now; reaped 2 in 24h ($87.60/month stopped)"
    assert "frozen job-7 (vast:7)" in alert.body and "down-1" in alert.body
    assert "Vast main $2.00, 4h left LOW" in alert.body
    assert "balance: HTTP 410" in alert.body
    assert alert.level == "warning"


def test_a_quiet_day_says_nothing_needs_you() -> None:
    live = Survey(instances=[inst("runpod", "main", "a", "running", 1.0, gpu_util=90.0)])
    live.listed = [("runpod", "main")]
    digest = build_digest(NOW, live, [], [], [], SETTINGS)
    alert = digest_alert(digest)
    assert alert.title == "Daily digest: $1.00/h now; nothing reaped in 24h"
    assert alert.level == "info" and "Nothing needs you" in alert.body


RP_KEY = "rp-report-key-0001"
VAST_KEY = "vast-report-key-0001"


@pytest.fixture
def emulated(tmp_path: Path) -> Iterator[tuple[Settings, RunPodEmulator, VastEmulator]]:
    with (
        RunPodEmulator({"main": RP_KEY}, now=lambda: NOW) as runpod,
        VastEmulator({"main": VAST_KEY}, now=lambda: NOW) as vast,
    ):
        runpod.add_pod("p1", name="trainer", cost=0.79, gpu_utils=[88])
        runpod.set_balance(client_balance=3.0, current_spend_per_hr=0.79)
        vast.add_instance(301, label="frozen-one", actual_status="frozen")
        vast.set_user(credit=40.0)
        settings = settings_of(
            runpod_accounts=(Account("runpod", "main", RP_KEY),),
            vast_accounts=(Account("vast", "main", VAST_KEY),),
            runpod_api_url=runpod.rest_url,
            runpod_graphql_url=runpod.graphql_url,
            vast_api_url=vast.url,
            state=StateURL("sqlite", str(tmp_path / "state.db")),
        )
        SQLiteStore(settings.state.location).close()  # `report` reads an existing state
        yield settings, runpod, vast


def test_digest_once_sends_one_digest_a_day(
    emulated: tuple[Settings, RunPodEmulator, VastEmulator],
) -> None:
    settings, _, _ = emulated
    store = SQLiteStore(settings.state.location)
    store.record_termination(record("gone1", 3 * H, 0.05))
    store.put_monitor(monitor("runpod-p1", "down"))
    clock = FakeClock(NOW)
    notifier = RecordingNotifier()

    async def once() -> int:
        clients = make_clients(settings, FAST)
        try:
            return await digest_once(settings, store, notifier, clock, clients=clients)
        finally:
            await asyncio.gather(*(c.aclose() for c in clients))

    try:
        assert asyncio.run(once()) == 0
        clock.advance(2 * H)
        assert asyncio.run(once()) == 0  # same day: skipped
        clock.advance(22 * H)
        assert asyncio.run(once()) == 0
    finally:
        store.close()
    assert len(notifier.alerts) == 2
    first = notifier.alerts[0]
    assert first.event == "digest"
    # The frozen Vast instance keeps its GPU billed ($0.8021/h) beside the running pod.
    assert first.title == "Daily digest: $1.59/h now; reaped 1 in 24h ($36.50/month stopped)"
    assert "RunPod main $3.00" in first.body and "LOW" in first.body
    assert "frozen frozen-one (vast:301)" in first.body
    assert "runpod-p1" in first.body
    # A day later the termination is out of the window.
    assert "nothing reaped in 24h" in notifier.alerts[1].title


def test_report_json_prints_one_object_and_reads_the_store_read_only(
    emulated: tuple[Settings, RunPodEmulator, VastEmulator],
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings, runpod, _ = emulated
    before = Path(settings.state.location).read_bytes()
    code = report_impl(settings, json_output=True, clock=FakeClock(NOW), http_options=FAST)
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) >= {
        "at",
        "spend_per_hour",
        "spend",
        "reaped_24h",
        "reaped_per_month",
        "monitors_down",
        "balances",
        "leaks",
        "errors",
        "warnings",
    }
    assert data["at"] == "2026-06-02T09:00:00Z"
    assert data["spend_per_hour"] == pytest.approx(0.79 + 0.8021)
    assert [(leak["kind"], leak["id"]) for leak in data["leaks"]] == [("frozen", "301")]
    runpod_balance = next(b for b in data["balances"] if b["provider"] == "runpod")
    assert runpod_balance["low"] is True and runpod_balance["balance"] == 3.0
    assert Path(settings.state.location).read_bytes() == before  # read-only: nothing written
    assert runpod.mutations == []


def test_report_text_and_a_failed_listing_exit_1(
    emulated: tuple[Settings, RunPodEmulator, VastEmulator],
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings, _, vast = emulated
    vast.set_down("503")
    code = report_impl(settings, json_output=False, clock=FakeClock(NOW), http_options=FAST)
    out, err = capsys.readouterr()
    assert code == 1
    assert "spend now $0.79/h — Vast main did not answer" in out and "leaks: none" in out
    assert "vast/main" in err and VAST_KEY not in out + err


def test_report_without_provider_keys_is_a_config_error(tmp_path: Path) -> None:
    settings = settings_of(state=StateURL("sqlite", str(tmp_path / "s.db")))
    with pytest.raises(ConfigError, match="RUNPOD_API_KEY / VAST_API_KEY"):
        report_impl(settings, json_output=True)


def test_the_cli_entry_point_is_the_report_command(
    emulated: tuple[Settings, RunPodEmulator, VastEmulator],
    capsys: pytest.CaptureFixture[str],
) -> None:
    from reaper.interfaces.commands import report_command

    settings, _, _ = emulated
    assert report_command(settings, json_output=True) == 0
    assert "spend_per_hour" in json.loads(capsys.readouterr().out)
