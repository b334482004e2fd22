"""When run.sh keeps an instance because its results are not safe, it holds idle-watch off by
touching KEEP_FILE — and never claims a hold it could not make: where KEEP_FILE cannot be
written (off RunPod /workspace may not exist) it falls back to a file under TMPDIR, which
idle-watch reads too; where neither can be written, the notify says the hold failed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kit_fakes.harness import Kit

HOST = "runpod-pod-1"


@pytest.fixture
def kit(tmp_path: Path) -> Iterator[Kit]:
    with Kit.on_pod(tmp_path, PUSH_CMD="exit 1") as k:
        yield k


def test_a_keep_file_that_cannot_be_written_falls_back_and_says_which(
    kit: Kit, tmp_path: Path
) -> None:
    missing = tmp_path / "no-workspace" / ".keep"

    kit.run("run.sh", "true", KEEP_FILE=str(missing))

    fallback = tmp_path / "tmp" / "reaper-kit.keep"
    assert fallback.exists()
    assert not missing.exists()
    [alert] = kit.notifies()
    assert f"idle-watch holds off for 60 min ({fallback} touched)" in alert.body
    assert str(missing) not in alert.body

    kit.http.requests.clear()
    kit.watch(loops=2, KEEP_FILE=str(missing), IDLE_LIMIT="1", PUSH_CMD=None)

    assert [line.split()[0] for line in kit.status_lines()] == ["keep", "keep"]
    assert kit.status_lines()[0].endswith("keep=held")
    assert kit.deletes() == []


def test_a_hold_that_cannot_be_made_is_said_not_claimed(kit: Kit, tmp_path: Path) -> None:
    missing = tmp_path / "no-workspace" / ".keep"

    kit.run("run.sh", "true", KEEP_FILE=str(missing), TMPDIR=str(tmp_path / "no-tmp"))

    [alert] = kit.notifies()
    assert "the hold FAILED: neither" in alert.body
    assert "touched" not in alert.body
    assert alert.title == f"{HOST}: job done, results NOT safe, instance KEPT"
