"""The watch pass runs on a `Context`: a dry run is the same pass on `DryRunEffects` — it
decides what it would, writes nothing and sends nothing, and says what it would have done."""

from __future__ import annotations

from pathlib import Path

from tests.heartbeat_support import make_settings, served


def test_a_dry_run_decides_the_same_and_changes_nothing(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        app.ping("box")
        app.ping("quiet")
        app.store.mute_monitor("quiet", app.clock.now().replace(year=2027))
        app.notifier.alerts.clear()
        app.advance(minutes=6)
        before = app.store.list_monitors()
        dry = app.watch(dry_run=True)
        assert dry.dry_run is True
        assert sorted(dry.went_down) == ["box", "quiet"] and dry.muted == ["quiet"]
        assert [a.event for a in dry.alerts] == ["monitor_down"]
        assert app.store.list_monitors() == before, "nothing written"
        assert app.notifier.alerts == [], "nothing sent"
        live = app.watch()
        assert (live.went_down, live.muted, [a.event for a in live.alerts]) == (
            dry.went_down,
            dry.muted,
            ["monitor_down"],
        )
        assert app.events() == ["monitor_down"]
        assert app.store.list_monitors() != before
