"""A lone UTF-16 surrogate in a provider string (valid JSON: `"\\ud800"`) never reaches an
`Instance`, `Volume` or ProviderError: names, labels, statuses and error text are cleaned to
valid text (U+FFFD), and an instance id that cleaning would change makes the instance
unreadable and unknown, never a different id that could be deleted."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from emulators import RunPodEmulator, VastEmulator
from emulators.server import EmulatorServer, Request, Response
from reaper.providers.parsing import clean_text
from reaper.providers.runpod.pods import parse_pod
from reaper.providers.vast.client import parse_instance
from tests.provider_support import on_runpod, on_vast, runpod_listing_error

RP_KEY = "rp-test-key-0014"
VAST_KEY = "vast-test-key-0014"
LONE = "\ud800"


def encodes(*models: BaseModel) -> None:
    """Every model survives the encodes the audit, the store and `--json` do."""
    for model in models:
        model.model_dump_json().encode()
        json.dumps(model.model_dump(mode="json"), ensure_ascii=False).encode()


@pytest.mark.parametrize(
    ("text", "clean"),
    [("job-\ud800", "job-\ufffd"), ("\udfff", "\ufffd"), ("a\ud83d\ude00b", "a\U0001f600b")],
)
def test_clean_text_replaces_lone_surrogates_and_joins_pairs(text: str, clean: str) -> None:
    assert clean_text(text) == clean
    assert clean_text(clean) == clean
    clean_text(text).encode()


def test_a_pod_name_status_and_cluster_id_with_a_lone_surrogate_are_cleaned() -> None:
    raw: dict[str, Any] = {
        "id": "p1",
        "name": f"job-{LONE}",
        "status": f"EXITED{LONE}",
        "mounts": {"network": [{"volumeId": f"nv{LONE}"}]},
        "cluster": {"id": f"cl{LONE}"},
    }
    pod = parse_pod(raw, "main")
    encodes(pod)
    assert pod.id == "p1"
    assert pod.name == "job-\ufffd"
    assert (pod.raw_status, pod.state) == ("EXITED\ufffd", "unknown")
    assert pod.network_volume_id == "nv\ufffd"
    assert pod.cluster_id == "cl\ufffd"


def test_a_pod_id_with_a_lone_surrogate_is_unreadable_not_another_id() -> None:
    pod = parse_pod({"id": f"p1{LONE}", "status": "EXITED", "mounts": {}}, "main", 4)
    encodes(pod)
    assert pod.id == "unreadable-4"
    assert pod.state == "unknown"
    assert pod.console_url is None


@pytest.mark.parametrize("raw_id", [f"12{LONE}", LONE])
def test_a_vast_id_with_a_lone_surrogate_is_unreadable(raw_id: str) -> None:
    inst = parse_instance({"id": raw_id, "actual_status": "stopped"}, "main", 2)
    assert inst.id == "unreadable-2"
    assert inst.state == "unknown"


def test_a_vast_label_and_status_with_a_lone_surrogate_are_cleaned() -> None:
    inst = parse_instance({"id": 5, "actual_status": f"stopped{LONE}", "label": LONE}, "main")
    encodes(inst)
    assert (inst.id, inst.name, inst.raw_status) == ("5", "\ufffd", "stopped\ufffd")
    assert inst.state == "unknown"


def test_listed_names_and_labels_with_lone_surrogates_encode() -> None:
    with RunPodEmulator({"main": RP_KEY}) as runpod, VastEmulator({"main": VAST_KEY}) as vast:
        pod = runpod.add_pod(status="EXITED", name=f"job-{LONE}")
        runpod.add_network_volume("nv1", name=f"data-{LONE}")
        instance = vast.add_instance(actual_status="stopped", label=f"run-{LONE}")
        pods = on_runpod(runpod, RP_KEY, lambda c: c.list_instances())
        volumes = on_runpod(runpod, RP_KEY, lambda c: c.volumes())
        instances = on_vast(vast, VAST_KEY, lambda c: c.list_instances())
    encodes(*pods, *volumes, *instances)
    assert [(p.id, p.name, p.state) for p in pods] == [(pod, "job-\ufffd", "stopped")]
    assert [(v.id, v.name) for v in volumes] == [("nv1", "data-\ufffd")]
    assert [(i.id, i.name, i.state) for i in instances] == [
        (str(instance), "run-\ufffd", "stopped")
    ]


class SurrogateError(EmulatorServer):
    """Answers every call with an RFC 9457 error whose detail holds a lone surrogate."""

    provider = "runpod"

    def dispatch(self, request: Request) -> Response:
        return Response.json(400, {"title": "Bad Request", "detail": f"no such pod {LONE}"})


def test_a_provider_error_with_a_lone_surrogate_is_valid_text() -> None:
    with SurrogateError({"main": RP_KEY}) as server:
        error = runpod_listing_error(server, RP_KEY)
    error.message.encode()
    str(error).encode()
    assert "no such pod \ufffd" in error.message
