"""HEARTBEAT_REQUIRED=true: a running instance with no monitor HEARTBEAT_TIMEOUT after it
started is "running without a watchdog" — once per episode, not once per pass."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest

from emulators import RunPodEmulator
from emulators.clock import FakeClock
from reaper.core.models import ReapRun
from reaper.settings.parse import Account
from tests.heartbeat_support import Served, make_settings, served, watch_with_providers


@dataclass
class World:
    app: Served
    runpod: RunPodEmulator

    def unwatched_alerts(self) -> list[str]:
        return [a.title for a in self.app.notifier.alerts if a.event == "running_without_watchdog"]

    def watch(self) -> list[str]:
        # A recent reap keeps the reaper-silence check out of these tests.
        now = self.app.clock.now()
        self.app.store.record_reap(
            ReapRun(
                at=now, finished_at=now, dry_run=False, mode="enforce",
                instances=0, terminated=0, warned=0, errors=0, exit_code=0,
            )
        )  # fmt: skip
        return watch_with_providers(self.app).unwatched


@contextmanager
def _world(tmp_path: Path, required: bool) -> Iterator[World]:
    clock = FakeClock()
    with RunPodEmulator({"main": "rp-key-main"}, now=clock.now) as runpod:
        settings = make_settings(
            tmp_path,
            heartbeat_required=required,
            runpod_accounts=(Account("runpod", "main", "rp-key-main"),),
            runpod_api_url=runpod.rest_url,
            runpod_graphql_url=runpod.graphql_url,
        )
        with served(settings, clock=clock) as app:
            yield World(app, runpod)


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    with _world(tmp_path, required=True) as running:
        yield running


def test_a_running_instance_that_never_pinged_alerts_once(world: World) -> None:
    pod = world.runpod.add_pod(name="forgotten", cost=0.79)
    world.app.advance(minutes=4)
    assert world.watch() == []
    world.app.advance(minutes=1)
    assert world.watch() == [f"runpod:{pod}"]
    for _ in range(5):
        world.app.advance(hours=1)
        world.watch()
    [title] = world.unwatched_alerts()
    assert "forgotten" in title


def test_an_instance_with_a_monitor_is_watched(world: World) -> None:
    pod = world.runpod.add_pod(name="good")
    world.app.ping(f"runpod-{pod}")
    world.app.advance(minutes=3)
    world.app.ping(f"runpod-{pod}")
    world.app.advance(minutes=3)
    assert world.watch() == []
    assert world.unwatched_alerts() == []


def test_stopped_instances_need_no_watchdog(world: World) -> None:
    world.runpod.add_pod(status="EXITED")
    world.app.advance(hours=2)
    assert world.watch() == []


def test_a_new_run_is_a_new_episode(world: World) -> None:
    pod = world.runpod.add_pod(name="again")
    world.app.advance(minutes=6)
    world.watch()
    world.runpod.set_status(pod, "EXITED")
    world.app.advance(minutes=1)
    world.watch()  # the episode closes: it no longer runs
    world.runpod.set_status(pod, "RUNNING")
    world.runpod.modify_pod(pod, startedAt=world.app.clock.now().isoformat())
    world.app.advance(minutes=6)
    world.watch()
    assert len(world.unwatched_alerts()) == 2


def test_off_by_default(tmp_path: Path) -> None:
    with _world(tmp_path, required=False) as world:
        world.runpod.add_pod()
        world.app.advance(hours=3)
        assert world.watch() == []
        assert world.runpod.count("list") == 0  # no monitor needs it: nothing is listed


def test_settings_default_is_false() -> None:
    assert make_settings(Path("/tmp")).heartbeat_required is False
    assert timedelta(minutes=5) == make_settings(Path("/tmp")).heartbeat_timeout
