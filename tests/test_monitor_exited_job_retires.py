"""A monitor whose job exited (a failure, and no `bye`) and whose instance is gone retires on
its own — by the two-listings rule — instead of reminding every HEARTBEAT_REPEAT forever."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from emulators import RunPodEmulator
from reaper.settings.parse import Account
from tests.heartbeat_support import Served, make_settings, served, watch_with_providers


@pytest.fixture
def app(tmp_path: Path) -> Iterator[tuple[Served, RunPodEmulator]]:
    with RunPodEmulator({"main": "rp-key-main"}) as runpod:
        settings = make_settings(
            tmp_path,
            runpod_accounts=(Account("runpod", "main", "rp-key-main"),),
            runpod_api_url=runpod.rest_url,
            runpod_graphql_url=runpod.graphql_url,
        )
        with served(settings) as served_app:
            yield served_app, runpod


def _monitor_events(app: Served) -> list[str]:
    return [e for e in app.events() if e != "reaper_silent"]


def test_an_exited_job_whose_instance_is_gone_retires(
    app: tuple[Served, RunPodEmulator],
) -> None:
    served_app, runpod = app
    runpod.add_pod(name="witness")  # the listing is not empty: an absence can be believed
    pod = runpod.add_pod(name="job")
    host = f"runpod-{pod}"
    served_app.ping(host, "start")
    served_app.ping(host, "1")  # the job failed; nobody sends bye (KEEP_ALIVE, a crash...)
    runpod.remove_pod(pod)  # then the instance is destroyed by hand
    served_app.advance(hours=1)
    first = watch_with_providers(served_app)
    assert first.absent == [host] and first.reminded == []
    served_app.advance(minutes=1)
    second = watch_with_providers(served_app)
    assert second.retired == [host]
    monitor = served_app.store.get_monitor(host)
    assert monitor is not None and monitor.status == "retired"
    for _ in range(5):
        served_app.advance(hours=1)
        assert watch_with_providers(served_app).reminded == []
    assert _monitor_events(served_app) == ["monitor_failed"]


def test_while_the_instance_still_bills_it_keeps_reminding(
    app: tuple[Served, RunPodEmulator],
) -> None:
    """The control: the same failure with the instance still there is not retired."""
    served_app, runpod = app
    pod = runpod.add_pod(name="job", cost=1.5)
    host = f"runpod-{pod}"
    served_app.ping(host, "1")
    for _ in range(3):
        served_app.advance(hours=1)
        report = watch_with_providers(served_app)
        assert report.retired == []
    assert _monitor_events(served_app).count("monitor_failed") == 1
    assert "watchdog_silent_billing" in _monitor_events(served_app)
