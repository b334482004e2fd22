"""The emulator framework itself: it serves ~100 concurrent keep-alive connections, keeps
accounts apart, counts calls by kind, logs every mutating call, and its switches (latency,
down, failures) do what they say."""

from __future__ import annotations

import http.client
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from emulators import RunPodEmulator, VastEmulator

RP_KEY = "rp-server-key-0008"
VAST_KEY = "vast-server-key-0008"


@pytest.fixture(scope="module")
def web() -> Iterator[httpx.Client]:
    """One plain HTTP client per module: `httpx.get()` would build a client, and load the CA
    bundle, on every call."""
    with httpx.Client(timeout=10) as client:
        yield client


def test_a_hundred_concurrent_keep_alive_connections_are_served() -> None:
    with VastEmulator({"main": VAST_KEY}) as server:
        server.add_instance()
        server.set_latency(0.2)
        # Every worker is up before the first call, so that all 100 connections overlap.
        ready = threading.Barrier(100)

        def one_connection(_: int) -> list[int]:
            connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
            ready.wait()
            statuses = []
            for _ in range(3):
                connection.request(
                    "GET", "/api/v0/users/current/", headers={"Authorization": f"Bearer {VAST_KEY}"}
                )
                answer = connection.getresponse()
                answer.read()
                statuses.append(answer.status)
            connection.close()
            return statuses

        with ThreadPoolExecutor(max_workers=100) as pool:
            results = list(pool.map(one_connection, range(100)))
        peak = server.peak_in_flight
        accounts = {r.account for r in server.requests}
    assert results == [[200, 200, 200]] * 100
    assert accounts == {"main"}
    # Served concurrently: a serial server never has two calls in flight. Each call takes 0.2 s
    # and all 100 start together, so even a loaded machine has far more than 10 in flight.
    assert peak >= 10


def test_keep_alive_reuses_one_connection() -> None:
    with RunPodEmulator({"main": RP_KEY}) as server, httpx.Client() as client:
        ports = set()
        for _ in range(5):
            answer = client.get(
                f"{server.rest_url}/pods",
                headers={"Authorization": f"Bearer {RP_KEY}"},
                extensions={"trace": lambda name, info: None},
            )
            assert answer.status_code == 200
            assert answer.http_version == "HTTP/1.1"
            stream = answer.extensions["network_stream"]
            ports.add(stream.get_extra_info("client_addr")[1])
    assert len(ports) == 1


def test_accounts_see_only_their_own_instances(web: httpx.Client) -> None:
    keys = {"alice": "vast-alice-key", "bob": "vast-bob-key"}
    with VastEmulator(keys) as server:
        mine = server.add_instance(account="alice")
        server.add_instance(account="bob")
        answer = web.get(
            f"{server.url}/api/v1/instances/", headers={"Authorization": "Bearer vast-alice-key"}
        ).json()
        denied = web.delete(
            f"{server.url}/api/v0/instances/{mine}/",
            headers={"Authorization": "Bearer vast-bob-key"},
        )
    assert [i["id"] for i in answer["instances"]] == [mine]
    assert denied.status_code == 404


@pytest.mark.parametrize("header", [None, "Bearer nope", "Basic dmFzdA==", "Bearer"])
def test_missing_or_wrong_bearer_is_401(header: str | None, web: httpx.Client) -> None:
    with VastEmulator({"main": VAST_KEY}) as vast, RunPodEmulator({"main": RP_KEY}) as runpod:
        headers = {"Authorization": header} if header else {}
        answers = [
            web.get(f"{vast.url}/api/v1/instances/", headers=headers),
            web.get(f"{runpod.rest_url}/pods", headers=headers),
        ]
        assert vast.requests[0].account is None
    assert [a.status_code for a in answers] == [401, 401]


def test_counters_and_the_mutation_log(web: httpx.Client) -> None:
    with RunPodEmulator({"main": RP_KEY}) as server:
        pod = server.add_pod()
        auth = {"Authorization": f"Bearer {RP_KEY}"}
        web.get(f"{server.rest_url}/pods", headers=auth)
        web.get(f"{server.rest_url}/pods", headers=auth)
        web.get(f"{server.rest_url}/network-volumes", headers=auth)
        web.post(
            server.graphql_url, json={"query": "query { myself { clientBalance } }"}, headers=auth
        )
        web.delete(f"{server.rest_url}/pods/{pod}", headers=auth)
        counts = dict(server.calls)
        mutations = server.mutations
    assert counts == {"list": 2, "volumes": 1, "balance": 1, "delete": 1}
    assert [(m.method, m.path, m.status) for m in mutations] == [("DELETE", f"/v2/pods/{pod}", 204)]


def test_failures_are_injected_once_per_count_and_by_kind(web: httpx.Client) -> None:
    with VastEmulator({"main": VAST_KEY}) as server:
        auth = {"Authorization": f"Bearer {VAST_KEY}"}
        server.fail_next("balance", 502, count=2)
        volumes = web.get(f"{server.url}/api/v0/volumes/", headers=auth).status_code
        balances = [
            web.get(f"{server.url}/api/v0/users/current/", headers=auth).status_code
            for _ in range(3)
        ]
    assert volumes == 200
    assert balances == [502, 502, 200]


def test_latency_is_added_to_every_call(web: httpx.Client) -> None:
    with RunPodEmulator({"main": RP_KEY}) as server:
        server.set_latency(0.2)
        started = time.perf_counter()
        web.get(f"{server.rest_url}/pods", headers={"Authorization": f"Bearer {RP_KEY}"})
        assert time.perf_counter() - started >= 0.2


def test_down_refuses_connections_and_comes_back_on_the_same_port() -> None:
    with VastEmulator({"main": VAST_KEY}) as server:
        url = f"{server.url}/api/v0/users/current/"
        auth = {"Authorization": f"Bearer {VAST_KEY}"}
        with httpx.Client(headers=auth) as client:
            assert client.get(url).status_code == 200
            server.set_down("refuse")
            with pytest.raises(httpx.TransportError):
                client.get(url)
            server.set_down("503")
            assert client.get(url).status_code == 503
            server.set_down(None)
            assert client.get(url).status_code == 200


def test_vast_v0_list_is_gone(web: httpx.Client) -> None:
    with VastEmulator({"main": VAST_KEY}) as server:
        answer = web.get(
            f"{server.url}/api/v0/instances/", headers={"Authorization": f"Bearer {VAST_KEY}"}
        )
    assert answer.status_code == 410


def test_url_before_start_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="start"):
        _ = RunPodEmulator().url
