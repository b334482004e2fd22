"""The money guards against the RunPod and Vast emulators, after a real reap pass: each leak
found once over several passes, balance crossings, GraphQL gone → the reap stays green with
one warning (issue 9)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from emulators import RunPodEmulator, VastEmulator
from emulators.channels import RecordingNotifier
from emulators.clock import FakeClock
from reaper.app.wiring import make_clients
from reaper.core.models import Alert
from reaper.passes.guards import GuardReport
from reaper.passes.reap import ReapReport, reap_pass
from reaper.providers.base import HttpOptions
from reaper.settings.model import Settings, StateURL
from reaper.settings.parse import Account
from reaper.store.sqlite import SQLiteStore
from tests.settings_support import settings as settings_of

FAST = HttpOptions(timeout=2, max_attempts=2, backoff_base=0.001, backoff_cap=0.005)
RP_KEY = "rp-guard-key-0001"
VAST_KEY = "vast-guard-key-0001"
START = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
H = timedelta(hours=1)


@dataclass
class World:
    runpod: RunPodEmulator
    vast: VastEmulator
    settings: Settings
    store: SQLiteStore
    clock: FakeClock
    notifier: RecordingNotifier

    def passes(self, count: int = 1, every: timedelta = H) -> tuple[ReapReport, GuardReport]:
        """Scheduled reap passes; each runs the guards on its own listing."""
        result: tuple[ReapReport, GuardReport] | None = None
        for _ in range(count):
            result = asyncio.run(self._one())
            self.clock.advance(every)
        assert result is not None
        return result

    async def _one(self) -> tuple[ReapReport, GuardReport]:
        clients = make_clients(self.settings, FAST)
        try:
            reap = await reap_pass(self.settings, self.store, clients, self.notifier, self.clock)
            assert reap.guards is not None
            return reap, reap.guards
        finally:
            await asyncio.gather(*(c.aclose() for c in clients))

    def events(self, event: str) -> list[Alert]:
        return [a for a in self.notifier.alerts if a.event == event]


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    clock = FakeClock(START)
    with (
        RunPodEmulator({"main": RP_KEY}, now=clock.now) as runpod,
        VastEmulator({"main": VAST_KEY}, now=clock.now) as vast,
    ):
        settings = settings_of(
            runpod_accounts=(Account("runpod", "main", RP_KEY),),
            vast_accounts=(Account("vast", "main", VAST_KEY),),
            runpod_api_url=runpod.rest_url,
            runpod_graphql_url=runpod.graphql_url,
            vast_api_url=vast.url,
            state=StateURL("sqlite", str(tmp_path / "state.db")),
            balance_min=5.0,
            idle_alert_after=H,
            stopped_ttl=24 * H,
            max_runtime=48 * H,
            volume_orphan_after=2 * H,
        )
        store = SQLiteStore(settings.state.location)
        try:
            yield World(runpod, vast, settings, store, clock, RecordingNotifier())
        finally:
            store.close()


def test_each_leak_is_found_and_alerted_exactly_once(world: World) -> None:
    world.vast.add_instance(101, label="frozen-job", actual_status="frozen", gpu_util=None)
    world.vast.add_volume(7, instances=[])
    world.vast.add_volume(8, instances=[101])
    world.runpod.add_network_volume("nvorphan", name="old-data")
    world.runpod.add_network_volume("nvused", name="in-use")
    world.runpod.add_pod("podnv", network_volume_id="nvused", gpu_utils=[90])
    world.runpod.add_pod("poderr", name="broken", status="ERROR")
    world.runpod.add_pod("podidle", name="idle-one", gpu_utils=[0], cost=1.25)
    world.runpod.add_pod(
        "podlong", name="marathon", gpu_utils=[70], created_at=START - 47 * H, cost=2.0
    )

    reap, guards = world.passes(6, every=6 * H)

    assert reap.exit_code == 0
    assert guards.warnings == []
    alerted = sorted((a.event, a.dedup_key.split(":", 1)[1]) for a in world.notifier.alerts)
    assert alerted == [
        ("frozen", "vast:101"),
        ("idle", "runpod:podidle"),
        ("max_runtime", "runpod:podlong"),
        ("orphan_volume", "runpod:nvorphan"),
        ("orphan_volume", "vast:7"),
        ("stuck", "runpod:poderr"),
    ]
    [idle] = world.events("idle")
    assert "idle-one" in idle.title and "$1.25/h" in idle.title
    # The emulators saw no mutating call: the guards only read.
    assert world.runpod.mutations == [] and world.vast.mutations == []


def test_idle_needs_idle_alert_after_across_passes(world: World) -> None:
    world.runpod.add_pod("podidle", gpu_utils=[0])
    world.passes(1, every=30 * timedelta(minutes=1))
    world.passes(1, every=30 * timedelta(minutes=1))
    assert world.events("idle") == []
    world.runpod.set_gpu_utils("podidle", [0])
    world.passes(1)
    assert len(world.events("idle")) == 1
    world.runpod.set_gpu_utils("podidle", [80])  # working again: the episode ends
    world.passes(1)
    world.runpod.set_gpu_utils("podidle", [0])
    world.passes(1)
    assert len(world.events("idle")) == 1


def test_balance_crossing_down_and_up_once_each(world: World) -> None:
    world.runpod.add_pod("p1", gpu_utils=[50], cost=0.5)
    world.vast.add_instance(201, gpu_util=0.6, dph_total=0.25)
    counts = []
    for runpod_balance, vast_credit in [(50, 50), (4, 3), (3, 2), (20, 2), (4, 20), (4, 1)]:
        world.runpod.set_balance(client_balance=runpod_balance)
        world.vast.set_user(credit=vast_credit)
        world.passes(1)
        low = world.events("balance_low")
        counts.append(
            (
                sum(1 for a in low if "RunPod" in a.title),
                sum(1 for a in low if "Vast" in a.title),
            )
        )
    assert counts == [(0, 0), (1, 1), (1, 1), (1, 1), (2, 1), (2, 2)]
    first_runpod = next(a for a in world.events("balance_low") if "RunPod" in a.title)
    # RunPod's own spend rate ($0.50/h from the pod's cost): $4 lasts 8h.
    assert "$4.00" in first_runpod.title and "8h" in first_runpod.body


def test_graphql_gone_keeps_the_reap_green_with_one_warning(world: World) -> None:
    world.runpod.graphql_retired = 410
    world.runpod.add_pod("p1", gpu_utils=[50])
    for _ in range(3):
        reap, guards = world.passes(1)
        assert reap.exit_code == 0 and reap.errors == []
        assert [w.provider for w in guards.warnings] == ["runpod"]
        assert [b.provider for b in guards.balances] == ["vast"]
    [warning] = world.events("guard_fetch_failed")
    assert "GraphQL" in warning.title
    assert world.events("provider_failing") == []
    world.runpod.graphql_retired = None
    _, guards = world.passes(1)
    assert guards.warnings == []
    assert world.store.open_episodes("graphql:") == []


def test_an_account_whose_listing_fails_keeps_its_leaks_open(world: World) -> None:
    world.vast.add_instance(101, actual_status="frozen")
    world.passes(1)
    world.vast.set_down("503")
    reap, guards = world.passes(1)
    assert reap.exit_code == 1  # the reap pass reports the account, once
    assert len(guards.warnings) == 2  # balance and volumes: warnings, not alerts
    assert [e.key for e in world.store.open_episodes("leak:")] == ["leak:frozen:vast:main:101"]
    assert world.events("guard_fetch_failed") == []
    world.vast.set_down(None)
    world.passes(2)
    assert len(world.events("frozen")) == 1


def test_max_runtime_off_when_unset(world: World) -> None:
    world.settings = replace(world.settings, max_runtime=None)
    world.runpod.add_pod("podlong", gpu_utils=[70], created_at=START - 900 * H)
    _, guards = world.passes(1)
    assert [f.kind for f in guards.findings] == []
