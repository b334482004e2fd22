"""idle-watch and the results: a file under RESULTS_DIR written within STABLE_FOR is work;
at the limit the results are saved and verified exactly as run.sh does before the destroy,
a save that fails keeps the instance (and is tried again); IDLE_ACTION=stop stops instead of
destroying."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kit_fakes.harness import POD_KEY, VAST_KEY, Kit
from tests.kit_fakes.results import write_files
from tests.kit_fakes.s3 import Store, s3_store


@pytest.fixture
def store() -> Iterator[Store]:
    with s3_store() as s:
        yield s


@pytest.fixture
def kit(tmp_path: Path, store: Store) -> Iterator[Kit]:
    results = tmp_path / "results"
    results.mkdir()
    with Kit.start(tmp_path) as k:
        k.env |= {"RUNPOD_POD_ID": "pod-1", "RUNPOD_API_KEY": POD_KEY, "IDLE_LIMIT": "3"}
        k.env |= {"RESULTS_DIR": str(results), **store.env()}
        k.add_pod("pod-1")
        yield k


def age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def checks(kit: Kit) -> list[str]:
    """The status line of each check. A save that outlasts a check period (a loaded machine)
    adds `saving results; ...` pings between them: those are the heartbeat during the save,
    not checks, and how many there are depends on the machine's speed."""
    return [line for line in kit.status_lines() if not line.startswith("saving results; ")]


def minutes(kit: Kit) -> list[str]:
    return [" ".join(line.split()[:2]) for line in checks(kit)]


def test_a_file_written_within_stable_for_is_work(kit: Kit, tmp_path: Path) -> None:
    ckpt = tmp_path / "results" / "ckpt.pt"
    ckpt.write_bytes(b"weights")

    kit.watch(loops=2)
    age(ckpt, 61)
    kit.watch(loops=1)

    assert checks(kit) == [
        "busy 0/3 min gpu=0% py=0 ssh=0 jupyter=none results=writing",
        "busy 0/3 min gpu=0% py=0 ssh=0 jupyter=none results=writing",
        "idle 1/3 min gpu=0% py=0 ssh=0 jupyter=none results=still",
    ]


def test_a_growing_file_keeps_it_waiting_and_the_whole_file_is_saved(
    kit: Kit, store: Store, tmp_path: Path
) -> None:
    ckpt = tmp_path / "results" / "ckpt.pt"
    stop = threading.Event()

    def writer() -> None:
        for _ in range(15):
            with ckpt.open("ab") as f:
                f.write(b"0123456789")
            if stop.wait(0.1):
                return

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        done = kit.watch(
            loops=60, IDLE_LIMIT="1", STABLE_FOR="1", IDLE_WATCH_SLEEP="0.1", timeout=60
        )
    finally:
        stop.set()
        thread.join()

    assert done.returncode == 0, done.stderr
    states = minutes(kit)
    assert states[0] == "busy 0/1"
    assert states[-1] == "destroying 1/1"
    assert "results=writing" in checks(kit)[0]
    assert len(kit.deletes()) == 1
    saved = {k.rsplit("/", 1)[-1]: v for k, v in store.objects().items()}
    assert saved["ckpt.pt"] == ckpt.read_bytes() == b"0123456789" * 15


def test_the_results_are_saved_and_verified_before_the_destroy(
    kit: Kit, store: Store, tmp_path: Path
) -> None:
    write_files(tmp_path / "results", {"metrics.json": b'{"acc": 1}', "logs/train.log": b"ok\n"})
    for path in (tmp_path / "results").rglob("*"):
        age(path, 120)

    done = kit.watch(loops=10, timeout=60)

    assert done.returncode == 0, done.stderr
    assert minutes(kit) == ["idle 1/3", "idle 2/3", "destroying 3/3"]
    objects = store.objects()
    assert sorted(k.rsplit("/", 1)[-1] for k in objects) == [
        "MANIFEST.json",
        "metrics.json",
        "train.log",
    ]
    _, destroying = kit.notifies()
    assert destroying.title == "runpod-pod-1: idle 3 min, results saved, destroying"
    assert destroying.body.startswith(
        f"idle-watch: results safe: 2 files, 13 B, s3://{store.bucket}/runs/runpod-pod-1/"
    )
    assert destroying.body.endswith(" verified; destroying this instance.")
    assert kit.events()[-3:] == ["notify", "ping:bye", "delete"]


def test_a_save_that_fails_keeps_the_instance_and_is_tried_again(
    kit: Kit, store: Store, tmp_path: Path
) -> None:
    (tmp_path / "results" / "metrics.json").write_text("{}")
    age(tmp_path / "results" / "metrics.json", 120)
    store.proxy.fail_next(1, status=403, code="AccessDenied")

    done = kit.watch(loops=10, timeout=60)

    assert done.returncode == 0, done.stderr
    assert minutes(kit) == ["idle 1/3", "idle 2/3", "destroying 3/3", "destroying 4/3"]
    assert checks(kit)[3].endswith("save_failures=1")
    _, kept, destroying = kit.notifies()
    assert kept.title == "runpod-pod-1: idle 3 min, results NOT safe, instance KEPT"
    assert kept.level == "critical"
    assert "results NOT safe: the store answered HTTP 403 AccessDenied" in kept.body
    assert "the save is tried again at every check (attempt 1)" in kept.body
    assert "results safe: 1 file" in destroying.body
    # one alert for the failure: the notify got through, so no /fail beside it (and no
    # "heartbeat back" when the next check pings)
    assert [suffix for _, suffix, _ in kit.pings() if suffix == "fail"] == []
    assert len(kit.deletes()) == 1


