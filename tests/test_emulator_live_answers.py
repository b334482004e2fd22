"""The emulators answer as the live APIs were seen answering in 2026, beyond their specs, with
the very answers of `tests/corpus/answers/`: Vast's one-instance read of an instance that is
gone, a wrong Vast key answering 404, Vast's retired v0 list, its error answers an account can
be made to get; RunPod's problem bodies without `title`, GraphQL's `myself: null`, an empty
`runtime` while PROVISIONING and stale telemetry after a stop."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from emulators import RunPodEmulator, VastEmulator

ANSWERS = Path(__file__).parent / "corpus" / "answers"
RP_KEY = "rp-live-key-0026"
VAST_KEY = "vast-live-key-0026"
AUTH = {"Authorization": f"Bearer {VAST_KEY}"}
RP_AUTH = {"Authorization": f"Bearer {RP_KEY}"}


def corpus_body(provider: str, name: str) -> Any:
    return json.loads((ANSWERS / provider / f"{name}.json").read_text())["answer"]["body"]


@pytest.fixture(scope="module")
def web() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10) as client:
        yield client


@pytest.mark.parametrize(
    ("gone_answer", "status", "body"),
    [
        ("null", 200, corpus_body("vast", "show-gone-null")),
        ("[]", 200, corpus_body("vast", "show-gone-empty-list")),
        ("404", 404, {"success": False, "error": "not_found", "msg": "Instance not found"}),
    ],
)
def test_vast_reads_a_destroyed_instance_as_the_live_api_does(
    web: httpx.Client, gone_answer: str, status: int, body: Any
) -> None:
    with VastEmulator({"main": VAST_KEY}, gone_answer=gone_answer) as server:  # type: ignore[arg-type]
        instance = server.add_instance(actual_status="stopped")
        url = f"{server.url}/api/v0/instances/{instance}/"
        assert web.get(url, headers=AUTH).json()["instances"]["id"] == instance
        assert web.delete(url, headers=AUTH).json()["success"] is True
        after = web.get(url, headers=AUTH)
        never_made = web.get(f"{server.url}/api/v0/instances/77/", headers=AUTH)
        # A repeated destroy is still the spec's 404 `not_found`.
        again = web.delete(url, headers=AUTH)
    assert (after.status_code, after.json()) == (status, body)
    assert (never_made.status_code, never_made.json()) == (status, body)
    assert (again.status_code, again.json()["error"]) == (404, "not_found")


def test_vast_can_show_a_live_instance_as_a_one_element_list(web: httpx.Client) -> None:
    with VastEmulator({"main": VAST_KEY}, show_as_list=True) as server:
        instance = server.add_instance(actual_status="running")
        shown = web.get(f"{server.url}/api/v0/instances/{instance}/", headers=AUTH).json()
    [only] = shown["instances"]
    assert only["id"] == instance


def test_a_wrong_vast_key_answers_404_auth_error(web: httpx.Client) -> None:
    with VastEmulator({"main": VAST_KEY}, bad_key_mode="404") as server:
        answer = web.get(
            f"{server.url}/api/v1/instances/", headers={"Authorization": "Bearer revoked"}
        )
    assert (answer.status_code, answer.json()) == (404, corpus_body("vast", "list-bad-key-404"))


def test_the_v0_list_answers_410_deprecated_endpoint(web: httpx.Client) -> None:
    with VastEmulator({"main": VAST_KEY}) as server:
        answer = web.get(f"{server.url}/api/v0/instances/", headers=AUTH)
    assert (answer.status_code, answer.json()) == (410, corpus_body("vast", "list-retired-410"))


def test_vast_misbehaves_for_one_account_until_told_otherwise(web: httpx.Client) -> None:
    keys = {"main": VAST_KEY, "lab": "vast-lab-key-0026"}
    with VastEmulator(keys) as server:
        lab = {"Authorization": f"Bearer {keys['lab']}"}
        url = f"{server.url}/api/v1/instances/"
        seen = {}
        for cause in ("rate_limited", "refused", "retired", "success_false"):
            server.misbehave(cause, account="main", kind="list")  # type: ignore[arg-type]
            seen[cause] = web.get(url, headers=AUTH)
            assert web.get(url, headers=lab).status_code == 200
        server.misbehave(None, account="main", kind="list")
        recovered = web.get(url, headers=AUTH)
    limited = seen["rate_limited"]
    assert limited.status_code == 429 and "Retry-After" not in limited.headers
    assert limited.headers["Content-Type"].startswith("text/plain")
    assert limited.text.startswith("API requests too frequent")
    assert seen["refused"].json() == corpus_body("vast", "list-bad-key-404")
    assert (seen["retired"].status_code, seen["retired"].json()["error"]) == (
        410,
        "deprecated_endpoint",
    )
    assert (seen["success_false"].status_code, seen["success_false"].json()["success"]) == (
        200,
        False,
    )
    assert recovered.status_code == 200


@pytest.mark.parametrize(
    ("shape", "expected"),
    [
        ("no_title", {"status": 404, "detail": "pod not found"}),
        ("detail_only", {"detail": "pod not found"}),
        (
            "errors",
            {
                "title": "Not Found",
                "status": 404,
                "detail": "pod not found",
                "errors": ["$: pod not found"],
            },
        ),
    ],
)
def test_runpod_problems_come_in_the_shapes_seen_live(
    web: httpx.Client, shape: str, expected: dict[str, Any]
) -> None:
    with RunPodEmulator({"main": RP_KEY}) as server:
        server.problem_shape = shape  # type: ignore[assignment]
        answer = web.get(f"{server.rest_url}/pods/nosuchpod", headers=RP_AUTH)
    assert answer.status_code == 404 and answer.json() == expected


def test_graphql_answers_myself_null_to_a_key_of_no_account(web: httpx.Client) -> None:
    with RunPodEmulator({"main": RP_KEY}) as server:
        server.graphql_myself_null = True
        answer = web.post(
            server.graphql_url,
            json={"query": "query { myself { clientBalance } }"},
            headers=RP_AUTH,
        )
    assert (answer.status_code, answer.json()) == (
        200,
        corpus_body("runpod", "balance-myself-null"),
    )


def test_runpod_runtime_is_empty_while_provisioning_and_stale_after_a_stop(
    web: httpx.Client,
) -> None:
    with RunPodEmulator({"main": RP_KEY}) as server:
        starting = server.add_pod(status="PROVISIONING")
        ran = server.add_pod(status="RUNNING", gpu_utils=[93])
        server.set_status(ran, "EXITED")
        never_ran = server.add_pod(status="EXITED")
        pods = {
            p["id"]: p for p in web.get(f"{server.rest_url}/pods", headers=RP_AUTH).json()["pods"]
        }
    assert pods[starting]["runtime"] == {}
    assert pods[ran]["status"] == "EXITED" and pods[ran]["runtime"]["gpus"][0]["util"] == 93
    assert pods[never_ran]["runtime"] is None
