"""A Vast listing is complete only when the server says so: the answer must carry the
`next_token` key (the spec ends a listing with an explicit null, so a missing key is an answer
that cannot show it is whole), and the distinct instances found must match `total_instances`
("matching the filters") when the server reports it. Anything else is an error for the
account, never a shorter fleet in which the missing instances would look gone."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Collection
from typing import Any
from urllib.parse import parse_qs

import httpx
import pytest

from emulators import VastEmulator
from emulators.server import EmulatorServer, Request, Response
from reaper.core.models import Instance
from reaper.providers.base import HttpOptions, ProviderError
from reaper.providers.vast.client import VastClient
from reaper.settings.parse import Account

FAST = HttpOptions(timeout=2, max_attempts=2, backoff_base=0.001, backoff_cap=0.004)
KEY = "vast-test-key-0015"


def list_all(url: str, only_ids: Collection[str] | None = None) -> list[Instance]:
    async def go() -> list[Instance]:
        client = VastClient(Account("vast", "main", KEY), url, FAST)
        try:
            return await client.list_instances(only_ids)
        finally:
            await client.aclose()

    return asyncio.run(go())


def stopped(*ids: int) -> list[dict[str, Any]]:
    return [{"id": i, "actual_status": "stopped"} for i in ids]


class Pages(EmulatorServer):
    """Answers page n (n = the `after_token`, none for the first) with `pages[n]`."""

    provider = "vast"

    def __init__(self, pages: list[dict[str, Any]]) -> None:
        super().__init__({"main": KEY})
        self.pages = pages

    def dispatch(self, request: Request) -> Response:
        return Response.json(200, self.pages[int(request.query.get("after_token", "0"))])


@pytest.mark.parametrize(
    "pages",
    [
        [{"success": True, "instances": stopped(1, 2)}],
        [{"instances": stopped(1), "next_token": "1"}, {"instances": stopped(2)}],
    ],
    ids=["single-page", "last-page"],
)
def test_an_answer_without_the_next_token_key_is_an_error(pages: list[dict[str, Any]]) -> None:
    with Pages(pages) as server, pytest.raises(ProviderError, match="no `next_token`") as caught:
        list_all(server.url)
    assert (caught.value.provider, caught.value.account) == ("vast", "main")


@pytest.mark.parametrize("total", [3, 1, 0])
def test_a_count_that_is_not_total_instances_is_an_error(total: int) -> None:
    body = {"instances": stopped(1, 2), "total_instances": total, "next_token": None}
    with Pages([body]) as server, pytest.raises(ProviderError, match="total_instances"):
        list_all(server.url)


def test_a_truncated_multi_page_listing_is_an_error() -> None:
    pages = [
        {"instances": stopped(1, 2), "total_instances": 5, "next_token": "1"},
        {"instances": stopped(3), "total_instances": 5, "next_token": None},
    ]
    with Pages(pages) as server, pytest.raises(ProviderError, match=r"3 distinct .* counts 5"):
        list_all(server.url)


def test_duplicated_ids_do_not_make_up_the_count() -> None:
    body = {"instances": stopped(1, 1), "total_instances": 2, "next_token": None}
    with Pages([body]) as server, pytest.raises(ProviderError, match="total_instances"):
        list_all(server.url)


@pytest.mark.parametrize("total", ["7", True, 7.0, None, "absent"])
def test_a_total_that_is_not_an_integer_is_not_checked(total: Any) -> None:
    body: dict[str, Any] = {"instances": stopped(1, 2), "next_token": None}
    if total != "absent":
        body["total_instances"] = total
    with Pages([body]) as server:
        assert sorted(i.id for i in list_all(server.url)) == ["1", "2"]


def test_a_matching_total_with_an_explicit_null_or_empty_token_completes() -> None:
    pages = [
        {"instances": stopped(1, 2), "total_instances": 3, "next_token": "1"},
        {"instances": stopped(3), "total_instances": 3, "next_token": ""},
    ]
    with Pages(pages) as server:
        assert sorted(i.id for i in list_all(server.url)) == ["1", "2", "3"]


def test_the_emulator_counts_the_filtered_set_and_the_filtered_listing_agrees() -> None:
    with VastEmulator({"main": KEY}) as server:
        ids = [server.add_instance(actual_status="stopped") for _ in range(60)]
        wanted = [str(i) for i in ids[::2]]
        answer = httpx.get(
            f"{server.url}/api/v1/instances/",
            params={"select_filters": json.dumps({"id": {"in": [int(i) for i in wanted]}})},
            headers={"Authorization": f"Bearer {KEY}"},
        ).json()
        listed = list_all(server.url, only_ids=wanted)
        pages = [parse_qs(r.query) for r in server.requests if r.kind == "list"]
    assert answer["total_instances"] == 30
    assert sorted(i.id for i in listed) == sorted(wanted)
    assert len(pages) == 3  # the direct call, then two filtered pages of 25 and 5
    assert all("select_filters" in page for page in pages)


def test_raw_entries_are_counted_so_an_unreadable_one_does_not_fail_the_listing() -> None:
    with VastEmulator({"main": KEY}) as server:
        kept = server.add_instance(actual_status="stopped")
        server.add_raw_instance("garbage")
        server.add_raw_instance({"id": "not-a-number", "actual_status": "stopped"})
        listed = list_all(server.url)
    assert len(listed) == 3
    assert {i.id for i in listed if not i.id.startswith("unreadable-")} == {str(kept)}


def test_an_instance_destroyed_while_the_pages_are_read_does_not_fail_the_listing() -> None:
    with VastEmulator({"main": KEY}, delete_linger_reads=1) as server:
        ids = [server.add_instance(actual_status="stopped") for _ in range(30)]

        async def destroy() -> None:
            client = VastClient(Account("vast", "main", KEY), server.url, FAST)
            try:
                assert await client.terminate(str(ids[0])) == "deleted"
            finally:
                await client.aclose()

        asyncio.run(destroy())
        # Page 1 lists the destroyed instance for its last read; page 2 counts one fewer.
        listed = list_all(server.url)
        assert server.instance(ids[0]) is None
    assert sorted(int(i.id) for i in listed) == ids