def test_a_save_failure_whose_notify_fails_is_reported_by_fail(
    kit: Kit, store: Store, tmp_path: Path
) -> None:
    (tmp_path / "results" / "metrics.json").write_text("{}")
    age(tmp_path / "results" / "metrics.json", 120)
    store.proxy.fail_next(1, status=403, code="AccessDenied")
    kit.failing("POST", r"/alert/.*", status=502)

    kit.watch(loops=4, timeout=60)

    fails = [body for _, suffix, body in kit.pings() if suffix == "fail"]
    assert len(fails) == 1 and "results not safe, instance kept" in fails[0]


def test_results_never_safe_never_destroy(kit: Kit, store: Store, tmp_path: Path) -> None:
    (tmp_path / "results" / "metrics.json").write_text("{}")
    age(tmp_path / "results" / "metrics.json", 120)
    store.proxy.drop("metrics.json")

    done = kit.watch(loops=6, timeout=60)

    assert done.returncode == 0
    assert kit.deletes() == []
    assert kit.runpod.pod("pod-1") is not None
    assert checks(kit)[-1].endswith("save_failures=3")
    assert len([t for t in kit.titles() if "results NOT safe, instance KEPT" in t]) == 1
    assert "metrics.json (missing in the store)" in kit.alerts()[-1]


def test_the_heartbeat_keeps_coming_while_a_slow_save_runs(
    kit: Kit, store: Store, tmp_path: Path
) -> None:
    (tmp_path / "results" / "metrics.json").write_text("{}")
    age(tmp_path / "results" / "metrics.json", 120)
    store.proxy.slow(0.4)

    done = kit.watch(loops=10, IDLE_LIMIT="1", IDLE_WATCH_SLEEP="0.5", timeout=60)

    assert done.returncode == 0, done.stderr
    saving = [line for line in kit.status_lines() if line.startswith("saving results; ")]
    assert saving, kit.status_lines()
    assert saving[0] == (
        "saving results; destroying 1/1 min gpu=0% py=0 ssh=0 jupyter=none results=still"
    )


def test_idle_action_stop_stops_a_runpod_pod_after_saving(
    kit: Kit, store: Store, tmp_path: Path
) -> None:
    (tmp_path / "results" / "a.txt").write_text("a")
    age(tmp_path / "results" / "a.txt", 120)

    done = kit.watch(loops=10, IDLE_ACTION="stop", timeout=60)

    assert done.returncode == 0, done.stderr
    assert minutes(kit)[-1] == "stopping 3/3"
    [action] = kit.http.matching("POST", r"/runpod/v2/pods/pod-1/action")
    assert json.loads(action.body) == {"action": "stop"}
    assert action.bearer == POD_KEY
    assert kit.deletes() == []
    pod = kit.runpod.pod("pod-1")
    assert pod is not None and pod["status"] == "EXITED"
    warning, stopping = kit.notifies()
    assert warning.title == "runpod-pod-1: idle 1 min, stopping in 2 min"
    assert stopping.title == "runpod-pod-1: idle 3 min, results saved, stopping"
    assert stopping.body.endswith("verified; stopping this instance.")
    assert "stopped RunPod pod pod-1 (HTTP 200, with RUNPOD_API_KEY)" in done.stderr
    assert len(store.objects()) == 2


def test_idle_action_stop_stops_a_vast_instance(kit: Kit, tmp_path: Path) -> None:
    kit.vast.add_instance(77, account="instance")
    vast = {"RUNPOD_POD_ID": None, "RUNPOD_API_KEY": None, "CONTAINER_ID": "77"}
    nothing_to_save = {"RESULTS_DIR": None, "RESULTS_URL": None}

    done = kit.watch(
        loops=10, IDLE_ACTION="stop", CONTAINER_API_KEY=VAST_KEY, **vast, **nothing_to_save
    )

    assert done.returncode == 0, done.stderr
    [stop] = kit.vast.mutations
    assert (stop.method, stop.path, stop.account) == ("PUT", "/api/v0/instances/77/", "instance")
    [sent] = kit.http.matching("PUT", r"/vast/api/v0/instances/77/")
    assert json.loads(sent.body) == {"state": "stopped"}
    assert sent.bearer == VAST_KEY
    instance = kit.vast.instance(77)
    assert instance is not None and instance["actual_status"] == "stopped"
    assert "stopped Vast instance 77 (HTTP 200, with CONTAINER_API_KEY)" in done.stderr


def test_dry_run_with_stop_says_what_it_would_do(kit: Kit, store: Store) -> None:
    done = kit.watch(loops=3, IDLE_ACTION="stop", DRY_RUN="1")

    assert "dry run: would stop RunPod pod pod-1 (POST .../action stop with RUNPOD_API_KEY)" in (
        done.stderr
    )
    assert "dry run: would upload MANIFEST.json last" in done.stderr
    assert store.objects() == {}
    assert kit.http.matching("POST", r"/runpod/.*") == []


def test_an_unknown_idle_action_destroys_and_says_so(kit: Kit) -> None:
    done = kit.watch(loops=10, IDLE_ACTION="hibernate", RESULTS_DIR=None, RESULTS_URL=None)

    assert "IDLE_ACTION='hibernate' is neither destroy nor stop; using destroy" in done.stderr
    assert len(kit.deletes()) == 1
