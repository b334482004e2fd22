"""idle-watch.sh (layer 2): idle = every GPU under the threshold, no python, no recent SSH
input, no busy Jupyter kernel; any activity resets the count; a warning 5 minutes ahead;
one destroy at the limit, retried until it works; a heartbeat with the status line at every
check; no error ends it.

Every check counts CHECK_EVERY (60 s here) of idle time and the real sleep is 0, so check N
is minute N: the fakes answer per check (the Kit's sections)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.kit_fakes.harness import POD_KEY, Kit, no_secret_in
from tests.kit_fakes.recorder import Request, Response


@pytest.fixture
def kit(tmp_path: Path) -> Iterator[Kit]:
    with Kit.on_pod(tmp_path, IDLE_LIMIT="7") as k:
        yield k


def minutes(kit: Kit) -> list[str]:
    """Each status line's first two words: state and idle/limit."""
    return [" ".join(line.split()[:2]) for line in kit.status_lines()]


def test_an_idle_instance_is_warned_then_destroyed_once_at_the_limit(kit: Kit) -> None:
    done = kit.watch(loops=30)

    assert done.returncode == 0
    assert minutes(kit) == [f"idle {n}/7" for n in range(1, 7)] + ["destroying 7/7"]
    assert kit.status_lines()[0] == "idle 1/7 min gpu=0% py=0 ssh=0 jupyter=none"
    assert kit.deleted_pods() == [("/v2/pods/pod-1", "pod", 204)]
    assert kit.deletes()[0].bearer == POD_KEY
    assert kit.runpod.pod("pod-1") is None
    warning, destroying = kit.notifies()
    assert warning.title == "runpod-pod-1: idle 2 min, destroying in 5 min"
    assert (warning.kind, warning.host) == ("idle_soon", "runpod-pod-1")
    assert f"touch {kit.env['KEEP_FILE']}" in warning.body
    assert destroying.title == "runpod-pod-1: idle 7 min, destroying"
    assert (destroying.level, destroying.host) == ("info", "runpod-pod-1")
    assert {host for host, _, _ in kit.pings()} == {"runpod-pod-1"}
    assert no_secret_in(done.stdout + done.stderr)


@pytest.mark.parametrize("limit", [6, 8])
def test_the_warning_comes_five_minutes_before_the_limit(kit: Kit, limit: int) -> None:
    kit.watch(loops=limit - 1, IDLE_LIMIT=str(limit))

    events = kit.events()
    warn_at = events.index("notify")
    assert events[:warn_at].count("ping") == limit - 5
    assert kit.titles() == [f"runpod-pod-1: idle {limit - 5} min, destroying in 5 min"]
    assert kit.deletes() == []


ACTIVITY = {
    "gpu": ("nvidia-smi", "0", "87"),
    "one of two gpus": ("nvidia-smi", "0\n0", "0\n40"),
    "python": ("pgrep", "1 /sbin/init", "1 /sbin/init\n77 /usr/bin/python3 train.py"),
    "torchrun": ("pgrep", "1 /sbin/init", "88 /usr/bin/python3.11 /usr/local/bin/torchrun x"),
    "ssh typing now": ("who", "", "root pts/0 2026-11-30 10:00   .   4242 (10.0.0.1)"),
    "ssh 12 min ago": ("who", "", "root pts/0 2026-11-30 10:00 00:12 4242 (10.0.0.1)"),
}


@pytest.mark.parametrize("kind", ACTIVITY)
def test_each_kind_of_activity_resets_the_idle_count(kit: Kit, kind: str) -> None:
    tool, quiet, active = ACTIVITY[kind]
    kit.fake(tool, quiet, active, quiet)

    kit.watch(loops=3, IDLE_LIMIT="2")

    # had the activity only paused the count, the third check would destroy
    assert minutes(kit) == ["idle 1/2", "busy 0/2", "idle 1/2"]
    assert kit.deletes() == []


