"""Every notify of the kit goes to NOTIFY_URL/<host> — the host it pings as — so that the
guard counts it for that instance and a Keep pressed on it reaches that instance. A reaper
older than that route answers 404 there: the same notify then goes to NOTIFY_URL, once."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from tests.kit_fakes.harness import PING_KEY, Kit


@pytest.fixture
def kit(tmp_path: Path) -> Iterator[Kit]:
    with Kit.on_pod(tmp_path) as k:
        yield k


def test_notifies_go_to_the_host_it_pings_as(kit: Kit) -> None:
    kit.watch(loops=10, IDLE_LIMIT="2", HEARTBEAT_HOST="trainer.7")
    kit.run("run.sh", "bash", "-c", "exit 1", HEARTBEAT_HOST="trainer.7")

    pinged = {host for host, _, _ in kit.pings()}
    assert pinged == {"trainer.7"}
    sent = [r.path for r in kit.http.requests if r.path.startswith("/alert/")]
    assert sent == [f"/alert/{PING_KEY}/trainer.7"] * 3
    assert [n.title.split(":")[0] for n in kit.notifies()] == ["trainer.7"] * 3


def test_the_warning_before_an_idle_destroy_is_idle_soon_with_its_time(kit: Kit) -> None:
    kit.watch(loops=2, IDLE_LIMIT="6")

    [warning] = kit.notifies()
    assert (warning.host, warning.kind) == ("runpod-pod-1", "idle_soon")
    assert warning.title == "runpod-pod-1: idle 1 min, destroying in 5 min"
    # by the guard's clock: its Date at that check, plus the five minutes
    destroy_at = kit.guard.at(1) + timedelta(minutes=5)
    assert warning.destroy_at == destroy_at.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert "press Keep" in warning.body


def test_an_older_reaper_gets_the_notify_at_notify_url(kit: Kit) -> None:
    kit.guard.host_alerts = False

    kit.run("run.sh", "true")

    sent = [r.path for r in kit.http.requests if r.path.startswith("/alert/")]
    assert sent == [f"/alert/{PING_KEY}/runpod-pod-1", f"/alert/{PING_KEY}"]
    [delivered] = kit.notifies()
    assert delivered.host is None
    assert delivered.title == "runpod-pod-1: job done, destroying"
