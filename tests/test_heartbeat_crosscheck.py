"""Provider hosts (`runpod-<id>`, `vast-<id>`) are cross-checked against the emulators with
one listing per account per pass: gone or terminated → retire quietly; stopped → one note;
running → "watchdog silent while <name> bills $X/h"; a failed listing → the plain alert, saying
so. A `bye` sent with a leaked key does not silence a running instance."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from emulators import RunPodEmulator, VastEmulator
from reaper.core.models import Monitor
from reaper.settings.parse import Account
from tests.heartbeat_support import Served, make_settings, served, watch_with_providers


@dataclass
class World:
    app: Served
    runpod: RunPodEmulator
    vast: VastEmulator

    def monitor(self, host: str) -> Monitor:
        monitor = self.app.store.get_monitor(host)
        assert monitor is not None
        return monitor


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    with (
        RunPodEmulator({"alpha": "rp-key-alpha", "beta": "rp-key-beta"}) as runpod,
        VastEmulator({"main": "vast-key-main"}) as vast,
    ):
        settings = make_settings(
            tmp_path,
            runpod_accounts=(
                Account("runpod", "alpha", "rp-key-alpha"),
                Account("runpod", "beta", "rp-key-beta"),
            ),
            vast_accounts=(Account("vast", "main", "vast-key-main"),),
            runpod_api_url=runpod.rest_url,
            runpod_graphql_url=runpod.graphql_url,
            vast_api_url=vast.url,
        )
        with served(settings) as app:
            yield World(app, runpod, vast)


def _events(world: World) -> list[str]:
    """Monitor alerts only: with provider keys set and no reap recorded, the watcher also
    (rightly) says the reaper is silent — that has its own test module."""
    return [e for e in world.app.events() if e != "reaper_silent"]


def _silence(world: World, host: str) -> None:
    world.app.ping(host)
    world.app.advance(minutes=6)


def test_a_healthy_fleet_is_not_listed(world: World) -> None:
    pod = world.runpod.add_pod(name="healthy")
    world.app.ping(f"runpod-{pod}")
    world.app.advance(minutes=2)
    watch_with_providers(world.app)
    assert world.runpod.count("list") == 0 and world.vast.count("list") == 0


def test_running_and_silent_says_what_it_bills(world: World) -> None:
    pod = world.runpod.add_pod(name="llama-finetune", cost=0.69, account="beta")
    host = f"runpod-{pod}"
    _silence(world, host)
    report = watch_with_providers(world.app)
    assert report.billing_silent == [host]
    [alert] = world.app.notifier.alerts
    assert alert.event == "watchdog_silent_billing" and alert.level == "critical"
    assert "llama-finetune" in alert.title and "$0.69" in alert.title
    assert world.monitor(host).status == "down"


def test_reminders_repeat_only_while_it_bills(world: World) -> None:
    pod = world.runpod.add_pod(name="p", cost=1.5)
    host = f"runpod-{pod}"
    _silence(world, host)
    watch_with_providers(world.app)
    world.app.advance(hours=1)
    watch_with_providers(world.app)
    assert _events(world) == ["watchdog_silent_billing"] * 2
    world.runpod.set_status(pod, "EXITED")
    world.app.advance(hours=1)
    watch_with_providers(world.app)
    world.app.advance(hours=3)
    watch_with_providers(world.app)
    # One note when it stopped, then silence: the reaper takes over.
    assert _events(world) == ["watchdog_silent_billing"] * 2 + ["instance_stopped_watchdog"]


def test_stopped_and_silent_is_one_note(world: World) -> None:
    instance = world.vast.add_instance(label="sd-render", actual_status="running")
    host = f"vast-{instance}"
    world.app.ping(host)
    world.vast.set_status(instance, "stopped", "stopped")
    world.app.advance(minutes=6)
    report = watch_with_providers(world.app)
    assert report.stopped == [host]
    for _ in range(3):
        world.app.advance(hours=2)
        watch_with_providers(world.app)
    assert _events(world) == ["instance_stopped_watchdog"]


@pytest.mark.parametrize("how", ["removed", "terminated"])
def test_gone_or_terminated_retires_quietly(world: World, how: str) -> None:
    pod = world.runpod.add_pod(name="done")
    host = f"runpod-{pod}"
    _silence(world, host)
    if how == "removed":
        world.runpod.remove_pod(pod)
        # Missing from one complete listing is not yet proof: the next, a period later, is.
        assert watch_with_providers(world.app).absent == [host]
        world.app.advance(minutes=1)
    else:
        world.runpod.set_status(pod, "TERMINATED")
    report = watch_with_providers(world.app)
    assert report.retired == [host]
    assert world.monitor(host).status == "retired"
    assert world.app.notifier.alerts == []


def test_a_stopped_instance_that_disappears_retires(world: World) -> None:
    instance = world.vast.add_instance(actual_status="stopped")
    host = f"vast-{instance}"
    _silence(world, host)
    watch_with_providers(world.app)
    world.vast.remove_instance(instance)
    world.app.advance(minutes=1)
    assert watch_with_providers(world.app).absent == [host]
    world.app.advance(minutes=1)
    assert watch_with_providers(world.app).retired == [host]


def test_a_failed_listing_falls_back_to_the_plain_alert(world: World) -> None:
    pod = world.runpod.add_pod(account="alpha")
    host = f"runpod-{pod}"
    _silence(world, host)
    world.runpod.fail_next("list", 500, count=10)
    report = watch_with_providers(world.app)
    assert report.went_down == [host] and report.errors
    assert report.exit_code == 1
    [alert] = world.app.notifier.alerts
    assert alert.event == "monitor_down"
    assert "cross-check with runpod" in alert.body and "failed" in alert.body
    assert world.monitor(host).status == "down"  # not retired on a guess


def test_one_listing_per_account_per_pass(world: World) -> None:
    pods = [world.runpod.add_pod(account=a) for a in ("alpha", "alpha", "beta", "beta", "beta")]
    instances = [world.vast.add_instance() for _ in range(3)]
    for host in [f"runpod-{p}" for p in pods] + [f"vast-{i}" for i in instances]:
        world.app.ping(host)
    world.app.advance(minutes=6)
    watch_with_providers(world.app)
    assert world.runpod.count("list") == 2  # two RunPod accounts, eight monitors
    assert world.vast.count("list") == 1
    assert len(world.app.notifier.alerts) == 8


def test_bye_from_a_leaked_key_does_not_silence_a_running_instance(world: World) -> None:
    pod = world.runpod.add_pod(name="victim", cost=2.0)
    host = f"runpod-{pod}"
    world.app.ping(host)
    world.app.ping(host, "bye")  # anyone holding the ping key can send this
    assert world.monitor(host).status != "retired"
    world.app.advance(minutes=6)
    report = watch_with_providers(world.app)
    assert report.billing_silent == [host]
    [alert] = world.app.notifier.alerts
    assert "victim" in alert.title and "bye" in alert.body


def test_bye_then_gone_or_stopped_retires_at_the_next_pass(world: World) -> None:
    leaving = world.runpod.add_pod(name="leaving")
    stopping = world.vast.add_instance()
    for host in (f"runpod-{leaving}", f"vast-{stopping}"):
        world.app.ping(host)
        world.app.ping(host, "bye")
    world.runpod.remove_pod(leaving)
    world.vast.set_status(stopping, "exited")
    world.app.advance(minutes=1)  # not even silent yet
    report = watch_with_providers(world.app)
    # Stopped retires at once; gone needs a second complete listing a period later.
    assert report.retired == [f"vast-{stopping}"]
    assert report.absent == [f"runpod-{leaving}"]
    world.app.advance(minutes=1)
    assert watch_with_providers(world.app).retired == [f"runpod-{leaving}"]
    assert world.app.notifier.alerts == []


def test_bye_without_a_key_for_that_provider_retires_at_once(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:  # no provider keys at all
        app.ping("runpod-abc123")
        app.ping("runpod-abc123", "bye")
        monitor = app.store.get_monitor("runpod-abc123")
        assert monitor is not None and monitor.status == "retired"


def test_a_failed_job_then_bye_is_not_a_recovery(world: World) -> None:
    """run.sh on a failed job pings /<status>, then /bye, then destroys the instance: the
    phone must get "failed", not "failed" and a second later "recovered"."""
    pod = world.runpod.add_pod(name="trainer")
    host = f"runpod-{pod}"
    world.app.ping(host, "start")
    world.app.ping(host, "1", method="POST", body=b"job exited 1")
    world.app.ping(host, "bye", method="POST", body=b"run.sh: destroying this instance")
    assert _events(world) == ["monitor_failed"]
    monitor = world.monitor(host)
    assert monitor.status == "down" and monitor.bye_at is not None
    assert monitor.last_ping_kind == "bye"
    world.runpod.remove_pod(pod)
    world.app.advance(minutes=1)
    assert watch_with_providers(world.app).absent == [host]
    world.app.advance(minutes=1)
    assert watch_with_providers(world.app).retired == [host]
    assert _events(world) == ["monitor_failed"]


def test_a_failed_job_then_bye_on_a_billing_instance_still_reminds(world: World) -> None:
    """The bye did not take the failed instance away: it bills on, and says so."""
    pod = world.runpod.add_pod(name="stuck", cost=1.0)
    host = f"runpod-{pod}"
    world.app.ping(host, "fail")
    world.app.ping(host, "bye")
    world.app.advance(hours=1)
    assert watch_with_providers(world.app).billing_silent == [host]
    assert _events(world) == ["monitor_failed", "watchdog_silent_billing"]
    assert "bye" in world.app.notifier.alerts[-1].body


def test_plain_and_provider_hosts_agree_on_fail_then_bye(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:  # no provider key: runpod-x is plain
        app.ping("runpod-x", "1")
        app.ping("runpod-x", "bye")
        assert app.events() == ["monitor_failed"]


def test_billing_again_after_stopped_alerts_at_once(world: World) -> None:
    pod = world.runpod.add_pod(name="flappy", cost=1.0)
    host = f"runpod-{pod}"
    _silence(world, host)
    watch_with_providers(world.app)
    world.runpod.set_status(pod, "EXITED")
    world.app.advance(minutes=5)
    watch_with_providers(world.app)
    assert _events(world) == ["watchdog_silent_billing", "instance_stopped_watchdog"]
    world.runpod.set_status(pod, "RUNNING", cost=1.0)
    world.app.advance(minutes=5)
    assert watch_with_providers(world.app).billing_silent == [host]
    # Well within HEARTBEAT_REPEAT of the first alert, and not swallowed as its repeat.
    assert _events(world) == [
        "watchdog_silent_billing",
        "instance_stopped_watchdog",
        "watchdog_silent_billing",
    ]
    world.app.advance(minutes=5)
    watch_with_providers(world.app)
    assert len(_events(world)) == 3  # still billing: the reminder waits for HEARTBEAT_REPEAT
