"""A person triages from the title alone: every notify names the host and the outcome, a
failure at a higher level than a success, and one failure is one alert — a notify, then at
most one failure ping (which the guard keeps quiet after the notify). The kit never announces
a destroy it cannot attempt: when it cannot tell which instance it is on, or has no key, it
says so instead (it used to notify "destroying this instance", then the failure)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kit_fakes.harness import POD_KEY, Kit

HOST = "runpod-pod-1"


@pytest.fixture
def kit(tmp_path: Path) -> Iterator[Kit]:
    with Kit.start(tmp_path) as k:
        yield k


def test_without_an_identity_run_sh_says_it_cannot_destroy_once(kit: Kit) -> None:
    done = kit.run("run.sh", "true", RUNPOD_API_KEY=POD_KEY)

    assert done.returncode == 0
    assert kit.events() == ["ping:start", "notify", "ping:fail"]
    [alert] = kit.notifies()
    assert alert.title == "test-box: job done, CANNOT destroy, still billing"
    assert alert.level == "critical"
    assert "cannot tell which instance this is" in alert.body
    assert "destroying this instance" not in alert.text
    assert kit.deletes() == []


def test_without_a_key_run_sh_says_it_cannot_destroy_once(kit: Kit) -> None:
    kit.add_pod("pod-1")

    done = kit.run("run.sh", "bash", "-c", "exit 2", RUNPOD_POD_ID="pod-1")

    assert done.returncode == 2
    # the exit status is itself the failure ping: no /fail beside it
    assert kit.events() == ["ping:start", "notify", "ping:2"]
    [alert] = kit.notifies()
    assert alert.title == f"{HOST}: job FAILED (exit 2), CANNOT destroy, still billing"
    assert "no key to destroy RunPod pod pod-1: set RUNPOD_API_KEY or REAPER_SELF_KEY" in (
        alert.body
    )


def test_a_failed_job_whose_results_are_not_safe_is_one_notify_and_one_ping(kit: Kit) -> None:
    kit.add_pod("pod-1")

    kit.run(
        "run.sh",
        "bash",
        "-c",
        "exit 3",
        RUNPOD_POD_ID="pod-1",
        RUNPOD_API_KEY=POD_KEY,
        PUSH_CMD="exit 1",
    )

    assert kit.events() == ["ping:start", "notify", "ping:3"]
    assert kit.titles() == [f"{HOST}: job FAILED (exit 3), results NOT safe, instance KEPT"]
    assert kit.notifies()[0].level == "critical"


def test_idle_watch_without_an_identity_says_so_once_and_never_destroying(kit: Kit) -> None:
    done = kit.watch(loops=8, IDLE_LIMIT="2", RUNPOD_API_KEY=POD_KEY)

    assert done.returncode == 0
    titles = kit.titles()
    assert titles == [
        "test-box: idle 1 min, destroying in 1 min",
        "test-box: idle 2 min, CANNOT destroy, still billing",
    ]
    assert kit.notifies()[1].level == "critical"
    assert kit.status_lines()[-1].endswith("destroy_failures=6")
    assert kit.deletes() == []
    assert "ping:bye" not in kit.events()


def test_no_notify_is_ever_a_message_from_an_instance(kit: Kit) -> None:
    """Whatever path: each notify has a title that starts with the host."""
    kit.add_pod("pod-1")
    kit.env |= {"RUNPOD_POD_ID": "pod-1", "RUNPOD_API_KEY": POD_KEY}
    kit.run("run.sh", "bash", "-c", "exit 1", KEEP_ALIVE="1")
    kit.run("run.sh", "true", WAIT_FOR="/nonexistent", WAIT_TIMEOUT="0.2", CHECK_EVERY="0.1")
    kit.watch(loops=3, IDLE_LIMIT="2", DRY_RUN="1")
    kit.run("run.sh", "true")

    notifies = kit.sent_notifies()
    assert len(notifies) == 5
    for notify in notifies:
        assert notify.title.startswith(f"{HOST}: "), notify
        assert notify.host == HOST
        assert notify.kind == "idle_soon" or notify.level in ("info", "warning", "critical")
