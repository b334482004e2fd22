"""Issue 12.11: `reaper keep` records the id the listing uses, refuses an id the last listing
does not show (unless `--force`), `reaper unkeep` ends a keep, and `reaper status` lists keeps."""

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


def test_keep_refuses_an_id_the_last_listing_does_not_show_naming_the_nearest(
    tmp_path: Path,
) -> None:
    """A mistyped id used to be stored as a keep that spares nothing, exit 0: the instance meant
    went on to its deadline. Now nothing is stored, exit 2, and the nearest listed ids are
    named; `--force` keeps it anyway (an instance not listed yet)."""
    with world(tmp_path) as w:
        pod = w.runpod.add_pod("trainer-a1b2", status="EXITED")
        w.runpod.add_pod("other-zz99", status="RUNNING")
        w.run()
        result = cli(w, "keep", "runpod:trainer-a1b3")
        assert result.returncode == 2
        [line] = result.stderr.strip().splitlines()
        assert "runpod:trainer-a1b3 is not in the last listing of runpod" in line
        assert f"nearest listed: runpod:{pod}" in line and "--force" in line
        store = w.store(read_only=True)
        try:
            assert store.history().kept == {} and store.action_log() == []
        finally:
            store.close()
        forced = cli(w, "keep", "runpod:trainer-a1b3", "--force")
        assert forced.returncode == 0 and "kept with --force" in forced.stderr


def test_keep_refuses_before_any_listing_unless_forced(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        result = cli(w, "keep", "runpod:trainer-a1b2")
        assert result.returncode == 2 and "no reap pass has listed runpod yet" in result.stderr
        assert cli(w, "keep", "runpod:trainer-a1b2", "--force").returncode == 0


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
