"""Real DigitalOcean droplet objects, not only the published spec: every object of
`tests/corpus/digitalocean/` (written from the spec's examples, godo, doctl, DigitalOcean's docs
and other clients; each file names its source) goes through the client over loopback and
through reap passes, and must read as its file says."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from reaper.core.models import History, Instance
from reaper.core.policy import protection_reason
from tests.digitalocean_support import DOWorld, do_world

CORPUS = Path(__file__).parent / "corpus" / "digitalocean"
FILES = sorted(CORPUS.glob("*.json"))
# After every timestamp in the corpus: no creation time reads as "in the future".
AFTER_THE_CORPUS = datetime(2026, 12, 15, 12, 0, tzinfo=UTC)


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def listed(w: DOWorld) -> Instance:
    """The one droplet of the world, as a dry-run pass lists it (its id may be unreadable)."""
    report = w.run(dry_run=True)
    assert report.errors == []
    (inst,) = report.instances
    return inst


def bills(obj: dict[str, Any], inst: Instance) -> str:
    """What the reading says the droplet bills: its full price, nothing, or unknown."""
    if inst.cost_per_hour is None:
        return "unknown"
    if inst.cost_per_hour == 0.0:
        return "none"
    price = (obj.get("size") or {}).get("price_hourly")
    return "gpu" if price is not None and abs(inst.cost_per_hour - price) < 1e-9 else "other"


def test_the_corpus_is_there_and_names_its_sources() -> None:
    assert len(FILES) >= 20
    for path in FILES:
        data = load(path)
        assert set(data) >= {"source", "what", "expect", "object"}, path.name
        assert data["source"].strip() and data["what"].strip()


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_each_droplet_reads_as_its_sources_show(tmp_path: Path, path: Path) -> None:
    data = load(path)
    expect, obj = data["expect"], data["object"]
    with do_world(tmp_path, start=AFTER_THE_CORPUS) as w:
        w.do.add_droplet_json(obj)
        inst = listed(w)
        assert inst.state == expect["state"], data["what"]
        assert (inst.stalled is not None) == expect["stuck"], data["what"]
        protected = protection_reason(inst, History(), w.clock.now(), "reaper:keep") is not None
        assert protected == expect["protected"], data["what"]
        assert bills(obj, inst) == expect["bills"], (data["what"], inst.cost_per_hour)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_each_droplet_is_destroyed_only_if_off_and_unprotected(tmp_path: Path, path: Path) -> None:
    data = load(path)
    expect, obj = data["expect"], data["object"]
    with do_world(tmp_path, start=AFTER_THE_CORPUS) as w:
        w.do.add_droplet_json(obj)
        w.reach_deadline()
        report = w.run()
        actions = [a.action for a in report.actions]
        if expect["state"] == "stopped" and not expect["protected"]:
            assert actions == ["terminate"], data["what"]
            assert w.deletes() == [f"/v2/droplets/{obj['id']}"]
        else:
            assert set(actions) <= {"protect", "hold"}, data["what"]
            assert w.deletes() == [], data["what"]
