"""A wrong ping key in HEARTBEAT_URL or NOTIFY_URL: the reaper answers 404 to everything under
it. The kit says so in one line that names the variable and what to check — once, not on every
ping — never prints the URL (it holds the key), and goes on with its job."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kit_fakes.harness import PING_KEY, Kit, no_secret_in

WRONG = "wrong-key-0123456789"


@pytest.fixture
def kit(tmp_path: Path) -> Iterator[Kit]:
    with Kit.start(tmp_path) as k:
        yield k


def _said(stderr: str, var: str) -> list[str]:
    return [line for line in stderr.splitlines() if f"{var} answered 404" in line]


def test_a_wrong_heartbeat_key_is_said_once_and_the_pings_go_on(kit: Kit) -> None:
    bad = f"{kit.http.base}/ping/{WRONG}"
    done = kit.source(
        'kit_ping start; echo "rc=$?"; kit_ping; kit_ping_read; kit_ping 0; echo "rc=$?"',
        HEARTBEAT_URL=bad,
        HEARTBEAT_HOST="h1",
    )

    [line] = _said(done.stderr, "HEARTBEAT_URL")
    assert "check its ping key" in line and "h1" in line
    assert "failed (HTTP 404)" not in done.stderr
    assert done.stdout.split() == ["rc=1", "rc=1"]  # still a failure for the callers
    assert len(kit.http.matching("POST", rf"/ping/{WRONG}/.*")) == 4  # every ping went out
    assert no_secret_in(done.stderr) and WRONG not in done.stderr


def test_said_again_only_after_the_url_answered_in_between(kit: Kit) -> None:
    bad, good = f"{kit.http.base}/ping/{WRONG}", f"{kit.http.base}/ping/{PING_KEY}"
    done = kit.source(
        "kit_ping; kit_ping; HEARTBEAT_URL=$GOOD; kit_ping; HEARTBEAT_URL=$BAD; kit_ping; kit_ping",
        HEARTBEAT_URL=bad,
        BAD=bad,
        GOOD=good,
    )

    assert len(_said(done.stderr, "HEARTBEAT_URL")) == 2


def test_a_wrong_notify_key_is_said_once(kit: Kit) -> None:
    done = kit.source(
        "kit_notify info one; kit_notify warning two; kit_ping",
        NOTIFY_URL=f"{kit.http.base}/alert/{WRONG}",
    )

    [line] = _said(done.stderr, "NOTIFY_URL")
    assert "check its ping key" in line
    assert "notify failed" not in done.stderr
    assert "notify (info): one" in done.stderr and "notify (warning): two" in done.stderr
    assert _said(done.stderr, "HEARTBEAT_URL") == []  # the heartbeat's key is right
    assert WRONG not in done.stderr


def test_other_failures_are_still_said_each_time(kit: Kit) -> None:
    kit.failing("POST", r"/ping/.*", 503)
    done = kit.source("kit_ping; kit_ping")

    assert done.stderr.count("heartbeat ping (plain) failed (HTTP 503)") == 2


def test_idle_watch_with_a_wrong_key_says_it_once_and_keeps_watching(kit: Kit) -> None:
    kit.fake("nvidia-smi", "90")  # busy: the watch just goes on
    done = kit.watch(loops=4, HEARTBEAT_URL=f"{kit.http.base}/ping/{WRONG}")

    assert done.returncode == 0, done.stderr
    assert len(_said(done.stderr, "HEARTBEAT_URL")) == 1
    assert "failed (HTTP 404)" not in done.stderr
    assert "stopping after 4 checks" in done.stderr
    assert WRONG not in done.stderr
