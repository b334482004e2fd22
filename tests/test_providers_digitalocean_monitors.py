"""A monitor whose host is `do-<dropletId>` is a DigitalOcean droplet's watchdog, cross-checked
with the listing like the others: active and silent says what it bills; powered off is one
note (the reaper takes over); gone from two listings a period apart, or `archive`, retires the
monitor quietly."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from emulators.digitalocean import DigitalOceanEmulator
from reaper.core.models import Monitor
from tests.digitalocean_support import TOKEN, account
from tests.heartbeat_support import Served, make_settings, served, watch_with_providers


@dataclass
class World:
    app: Served
    do: DigitalOceanEmulator

    def monitor(self, host: str) -> Monitor:
        monitor = self.app.store.get_monitor(host)
        assert monitor is not None
        return monitor

    def events(self) -> list[str]:
        return [e for e in self.app.events() if e != "reaper_silent"]


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    with DigitalOceanEmulator({"main": TOKEN}) as do:
        settings = make_settings(
            tmp_path, digitalocean_accounts=(account(),), digitalocean_api_url=do.api_url
        )
        with served(settings) as app:
            yield World(app, do)


def silence(world: World, host: str) -> None:
    world.app.ping(host)
    world.app.advance(minutes=6)


def test_an_active_droplet_whose_watchdog_is_silent_says_what_it_bills(world: World) -> None:
    droplet = world.do.add_droplet(name="llama-h100", price_hourly=3.39)
    host = f"do-{droplet}"
    silence(world, host)
    report = watch_with_providers(world.app)
    assert report.billing_silent == [host]
    [alert] = world.app.notifier.alerts
    assert alert.event == "watchdog_silent_billing"
    assert "llama-h100" in alert.title and "$3.39" in alert.title
    assert all("type=gpus" in r.query for r in world.do.requests if r.kind == "list")


def test_a_powered_off_droplet_is_one_note(world: World) -> None:
    droplet = world.do.add_droplet()
    host = f"do-{droplet}"
    world.app.ping(host)
    world.do.set_status(droplet, "off")
    world.app.advance(minutes=6)
    assert watch_with_providers(world.app).stopped == [host]
    world.app.advance(hours=2)
    watch_with_providers(world.app)
    assert world.events() == ["instance_stopped_watchdog"]


@pytest.mark.parametrize("how", ["destroyed", "archive"])
def test_a_destroyed_droplet_retires_its_monitor_quietly(world: World, how: str) -> None:
    droplet = world.do.add_droplet()
    host = f"do-{droplet}"
    silence(world, host)
    if how == "destroyed":
        world.do.remove_droplet(droplet)
        assert watch_with_providers(world.app).absent == [host]
        world.app.advance(minutes=1)
    else:
        world.do.set_status(droplet, "archive")
    assert watch_with_providers(world.app).retired == [host]
    assert world.monitor(host).status == "retired"
    assert world.app.notifier.alerts == []
