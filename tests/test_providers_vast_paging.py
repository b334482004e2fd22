"""Vast listings follow `next_token` to the end, and a listing that does not complete is an
error for the account, never a shorter fleet (a missing instance would look gone)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from emulators import VastEmulator
from emulators.server import EmulatorServer, Request, Response
from reaper.core.models import Instance
from reaper.providers.base import HttpOptions, ProviderError
from reaper.providers.vast.client import VastClient
from reaper.settings.parse import Account

FAST = HttpOptions(timeout=2, max_attempts=3, backoff_base=0.001, backoff_cap=0.005)
KEY = "vast-test-key-0002"


def list_all(url: str, options: HttpOptions = FAST) -> list[Instance]:
    async def go() -> list[Instance]:
        client = VastClient(Account("vast", "main", KEY), url, options)
        try:
            return await client.list_instances()
        finally:
            await client.aclose()

    return asyncio.run(go())


def test_every_page_is_followed_to_the_end() -> None:
    with VastEmulator({"main": KEY}) as server:
        ids = [server.add_instance() for _ in range(80)]
        fleet = list_all(server.url)
        lists = [r for r in server.requests if r.kind == "list"]
    assert sorted(int(i.id) for i in fleet) == ids
    assert len(lists) == 4
    assert "after_token" not in lists[0].query
    assert all("after_token=" in r.query for r in lists[1:])
    assert all("limit=25" in r.query for r in lists)


def test_exactly_one_full_page_needs_no_second_call() -> None:
    with VastEmulator({"main": KEY}) as server:
        for _ in range(25):
            server.add_instance()
        assert len(list_all(server.url)) == 25
        assert server.count("list") == 1


def test_an_empty_account_is_an_empty_fleet() -> None:
    with VastEmulator({"main": KEY}) as server:
        assert list_all(server.url) == []


def test_a_page_failing_for_good_fails_the_whole_listing() -> None:
    with VastEmulator({"main": KEY}) as server:
        for _ in range(60):
            server.add_instance(actual_status="stopped")
        server.fail_page(2, status=500, count=FAST.max_attempts)
        with pytest.raises(ProviderError) as caught:
            list_all(server.url)
        pages_served = [r for r in server.requests if r.kind == "list" and r.status == 200]
    assert caught.value.provider == "vast"
    assert caught.value.account == "main"
    assert "HTTP 500" in caught.value.message
    # Page 1 was read, page 3 never was: the error is raised, no partial fleet returned.
    assert len(pages_served) == 1


def test_a_page_failing_once_is_retried_and_the_listing_completes() -> None:
    with VastEmulator({"main": KEY}) as server:
        for _ in range(60):
            server.add_instance()
        server.fail_page(3, status=502, count=1)
        assert len(list_all(server.url)) == 60
        assert server.count("list") == 4


def test_a_page_rejected_with_400_is_not_retried_and_fails_the_listing() -> None:
    with VastEmulator({"main": KEY}) as server:
        for _ in range(30):
            server.add_instance()
        server.fail_page(2, status=400)
        with pytest.raises(ProviderError, match="HTTP 400"):
            list_all(server.url)
        assert server.count("list") == 2


def test_an_invalid_token_answers_400_invalid_token() -> None:
    import httpx

    with VastEmulator({"main": KEY}) as server:
        answer = httpx.get(
            f"{server.url}/api/v1/instances/",
            params={"after_token": "bm90LWEtdG9rZW4="},
            headers={"Authorization": f"Bearer {KEY}"},
        )
    assert answer.status_code == 400
    assert answer.json()["error"] == "invalid_token"


def test_limit_is_capped_at_25_by_the_emulator() -> None:
    import httpx

    with VastEmulator({"main": KEY}) as server:
        for _ in range(30):
            server.add_instance()
        answer = httpx.get(
            f"{server.url}/api/v1/instances/",
            params={"limit": "100"},
            headers={"Authorization": f"Bearer {KEY}"},
        ).json()
    assert len(answer["instances"]) == 25
    assert answer["total_instances"] == 30
    assert isinstance(answer["next_token"], str)


class _LoopingVast(EmulatorServer):
    """A broken server that hands back the same token forever."""

    provider = "vast"

    def __init__(self, body: dict[str, Any]) -> None:
        super().__init__({"main": KEY})
        self.body = body

    def dispatch(self, request: Request) -> Response:
        return Response.json(200, self.body)


def test_a_repeating_token_is_an_error_not_an_endless_loop() -> None:
    body = {"instances": [{"id": 1, "actual_status": "running"}], "next_token": "same"}
    with _LoopingVast(body) as server, pytest.raises(ProviderError, match="no progress"):
        list_all(server.url)
    assert server.count("other") == 2


def test_a_token_with_an_empty_page_is_an_error() -> None:
    with (
        _LoopingVast({"instances": [], "next_token": "more"}) as server,
        pytest.raises(ProviderError, match="no progress"),
    ):
        list_all(server.url)


@pytest.mark.parametrize(
    "body",
    [{"next_token": None}, {"instances": {"1": {}}}, {"success": False, "instances": []}],
)
def test_an_answer_that_is_not_the_envelope_is_an_error(body: dict[str, Any]) -> None:
    with _LoopingVast(body) as server, pytest.raises(ProviderError, match="instances"):
        list_all(server.url)