@pytest.mark.parametrize(
    ("who_line", "counted"),
    [
        ("root pts/0 2026-11-30 10:00 00:29 4242 (10.0.0.1)", 1),
        ("root pts/0 2026-11-30 10:00 00:30 4242 (10.0.0.1)", 0),
        ("root pts/0 2026-11-30 10:00 05:12 4242 (10.0.0.1)", 0),
        ("root pts/0 2026-11-30 10:00  old  4242 (10.0.0.1)", 0),
        ("root pts/1 Nov 30 10:00 00:03 4243 (10.0.0.2)", 1),
        ("something unreadable", 1),
    ],
)
def test_an_ssh_session_counts_while_it_saw_input_in_the_last_30_minutes(
    kit: Kit, who_line: str, counted: int
) -> None:
    kit.fake("who", who_line)

    kit.watch(loops=1)

    [line] = kit.status_lines()
    assert f"ssh={counted}" in line
    assert line.startswith("busy" if counted else "idle")


@pytest.mark.parametrize(
    "answer", ["!exit 9", "[N/A]", "", "0\n[Not Supported]", "garbage"], ids=repr
)
def test_an_unreadable_gpu_counts_as_busy(kit: Kit, answer: str) -> None:
    kit.fake("nvidia-smi", answer)

    kit.watch(loops=2, IDLE_LIMIT="1")

    assert minutes(kit) == ["busy 0/1", "busy 0/1"]
    assert "gpu=?" in kit.status_lines()[0]
    assert kit.deletes() == []


def test_no_nvidia_smi_counts_as_busy(kit: Kit) -> None:
    kit.without("nvidia-smi")

    kit.watch(loops=2, IDLE_LIMIT="1")

    assert minutes(kit) == ["busy 0/1", "busy 0/1"]
    assert kit.deletes() == []


def test_the_util_threshold_decides_busy(kit: Kit) -> None:
    kit.fake("nvidia-smi", "4", "5")

    kit.watch(loops=2, UTIL_THRESHOLD="5")

    assert minutes(kit) == ["idle 1/7", "busy 0/7"]
    assert "gpu=5%" in kit.status_lines()[1]


def test_a_fresh_keep_file_holds_it_off(kit: Kit) -> None:
    Path(kit.env["KEEP_FILE"]).touch()

    kit.watch(loops=3, IDLE_LIMIT="1")

    assert minutes(kit) == ["keep 0/1"] * 3
    assert kit.status_lines()[0].endswith("keep=held")
    assert kit.deletes() == []
    assert kit.alerts() == []


def test_a_keep_file_older_than_an_hour_is_ignored_and_said_once(kit: Kit) -> None:
    keep = Path(kit.env["KEEP_FILE"])
    keep.touch()
    old = time.time() - 61 * 60
    os.utime(keep, (old, old))

    done = kit.watch(loops=30, IDLE_LIMIT="3")

    assert minutes(kit) == ["idle 1/3", "idle 2/3", "destroying 3/3"]
    assert len(kit.deletes()) == 1
    assert done.stderr.count("is older than 60 minutes: ignored") == 1


def test_a_failed_destroy_is_retried_at_each_check_until_it_works(kit: Kit) -> None:
    kit.runpod.fail_next("delete", status=503, count=2)

    done = kit.watch(loops=30, IDLE_LIMIT="3")

    assert done.returncode == 0
    assert kit.deleted_pods() == [
        ("/v2/pods/pod-1", "pod", 503),
        ("/v2/pods/pod-1", "pod", 503),
        ("/v2/pods/pod-1", "pod", 204),
    ]
    assert minutes(kit) == [
        "idle 1/3",
        "idle 2/3",
        "destroying 3/3",
        "destroying 4/3",
        "destroying 5/3",
    ]
    assert kit.status_lines()[-1].endswith("destroy_failures=2")
    # one warning, one "destroying", one failure notice (not one per retry)
    warning, destroying, failure = kit.notifies()
    # a limit under 6 min: warned at the first idle check
    assert warning.title == "runpod-pod-1: idle 1 min, destroying in 2 min"
    assert destroying.title == "runpod-pod-1: idle 3 min, destroying"
    assert failure.title == "runpod-pod-1: idle destroy FAILED, still billing"
    assert failure.level == "critical"
    assert "destroying RunPod pod pod-1 failed (HTTP 503" in failure.body
    assert "attempt 1" in failure.body
    assert kit.events().count("ping:bye") == 3
    assert "destroyed RunPod pod pod-1 (HTTP 204, with RUNPOD_API_KEY)" in done.stderr


