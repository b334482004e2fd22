"""run.sh (layer 1): whatever ends the job, results are pushed, the human and the heartbeat
are told, and the instance destroys itself — in that order, with the job's exit status."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kit_fakes.harness import KIT_DIR, POD_KEY, SELF_KEY, VAST_KEY, Kit, no_secret_in


@pytest.fixture
def kit(tmp_path: Path) -> Iterator[Kit]:
    with Kit.start(tmp_path) as k:
        k.env |= {"RUNPOD_POD_ID": "pod-1", "RUNPOD_API_KEY": POD_KEY}
        k.env["PUSH_CMD"] = f'curl -s -X POST "{k.http.base}/push/$RUN_STATUS"'
        k.add_pod("pod-1")
        yield k


def job_events(kit: Kit) -> list[str]:
    return [e for e in kit.events() if not e.startswith("POST /job")]


def test_success_pushes_then_notifies_then_pings_then_destroys(kit: Kit) -> None:
    done = kit.run("run.sh", "bash", "-c", "echo the job ran")

    assert done.returncode == 0
    assert "the job ran" in done.stdout
    # the plain ping before the notify reads whether the instance is kept from outside
    assert kit.events() == ["ping:start", "push", "ping", "notify", "ping:0", "ping:bye", "delete"]
    [alert] = kit.notifies()
    assert alert.title == "runpod-pod-1: job done, results saved, destroying"
    assert (alert.level, alert.host) == ("info", "runpod-pod-1")
    assert "run.sh: job exited with status 0; results pushed; destroying this instance" in (
        alert.body
    )
    assert kit.deleted_pods() == [("/v2/pods/pod-1", "pod", 204)]
    assert kit.runpod.pod("pod-1") is None
    assert "destroyed RunPod pod pod-1 (HTTP 204, with RUNPOD_API_KEY)" in done.stderr
    assert {host for host, _, _ in kit.pings()} == {"runpod-pod-1"}
    assert no_secret_in(done.stdout + done.stderr)


@pytest.mark.parametrize(("command", "status"), [("exit 3", 3), ("no-such-command-xyz", 127)])
def test_the_exit_status_reaches_push_message_and_heartbeat(
    kit: Kit, command: str, status: int
) -> None:
    done = kit.run("run.sh", "bash", "-c", command)

    assert done.returncode == status
    assert [r.path for r in kit.http.matching("POST", r"/push/.*")] == [f"/push/{status}"]
    [alert] = kit.notifies()
    assert alert.title == f"runpod-pod-1: job FAILED (exit {status}), results saved, destroying"
    assert alert.level == "warning"  # above a success's info
    assert f"job exited with status {status};" in alert.body
    assert ("runpod-pod-1", str(status), "run.sh: job exited with status " + str(status)) in (
        kit.pings()
    )
    assert len(kit.deletes()) == 1


def test_sigterm_stops_the_job_and_still_runs_the_exit_path(kit: Kit, tmp_path: Path) -> None:
    pidfile = tmp_path / "job.pid"
    job = f'echo $$ > "{pidfile}"; curl -s -X POST "{kit.http.base}/job/started"; exec sleep 30'
    proc = kit.popen("run.sh", "bash", "-c", job, JOB_STOP_GRACE="5")
    try:
        assert kit.http.wait_for(lambda rs: any(r.path == "/job/started" for r in rs))
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=10)
    finally:
        kit.kill_all(proc)

    assert proc.returncode == 143
    assert job_events(kit) == [
        "ping:start",
        "push",
        "ping",
        "notify",
        "ping:143",
        "ping:bye",
        "delete",
    ]
    assert kit.titles() == [
        "runpod-pod-1: job stopped by SIGTERM (exit 143), results saved, destroying"
    ]
    assert "job exited with status 143 (SIGTERM)" in kit.alerts()[0]
    with pytest.raises(ProcessLookupError):
        os.kill(int(pidfile.read_text()), 0)
    assert "SIGTERM: stopping the job" in stderr


def test_keep_alive_skips_the_destroy_and_says_so(kit: Kit) -> None:
    done = kit.run("run.sh", "true", KEEP_ALIVE="1")

    assert done.returncode == 0
    assert kit.events() == ["ping:start", "push", "notify", "ping:0"]
    assert kit.titles() == ["runpod-pod-1: job done, results saved, instance kept (KEEP_ALIVE=1)"]
    assert kit.deletes() == []


def test_a_failed_push_keeps_the_instance_and_holds_idle_watch_off(kit: Kit) -> None:
    keep_file = Path(kit.env["KEEP_FILE"])
    done = kit.run("run.sh", "true", PUSH_CMD="echo pushing; exit 7")

    assert done.returncode == 0
    # one notify, then one failure ping (no "ok" first): the guard sends one alert
    assert kit.events() == ["ping:start", "notify", "ping:fail"]
    [alert] = kit.notifies()
    assert alert.title == "runpod-pod-1: job done, results NOT safe, instance KEPT"
    assert alert.level == "critical"
    assert "push FAILED (PUSH_CMD exited 7)" in alert.body
    assert f"idle-watch holds off for 60 min ({keep_file} touched)" in alert.body
    assert keep_file.exists()
    assert kit.deletes() == []


def test_a_push_that_hangs_is_cut_off_and_counts_as_failed(kit: Kit) -> None:
    done = kit.run("run.sh", "true", PUSH_CMD="sleep 30", PUSH_TIMEOUT="1")

    assert done.returncode == 0
    assert "push FAILED (timed out after 1s)" in kit.alerts()[0]
    assert kit.deletes() == []


def test_a_failed_destroy_sends_fail_and_a_notify(kit: Kit) -> None:
    kit.runpod.fail_next("delete", status=503)
    done = kit.run("run.sh", "bash", "-c", "exit 4")

    assert done.returncode == 4
    # the failure's notify first, then /fail: the guard's own alert stays quiet
    assert kit.events() == [
        "ping:start",
        "push",
        "ping",
        "notify",
        "ping:4",
        "ping:bye",
        "delete",
        "notify",
        "ping:fail",
    ]
    failure = kit.notifies()[1]
    assert failure.title == "runpod-pod-1: destroy FAILED, still billing"
    assert failure.level == "critical"
    assert "destroying RunPod pod pod-1 failed (HTTP 503: injected failure, with" in failure.body
    assert kit.runpod.pod("pod-1") is not None
    assert "idle-watch, the heartbeat watch and the reaper take over" in failure.body


def test_runpod_falls_back_to_reaper_self_key_when_the_pod_key_is_refused(kit: Kit) -> None:
    kit.add_pod("pod-2", account="self")
    kit.runpod.fail_next("delete", status=403)
    done = kit.run("run.sh", "true", RUNPOD_POD_ID="pod-2", REAPER_SELF_KEY=SELF_KEY)

    assert [d.bearer for d in kit.deletes()] == [POD_KEY, SELF_KEY]
    assert kit.deleted_pods() == [("/v2/pods/pod-2", "pod", 403), ("/v2/pods/pod-2", "self", 204)]
    assert kit.runpod.pod("pod-2") is None
    assert "RUNPOD_API_KEY refused (HTTP 403)" in done.stderr
    assert "destroyed RunPod pod pod-2 (HTTP 204, with REAPER_SELF_KEY)" in done.stderr
    assert "ping:fail" not in kit.events()
    assert no_secret_in(done.stdout + done.stderr)


def test_dry_run_says_what_it_would_destroy_and_calls_nothing_mutating(kit: Kit) -> None:
    done = kit.run("run.sh", "true", DRY_RUN="1")

    assert done.returncode == 0
    assert kit.deletes() == []
    assert kit.runpod.mutations == []
    assert kit.runpod.pod("pod-1") is not None
    assert "ping:bye" not in kit.events()
    assert "dry run: would destroy RunPod pod pod-1 (DELETE with RUNPOD_API_KEY)" in done.stderr
    assert kit.titles() == ["runpod-pod-1: job done, results saved, would destroy (dry run)"]
    assert (
        "DRY_RUN=1: not destroying this instance; it would destroy RunPod pod pod-1"
        in (kit.alerts()[0])
    )


def test_vast_destroys_with_the_container_key(kit: Kit) -> None:
    instance = kit.vast.add_instance(4242, account="instance")
    done = kit.run(
        "run.sh",
        "true",
        RUNPOD_POD_ID=None,
        RUNPOD_API_KEY=None,
        CONTAINER_ID=str(instance),
        CONTAINER_API_KEY=VAST_KEY,
    )

    [delete] = kit.vast.mutations
    assert (delete.method, delete.path, delete.account) == (
        "DELETE",
        "/api/v0/instances/4242/",
        "instance",
    )
    assert kit.vast.instance(4242) is None
    assert kit.deletes()[0].bearer == VAST_KEY
    assert "destroyed Vast instance 4242 (HTTP 200, with CONTAINER_API_KEY)" in done.stderr
    assert {host for host, _, _ in kit.pings()} == {"vast-4242"}


def test_the_job_reads_the_callers_stdin(kit: Kit) -> None:
    env = kit._env({"KEEP_ALIVE": "1"})
    done = subprocess.run(
        ["bash", str(KIT_DIR / "run.sh"), "cat"],
        input="from stdin\n",
        env=env,
        capture_output=True,
        text=True,
        timeout=20,
    )

    assert done.stdout == "from stdin\n"


def test_no_command_is_a_usage_error(kit: Kit) -> None:
    done = kit.run("run.sh", KEEP_ALIVE="1")

    assert done.returncode == 2
    assert "usage: run.sh <command> [args...]" in done.stderr
