"""Real provider objects, not only the published specs: every object of `tests/corpus/` (written
from vendor tests, docs and public clients; each file names its source) goes through the
client over loopback and through reap passes, and must read as its file says."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from reaper.core.models import History, Instance
from reaper.core.policy import protection_reason
from reaper.providers.runpod.pods import STOPPED_VOLUME_USD_PER_GB_MONTH
from tests.reap_support import World, action_of, world

CORPUS = Path(__file__).parent / "corpus"
# DigitalOcean's objects have a world of their own (test_providers_digitalocean_corpus.py).
FILES = sorted(CORPUS.glob("runpod/*.json")) + sorted(CORPUS.glob("vast/*.json"))
# After every timestamp in the corpus: no creation or start time reads as "in the future".
AFTER_THE_CORPUS = datetime(2026, 12, 15, 12, 0, tzinfo=UTC)


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def listed(w: World, provider: str, instance_id: str) -> Instance:
    report = w.run(dry_run=True)
    (inst,) = [i for i in report.instances if i.provider == provider and i.id == instance_id]
    assert report.errors == []
    return inst


def serve(w: World, provider: str, obj: dict[str, Any]) -> str:
    if provider == "runpod":
        return w.runpod.add_pod_json(obj)
    return str(w.vast.add_instance_json(obj))


def bills(provider: str, obj: dict[str, Any], inst: Instance) -> str:
    """What the reading says the instance bills: the GPU price, its storage, nothing, or
    unknown — told apart by comparing with the object's own price fields."""
    cost = inst.cost_per_hour
    if cost is None:
        return "unknown"
    if cost == 0.0:
        return "none"
    gpu = obj.get("cost") if provider == "runpod" else obj.get("dph_total")
    if provider == "runpod":
        size = ((obj.get("mounts") or {}).get("persistent") or {}).get("size") or 0
        storage = size * STOPPED_VOLUME_USD_PER_GB_MONTH / 730.0
    else:
        storage = obj.get("storage_total_cost")
    if storage is not None and abs(cost - storage) < 1e-9:
        return "storage"
    return "gpu" if gpu is not None and abs(cost - float(gpu)) < 1e-9 else "other"


def test_the_corpus_is_there_and_names_its_sources() -> None:
    assert len([f for f in FILES if f.parent.name == "runpod"]) >= 20
    assert len([f for f in FILES if f.parent.name == "vast"]) >= 20
    for path in FILES:
        data = load(path)
        assert set(data) >= {"source", "what", "expect", "object"}, path.name
        assert data["source"].strip() and data["what"].strip()


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_each_object_reads_as_its_sources_show(tmp_path: Path, path: Path) -> None:
    data = load(path)
    provider, expect, obj = path.parent.name, data["expect"], data["object"]
    with world(tmp_path, start=AFTER_THE_CORPUS) as w:
        instance_id = serve(w, provider, obj)
        inst = listed(w, provider, instance_id)
        assert inst.state == expect["state"], data["what"]
        assert (inst.stalled is not None) == expect["stuck"], data["what"]
        protected = protection_reason(inst, History(), w.clock.now(), "reaper:keep") is not None
        assert protected == expect["protected"], data["what"]
        wanted_bill = expect["bills"]
        got_bill = bills(provider, obj, inst)
        if wanted_bill == "storage" and got_bill == "unknown":
            # The object has no storage fields: what it bills cannot be told, never guessed.
            assert not any(k in obj for k in ("storage_total_cost", "storage_cost", "mounts"))
        else:
            assert got_bill == wanted_bill, (data["what"], inst.cost_per_hour)
        if "gpu_util" in expect:
            assert inst.gpu_util == expect["gpu_util"], data["what"]
        # No secret that rides along in the object reaches what reaper keeps of it.
        assert "<redacted>" not in inst.model_dump_json()


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_each_object_is_reaped_only_if_stopped_and_unprotected(tmp_path: Path, path: Path) -> None:
    data = load(path)
    provider, expect, obj = path.parent.name, data["expect"], data["object"]
    with world(tmp_path, start=AFTER_THE_CORPUS) as w:
        instance_id = serve(w, provider, obj)
        w.reach_deadline()
        report = w.run()
        action = action_of(report, instance_id)
        emulator = w.runpod if provider == "runpod" else w.vast
        deletes = [m for m in emulator.mutations if m.kind == "delete"]
        reapable = expect["state"] == "stopped" and not expect["protected"]
        in_cluster = provider == "runpod" and obj.get("cluster") is not None
        if reapable and not in_cluster:
            assert action == "terminate", data["what"]
            assert len(deletes) == 1
        else:
            assert action in (None, "protect", "hold"), data["what"]
            assert deletes == [], data["what"]
