"""idle-watch sees writes through symbolic links, as results.py saves through them.

A common layout on a rented GPU: the job writes to `outputs/`, a link to the volume
(`/workspace/ckpt`). Before, `find` did not follow links, so a checkpoint being written
through one read as `results=still`: the instance counted idle minutes, and was saved and
destroyed mid-write. A link loop must not make it busy forever either (a leak): it is
skipped, as results.py lists each directory once.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kit_fakes.harness import Kit


@pytest.fixture
def kit(tmp_path: Path) -> Iterator[Kit]:
    with Kit.on_pod(tmp_path, IDLE_LIMIT="3") as k:
        yield k


def aged(path: Path, seconds: float = 120) -> Path:
    then = time.time() - seconds
    os.utime(path, (then, then), follow_symlinks=False)
    return path


def volume(tmp_path: Path) -> Path:
    """Where the checkpoints really are: outside RESULTS_DIR's own tree."""
    target = tmp_path / "volume" / "ckpt"
    target.mkdir(parents=True)
    return target


def results_state(kit: Kit) -> str:
    kit.watch(loops=1)
    return kit.status_lines()[-1].rsplit("results=", 1)[1]


def test_results_dir_that_is_a_link_sees_a_file_being_written(kit: Kit, tmp_path: Path) -> None:
    target = volume(tmp_path)
    (target / "step-100.pt").write_bytes(b"weights")
    link = tmp_path / "outputs"
    link.symlink_to(target, target_is_directory=True)
    kit.env["RESULTS_DIR"] = str(link)

    assert results_state(kit) == "writing"
    aged(target / "step-100.pt")
    assert results_state(kit) == "still"


def test_a_linked_directory_under_results_dir_is_looked_into(kit: Kit, tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    target = volume(tmp_path)
    (target / "step-200.pt").write_bytes(b"weights")
    (results / "ckpt").symlink_to(target)
    kit.env["RESULTS_DIR"] = str(results)

    assert results_state(kit) == "writing"


def test_a_link_loop_is_skipped_not_taken_for_work(kit: Kit, tmp_path: Path) -> None:
    results = tmp_path / "results"
    (results / "run").mkdir(parents=True)
    (results / "run" / "metrics.json").write_bytes(b"{}")
    aged(results / "run" / "metrics.json")
    (results / "run" / "again").symlink_to(results)
    kit.env["RESULTS_DIR"] = str(results)

    assert results_state(kit) == "still"
    kit.watch(loops=2)
    assert [line.split()[0] for line in kit.status_lines()[-2:]] == ["idle", "idle"]
