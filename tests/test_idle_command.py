"""`reaper idle <host> --after 30m | --never | --default` and `reaper keep host:<host>`: what the
instance that pings as `host` reads back from its pings, each change an action record; a bad
host or duration is one line and exit 2, nothing stored."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from reaper.core.monitors import KEEP_FOREVER
from reaper.core.records import Monitor
from tests.reap_support import World, cli, world


@pytest.fixture
def w(tmp_path: Path) -> Iterator[World]:
    with world(tmp_path, start=datetime.now(UTC)) as w:
        yield w


def _monitor(w: World, host: str) -> Monitor:
    store = w.store(read_only=True)
    try:
        monitor = store.get_monitor(host)
    finally:
        store.close()
    assert monitor is not None
    return monitor


def _actions(w: World) -> list[tuple[str, str, str]]:
    store = w.store(read_only=True)
    try:
        return [(a.kind, a.subject, a.result) for a in store.action_log()]
    finally:
        store.close()


def test_idle_sets_what_the_instance_reads_back(w: World) -> None:
    assert cli(w, "idle", "runpod-abc", "--after", "90m").stdout == (
        "runpod-abc: idle limit 90m, read back on its next ping\n"
    )
    assert _monitor(w, "runpod-abc").idle_after == "90m"
    assert cli(w, "idle", "runpod-abc", "--after", "2h").returncode == 0
    assert _monitor(w, "runpod-abc").idle_after == "120m"
    assert cli(w, "idle", "runpod-abc", "--never").returncode == 0
    assert _monitor(w, "runpod-abc").idle_after == "never"
    assert cli(w, "idle", "runpod-abc", "--default").returncode == 0
    assert _monitor(w, "runpod-abc").idle_after == ""
    results = [r for kind, subject, r in _actions(w) if subject == "runpod-abc"]
    assert results[-3:] == ["idle after 120m", "idle after never", "idle after default"]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["bad/host", "--never"], "<host>"),
        (["runpod-abc", "--after", "soon"], "--after"),
        (["runpod-abc", "--after", "90s"], "whole minutes"),
        (["runpod-abc", "--after", "30m", "--never"], "not allowed with"),
        (["runpod-abc"], "one of the arguments"),
    ],
)
def test_a_bad_host_or_duration_is_one_line_and_exit_2(
    w: World, args: list[str], says: str
) -> None:
    done = cli(w, "idle", *args)
    assert done.returncode == 2
    assert says in done.stderr and "Traceback" not in done.stderr
    assert _actions(w) == []


def test_keep_host_sets_the_monitor_keep(w: World) -> None:
    done = cli(w, "keep", "host:my-box", "--for", "3h")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("kept my-box until ")
    until = _monitor(w, "my-box").keep_until
    assert until is not None and until > datetime.now(UTC)
    assert cli(w, "keep", "host:my-box", "--for", "forever").returncode == 0
    assert _monitor(w, "my-box").keep_until == KEEP_FOREVER
    assert cli(w, "unkeep", "host:my-box").returncode == 0
    assert _monitor(w, "my-box").keep_until is None
    kinds = [kind for kind, subject, _ in _actions(w) if subject == "my-box"]
    assert kinds == ["keep", "keep", "unkeep"]
    bad = cli(w, "keep", "host:..")
    assert bad.returncode == 2 and "<host>" in bad.stderr
