"""run.sh destroys what it always did when its job ends, but first reads the same keep as
idle-watch (a plain ping with `Accept: application/json`): an instance kept from outside —
`reaper keep`, the status page, the phone — stays, and the notify says so once."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.kit_fakes.harness import Kit
from tests.kit_fakes.recorder import Response

HOST = "runpod-pod-1"


@pytest.fixture
def kit(tmp_path: Path) -> Iterator[Kit]:
    with Kit.on_pod(tmp_path) as k:
        yield k


def test_a_kept_instance_is_not_destroyed_and_the_notify_says_until_when(kit: Kit) -> None:
    until = kit.guard.at(1) + timedelta(hours=2)
    kit.guard.keeps[HOST] = until

    done = kit.run("run.sh", "true")

    assert done.returncode == 0
    assert kit.events() == ["ping:start", "ping", "notify", "ping:0"]
    [read] = kit.http.matching("POST", rf"/ping/.*/{HOST}")
    assert read.headers["accept"] == "application/json"
    [alert] = kit.notifies()
    assert alert.title == f"{HOST}: job done, kept until {until:%Y-%m-%d %H:%M} UTC"
    assert alert.level == "info"
    assert "not destroying" in alert.body
    assert kit.deletes() == []
    assert kit.runpod.pod("pod-1") is not None


def test_a_failed_job_on_a_kept_instance_is_said_at_the_failures_level(kit: Kit) -> None:
    kit.guard.keeps[HOST] = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)

    done = kit.run("run.sh", "bash", "-c", "exit 3")

    assert done.returncode == 3
    [alert] = kit.notifies()
    assert alert.title == f"{HOST}: job FAILED (exit 3), kept with no end set"
    assert alert.level == "warning"
    assert kit.events()[-1] == "ping:3"
    assert kit.deletes() == []


def test_the_keep_is_judged_by_the_answers_date(kit: Kit) -> None:
    """The guard's clock is 6 hours behind this instance's: its keep_until is in this
    instance's past, yet the keep has 10 minutes to go."""
    kit.guard.start = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=6)
    kit.guard.keeps[HOST] = kit.guard.at(1) + timedelta(minutes=10)

    kit.run("run.sh", "true")

    assert kit.deletes() == []
    assert kit.titles()[0].startswith(f"{HOST}: job done, kept until ")


def test_a_keep_that_has_ended_destroys_as_always(kit: Kit) -> None:
    ended = kit.guard.at(1) - timedelta(minutes=1)
    kit.guard.override = lambda n, g: g.json(
        {"ok": True, "keep_until": ended.strftime("%Y-%m-%dT%H:%M:%SZ"), "idle_after": None}
    )

    kit.run("run.sh", "true")

    assert kit.titles() == [f"{HOST}: job done, destroying"]
    assert len(kit.deletes()) == 1


@pytest.mark.parametrize(
    "answer",
    [Response(200, "OK"), Response(404, "Not Found"), Response(500, "oops")],
    ids=["older reaper", "404", "500"],
)
def test_an_answer_it_cannot_read_destroys_as_always(kit: Kit, answer: Response) -> None:
    kit.guard.override = lambda n, g: answer

    done = kit.run("run.sh", "true")

    assert done.returncode == 0
    assert kit.titles() == [f"{HOST}: job done, destroying"]
    assert kit.deleted_pods() == [("/v2/pods/pod-1", "pod", 204)]


def test_a_dry_run_on_a_kept_instance_says_it_is_kept(kit: Kit) -> None:
    kit.guard.keeps[HOST] = kit.guard.at(1) + timedelta(days=1)

    done = kit.run("run.sh", "true", DRY_RUN="1")

    assert kit.titles()[0].startswith(f"{HOST}: job done, kept until ")
    assert "would destroy" not in done.stderr
    assert kit.deletes() == []
