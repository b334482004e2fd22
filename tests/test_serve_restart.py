"""A restart of `reaper serve` loses no monitor: the state is the same SQLite file, and the
restart itself does not turn every monitor into an alert."""

from __future__ import annotations

from pathlib import Path

from emulators.clock import FakeClock
from tests.heartbeat_support import make_settings, served


def test_monitors_survive_a_restart(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    clock = FakeClock()
    with served(settings, clock=clock, dedicated=True) as first:
        for host in ("a", "b", "c"):
            first.ping(host)
        first.ping("b", "fail", method="POST", body=b"segfault")
        first.ping("c", "bye")
        before = first.store.list_monitors()
    clock.advance(first.settings.heartbeat_timeout / 2)
    with served(settings, clock=clock, dedicated=True) as second:
        assert second.store.list_monitors() == before
        assert [m.status for m in before] == ["new", "down", "retired"]
        second.ping("a")
        second.ping("b")  # recovers across the restart
        assert second.store.get_monitor("b").status == "up"  # type: ignore[union-attr]
        assert second.events() == ["monitor_recovered"]


def test_the_restart_gap_is_not_silence(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    clock = FakeClock()
    with served(settings, clock=clock, dedicated=True) as first:
        first.ping("a")
    clock.advance(settings.heartbeat_timeout * 10)  # the server was down this long
    with served(settings, clock=clock, dedicated=True) as second:
        listening_since = clock.now()
        assert second.watch(listening_since=listening_since).down == []
        clock.advance(settings.heartbeat_timeout)
        assert second.watch(listening_since=listening_since).went_down == ["a"]