def test_errors_everywhere_never_end_the_watch(kit: Kit) -> None:
    kit.failing("POST", r"/ping/.*", status=500)
    kit.failing("POST", r"/alert/.*", status=500)
    kit.runpod.fail_next("delete", status=500, count=100)
    kit.fake("nvidia-smi", "0", "!exit 3", "0")
    kit.fake("who", "!exit 1")
    kit.fake("pgrep", "!exit 3")

    done = kit.watch(loops=6, IDLE_LIMIT="2")

    assert done.returncode == 0
    assert "stopping after 6 checks" in done.stderr
    assert len(kit.status_lines()) == 6
    assert "py=?" in kit.status_lines()[0]


def test_dry_run_destroys_nothing_and_says_would_destroy_once(kit: Kit) -> None:
    done = kit.watch(loops=6, IDLE_LIMIT="2", DRY_RUN="1")

    assert done.returncode == 0
    assert minutes(kit) == ["idle 1/2", "destroying 2/2"] + [f"idle {n}/2" for n in range(3, 7)]
    assert kit.status_lines()[-1].endswith(" dry_run=would_destroy")
    assert kit.deletes() == []
    assert "ping:bye" not in kit.events()
    assert done.stderr.count("dry run: would destroy RunPod pod pod-1") == 1
    assert kit.titles() == [
        "runpod-pod-1: idle 1 min, would destroy in 1 min (dry run)",
        "runpod-pod-1: idle 2 min, would destroy (dry run)",
    ]
    assert not any("destroying" in text for text in kit.alerts())


def test_a_dry_run_says_it_again_after_the_instance_was_used(kit: Kit) -> None:
    kit.fake("nvidia-smi", "0", "0", "0", "90", "0")

    kit.watch(loops=7, IDLE_LIMIT="2", DRY_RUN="1")

    assert minutes(kit) == [
        "idle 1/2",
        "destroying 2/2",
        "idle 3/2",
        "busy 0/2",
        "idle 1/2",
        "destroying 2/2",
        "idle 3/2",
    ]
    assert [t.split(", ", 1)[1] for t in kit.titles()] == [
        "would destroy in 1 min (dry run)",
        "would destroy (dry run)",
    ] * 2


def test_malformed_settings_fall_back_to_defaults_and_say_so(kit: Kit) -> None:
    done = kit.watch(loops=1, IDLE_LIMIT="20m", UTIL_THRESHOLD="-1", CHECK_EVERY="soon")

    assert done.returncode == 0
    assert kit.status_lines() == ["idle 1/20 min gpu=0% py=0 ssh=0 jupyter=none"]
    for name in ("IDLE_LIMIT='20m'", "UTIL_THRESHOLD='-1'", "CHECK_EVERY='soon'"):
        assert name in done.stderr


def test_a_fractional_check_every_counts_fractions(kit: Kit) -> None:
    kit.watch(loops=6, CHECK_EVERY="30.5", IDLE_LIMIT="3")

    # 6 checks x 30.5 s = 3 min 3 s: the destroy comes at the sixth check
    assert minutes(kit)[-2:] == ["idle 2/3", "destroying 3/3"]
    assert len(kit.deletes()) == 1


# -- Jupyter ------------------------------------------------------------------------------

JUPYTER_PROC = "1 /sbin/init\n55 /usr/bin/python3 /usr/local/bin/jupyter-lab --allow-root"


def kernel(state: str, minutes_ago: int) -> dict[str, str]:
    seen = datetime.now(UTC) - timedelta(minutes=minutes_ago)
    return {"id": "k1", "execution_state": state, "last_activity": seen.isoformat()}


def serve_kernels(kit: Kit, *answers: list[dict[str, str]], token: str = "") -> list[Request]:
    """/jupyter/api/kernels answers one list per check (the last repeats)."""
    seen: list[Request] = []

    def answer(request: Request, _m: re.Match[str]) -> Response:
        seen.append(request)
        if token and request.headers.get("authorization") != f"token {token}":
            return Response(403, "{}")
        body = answers[min(len(seen), len(answers)) - 1]
        return Response(200, json.dumps(body), "application/json")

    kit.http.on("GET", r"/jupyter/api/kernels", answer)
    return seen


