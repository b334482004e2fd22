"""The reading a RunPod delete is decided on costs the fewest round trips: a handful of pods
are read one by one (`GET /pods/{id}`, concurrently); more pods than one round of those are
read from the listing when it took fewer pages than that. Either way it is as fresh, and a
pod it does not show reads as None (not deleted)."""

from __future__ import annotations

from emulators import RunPodEmulator
from reaper.core.models import Instance
from reaper.providers.runpod.client import RunPodClient
from tests.provider_support import FAST, on_runpod

KEY = "rp-fresh-read-key-0123"


def _kinds(server: RunPodEmulator) -> list[str]:
    return [r.kind for r in server.requests]


def test_a_few_pods_are_read_each_by_its_own_endpoint() -> None:
    with RunPodEmulator({"main": KEY}) as server:
        pods = [server.add_pod(status="EXITED") for _ in range(3)]
        for _ in range(20):
            server.add_pod(status="RUNNING")
        server.reset_log()
        read = on_runpod(server, KEY, lambda c: c.read_instances(pods))
        assert set(read) == set(pods)
        assert all(isinstance(i, Instance) and i.state == "stopped" for i in read.values())
        assert _kinds(server) == ["get"] * 3


def test_many_pods_are_read_from_the_listing_when_it_is_fewer_round_trips() -> None:
    with RunPodEmulator({"main": KEY}) as server:
        pods = [server.add_pod(status="EXITED") for _ in range(3 * FAST.max_concurrency)]
        running = server.add_pod(status="RUNNING")
        server.reset_log()
        wanted = [*pods, running, "gone0000pod1"]
        read = on_runpod(server, KEY, lambda c: c.read_instances(wanted))
        assert _kinds(server) == ["list"]
        assert {i for i, inst in read.items() if inst and inst.state == "stopped"} == set(pods)
        assert read[running] is not None and read[running].state == "running"
        assert read["gone0000pod1"] is None


def test_a_listing_of_more_pages_than_the_reads_would_take_is_not_used() -> None:
    with RunPodEmulator({"main": KEY}) as server:
        server.page_size = 2
        pods = [server.add_pod(status="EXITED") for _ in range(FAST.max_concurrency + 1)]
        for _ in range(20):
            server.add_pod(status="RUNNING")

        async def read_after_listing(client: RunPodClient) -> dict[str, Instance | None]:
            await client.list_instances()  # 15 pages: more than two rounds of reads
            server.reset_log()
            return await client.read_instances(pods)

        read = on_runpod(server, KEY, read_after_listing)
        assert set(read) == set(pods)
        assert _kinds(server) == ["get"] * len(pods)
