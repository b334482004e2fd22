"""Single use holds under a race: of concurrent uses of one token exactly one acts — over HTTP,
across SQLite connections to one file, and on DynamoDB (a conditional write each)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import httpx
from moto import mock_aws

from reaper.core.models import PhoneAction
from reaper.passes.act import LINK, perform
from reaper.passes.arm import grant_id, mint
from reaper.store.dynamodb import DynamoDBStore, create_table
from tests.aws_support import AWS_ENV, atomic
from tests.phone_support import link_path, phone
from tests.store_contract.records import KEEP_A_DAY, T0, grant


def _race(count: int, act: Callable[[], Any]) -> list[Any]:
    start = threading.Barrier(count)
    results: list[Any] = []
    lock = threading.Lock()

    def one() -> None:
        start.wait()
        result = act()
        with lock:
            results.append(result)

    threads = [threading.Thread(target=one) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return results


def test_concurrent_posts_of_one_link_act_once(tmp_path: Path) -> None:
    with phone(tmp_path, telegram=False, ntfy=True) as p:
        assert p.ntfy is not None
        p.w.runpod.add_pod(status="EXITED", name="trainer-7")
        p.warn()
        [published] = [x for x in p.ntfy.published if "will be terminated" in x.payload["title"]]
        path = link_path(published.actions[0]["url"])
        with p.served() as app:
            base = app.running.url

            def post() -> int:
                return httpx.post(f"{base}{path}", timeout=10).status_code

            statuses = _race(8, post)
        assert sorted(statuses) == [200] + [404] * 7
        assert len(p.actions()) == 1


def test_two_connections_to_one_file_act_once(tmp_path: Path) -> None:
    with phone(tmp_path, telegram=False) as p:
        store = p.w.store()
        token = mint(store, (KEEP_A_DAY,), p.w.clock.now())
        store.close()

        def use() -> str:
            own = p.w.store()
            try:
                return asyncio.run(perform(p.context(own), token, LINK)).status
            finally:
                own.close()

        outcomes = _race(6, use)
        assert sorted(outcomes) == ["done"] + ["refused"] * 5
        assert len(p.actions()) == 1


def test_dynamodb_conditional_write_lets_one_use_win(monkeypatch: Any) -> None:
    for name, value in AWS_ENV.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        client = atomic(boto3.client("dynamodb", region_name="us-east-1"))
        create_table("reaper-single-use", client)
        stores = [DynamoDBStore("reaper-single-use", client=client) for _ in range(6)]
        stores[0].add_grant(grant("g"))
        turn = iter(stores)
        lock = threading.Lock()

        def use() -> bool:
            with lock:
                store = next(turn)
            return store.use_grant("g", T0)

        assert sorted(_race(6, use)) == [False] * 5 + [True]


def test_a_confirmation_uses_the_button_it_confirms(tmp_path: Path) -> None:
    """Two confirmations of one "terminate now" button (pressed twice): one request only."""
    with phone(tmp_path) as p:
        store = p.w.store()
        terminate = PhoneAction(kind="terminate", label="Terminate now", targets=("runpod:x",))
        parent = mint(store, (terminate,), p.w.clock.now(), ask_first=True)
        parent_id = grant_id(parent)
        first = mint(store, (terminate,), p.w.clock.now(), parent=parent_id)
        second = mint(store, (terminate,), p.w.clock.now(), parent=parent_id)
        assert store.use_grant(grant_id(first), p.w.clock.now())
        assert store.use_grant(grant_id(parent), p.w.clock.now())
        outcome = asyncio.run(perform(p.context(store), second, LINK))
        store.close()
        assert outcome.status == "refused"
