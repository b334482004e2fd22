"""What DigitalOcean tells the money guards. The balance: DigitalOcean bills a card after the
month, so what can run out is prepaid credit, shown as a negative `month_to_date_balance`
(`account_balance` plus this month's usage); zero or above, nothing runs out and the balance is
unknown to the guards rather than "low". The volumes: every block storage volume, attached when
`droplet_ids` names a droplet, $0.10 per GiB a month either way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from emulators.digitalocean import DigitalOceanEmulator
from emulators.server import Response
from reaper.providers.base import ProviderError
from reaper.providers.digitalocean import fetch_note
from tests.digitalocean_support import TOKEN, do_world, on_digitalocean


@pytest.mark.parametrize(
    ("month_to_date", "credit"),
    [("-42.50", 42.5), ("-0.01", 0.01), ("0.00", None), ("23.44", None), (-7, 7.0)],
)
def test_the_balance_is_the_credit_left(month_to_date: Any, credit: float | None) -> None:
    with DigitalOceanEmulator({"main": TOKEN}) as server:
        server.set_balance(month_to_date_balance=month_to_date, account_balance="-50.00")
        balance = on_digitalocean(server, lambda c: c.balance())
    assert (balance.provider, balance.account, balance.balance) == ("digitalocean", "main", credit)


@pytest.mark.parametrize("month_to_date", [None, "lots", "NaN", "Infinity", True, [1]])
def test_a_balance_that_cannot_be_read_is_an_error_not_zero(month_to_date: Any) -> None:
    with DigitalOceanEmulator({"main": TOKEN}) as server:
        body = {"account_balance": "-50.00", "generated_at": "2026-12-02T12:00:00Z"}
        if month_to_date is not None:
            body["month_to_date_balance"] = month_to_date
        server.answer_as("balance", Response.json(200, body))
        with pytest.raises(ProviderError, match="month_to_date_balance"):
            on_digitalocean(server, lambda c: c.balance())


def test_a_balance_the_token_may_not_read_says_which_scope_it_needs(tmp_path: Path) -> None:
    with do_world(tmp_path) as w:
        w.do.add_droplet(status="active")
        forbidden = Response.json(
            403, {"id": "forbidden", "message": "You do not have access for the attempted action."}
        )
        w.do.answer_as("balance", forbidden)
        report = w.run()
        assert report.errors == [], "a balance that cannot be read never fails the pass"
        (alert,) = [a for a in w.notifier.alerts if a.event == "guard_fetch_failed"]
        assert alert.title == "DigitalOcean main: balance unreadable"
        assert "billing:read" in alert.body and "forbidden" in alert.body
    assert fetch_note("main", "volumes") is not None
    assert fetch_note("main", "billing") is None


def test_low_credit_is_alerted_once(tmp_path: Path) -> None:
    with do_world(tmp_path) as w:
        w.do.add_droplet(status="active")
        w.do.set_balance(month_to_date_balance="-3.10")
        w.run()
        w.advance(1)
        w.run()
        low = [a for a in w.notifier.alerts if a.event == "balance_low"]
        assert len(low) == 1
        assert "DigitalOcean" in low[0].title and "$3.10" in low[0].title


def test_volumes_are_attached_when_a_droplet_holds_them() -> None:
    with DigitalOceanEmulator({"main": TOKEN}) as server:
        droplet = server.add_droplet()
        server.add_volume("vol-attached", size=500, droplet_ids=[droplet])
        server.add_volume("vol-orphan", size=100)
        volumes = on_digitalocean(server, lambda c: c.volumes())
    by_id = {v.id: v for v in volumes}
    assert (by_id["vol-attached"].attached, by_id["vol-attached"].cost_per_month) == (True, 50.0)
    assert (by_id["vol-orphan"].attached, by_id["vol-orphan"].cost_per_month) == (False, 10.0)
    assert by_id["vol-orphan"].size_gb == 100


@pytest.mark.parametrize(("droplet_ids", "attached"), [(None, None), ("x", None), ([], False)])
def test_a_volume_whose_droplets_cannot_be_read_is_never_an_orphan(
    droplet_ids: Any, attached: bool | None
) -> None:
    with DigitalOceanEmulator({"main": TOKEN}) as server:
        server.add_volume("vol-1")
        server.answer_as(
            "volumes",
            Response.json(
                200,
                {
                    "volumes": [{"id": "vol-1", "size_gigabytes": 10, "droplet_ids": droplet_ids}],
                    "links": {},
                    "meta": {"total": 1},
                },
            ),
        )
        (volume,) = on_digitalocean(server, lambda c: c.volumes())
    assert volume.attached is attached


def test_a_volume_listing_that_does_not_add_up_is_an_error() -> None:
    with DigitalOceanEmulator({"main": TOKEN}) as server:
        server.add_volume("vol-1")
        server.wrong_total = 1
        with pytest.raises(
            ProviderError, match=r"1 distinct volumes listed but the server counts 2"
        ):
            on_digitalocean(server, lambda c: c.volumes())


def test_no_billing_history_is_claimed() -> None:
    with DigitalOceanEmulator({"main": TOKEN}) as server:

        async def histories(client: Any) -> tuple[Any, Any]:
            return await client.billing(30), await client.instance_billing(30)

        assert on_digitalocean(server, histories) == (None, None)
        assert server.requests == []
