"""WAIT_FOR: after the job exits, run.sh counts the output finished only when every file it
names exists, has the same size at two polls CHECK_EVERY apart and an mtime at least
STABLE_FOR old — never because of a line in a log. A file still being written keeps it
waiting; one that never completes within WAIT_TIMEOUT is notified and leaves the save and the
destroy to idle-watch."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kit_fakes.harness import POD_KEY, Kit

FAST = {"CHECK_EVERY": "0.2", "STABLE_FOR": "1", "WAIT_TIMEOUT": "20"}


@pytest.fixture
def kit(tmp_path: Path) -> Iterator[Kit]:
    (tmp_path / "out").mkdir()
    with Kit.start(tmp_path) as k:
        k.env |= {"RUNPOD_POD_ID": "pod-1", "RUNPOD_API_KEY": POD_KEY, **FAST}
        # what the push saw: the output's size, and when
        pushed = tmp_path / "pushed"
        model = tmp_path / "out" / "model.pt"
        k.env["PUSH_CMD"] = f'stat -c %s "{model}" > "{pushed}"; date +%s.%N >> "{pushed}"'
        k.add_pod("pod-1")
        yield k


def old(path: Path, data: bytes = b"weights") -> None:
    path.write_bytes(data)
    then = time.time() - 120
    os.utime(path, (then, then))


def test_a_file_still_growing_after_the_job_exits_keeps_run_sh_waiting(
    kit: Kit, tmp_path: Path
) -> None:
    """The job says it is done and leaves a writer behind (a checkpoint being saved)."""
    model, finished = tmp_path / "out" / "model.pt", tmp_path / "writer-finished"
    writer = (
        f'(for i in $(seq 1 12); do sleep 0.2; printf 0123456789 >> "{model}"; done; '
        f'date +%s.%N > "{finished}") >/dev/null 2>&1 & echo "Training done"'
    )

    done = kit.run("run.sh", "bash", "-c", writer, WAIT_FOR=str(model), timeout=40)

    assert done.returncode == 0, done.stderr
    assert "Training done" in done.stdout
    assert "still changing" in done.stderr
    size, pushed_at = (tmp_path / "pushed").read_text().split()
    assert int(size) == 120  # the whole file, not the part written when the job exited
    assert float(pushed_at) - float(finished.read_text()) >= 1.0  # STABLE_FOR after the last write
    assert kit.events() == ["ping:start", "ping", "notify", "ping:0", "ping:bye", "delete"]
    assert "results pushed; destroying this instance" in kit.alerts()[0]


def test_a_fresh_file_of_unchanging_size_waits_until_it_is_stable_for_long_enough(
    kit: Kit, tmp_path: Path
) -> None:
    model = tmp_path / "out" / "model.pt"
    started = time.monotonic()

    done = kit.run(
        "run.sh", "bash", "-c", f'printf w > "{model}"', WAIT_FOR=str(model), STABLE_FOR="1.5"
    )

    assert done.returncode == 0
    assert time.monotonic() - started >= 1.5
    assert "written 0s ago" in done.stderr or "written 1s ago" in done.stderr
    assert len(kit.deletes()) == 1


def test_an_output_that_never_comes_is_notified_and_nothing_is_destroyed(
    kit: Kit, tmp_path: Path
) -> None:
    """A log that says "done" decides nothing."""
    done = kit.run(
        "run.sh",
        "bash",
        "-c",
        "echo 'Training done'; exit 4",
        WAIT_FOR=f"{tmp_path}/out/model.pt",
        WAIT_TIMEOUT="1",
    )

    assert done.returncode == 4
    assert kit.events() == ["ping:start", "notify", "ping:4"]
    [alert] = kit.notifies()
    assert (
        alert.title == "runpod-pod-1: job FAILED (exit 4), output not complete, left to idle-watch"
    )
    assert alert.body == (
        f"run.sh: job exited with status 4; WAIT_FOR not complete after 1s "
        f"(WAIT_TIMEOUT): {tmp_path}/out/model.pt (missing). Not saving or destroying: "
        "idle-watch saves the results and destroys by its own rules"
    )
    assert not (tmp_path / "pushed").exists()
    assert not Path(kit.env["KEEP_FILE"]).exists()  # idle-watch's rules, not a hold
    assert kit.deletes() == []


def test_a_glob_needs_a_match_and_every_match_stable(kit: Kit, tmp_path: Path) -> None:
    done = kit.run("run.sh", "true", WAIT_FOR=f"{tmp_path}/out/*.pt", WAIT_TIMEOUT="0.5")

    assert f"{tmp_path}/out/*.pt (nothing matches)" in kit.alerts()[0]
    assert done.returncode == 0
    assert kit.deletes() == []


def test_every_name_of_a_list_must_be_complete(kit: Kit, tmp_path: Path) -> None:
    old(tmp_path / "out" / "model.pt")
    old(tmp_path / "out" / "eval 1.pt")
    names = f"{tmp_path}/out/model.pt:{tmp_path}/out/eval?1.pt {tmp_path}/out/metrics.json"

    kit.run("run.sh", "true", WAIT_FOR=names, WAIT_TIMEOUT="1")

    [alert] = kit.alerts()
    assert f"{tmp_path}/out/metrics.json (missing)" in alert
    assert "model.pt" not in alert.split("WAIT_TIMEOUT")[1]
    assert kit.deletes() == []

    kit.http.requests.clear()
    old(tmp_path / "out" / "metrics.json", b"{}")
    done = kit.run("run.sh", "true", WAIT_FOR=names, WAIT_TIMEOUT="5")

    assert "WAIT_FOR complete (3 files)" in done.stderr
    assert len(kit.deletes()) == 1
