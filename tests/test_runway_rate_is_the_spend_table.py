"""One burn rate per account: the runway (`reaper report`'s balances, the runway alert) counts
what the spend table counts — running instances and storage — for every provider. RunPod
reports a spend rate of its own that counts running pods only ($1.640/h beside a $1.845/h
spend table); the runway does not take it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from emulators import RunPodEmulator, VastEmulator
from emulators.clock import FakeClock
from emulators.digitalocean import DigitalOceanEmulator
from reaper.core.leaks import with_spend
from reaper.core.models import Balance, Instance
from reaper.interfaces.commands import report_command
from reaper.providers.base import HttpOptions
from reaper.settings.model import Settings, StateURL
from reaper.settings.parse import Account
from reaper.store.sqlite import SQLiteStore
from tests.settings_support import settings as settings_of

NOW = datetime(2026, 6, 2, 9, 0, tzinfo=UTC)
FAST = HttpOptions(timeout=2, max_attempts=2, backoff_base=0.001, backoff_cap=0.005)
RP_KEY, VAST_KEY, DO_TOKEN = "rp-key-0123456789abc", "vast-key-0123456789", "dop_v1_0123456789abc"


@pytest.fixture
def three(tmp_path: Path) -> Iterator[Settings]:
    """A running and a stopped instance on each provider; RunPod's own spend rate counts the
    running pod only."""
    with (
        RunPodEmulator({"main": RP_KEY}, now=lambda: NOW) as runpod,
        VastEmulator({"main": VAST_KEY}, now=lambda: NOW) as vast,
        DigitalOceanEmulator({"main": DO_TOKEN}, now=lambda: NOW) as docean,
    ):
        runpod.add_pod("p1", name="trainer", cost=1.64, gpu_utils=[90])
        runpod.add_pod("p2", name="parked", status="EXITED", cost=0.0, volume_gb=750)
        runpod.set_balance(client_balance=50.0, current_spend_per_hr=1.64)
        vast.add_instance(301, label="runner", actual_status="running", dph_total=0.8)
        vast.add_instance(302, label="parked", actual_status="stopped", intended_status="stopped")
        vast.set_user(credit=40.0)
        docean.add_droplet(1, status="active", price_hourly=3.39)
        docean.add_droplet(2, status="off", price_hourly=1.57)
        docean.set_balance(month_to_date_balance="-60.00")
        settings = settings_of(
            runpod_accounts=(Account("runpod", "main", RP_KEY),),
            vast_accounts=(Account("vast", "main", VAST_KEY),),
            digitalocean_accounts=(Account("digitalocean", "main", DO_TOKEN),),
            runpod_api_url=runpod.rest_url,
            runpod_graphql_url=runpod.graphql_url,
            vast_api_url=vast.url,
            digitalocean_api_url=f"{docean.url}/v2",
            state=StateURL("sqlite", str(tmp_path / "state.db")),
        )
        SQLiteStore(settings.state.location).close()  # `report` reads an existing state
        yield settings


def test_the_report_gives_each_provider_one_rate(
    three: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    assert report_command(three, json_output=True, clock=FakeClock(NOW), http_options=FAST) == 0
    data = json.loads(capsys.readouterr().out)
    table = {s["provider"]: s["per_hour"] for s in data["spend"]}
    runway = {b["provider"]: b["spend_per_hour"] for b in data["balances"]}
    assert set(table) == set(runway) == {"runpod", "vast", "digitalocean"}
    for provider in table:
        assert runway[provider] == pytest.approx(table[provider], abs=1e-4), provider
    # RunPod's stopped pod bills its volume: the table counts it, and so does the runway.
    assert table["runpod"] > 1.64
    hours = {b["provider"]: b["hours_left"] for b in data["balances"]}
    assert hours["runpod"] == pytest.approx(50.0 / table["runpod"], abs=0.01)


def test_with_spend_takes_the_fleet_rate_over_the_providers_own() -> None:
    def inst(id_: str, state: str, cost: float) -> Instance:
        return Instance.model_validate(
            {
                "provider": "runpod",
                "account": "main",
                "id": id_,
                "name": id_,
                "state": state,
                "raw_status": state,
                "cost_per_hour": cost,
            }
        )

    fleet = [inst("a", "running", 1.64), inst("b", "stopped", 0.205)]
    own = Balance(provider="runpod", account="main", balance=20.0, spend_per_hour=1.64)
    [filled] = with_spend([own], fleet)
    assert filled.spend_per_hour == pytest.approx(1.845)
    # A listing that failed shows nothing of the fleet: the provider's own figure stays.
    [kept] = with_spend([own], [], failed_accounts={("runpod", "main")})
    assert kept.spend_per_hour == 1.64
