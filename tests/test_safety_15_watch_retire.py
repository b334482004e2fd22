"""Issue 12.15: a silent watchdog of a provider host retires as gone only when two complete
listings a watch period apart miss its instance, or the provider shows it terminated."""

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


def test_one_listing_that_misses_a_running_instance_does_not_retire_it(
    app: tuple[Served, RunPodEmulator],
) -> None:
    served_app, runpod = app
    runpod.add_pod(name="witness")
    pod = runpod.add_pod(name="trainer", cost=2.5)
    host = f"runpod-{pod}"
    served_app.ping(host)
    served_app.advance(minutes=10)  # silent: its watchdog died
    # One listing misses it (a provider's hiccup), the next shows it again, billing.
    hidden = runpod.pod(pod)
    runpod.remove_pod(pod)
    first = watch_with_providers(served_app)
    assert first.retired == [] and first.absent == [host]
    monitor = served_app.store.get_monitor(host)
    assert monitor is not None and monitor.status != "retired"
    runpod.add_pod(pod, name="trainer", cost=2.5)
    assert hidden is not None
    served_app.advance(minutes=1)
    second = watch_with_providers(served_app)
    assert second.billing_silent == [host]
    assert "watchdog_silent_billing" in served_app.events()


def test_two_listings_a_period_apart_that_miss_it_retire_it_quietly(
    app: tuple[Served, RunPodEmulator],
) -> None:
    served_app, runpod = app
    pod = runpod.add_pod(name="done")
    host = f"runpod-{pod}"
    served_app.ping(host)
    served_app.advance(minutes=10)
    runpod.remove_pod(pod)
    assert watch_with_providers(served_app).absent == [host]
    # A second listing less than a watch period later is not yet enough.
    served_app.advance(seconds=20)
    assert watch_with_providers(served_app).retired == []
    served_app.advance(minutes=1)
    assert watch_with_providers(served_app).retired == [host]
    assert [e for e in served_app.events() if e != "reaper_silent"] == []


def test_a_ping_in_between_starts_the_absence_over(app: tuple[Served, RunPodEmulator]) -> None:
    served_app, runpod = app
    pod = runpod.add_pod(name="flaky")
    host = f"runpod-{pod}"
    served_app.ping(host)
    served_app.advance(minutes=10)
    runpod.remove_pod(pod)
    watch_with_providers(served_app)
    served_app.ping(host)
    served_app.advance(minutes=10)
    assert watch_with_providers(served_app).retired == [], "a new absence, not the old one"


def test_empty_listings_from_an_account_that_had_instances_retire_nothing(
    app: tuple[Served, RunPodEmulator],
) -> None:
    """Review finding: a provider outage answering `{"pods": []}` twice must not retire every
    silent watchdog while its pods still bill: an empty answer from an account whose last
    recorded listing had pods proves nothing gone."""
    from reaper.core.models import Listing

    served_app, runpod = app
    pod = runpod.add_pod(name="trainer", cost=2.0)
    host = f"runpod-{pod}"
    served_app.ping(host)
    from reaper.core.models import Instance

    # What the last reap pass recorded of the account: the pod, running.
    served_app.store.record_listing(
        Listing(
            provider="runpod",
            account="main",
            at=served_app.clock.now(),
            instances=[
                Instance(
                    provider="runpod", account="main", id=pod, state="running", raw_status="RUNNING"
                )
            ],
        )
    )
    served_app.advance(minutes=10)
    runpod.empty_next("list", count=10)
    for _ in range(3):
        assert watch_with_providers(served_app).retired == []
        served_app.advance(minutes=1)
    monitor = served_app.store.get_monitor(host)
    assert monitor is not None and monitor.status != "retired"
