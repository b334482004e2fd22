"""The DigitalOcean emulator answers what DigitalOcean's published OpenAPI says, so that it
cannot drift from the real API unnoticed: every answer the client reads is validated against
the spec's own YAML files (OpenAPI 3.0; `nullable` converted to JSON Schema), copied into
`tests/specs/digitalocean/` in their own folder layout so that their `$ref`s resolve there.
The spec's own GPU droplet example passes the same check, and a broken one fails it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from emulators.digitalocean import DigitalOceanEmulator
from tests.openapi_support import openapi30_to_jsonschema, pointer

SPEC = Path(__file__).resolve().parent / "specs" / "digitalocean"
BASE = "https://spec.digitalocean.invalid/"
TOKEN = "dop_v1_schema_token_0007"
_BOOL = "tag:yaml.org,2002:bool"
_TIMESTAMP = "tag:yaml.org,2002:timestamp"


class _Yaml12(yaml.SafeLoader):
    """YAML as the spec is meant to be read (1.2): PyYAML's 1.1 rules would read the status
    `off` as false and an unquoted `2024-09-30T15:23:36Z` as a datetime; JSON carries strings."""


_Yaml12.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag not in (_BOOL, _TIMESTAMP)]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Yaml12.add_implicit_resolver(_BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), None)


def document(relative: str) -> Any:
    return yaml.load((SPEC / relative).read_text(encoding="utf-8"), Loader=_Yaml12)  # noqa: S506


@cache
def registry() -> Registry:
    resources = [
        (
            BASE + path.relative_to(SPEC).as_posix(),
            Resource.from_contents(
                openapi30_to_jsonschema(document(path.relative_to(SPEC).as_posix())),
                default_specification=DRAFT202012,
            ),
        )
        for path in sorted(SPEC.rglob("*.yml"))
    ]
    return Registry().with_resources(resources)


def schema(relative: str, *parts: str) -> str:
    """The `$ref` of a schema inside one of the spec's files."""
    return f"{BASE}{relative}#/{pointer(*parts)}" if parts else f"{BASE}{relative}"


def response_schema(relative: str) -> str:
    return schema(relative, "content", "application/json", "schema")


LIST = response_schema("resources/droplets/responses/all_droplets.yml")
ONE = response_schema("resources/droplets/responses/existing_droplet.yml")
ERROR = schema("shared/models/error.yml")
BALANCE = response_schema("resources/billing/responses/balance.yml")
VOLUMES = response_schema("resources/volumes/responses/volumes.yml")


def check(instance: Any, ref: str) -> None:
    validator = Draft202012Validator({"$ref": ref}, registry=registry())
    errors = sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message[:200]}" for e in errors[:10])


def check_rate_headers(answer: httpx.Response) -> None:
    """The spec's `ratelimit-*` headers: integers, the reset a Unix time."""
    for name in ("ratelimit-limit", "ratelimit-remaining", "ratelimit-reset"):
        assert answer.headers[name].isdigit(), name
    assert int(answer.headers["ratelimit-reset"]) > 1_000_000_000


@pytest.fixture(scope="module")
def web() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10, headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        yield client


@pytest.fixture(scope="module")
def do() -> Iterator[DigitalOceanEmulator]:
    with DigitalOceanEmulator({"main": TOKEN}, delete_linger_reads=50) as server:
        for status in ("new", "active", "off"):
            server.add_droplet(status=status, tags=["env:prod"])
        for slug in ("gpu-h100x8-640gb", "gpu-l40sx1-48gb", "gpu-mi300x1-192gb"):
            server.add_droplet(gpu=slug, status="off", locked=True)
        for _ in range(4):
            server.add_droplet(gpu=False)
        gone = server.add_droplet(status="off")
        assert httpx.delete(
            f"{server.api_url}/droplets/{gone}", headers={"Authorization": f"Bearer {TOKEN}"}
        ).is_success
        attached = server.droplet_ids()[0]
        server.add_volume(size=500, droplet_ids=[attached], name="dataset")
        server.add_volume(size=100, name="orphan")
        server.set_balance(month_to_date_balance="-12.34")
        yield server


