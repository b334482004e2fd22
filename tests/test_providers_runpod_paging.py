"""RunPod v2 lists its pods in pages (as five public v2 clients page it, though the copied spec
shows no paging): the whole account is followed to its last page, and an answer that says
there is more without a way to get it is an incomplete listing, never page one as the fleet."""

from __future__ import annotations

from pathlib import Path

import pytest

from emulators import RunPodEmulator
from reaper.providers.base import ProviderError
from tests.provider_support import on_runpod
from tests.reap_support import action_of, world

KEY = "rp-paging-key-0123"


def test_a_fleet_of_several_pages_is_listed_whole_with_the_cursor() -> None:
    with RunPodEmulator({"main": KEY}) as server:
        server.page_size = 3
        pods = {server.add_pod(status="RUNNING") for _ in range(8)}
        listed = on_runpod(server, KEY, lambda c: c.list_instances())
        assert {i.id for i in listed} == pods
        lists = [r for r in server.requests if r.kind == "list"]
        assert len(lists) == 3
        assert "cursor=" not in lists[0].query and all("cursor=" in r.query for r in lists[1:])
        assert all("includeClusterPods=true" in r.query for r in lists)


def test_the_spec_shape_without_pagination_is_the_whole_list() -> None:
    with RunPodEmulator({"main": KEY}) as server:
        server.page_size = None
        server.add_pod(status="RUNNING")
        assert len(on_runpod(server, KEY, lambda c: c.list_instances())) == 1


@pytest.mark.parametrize("fault", ["no_cursor", "repeat", "not_object"])
def test_a_paging_marker_that_cannot_be_followed_is_an_incomplete_listing(fault: str) -> None:
    with RunPodEmulator({"main": KEY}) as server:
        server.page_size = 2
        for _ in range(5):
            server.add_pod(status="EXITED")
        server.pagination_fault = fault
        with pytest.raises(ProviderError, match="page"):
            on_runpod(server, KEY, lambda c: c.list_instances())


def test_a_failing_second_page_fails_the_account_and_keeps_every_stopped_clock(
    tmp_path: Path,
) -> None:
    with world(tmp_path) as w:
        w.runpod.page_size = 2
        pods = [w.runpod.add_pod(status="EXITED") for _ in range(5)]
        w.run()
        w.advance(10)
        w.runpod.fail_next("list", 500, count=10, page=2)
        report = w.run()
        assert [(e.provider, e.account) for e in report.errors] == [("runpod", "main")]
        assert [i for i in report.instances if i.provider == "runpod"] == []
        store = w.store(read_only=True)
        assert set(store.history().first_seen_stopped) >= {f"runpod:{p}" for p in pods}
        store.close()


def test_pods_past_page_one_are_reaped_and_confirmed(tmp_path: Path) -> None:
    with world(tmp_path, max_terminations=10) as w:
        w.runpod.page_size = 2
        w.runpod.add_pod(status="RUNNING", name="witness")
        pods = [w.runpod.add_pod(status="EXITED") for _ in range(5)]
        w.reach_deadline()
        report = w.run()
        assert all(action_of(report, p) == "terminate" for p in pods)
        assert all(a.confirmed for a in report.actions if a.action == "terminate")
        assert w.runpod.pod_ids() == [w.runpod.pod_ids()[0]]
