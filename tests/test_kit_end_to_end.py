"""The kit against the real guard: `reaper serve`'s /ping and /alert, the RunPod emulator, and
then the watch pass — what the layer outside sees of layers 1 and 2, and how it catches them
when they fail (idle-watch killed, a destroy that did not happen)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from reaper.core.models import Monitor
from reaper.settings.parse import Account
from tests.heartbeat_support import KEY, Served, make_settings, served, watch_with_providers
from tests.kit_fakes.harness import POD_KEY, Kit

HOST = "runpod-pod-e2e"


@dataclass
class World:
    kit: Kit
    app: Served

    def monitor(self) -> Monitor:
        monitor = self.app.store.get_monitor(HOST)
        assert monitor is not None
        return monitor

    def alerts(self) -> list[tuple[str, str]]:
        """(event, title and body) of every alert the guard sent, the reaper-silence one
        aside (no reap runs in these tests)."""
        return [
            (a.event, f"{a.title}\n{a.body}".strip())
            for a in self.app.notifier.alerts
            if a.event != "reaper_silent"
        ]

    def wait_for_monitor(self, predicate: str) -> Monitor:
        """Until the monitor's last message starts with `predicate` (an event from another
        process: waited for, with a deadline)."""
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            monitor = self.app.store.get_monitor(HOST)
            if monitor is not None and monitor.last_message.startswith(predicate):
                return monitor
            time.sleep(0.02)
        raise AssertionError(f"no ping starting {predicate!r} arrived")


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    (tmp_path / "kit").mkdir()
    with Kit.start(tmp_path / "kit") as kit:
        settings = make_settings(
            tmp_path,
            runpod_accounts=(Account("runpod", "pod", POD_KEY),),
            runpod_api_url=kit.runpod.rest_url,
            runpod_graphql_url=kit.runpod.graphql_url,
        )
        with served(settings) as app:
            kit.env |= {
                "HEARTBEAT_URL": f"{app.running.url}/ping/{KEY}",
                "NOTIFY_URL": f"{app.running.url}/alert/{KEY}",
                "RUNPOD_POD_ID": "pod-e2e",
                "RUNPOD_API_KEY": POD_KEY,
                "RUNPOD_API_URL": kit.runpod.rest_url,
            }
            kit.add_pod("pod-e2e")
            yield World(kit, app)


def test_idle_watch_heartbeats_destroys_and_the_watcher_retires_it(world: World) -> None:
    done = world.kit.watch(loops=20, IDLE_LIMIT="6")

    assert done.returncode == 0, done.stderr
    monitor = world.monitor()
    assert monitor.last_message == "destroying 6/6 min gpu=0% py=0 ssh=0 jupyter=none"
    assert monitor.last_ping_kind == "bye"
    assert [(r.method, r.path, r.account) for r in world.kit.runpod.mutations] == [
        ("DELETE", "/v2/pods/pod-e2e", "pod")
    ]
    titles = [text.split("\n")[0] for event, text in world.alerts() if event == "webhook"]
    assert titles == [f"{HOST}: idle 1 min, destroying in 5 min", f"{HOST}: idle 6 min, destroying"]

    world.app.advance(minutes=10)
    assert watch_with_providers(world.app).absent == [HOST]
    world.app.advance(minutes=1)
    report = watch_with_providers(world.app)

    assert report.retired == [HOST]
    assert [e for e, _ in world.alerts()] == ["webhook", "webhook"]


def test_a_killed_idle_watch_is_what_the_watcher_alerts_on(world: World) -> None:
    world.kit.fake("nvidia-smi", "87")
    proc = world.kit.popen("idle-watch.sh", IDLE_WATCH_SLEEP="30")
    try:
        monitor = world.wait_for_monitor("busy")
    finally:
        world.kit.kill_all(proc)

    assert monitor.last_message == "busy 0/20 min gpu=87% py=0 ssh=0 jupyter=none"
    world.app.advance(minutes=6)
    report = watch_with_providers(world.app)

    assert report.billing_silent == [HOST]
    [(event, title)] = world.alerts()
    assert event == "watchdog_silent_billing"
    assert "pod-e2e" in title or "training-pod" in title


def test_run_sh_reports_destroys_and_the_watcher_retires_it(world: World) -> None:
    done = world.kit.run("run.sh", "bash", "-c", "exit 3")

    assert done.returncode == 3
    monitor = world.monitor()
    assert monitor.last_ping_kind == "bye"
    assert monitor.last_exit_status == 3
    assert world.kit.runpod.pod("pod-e2e") is None
    webhook = [text for event, text in world.alerts() if event == "webhook"]
    assert webhook == [
        f"{HOST}: job FAILED (exit 3), destroying\nrun.sh: job exited with status 3; "
        "nothing to save (RESULTS_URL and PUSH_CMD unset); destroying this instance"
    ]

    world.app.advance(minutes=10)
    # Gone from one listing, then from the next a watch period later: retired.
    assert watch_with_providers(world.app).absent == [HOST]
    world.app.advance(minutes=1)
    report = watch_with_providers(world.app)

    assert report.retired == [HOST]
    assert "watchdog_silent_billing" not in [e for e, _ in world.alerts()]


def test_a_destroy_that_failed_is_alerted_at_once_and_the_pod_still_bills(world: World) -> None:
    world.kit.runpod.fail_next("delete", status=503)

    done = world.kit.run("run.sh", "true")

    assert done.returncode == 0
    assert world.kit.runpod.pod("pod-e2e") is not None
    assert world.monitor().status == "down"
    # one alert for the failure: the kit's notify, then /fail, which the guard keeps quiet
    failures = [t for _, t in world.alerts() if "FAILED" in t]
    assert len(failures) == 1
    assert failures[0].startswith(f"{HOST}: destroy FAILED, still billing\n")
    assert "destroying RunPod pod pod-e2e failed (HTTP 503" in failures[0]
    assert "monitor_failed" not in [e for e, _ in world.alerts()]


def test_keep_alive_leaves_the_watch_to_idle_watch(world: World) -> None:
    done = world.kit.run("run.sh", "true", KEEP_ALIVE="1")

    assert done.returncode == 0
    assert world.kit.runpod.mutations == []
    assert world.monitor().last_exit_status == 0
    assert world.monitor().status != "down"


def test_nothing_the_kit_prints_carries_a_key(world: World) -> None:
    world.kit.runpod.fail_next("delete", status=401)
    done = world.kit.run("run.sh", "true")
    watched = world.kit.watch(loops=1)

    for output in (done.stdout, done.stderr, watched.stdout, watched.stderr):
        assert KEY not in output
        assert POD_KEY not in output
