"""A malformed Vast id never becomes a different, real id: JSON `true` is not instance 1, a
float is not an id, and digits of other scripts ("١٢", which `int()` reads as 12) are not
instance 12. Such an entry is listed as unreadable and unknown (never reaped), and such an id
is neither put in a confirmation filter nor destroyed."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs

import pytest

from emulators import VastEmulator
from emulators.server import EmulatorServer, Request, Response
from reaper.providers.base import HttpOptions, ProviderError
from reaper.providers.vast.client import parse_instance
from tests.provider_support import on_vast

FAST = HttpOptions(timeout=2, max_attempts=2, backoff_base=0.001, backoff_cap=0.004)
KEY = "vast-test-key-0011"
NOT_IDS: list[Any] = [True, False, 12.0, "١٢", "１２", "²", "12a", "", " ", None, [12], {"id": 12}]


@pytest.mark.parametrize("raw_id", NOT_IDS)
def test_an_id_that_is_not_vast_digits_is_unreadable_and_unknown(raw_id: Any) -> None:
    inst = parse_instance({"id": raw_id, "actual_status": "stopped", "label": "x"}, "main", 7)
    assert inst.id == "unreadable-7"
    assert inst.state == "unknown"


@pytest.mark.parametrize(("raw_id", "expected"), [(12, "12"), ("12", "12"), ("0012", "12")])
def test_an_integer_or_its_ascii_digits_read_as_the_same_id(raw_id: Any, expected: str) -> None:
    inst = parse_instance({"id": raw_id, "actual_status": "stopped"}, "main")
    assert inst.id == expected
    assert inst.state == "stopped"


def test_only_ascii_ids_reach_the_confirmation_filter() -> None:
    with VastEmulator({"main": KEY}) as server:
        kept = server.add_instance(actual_status="stopped")
        server.add_instance(12, actual_status="stopped")

        only_ids = [str(kept), "١٢", "12.0", "true"]
        listed = on_vast(server, KEY, lambda c: c.list_instances(only_ids=only_ids), FAST)
        query = next(r.query for r in server.requests if r.kind == "list")
    assert json.loads(parse_qs(query)["select_filters"][0]) == {"id": {"in": [kept]}}
    assert [i.id for i in listed] == [str(kept)]


@pytest.mark.parametrize("bad_id", ["١٢", "0012", " 12", "12 ", "+12"])
def test_destroying_a_non_canonical_id_is_refused_without_a_call(bad_id: str) -> None:
    with VastEmulator({"main": KEY}) as server:
        server.add_instance(12, actual_status="stopped")

        with pytest.raises(ProviderError, match="refusing"):
            on_vast(server, KEY, lambda c: c.terminate(bad_id), FAST)
        assert server.mutations == []
        assert server.instance(12) is not None


class RawVolumes(EmulatorServer):
    """Answers the volume listing with the given raw volumes."""

    provider = "vast"

    def __init__(self, volumes: list[dict[str, Any]]) -> None:
        super().__init__({"main": KEY})
        self.volumes = volumes

    def dispatch(self, request: Request) -> Response:
        return Response.json(200, {"volumes": self.volumes})


def test_a_volume_whose_id_is_not_vast_digits_is_not_reported_under_another_id() -> None:
    raw = [{"id": i, "disk_space": 10.0} for i in (True, 1.0, "١٢", 31)]
    with RawVolumes(raw) as server:
        volumes = on_vast(server, KEY, lambda c: c.volumes(), FAST)
    assert [v.id for v in volumes] == ["31"]