def test_a_busy_jupyter_kernel_resets_the_idle_count(kit: Kit) -> None:
    kit.fake("pgrep", JUPYTER_PROC)
    idle, busy = [kernel("idle", 45)], [kernel("busy", 0)]
    serve_kernels(kit, idle, idle, busy, idle)

    kit.watch(loops=4, JUPYTER_URL=f"{kit.http.base}/jupyter/")

    assert minutes(kit) == ["idle 1/7", "idle 2/7", "busy 0/7", "idle 1/7"]
    assert "py=0" in kit.status_lines()[0]  # Jupyter's own python is its check's business
    assert [line.split()[-1] for line in kit.status_lines()] == [
        "jupyter=idle",
        "jupyter=idle",
        "jupyter=busy",
        "jupyter=idle",
    ]


def test_a_kernel_used_in_the_last_30_minutes_counts_as_activity(kit: Kit) -> None:
    kit.fake("pgrep", JUPYTER_PROC)
    serve_kernels(kit, [kernel("idle", 45), kernel("idle", 10)])

    kit.watch(loops=1, JUPYTER_URL=f"{kit.http.base}/jupyter/")

    assert kit.status_lines()[0].startswith("busy 0/7")
    assert kit.status_lines()[0].endswith("jupyter=recent")


def test_the_jupyter_server_is_found_by_its_runtime_file_with_its_token(
    kit: Kit, tmp_path: Path
) -> None:
    kit.fake("pgrep", JUPYTER_PROC)
    seen = serve_kernels(kit, [kernel("idle", 45)], token="tok-1")
    runtime = tmp_path / "jupyter-runtime"
    runtime.mkdir()
    url = f"http://some-host-name:{kit.http.port}/jupyter/"
    (runtime / "jpserver-55.json").write_text(json.dumps({"url": url, "token": "tok-1"}))

    kit.watch(loops=1)

    assert kit.status_lines()[0].startswith("idle 1/7")
    assert kit.status_lines()[0].endswith("jupyter=idle")
    assert seen[0].headers["authorization"] == "token tok-1"


def test_a_jupyter_server_that_does_not_answer_counts_as_busy(kit: Kit) -> None:
    kit.fake("pgrep", JUPYTER_PROC)

    kit.watch(loops=2, IDLE_LIMIT="1", JUPYTER_URL="http://127.0.0.1:9/")

    assert minutes(kit) == ["busy 0/1", "busy 0/1"]
    assert kit.status_lines()[0].endswith("jupyter=?")


# -- the process itself -------------------------------------------------------------------


def test_sigterm_ends_it_at_once_even_mid_sleep(kit: Kit) -> None:
    proc = kit.popen("idle-watch.sh", IDLE_WATCH_SLEEP="30")
    try:
        assert kit.http.wait_for(lambda rs: len(rs) >= 1)
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=5)
    finally:
        kit.kill_all(proc)

    assert time.monotonic() - started < 3
    assert proc.returncode == 143
    assert "stopped by SIGTERM" in stderr


def test_a_second_watcher_leaves_the_watching_to_the_first(kit: Kit) -> None:
    first = kit.popen("idle-watch.sh", IDLE_WATCH_SLEEP="30")
    try:
        assert kit.http.wait_for(lambda rs: len(rs) >= 1)
        second = kit.watch(loops=5)
    finally:
        kit.kill_all(first)

    assert second.returncode == 0
    assert "another idle-watch holds" in second.stderr
    assert len(kit.status_lines()) == 1


def test_without_pgrep_it_reads_proc(kit: Kit, tmp_path: Path) -> None:
    """A slim image without procps: python processes are found in /proc (this test's own
    python is one)."""
    tools = tmp_path / "tools"
    tools.mkdir()
    needed = "bash dirname date curl mktemp head rm find tr timeout flock sleep touch awk basename"
    for tool in needed.split():
        found = shutil.which(tool)
        assert found, tool
        (tools / tool).symlink_to(found)
    (tools / "python3").symlink_to(sys.executable)
    for fake in ("nvidia-smi", "who", "hostname", "_section.sh"):
        (tools / fake).symlink_to(kit.bin / fake)

    done = subprocess.run(
        [shutil.which("bash") or "bash", "infra/instance/idle-watch.sh"],
        env=kit._env({"PATH": str(tools), "IDLE_WATCH_MAX_LOOPS": "1"}),
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        timeout=20,
    )

    assert done.returncode == 0, done.stderr
    [line] = kit.status_lines()
    assert line.startswith("busy 0/7")
    assert re.search(r"py=[1-9]", line)
