"""Balances and volumes, for the money guards: RunPod's balance comes from GraphQL (whose
retirement is a ProviderError the caller treats as a warning); Vast's from `credit`, else
`balance`; volumes know whether anything still uses them."""

from __future__ import annotations

import asyncio

import pytest

from emulators import RunPodEmulator, VastEmulator
from reaper.providers.base import ProviderError
from reaper.providers.runpod.client import RunPodClient
from reaper.settings.parse import Account
from tests.provider_support import FAST, on_runpod, on_vast

RP_KEY = "rp-test-key-0007"
VAST_KEY = "vast-test-key-0007"


def test_runpod_balance_reads_myself_over_graphql_with_a_bearer_key() -> None:
    with RunPodEmulator({"main": RP_KEY}) as server:
        server.set_balance(client_balance=4.25, current_spend_per_hr=1.5, spend_limit=80)
        balance = on_runpod(server, RP_KEY, lambda c: c.balance())
        [record] = server.requests
    assert (balance.provider, balance.account) == ("runpod", "main")
    assert (balance.balance, balance.spend_per_hour, balance.spend_limit) == (4.25, 1.5, 80.0)
    assert (record.method, record.path, record.query) == ("POST", "/graphql", "")
    assert record.mutating is False


def test_runpod_spend_defaults_to_what_the_pods_cost() -> None:
    with RunPodEmulator({"main": RP_KEY}) as server:
        server.add_pod(cost=0.5)
        server.add_pod(cost=0.25)
        server.add_pod(status="EXITED", cost=9.0)
        balance = on_runpod(server, RP_KEY, lambda c: c.balance())
    assert balance.spend_per_hour == pytest.approx(0.75)


@pytest.mark.parametrize("status", [404, 410])
def test_runpod_retired_graphql_is_a_provider_error(status: int) -> None:
    with RunPodEmulator({"main": RP_KEY}) as server:
        server.graphql_retired = status
        with pytest.raises(ProviderError, match=f"HTTP {status}") as caught:
            on_runpod(server, RP_KEY, lambda c: c.balance())
    assert "balance" in caught.value.message


def test_runpod_graphql_errors_are_a_provider_error() -> None:
    from emulators.server import EmulatorServer, Request, Response

    class Errors(EmulatorServer):
        def dispatch(self, request: Request) -> Response:
            return Response.json(200, {"errors": [{"message": "field removed"}], "data": None})

    with Errors({"main": RP_KEY}) as server:

        async def go() -> None:
            client = RunPodClient(
                Account("runpod", "main", RP_KEY), server.url, f"{server.url}/graphql", FAST
            )
            try:
                await client.balance()
            finally:
                await client.aclose()

        with pytest.raises(ProviderError, match=r"GraphQL.*: field removed"):
            asyncio.run(go())


def test_runpod_volumes_are_attached_when_a_pod_or_endpoint_uses_them() -> None:
    with RunPodEmulator({"main": RP_KEY}) as server:
        server.add_network_volume("by-pod", size=100)
        server.add_network_volume("by-cluster", size=50)
        server.add_network_volume("by-endpoint", size=10)
        server.add_network_volume("orphan", size=2000)
        server.add_pod(status="EXITED", network_volume_id="by-pod")
        server.add_pod(cluster_id="c1", network_volume_id="by-cluster")
        server.add_endpoint("ep1", network_volumes=["by-endpoint"])
        volumes = {v.id: v for v in on_runpod(server, RP_KEY, lambda c: c.volumes())}
    assert {k: v.attached for k, v in volumes.items()} == {
        "by-pod": True,
        "by-cluster": True,
        "by-endpoint": True,
        "orphan": False,
    }
    assert volumes["by-pod"].cost_per_month == pytest.approx(7.0)
    assert volumes["orphan"].cost_per_month == pytest.approx(100.0)
    assert volumes["orphan"].size_gb == 2000


def test_runpod_volume_attachment_unknown_when_endpoints_cannot_be_listed() -> None:
    with RunPodEmulator({"main": RP_KEY}) as server:
        server.add_network_volume("by-pod")
        server.add_network_volume("maybe")
        server.add_pod(network_volume_id="by-pod")
        server.fail_next("serverless", 403, count=1)
        volumes = {v.id: v.attached for v in on_runpod(server, RP_KEY, lambda c: c.volumes())}
    assert volumes == {"by-pod": True, "maybe": None}


def test_runpod_volumes_fail_when_pods_cannot_be_listed() -> None:
    with RunPodEmulator({"main": RP_KEY}) as server:
        server.add_network_volume("v1")
        server.fail_next("list", 500, count=FAST.max_attempts)
        with pytest.raises(ProviderError, match="HTTP 500"):
            on_runpod(server, RP_KEY, lambda c: c.volumes())


def test_vast_balance_prefers_credit() -> None:
    with VastEmulator({"main": VAST_KEY}) as server:
        server.set_user(balance=12.5, credit=3.0)
        balance = on_vast(server, VAST_KEY, lambda c: c.balance())
    assert (balance.provider, balance.balance) == ("vast", 3.0)


def test_vast_balance_falls_back_to_balance_without_credit() -> None:
    with VastEmulator({"main": VAST_KEY}) as server:
        server.set_user(balance=12.5, credit=None)
        assert on_vast(server, VAST_KEY, lambda c: c.balance()).balance == 12.5


def test_vast_balance_unreadable_is_none_not_zero() -> None:
    with VastEmulator({"main": VAST_KEY}) as server:
        server.set_user(balance=None, credit=None)
        assert on_vast(server, VAST_KEY, lambda c: c.balance()).balance is None


def test_vast_balance_with_a_wrong_key_is_a_provider_error() -> None:
    with (
        VastEmulator({"main": "another-key-entirely"}) as server,
        pytest.raises(ProviderError, match="401"),
    ):
        on_vast(server, VAST_KEY, lambda c: c.balance())


def test_vast_volumes_attached_by_their_instances_list() -> None:
    with VastEmulator({"main": VAST_KEY}) as server:
        server.add_volume(7001, size=50, instances=[1000], storage_total_cost=0.01)
        server.add_volume(7002, size=20)
        volumes = {v.id: v for v in on_vast(server, VAST_KEY, lambda c: c.volumes())}
        [request] = server.requests
    assert volumes["7001"].attached is True
    assert volumes["7002"].attached is False
    assert volumes["7001"].size_gb == 50
    assert volumes["7001"].cost_per_month == pytest.approx(7.2)
    assert request.query == "owner=me"
