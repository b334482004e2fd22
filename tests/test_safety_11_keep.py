"""Issue 12.11: `reaper keep` records the id the listing uses, says when the instance is not
in the last listing, `reaper unkeep` ends a keep, and `reaper status` lists keeps."""

from __future__ import annotations

import json
from pathlib import Path

from tests.reap_support import action_of, cli, world


def test_keep_with_a_leading_zero_keeps_the_instance_the_listing_shows(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        inst = w.vast.add_instance(actual_status="stopped", label="precious")
        w.vast.add_instance(actual_status="running")
        w.run()
        kept = cli(w, "keep", f"vast:0{inst}")
        assert kept.returncode == 0, kept.stderr
        assert f"kept vast:{inst} (precious)" in kept.stdout
        assert "not in" not in kept.stderr
        w.advance(23)
        w.run()
        w.advance(1)
        report = w.run()
        assert action_of(report, str(inst)) == "protect"
        assert [m for m in w.vast.mutations if m.kind == "delete"] == []


def test_keep_refuses_ids_the_provider_cannot_have(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        for target in ("vast:１２３", "vast:12a", "runpod:..", "runpod:a/b"):
            result = cli(w, "keep", target)
            assert result.returncode == 2, target
            assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
            assert "not a valid" in result.stderr


def test_keep_says_when_the_instance_is_not_in_the_last_listing(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        w.runpod.add_pod(status="RUNNING")
        w.run()
        result = cli(w, "keep", "runpod:nosuchpod42")
        assert result.returncode == 0
        assert "runpod:nosuchpod42 is not in the last listing" in result.stderr


def test_unkeep_ends_a_keep_and_status_lists_keeps(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED")
        w.run()
        assert cli(w, "keep", f"runpod:{pod}", "--for", "3d").returncode == 0
        status = json.loads(cli(w, "status", "--json").stdout)
        assert [k["instance"] for k in status["fleet"]["kept"]] == [f"runpod:{pod}"]
        assert f"runpod:{pod}" in cli(w, "status").stdout
        ended = cli(w, "unkeep", f"runpod:{pod}")
        assert ended.returncode == 0 and "no longer kept" in ended.stdout
        assert json.loads(cli(w, "status", "--json").stdout)["fleet"]["kept"] == []
        again = cli(w, "unkeep", f"runpod:{pod}")
        assert again.returncode == 0 and "was not kept" in again.stderr
        w.advance(23)
        w.run()
        w.advance(1)
        assert action_of(w.run(), pod) == "terminate"
