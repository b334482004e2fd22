"""Mute until a time (the phone's "mute 1 day": `Store.mute_monitor`): the monitor's state
is tracked as ever, no alert about it goes out until then, and an outage the mute held back is
said once when the mute ends."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from tests.heartbeat_support import Served, make_settings, served


def _mute(app: Served, host: str, hours: float) -> None:
    assert app.store.mute_monitor(host, app.clock.now() + timedelta(hours=hours)) is True


def test_silence_while_muted_is_tracked_and_not_alerted(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        app.ping("box")
        _mute(app, "box", 24)
        app.advance(minutes=6)
        report = app.watch()
        assert report.went_down == ["box"] and report.down == ["box"]
        assert report.muted == ["box"]
        for _ in range(5):
            app.advance(hours=3)
            app.watch()
        assert app.events() == []
        monitor = app.store.get_monitor("box")
        assert monitor is not None and monitor.status == "down" and monitor.alert_held


def test_the_held_outage_is_said_once_when_the_mute_ends(tmp_path: Path) -> None:
    with served(make_settings(tmp_path, heartbeat_repeat=None)) as app:
        app.ping("box")
        _mute(app, "box", 2)
        app.advance(minutes=6)
        app.watch()
        app.advance(hours=2)
        app.watch()
        assert app.events() == ["monitor_down_after_mute"]
        assert "held while muted" in app.notifier.alerts[-1].title
        app.advance(hours=5)
        app.watch()
        assert app.events() == ["monitor_down_after_mute"], "once, with HEARTBEAT_REPEAT=off"


def test_a_failure_while_muted_is_held_then_said(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        app.ping("job")
        _mute(app, "job", 1)
        app.ping("job", "fail", method="POST", body=b"OOM")
        assert app.events() == []
        [*_, event] = app.store.monitor_log("job")
        assert event.kind == "fail" and event.note.startswith("alert held: muted until")
        app.advance(hours=1)
        app.watch()
        app.advance(minutes=1)
        app.watch()
    # Said once after the mute: the reminder that fell due, or the held alert.
    assert len(app.events()) == 1
    assert app.events()[0] in ("monitor_still_down", "monitor_down_after_mute")


def test_a_recovery_while_muted_clears_what_was_held(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        app.ping("box")
        _mute(app, "box", 1)
        app.advance(minutes=6)
        app.watch()
        app.ping("box")
        monitor = app.store.get_monitor("box")
        assert monitor is not None and monitor.status == "up" and not monitor.alert_held
        for _ in range(30):  # past the mute, pinging every 3 minutes
            app.advance(minutes=3)
            app.ping("box")
            app.watch()
    assert app.events() == []


def test_unmute_lets_alerts_through_at_once(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        app.ping("box")
        _mute(app, "box", 24)
        assert app.store.mute_monitor("box", None) is True
        app.advance(minutes=6)
        app.watch()
        assert app.events() == ["monitor_down"]
        assert app.store.mute_monitor("no-such-host", None) is False
