"""Confirmation when providers are slow to forget: a destroyed instance that is still listed
(Vast's `unloaded`, RunPod's TERMINATED) is confirmed by the first re-list; only what still
reads stopped is read again; accounts are confirmed side by side; a listing that ignores its
filter is noticed, and a whole listing still has to show every witness."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Collection
from pathlib import Path
from urllib.parse import parse_qs

from reaper.app.wiring import make_clients
from reaper.core.models import Instance
from reaper.passes.reap import ReapReport, reap_pass
from reaper.providers.base import ProviderClient, TerminateOutcome
from tests.reap_support import FAST_CONFIRM, FAST_HTTP, World, world

Wrap = Callable[[ProviderClient], ProviderClient]


def _run(w: World, wrap: Wrap, sleeps: list[float] | None = None) -> ReapReport:
    """One pass with each client wrapped; the confirmation's waits recorded in `sleeps`."""
    store = w.store()

    async def sleep(seconds: float) -> None:
        if sleeps is not None:
            sleeps.append(seconds)
        await asyncio.sleep(0)

    async def go() -> ReapReport:
        clients = make_clients(w.settings, FAST_HTTP)
        try:
            return await reap_pass(
                w.settings,
                store,
                [wrap(c) for c in clients],
                w.notifier,
                w.clock,
                confirm=FAST_CONFIRM,
                sleep=sleep,
            )
        finally:
            await asyncio.gather(*(c.aclose() for c in clients))

    try:
        return asyncio.run(go())
    finally:
        store.close()


def _due_fleet(w: World, per_provider: int) -> tuple[list[str], list[str]]:
    pods = [w.runpod.add_pod(status="EXITED", name=f"old-{n}") for n in range(per_provider)]
    vast = [str(w.vast.add_instance(actual_status="stopped")) for _ in range(per_provider)]
    for n in range(3):  # witnesses: a narrowed re-list must show the one it asked for
        w.runpod.add_pod(status="RUNNING", name=f"busy-{n}")
        w.vast.add_instance(actual_status="running")
    w.reach_deadline()
    return pods, vast


class Wrapper:
    """A client that passes everything through; subclasses change one call."""

    def __init__(self, inner: ProviderClient) -> None:
        self.inner = inner
        self.provider, self.account = inner.provider, inner.account
        self.deleted: set[str] = set()
        self.relists: list[set[str] | None] = []

    async def terminate(
        self,
        instance_id: str,
        *,
        not_after: float | None = None,
        before_send: Callable[[], None] | None = None,
    ) -> TerminateOutcome:
        outcome = await self.inner.terminate(
            instance_id, not_after=not_after, before_send=before_send
        )
        self.deleted.add(instance_id)
        return outcome

    async def list_instances(self, only_ids: Collection[str] | None = None) -> list[Instance]:
        if self.deleted:
            self.relists.append(None if only_ids is None else set(only_ids))
        return await self.inner.list_instances(only_ids)

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


def test_lingering_destroyed_instances_are_confirmed_by_the_first_re_list(
    tmp_path: Path,
) -> None:
    with world(tmp_path, max_terminations=100) as w:
        pods, vast = _due_fleet(w, 30)
        w.runpod.delete_linger_reads = 2
        w.vast.delete_linger_reads = 2
        sleeps: list[float] = []
        wrapped: list[Wrapper] = []

        def wrap(c: ProviderClient) -> ProviderClient:
            wrapped.append(Wrapper(c))
            return wrapped[-1]  # type: ignore[return-value]

        report = _run(w, wrap, sleeps)
        terminated = {a.id for a in report.actions if a.action == "terminate" and a.confirmed}
        assert terminated == set(pods) | set(vast)
        assert report.exit_code == 0
        # Every account was settled by its first re-list: no wait, one confirmation read each.
        assert [s for s in sleeps if s > 0] == []
        assert all(len(c.relists) == 1 for c in wrapped)
        # Vast's was narrowed to the deleted ids and one witness, still listed as they were.
        (vast_client,) = [c for c in wrapped if c.provider == "vast"]
        (asked,) = vast_client.relists
        assert asked is not None and set(vast) < asked and len(asked) == len(vast) + 1


class StubbornOne(Wrapper):
    """One deleted instance keeps reading stopped for its first two re-lists."""

    def __init__(self, inner: ProviderClient, stubborn: str) -> None:
        super().__init__(inner)
        self.stubborn = stubborn
        self.shown: Instance | None = None

    async def list_instances(self, only_ids: Collection[str] | None = None) -> list[Instance]:
        listed = await super().list_instances(only_ids)
        if not self.deleted:
            self.shown = next((i for i in listed if i.id == self.stubborn), self.shown)
            return listed
        if len(self.relists) <= 2 and self.shown is not None:
            return [i for i in listed if i.id != self.stubborn] + [self.shown]
        return listed


