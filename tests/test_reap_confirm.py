"""Confirmation by re-listing: narrowed where the provider can filter, never trusted blindly."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection
from pathlib import Path

from reaper.app.wiring import make_clients
from reaper.core.models import Instance
from reaper.passes.reap import ReapReport, reap_pass
from reaper.providers.base import ProviderClient, TerminateOutcome
from tests.reap_support import FAST_CONFIRM, FAST_HTTP, World, action_of, world


def _make_due(w: World, count: int, *, keep_alive: int = 1) -> list[str]:
    due = [str(w.vast.add_instance(actual_status="stopped")) for _ in range(count)]
    for _ in range(keep_alive):
        w.vast.add_instance(actual_status="running")
    w.reach_deadline()
    return due


def test_vast_confirmation_lists_only_the_deleted_ids_plus_a_witness(tmp_path: Path) -> None:
    with world(tmp_path, max_terminations=100) as w:
        due = _make_due(w, 30, keep_alive=40)
        w.vast.reset_log()
        report = w.run()
        assert all(action_of(report, i) == "terminate" for i in due)
        assert all(a.confirmed for a in report.actions)
        lists = [r for r in w.vast.requests if r.kind == "list"]
        filtered = [r for r in lists if "select_filters" in r.query]
        # 70 instances are 3 pages; the fresh read right before the deletes and the
        # confirmation each ask for the 30 ids + 1 witness: 2 pages each.
        assert len(lists) - len(filtered) == 3
        assert 2 <= len(filtered) <= 4


class BrokenFilter:
    """A provider whose id filter silently matches nothing: an empty answer must not be read
    as "everything is gone"."""

    def __init__(self, inner: ProviderClient) -> None:
        self.inner = inner
        self.provider = inner.provider
        self.account = inner.account
        self.full_listings = 0

    async def list_instances(self, only_ids: Collection[str] | None = None) -> list[Instance]:
        if only_ids is not None:
            return []
        self.full_listings += 1
        return await self.inner.list_instances()

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


def test_a_filter_that_returns_nothing_falls_back_to_a_full_listing(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        (victim,) = _make_due(w, 1)
        w.vast.delete_never_confirms = True
        store = w.store()

        async def go() -> tuple[object, list[BrokenFilter]]:
            clients = [BrokenFilter(c) for c in make_clients(w.settings, FAST_HTTP)]
            try:
                report = await reap_pass(
                    w.settings, store, clients, w.notifier, w.clock, confirm=FAST_CONFIRM
                )
            finally:
                await asyncio.gather(*(c.inner.aclose() for c in clients))
            return report, clients

        report, clients = asyncio.run(go())
        store.close()
        (action,) = report.actions  # type: ignore[attr-defined]
        assert (action.id, action.done, action.confirmed) == (victim, True, False)
        assert report.exit_code == 1  # type: ignore[attr-defined]
        vast_client = next(c for c in clients if c.provider == "vast")
        assert vast_client.full_listings > 1


def test_with_no_witness_the_whole_account_is_relisted(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        due = _make_due(w, 2, keep_alive=0)
        w.vast.reset_log()
        report = w.run()
        assert all(a.confirmed for a in report.actions) and len(report.actions) == len(due)
        # After the deletes, with nothing to check a narrowed answer against, the confirmation
        # lists the whole account.
        first_delete = next(n for n, r in enumerate(w.vast.requests) if r.kind == "delete")
        relists = [r for r in w.vast.requests[first_delete:] if r.kind == "list"]
        assert relists and not any("select_filters" in r.query for r in relists)


class IdUnreadableAfterDelete:
    """The delete is acknowledged, the pod stays listed, and its id can no longer be read."""

    def __init__(self, inner: ProviderClient, w: World) -> None:
        self.inner, self.w = inner, w
        self.provider, self.account = inner.provider, inner.account

    async def list_instances(self, only_ids: Collection[str] | None = None) -> list[Instance]:
        return await self.inner.list_instances(only_ids)

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
        self.w.runpod.modify_pod(instance_id, id=None)
        return outcome

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


def test_an_unidentifiable_instance_in_the_relist_proves_nothing(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        w.runpod.delete_never_confirms = True
        pod = w.runpod.add_pod(status="EXITED", name="still-here")
        w.reach_deadline()
        store = w.store()

        async def go() -> ReapReport:
            clients: list[ProviderClient] = [
                IdUnreadableAfterDelete(c, w) if c.provider == "runpod" else c  # type: ignore[misc]
                for c in make_clients(w.settings, FAST_HTTP)
            ]
            try:
                return await reap_pass(
                    w.settings, store, clients, w.notifier, w.clock, confirm=FAST_CONFIRM
                )
            finally:
                await asyncio.gather(*(c.aclose() for c in clients))

        report = asyncio.run(go())
        store.close()
        assert w.runpod.pod(pod) is not None
        (action,) = report.actions
        assert (action.id, action.done, action.confirmed) == (pod, True, False)
        assert report.exit_code == 1