def test_gpu_listing_pages_match_the_spec(do: DigitalOceanEmulator, web: httpx.Client) -> None:
    query = {"type": "gpus", "per_page": "3"}
    first = web.get(f"{do.api_url}/droplets", params={**query, "page": "1"})
    assert first.status_code == 200
    check(first.json(), LIST)
    check_rate_headers(first)
    body = first.json()
    assert body["meta"]["total"] == 7
    assert set(body["links"]["pages"]) == {"next", "last"}
    assert "type=gpus" in body["links"]["pages"]["next"]
    last = web.get(f"{do.api_url}/droplets", params={**query, "page": "3"}).json()
    check(last, LIST)
    assert set(last["links"]["pages"]) == {"first", "prev"}
    statuses = {d["status"] for d in body["droplets"] + last["droplets"]}
    assert statuses >= {"new", "active", "archive"}


def test_without_type_gpus_the_listing_holds_no_gpu_droplet(
    do: DigitalOceanEmulator, web: httpx.Client
) -> None:
    for params in ({}, {"type": "droplets"}):
        answer = web.get(f"{do.api_url}/droplets", params={**params, "per_page": "200"})
        check(answer.json(), LIST)
        droplets = answer.json()["droplets"]
        assert len(droplets) == 4
        assert not any("gpu_info" in d or "gpu_info" in d["size"] for d in droplets)


def test_one_droplet_matches_the_spec(do: DigitalOceanEmulator, web: httpx.Client) -> None:
    droplet_id = do.droplet_ids()[0]
    answer = web.get(f"{do.api_url}/droplets/{droplet_id}")
    assert answer.status_code == 200
    check(answer.json(), ONE)
    check_rate_headers(answer)


def test_destroy_is_204_without_a_body_then_404_not_found(
    do: DigitalOceanEmulator, web: httpx.Client
) -> None:
    droplet_id = do.add_droplet(status="off")
    done = web.delete(f"{do.api_url}/droplets/{droplet_id}")
    assert (done.status_code, done.content) == (204, b"")
    check_rate_headers(done)
    for method in ("DELETE", "GET"):
        again = web.request(method, f"{do.api_url}/droplets/{droplet_id}")
        assert again.status_code == 404
        assert again.json()["id"] == "not_found"
        check(again.json(), ERROR)


@pytest.mark.parametrize(
    ("token", "path", "status", "error_id"),
    [
        (None, "/droplets", 401, "unauthorized"),
        ("dop_v1_wrong", "/droplets", 401, "unauthorized"),
        (TOKEN, "/droplets/not-an-id", 404, "not_found"),
        (TOKEN, "/no-such-route", 404, "not_found"),
    ],
)
def test_errors_are_the_spec_error(
    do: DigitalOceanEmulator, token: str | None, path: str, status: int, error_id: str
) -> None:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    answer = httpx.get(f"{do.api_url}{path}", headers=headers)
    assert answer.status_code == status
    assert answer.json()["id"] == error_id
    check(answer.json(), ERROR)


def test_429_is_the_spec_error_with_its_headers_spent(
    do: DigitalOceanEmulator, web: httpx.Client
) -> None:
    do.rate_limit_next(1, retry_after=7)
    answer = web.get(f"{do.api_url}/droplets", params={"type": "gpus"})
    assert answer.status_code == 429
    check(answer.json(), ERROR)
    check_rate_headers(answer)
    assert answer.headers["ratelimit-remaining"] == "0"
    assert answer.headers["Retry-After"] == "7"


def test_balance_matches_the_spec(do: DigitalOceanEmulator, web: httpx.Client) -> None:
    answer = web.get(f"{do.api_url}/customers/my/balance")
    assert answer.status_code == 200
    assert answer.json()["month_to_date_balance"] == "-12.34"
    check(answer.json(), BALANCE)


def test_volumes_match_the_spec(do: DigitalOceanEmulator, web: httpx.Client) -> None:
    answer = web.get(f"{do.api_url}/volumes")
    assert answer.status_code == 200
    assert [v["droplet_ids"] for v in answer.json()["volumes"]] == [[do.droplet_ids()[0]], []]
    check(answer.json(), VOLUMES)


def test_the_spec_example_passes_and_a_broken_droplet_fails() -> None:
    """The checker itself works: the spec's own GPU droplet example passes, and the same
    droplet with a status outside the enum or a string `locked` fails."""
    example = document("resources/droplets/responses/examples.yml")["gpu_droplets"]["value"]
    check(example, LIST)
    droplet = example["droplets"][0]
    for broken in ({"status": "paused"}, {"locked": "false"}):
        with pytest.raises(AssertionError, match=next(iter(broken))):
            check({**example, "droplets": [{**droplet, **broken}]}, LIST)
    with pytest.raises(AssertionError, match="total"):
        check({**example, "meta": {}}, LIST)