def test_only_what_still_reads_stopped_is_read_again(tmp_path: Path) -> None:
    with world(tmp_path, max_terminations=100) as w:
        _pods, vast = _due_fleet(w, 10)
        stubborn = vast[3]
        w.vast.delete_linger_reads = 1
        holder: list[StubbornOne] = []

        def wrap(c: ProviderClient) -> ProviderClient:
            if c.provider != "vast":
                return c
            holder.append(StubbornOne(c, stubborn))
            return holder[0]  # type: ignore[return-value]

        sleeps: list[float] = []
        report = _run(w, wrap, sleeps)
        assert all(a.confirmed for a in report.actions if a.action == "terminate")
        (client,) = holder
        first, *later = client.relists
        assert first is not None and set(vast) <= first
        # The second and third re-lists asked for the stubborn one and the witness alone.
        assert len(later) == 2
        assert all(asked is not None and stubborn in asked and len(asked) == 2 for asked in later)
        # The waits between them are the short ones: the first re-list went out at once.
        assert len([s for s in sleeps if s > 0]) == 2


class WaitsForTheOther(Wrapper):
    """The confirmation re-list of one account does not answer until the other account's has
    started: confirmed one after the other, neither would ever be."""

    def __init__(self, inner: ProviderClient, started: dict[str, asyncio.Event]) -> None:
        super().__init__(inner)
        self.started = started

    async def list_instances(self, only_ids: Collection[str] | None = None) -> list[Instance]:
        if self.deleted:
            self.started[self.provider].set()
            other = next(p for p in self.started if p != self.provider)
            await asyncio.wait_for(self.started[other].wait(), timeout=3)
        return await super().list_instances(only_ids)


def test_accounts_are_confirmed_side_by_side(tmp_path: Path) -> None:
    with world(tmp_path, max_terminations=100) as w:
        pods, vast = _due_fleet(w, 3)
        events: dict[str, asyncio.Event] = {}

        def wrap(c: ProviderClient) -> ProviderClient:
            events[c.provider] = asyncio.Event()
            return WaitsForTheOther(c, events)  # type: ignore[return-value]

        report = _run(w, wrap)
        terminated = {a.id for a in report.actions if a.action == "terminate" and a.confirmed}
        assert terminated == set(pods) | set(vast)


def test_a_listing_that_ignores_its_filter_is_read_instance_by_instance(tmp_path: Path) -> None:
    with world(tmp_path, max_terminations=100) as w:
        _pods, vast = _due_fleet(w, 30)
        w.vast.ignore_filters = True
        w.vast.delete_linger_reads = 2
        w.vast.reset_log()
        report = _run(w, lambda c: c)
        confirmed = {a.id for a in report.actions if a.provider == "vast" and a.confirmed}
        assert confirmed == set(vast)
        last_delete = max(n for n, r in enumerate(w.vast.requests) if r.kind == "delete")
        before = w.vast.requests[:last_delete]
        shown = {r.path.rstrip("/").rsplit("/", 1)[-1] for r in before if r.kind == "show"}
        # The fresh read noticed the ignored filter on its first page and read each due one;
        # the next batch went straight to the instances' own endpoint.
        assert set(vast) <= shown
        filtered_before = [r for r in before if r.kind == "list" and "select_filters" in r.query]
        assert len([r for r in filtered_before if "after_token" not in r.query]) == 1
        assert len(filtered_before) <= 2


class DropsAWitness(Wrapper):
    """A server that ignores the filter and, after the deletes, answers a listing that has
    lost an instance it showed before: it cannot prove anything gone."""

    async def list_instances(self, only_ids: Collection[str] | None = None) -> list[Instance]:
        listed = await super().list_instances(only_ids)
        if not self.deleted or only_ids is None:
            return listed
        asked = set(only_ids)
        others = sorted(i.id for i in listed if i.id not in asked)
        lost = others[0] if others else None
        return [i for i in listed if i.id != lost]


def test_a_whole_listing_must_show_every_witness(tmp_path: Path) -> None:
    with world(tmp_path, max_terminations=100) as w:
        doomed = [str(w.vast.add_instance(actual_status="stopped")) for _ in range(3)]
        for _ in range(4):
            w.vast.add_instance(actual_status="running")
        w.reach_deadline()
        w.vast.ignore_filters = True

        def wrap(c: ProviderClient) -> ProviderClient:
            return DropsAWitness(c) if c.provider == "vast" else c  # type: ignore[return-value]

        report = _run(w, wrap)
        vast_actions = {a.id: a for a in report.actions if a.provider == "vast"}
        assert set(vast_actions) == set(doomed)
        assert all(a.done and not a.confirmed for a in vast_actions.values())
        assert report.exit_code == 1


def test_each_batch_is_deleted_as_soon_as_its_own_reading_is_in(tmp_path: Path) -> None:
    with world(tmp_path, max_terminations=100) as w:
        vast = [str(w.vast.add_instance(actual_status="stopped")) for _ in range(60)]
        w.vast.add_instance(actual_status="running")
        w.reach_deadline()
        w.vast.reset_log()
        report = _run(w, lambda c: c)
        assert {a.id for a in report.actions if a.confirmed} == set(vast)
        requests = w.vast.requests
        deletes = [n for n, r in enumerate(requests) if r.kind == "delete"]
        fresh_reads = [
            n
            for n, r in enumerate(requests)
            if r.kind == "list" and "select_filters" in r.query and n < deletes[-1]
        ]
        # Three fresh reads of at most 25 ids each; the first batch's deletes went out before
        # the last batch was read.
        assert len(fresh_reads) == 3
        for n in fresh_reads:
            (filters,) = parse_qs(requests[n].query)["select_filters"]
            assert len(json.loads(filters)["id"]["in"]) <= 25
        assert deletes[0] < fresh_reads[2]
