"""DigitalOcean listings follow `links.pages.next` to the end, 200 droplets a page, and a
listing that cannot show it is whole is an error for the account, never a shorter fleet (a
missing droplet would look gone): a page that fails, a `next` that repeats, skips or cannot be
read, an empty page that announces another, a `meta.total` missing or not adding up."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

import pytest

from emulators.digitalocean import DigitalOceanEmulator
from emulators.server import EmulatorServer, Request, Response
from reaper.core.models import Instance
from reaper.providers.base import HttpOptions, ProviderError
from tests.digitalocean_support import FAST, TOKEN, on_digitalocean

RETRYING = HttpOptions(timeout=2, max_attempts=3, backoff_base=0.001, backoff_cap=0.005)


def list_all(server: EmulatorServer[Any, Any], options: HttpOptions = FAST) -> list[Instance]:
    return on_digitalocean(server, lambda c: c.list_instances(), options=options)


def listing_error(server: EmulatorServer[Any, Any]) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        list_all(server)
    assert (caught.value.provider, caught.value.account) == ("digitalocean", "main")
    return caught.value


def pages_asked(server: EmulatorServer[Any, Any]) -> list[dict[str, list[str]]]:
    return [parse_qs(r.query) for r in server.requests if r.kind in ("list", "other")]


def test_every_page_is_followed_to_the_end_200_at_a_time() -> None:
    with DigitalOceanEmulator({"main": TOKEN}) as server:
        ids = [server.add_droplet(status="off") for _ in range(450)]
        fleet = list_all(server)
        asked = pages_asked(server)
    assert sorted(int(i.id) for i in fleet) == ids
    assert [q["page"] for q in asked] == [["1"], ["2"], ["3"]]
    assert all(q["per_page"] == ["200"] and q["type"] == ["gpus"] for q in asked)


def test_one_page_whose_links_say_nothing_is_the_whole_fleet() -> None:
    with DigitalOceanEmulator({"main": TOKEN}) as server:
        ids = [server.add_droplet() for _ in range(200)]
        assert sorted(int(i.id) for i in list_all(server)) == ids
        assert server.count("list") == 1


def test_an_empty_account_is_an_empty_fleet() -> None:
    with DigitalOceanEmulator({"main": TOKEN}) as server:
        assert list_all(server) == []


def test_a_page_failing_for_good_fails_the_whole_listing() -> None:
    with DigitalOceanEmulator({"main": TOKEN}) as server:
        for _ in range(450):
            server.add_droplet(status="off")
        server.fail_next("list", 500, count=FAST.max_attempts, page=2)
        error = listing_error(server)
        served = [r for r in server.requests if r.kind == "list" and r.status == 200]
    assert "HTTP 500" in error.message
    assert "injected failure" in error.message and "\n" not in error.message
    assert len(served) == 1  # page 1 only: no page 3, no partial fleet


def test_a_page_failing_once_is_retried_and_the_listing_completes() -> None:
    with DigitalOceanEmulator({"main": TOKEN}) as server:
        for _ in range(250):
            server.add_droplet()
        server.fail_next("list", 502, page=2)
        assert len(list_all(server, RETRYING)) == 250
        assert server.count("list") == 3


@pytest.mark.parametrize(
    ("fault", "words"),
    [
        ("no_next", r"200 distinct droplets listed but the server counts 450"),
        ("repeat", r"does not lead to page 2"),
        ("skip", r"does not lead to page 2"),
        ("not_object", r"`links.pages` is not an object"),
        ("no_total", r"no readable `meta.total`"),
    ],
)
def test_paging_that_cannot_be_followed_is_an_error(fault: str, words: str) -> None:
    with DigitalOceanEmulator({"main": TOKEN}) as server:
        for _ in range(450):
            server.add_droplet(status="off")
        server.paging_fault = fault  # type: ignore[assignment]
        with pytest.raises(ProviderError, match=words):
            list_all(server)


@pytest.mark.parametrize("offset", [1, -1])
def test_a_total_that_does_not_add_up_is_an_error(offset: int) -> None:
    with DigitalOceanEmulator({"main": TOKEN}) as server:
        for _ in range(3):
            server.add_droplet(status="off")
        server.wrong_total = offset
        error = listing_error(server)
    assert f"counts {3 + offset} (`meta.total`)" in error.message


def test_a_droplet_destroyed_between_pages_fails_the_listing_it_shifted() -> None:
    """DigitalOcean pages by offset: a droplet destroyed after page 1 was read moves page 2's
    first droplet onto page 1, where nobody reads it again. The count shows the loss."""
    with DigitalOceanEmulator({"main": TOKEN}) as server:
        ids = [server.add_droplet(status="off") for _ in range(201)]
        server.after_next("list", lambda: server.remove_droplet(ids[0]))
        error = listing_error(server)
    assert "200 distinct droplets listed but the server counts 201" in error.message


def test_duplicated_ids_do_not_make_up_the_count() -> None:
    with DigitalOceanEmulator({"main": TOKEN}) as server:
        first = server.add_droplet(status="off")
        server.add_raw_droplet(server.droplet(first))
        with pytest.raises(
            ProviderError, match="1 distinct droplets listed but the server counts 2"
        ):
            list_all(server)


class Pages(EmulatorServer[int, Any]):
    """Answers page n of the listing with `pages[n - 1]`, whatever it says."""

    provider = "digitalocean"

    def __init__(self, pages: list[dict[str, Any]]) -> None:
        super().__init__({"main": TOKEN})
        self.pages = pages

    def dispatch(self, request: Request) -> Response:
        return Response.json(200, self.pages[int(request.query.get("page", "1")) - 1])


def off(*ids: int) -> list[dict[str, Any]]:
    return [{"id": i, "name": f"d{i}", "status": "off", "locked": False, "tags": []} for i in ids]


def test_a_next_link_is_read_for_its_page_number_only() -> None:
    """The token never goes where a link points, and a link that drops `type=gpus` cannot make
    the next request drop it: the request for page 2 is built like the first."""
    pages = [
        {
            "droplets": off(1),
            "links": {"pages": {"next": "https://elsewhere.example/v2/droplets?page=2"}},
            "meta": {"total": 2},
        },
        {"droplets": off(2), "links": {"pages": {"prev": "x"}}, "meta": {"total": 2}},
    ]
    with Pages(pages) as server:
        assert sorted(i.id for i in list_all(server)) == ["1", "2"]
        asked = [(r.path, parse_qs(r.query)) for r in server.requests]
    assert asked == [
        ("/v2/droplets", {"type": ["gpus"], "per_page": ["200"], "page": [str(n)]}) for n in (1, 2)
    ]


@pytest.mark.parametrize(
    "links",
    [{}, {"pages": {}}, {"pages": {"prev": "x", "first": "y"}}, {"pages": {"next": ""}}, None],
    ids=["links-empty", "pages-empty", "backward-only", "next-empty", "links-absent"],
)
def test_the_last_page_may_say_so_in_any_of_the_spec_shapes(links: Any) -> None:
    body: dict[str, Any] = {"droplets": off(1, 2), "meta": {"total": 2}}
    if links is not None:
        body["links"] = links
    with Pages([body]) as server:
        assert sorted(i.id for i in list_all(server)) == ["1", "2"]


@pytest.mark.parametrize(
    "body",
    [
        {"droplets": [], "links": {"pages": {"next": "/v2/droplets?page=2"}}, "meta": {"total": 0}},
        {"droplets": off(1), "links": {"pages": {"next": "?page=two"}}, "meta": {"total": 2}},
        {"droplets": off(1), "links": {"pages": {"next": 2}}, "meta": {"total": 2}},
        {"droplets": off(1), "links": "pages", "meta": {"total": 1}},
        {"droplets": off(1), "meta": {"total": "1"}},
        {"droplets": off(1), "meta": {"total": True}},
        {"droplets": {"1": {}}, "meta": {"total": 1}},
        {"meta": {"total": 0}},
    ],
    ids=[
        "empty-page-with-next",
        "next-without-a-page-number",
        "next-not-a-string",
        "links-not-an-object",
        "total-a-string",
        "total-a-bool",
        "droplets-not-a-list",
        "no-droplets",
    ],
)
def test_an_answer_that_cannot_show_it_is_whole_is_an_error(body: dict[str, Any]) -> None:
    with Pages([body, body]) as server, pytest.raises(ProviderError):
        list_all(server)


def test_the_emulator_caps_per_page_at_200_and_defaults_to_20() -> None:
    import httpx

    with DigitalOceanEmulator({"main": TOKEN}) as server:
        for _ in range(250):
            server.add_droplet()
        auth = {"Authorization": f"Bearer {TOKEN}"}
        url = f"{server.api_url}/droplets"
        big = httpx.get(url, params={"type": "gpus", "per_page": "500"}, headers=auth).json()
        default = httpx.get(url, params={"type": "gpus"}, headers=auth).json()
    assert (len(big["droplets"]), big["meta"]["total"]) == (200, 250)
    assert len(default["droplets"]) == 20
