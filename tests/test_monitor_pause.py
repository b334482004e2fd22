"""A paused monitor never alerts and is not watched; a later ping resumes it (as in
Healthchecks) without a recovery alert, a failure ping resumes it and alerts; a resume by hand
counts the silence from the resume."""

from __future__ import annotations

from pathlib import Path

from tests.heartbeat_support import make_settings, served


def test_a_paused_monitor_never_alerts(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        app.ping("box")
        assert app.store.pause_monitor("box", True, app.clock.now())
        for _ in range(5):
            app.advance(hours=2)
            report = app.watch()
            assert report.went_down == [] and report.down == []
            assert report.paused == ["box"]
            assert report.exit_code == 0
        assert app.events() == []
        monitor = app.store.get_monitor("box")
    assert monitor is not None and monitor.status == "new" and monitor.paused


def test_a_paused_down_monitor_stops_reminding(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        app.ping("box")
        app.advance(minutes=6)
        assert app.watch().went_down == ["box"]
        app.store.pause_monitor("box", True, app.clock.now())
        app.advance(hours=5)
        assert app.watch().reminded == []
    assert app.events() == ["monitor_down"]


def test_a_ping_resumes_it_without_a_recovery_alert(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        app.ping("box")
        app.advance(minutes=6)
        app.watch()
        app.store.pause_monitor("box", True, app.clock.now())
        app.advance(hours=1)
        app.ping("box")
        monitor = app.store.get_monitor("box")
        assert monitor is not None and not monitor.paused and monitor.status == "up"
        assert app.events() == ["monitor_down"], "nobody is told it is back after a pause"
        app.advance(minutes=6)
        assert app.watch().went_down == ["box"], "watched again"


def test_a_failure_ping_on_a_paused_monitor_alerts(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        app.ping("job")
        app.store.pause_monitor("job", True, app.clock.now())
        app.ping("job", "1")
        monitor = app.store.get_monitor("job")
    assert monitor is not None and not monitor.paused and monitor.status == "down"
    assert app.events() == ["monitor_failed"]


def test_a_resume_by_hand_counts_the_silence_from_then(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        app.ping("box")
        app.store.pause_monitor("box", True, app.clock.now())
        app.advance(days=3)
        app.store.pause_monitor("box", False, app.clock.now())
        assert app.watch().went_down == [], "three days paused are not three days of silence"
        app.advance(minutes=5)
        assert app.watch().went_down == ["box"]
