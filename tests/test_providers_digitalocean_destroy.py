"""Destroying one droplet and reading one droplet: `DELETE /droplets/{id}` (204), `GET
/droplets/{id}` (`{"droplet": ...}`), a 404 read by its `id` alone (`not_found` is gone, any
other 404 is an error, never "already gone"), a URL that names exactly one droplet, and errors
in one line that say what to fix."""

from __future__ import annotations

from typing import Any

import pytest

from emulators.digitalocean import DigitalOceanEmulator
from emulators.server import EmulatorServer, Request, Response
from reaper.providers.base import ProviderError
from tests.digitalocean_support import TOKEN, on_digitalocean


def test_a_destroy_answered_204_is_deleted_and_a_repeat_is_not_found() -> None:
    with DigitalOceanEmulator({"main": TOKEN}) as server:
        droplet = server.add_droplet(status="off")

        async def twice(client: Any) -> tuple[str, str]:
            return await client.terminate(str(droplet)), await client.terminate(str(droplet))

        assert on_digitalocean(server, twice) == ("deleted", "not_found")
        assert [r.url for r in server.mutations] == [f"/v2/droplets/{droplet}"] * 2
        assert server.droplet(droplet) is None


def test_lookup_reads_one_droplet_and_a_404_not_found_as_gone() -> None:
    with DigitalOceanEmulator({"main": TOKEN}) as server:
        droplet = server.add_droplet(status="off", tags=["x"])
        found = on_digitalocean(server, lambda c: c.lookup(str(droplet)))
        server.remove_droplet(droplet)
        gone = on_digitalocean(server, lambda c: c.lookup(str(droplet)))
    assert found is not None
    assert (found.id, found.state, found.tags) == (str(droplet), "stopped", ("x",))
    assert gone is None


class Answers(EmulatorServer[int, Any]):
    """Answers every authenticated call with `status` and `body`."""

    provider = "digitalocean"

    def __init__(self, status: int, body: Any) -> None:
        super().__init__({"main": TOKEN})
        self.status, self.body = status, body

    def dispatch(self, request: Request) -> Response:
        if self.body is None:
            return Response(self.status, b"")
        if isinstance(self.body, str):
            return Response.text(self.status, self.body)
        return Response.json(self.status, self.body)


@pytest.mark.parametrize(
    "body",
    [
        {"id": "unauthorized", "message": "Unable to authenticate you."},
        {"message": "The resource you were accessing could not be found."},
        "Not Found",
        None,
    ],
    ids=["another-id", "no-id", "text", "empty"],
)
def test_a_404_that_is_not_not_found_is_an_error_never_gone(body: Any) -> None:
    with Answers(404, body) as server:
        for call in (lambda c: c.terminate("3164444"), lambda c: c.lookup("3164444")):
            with pytest.raises(ProviderError, match="HTTP 404") as caught:
                on_digitalocean(server, call)
            assert caught.value.status == 404


def test_a_destroy_already_under_way_is_a_delete_that_went_through() -> None:
    """What DigitalOcean answers a DELETE repeated while the first is carried out (SkyPilot's
    provisioner reads it as done); any other 422 is an error."""
    under_way = {"id": "unprocessable_entity", "message": "A destroy is already in progress."}
    with Answers(422, under_way) as server:
        assert on_digitalocean(server, lambda c: c.terminate("3164444")) == "deleted"
    pending = {"id": "unprocessable_entity", "message": "Droplet already has a pending event."}
    with Answers(422, pending) as server, pytest.raises(ProviderError, match="pending event"):
        on_digitalocean(server, lambda c: c.terminate("3164444"))


@pytest.mark.parametrize(
    "droplet_id", ["", ".", "..", "0", "12/34", "12?x=1", "abc", "0123", "١٢", "1" * 30]
)
def test_an_id_that_is_not_one_droplet_sends_nothing(droplet_id: str) -> None:
    with DigitalOceanEmulator({"main": TOKEN}) as server:
        for call in (lambda c: c.terminate(droplet_id), lambda c: c.lookup(droplet_id)):
            with pytest.raises(ProviderError, match="not a droplet id"):
                on_digitalocean(server, call)
        assert server.requests == []


@pytest.mark.parametrize(
    "body",
    [{"droplets": []}, {"droplet": None}, {"droplet": [1]}, [], "text"],
    ids=["no-droplet", "null", "list", "array", "text"],
)
def test_an_answer_that_is_not_one_droplet_is_an_error(body: Any) -> None:
    with Answers(200, body) as server, pytest.raises(ProviderError):
        on_digitalocean(server, lambda c: c.lookup("3164444"))


def test_an_answer_showing_another_droplet_is_an_error() -> None:
    other = {"droplet": {"id": 999, "name": "x", "status": "off", "locked": False, "tags": []}}
    with Answers(200, other) as server, pytest.raises(ProviderError, match="another droplet"):
        on_digitalocean(server, lambda c: c.lookup("3164444"))


def test_a_refused_token_says_which_variable_to_check() -> None:
    with (
        DigitalOceanEmulator({"main": "dop_v1_the_right_one"}) as server,
        pytest.raises(ProviderError) as caught,
    ):
        on_digitalocean(server, lambda c: c.list_instances(), token="dop_v1_a_wrong_one")
    message = caught.value.message
    assert message.startswith("DigitalOcean refused the token: check DIGITALOCEAN_TOKEN")
    assert "unauthorized: Unable to authenticate you." in message
    assert caught.value.status == 401


def test_a_forbidden_delete_names_the_scope_it_may_lack() -> None:
    forbidden = {
        "id": "forbidden",
        "message": "You do not have access for the attempted action.",
        "request_id": "4d9d8375-3c56-4925-a3e7-eb137fed17e9",
    }
    with Answers(403, forbidden) as server, pytest.raises(ProviderError) as caught:
        on_digitalocean(server, lambda c: c.terminate("3164444"))
    assert caught.value.message == (
        "DigitalOcean refused this to the token (a scope it lacks?): destroying droplet 3164444:"
        " DELETE /v2/droplets/3164444 answered HTTP 403 (forbidden: You do not have access for"
        " the attempted action. (request_id 4d9d8375-3c56-4925-a3e7-eb137fed17e9))"
    )


def test_an_error_that_echoes_the_token_never_shows_it() -> None:
    echo = {"id": "bad_request", "message": f"token {TOKEN}\nis odd"}
    with Answers(400, echo) as server, pytest.raises(ProviderError) as caught:
        on_digitalocean(server, lambda c: c.lookup("3164444"))
    assert TOKEN not in caught.value.message
    assert "\n" not in caught.value.message
