"""Each monitor is down after its own timeout + grace of silence (Healthchecks' period and
grace); a monitor without its own keeps HEARTBEAT_TIMEOUT."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from tests.heartbeat_support import ADMIN, make_settings, served

AUTH = {"Authorization": f"Bearer {ADMIN}"}


def test_down_after_its_own_timeout_plus_grace(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        app.ping("nightly")
        app.ping("fast")
        put = app.http.put(
            "/monitors/nightly", json={"timeout": "2h", "grace": "10m"}, headers=AUTH
        )
        assert put.status_code == 200
        app.advance(minutes=6)
        first = app.watch()
        assert first.went_down == ["fast"], "the default HEARTBEAT_TIMEOUT still holds for fast"
        app.advance(hours=2, minutes=3)  # 2h09m of silence: inside the grace
        assert "nightly" not in app.watch().went_down
        app.advance(minutes=1)  # 2h10m: timeout + grace
        assert app.watch().went_down == ["nightly"]
        downs = [a.title for a in app.notifier.alerts if a.event == "monitor_down"]
        assert downs == ["fast: no heartbeat for 6m", "nightly: no heartbeat for 2h10m"]


def test_status_shows_overdue_by_the_monitors_own_timeout(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        app.ping("slow")
        app.http.put("/monitors/slow", json={"timeout": 3600}, headers=AUTH)
        app.advance(minutes=30)
        status = app.http.get("/status", headers=AUTH).json()
        [monitor] = status["monitors"]
        assert monitor["overdue"] is False and monitor["timeout"] == 3600
        app.advance(minutes=31)
        [later] = app.http.get("/status", headers=AUTH).json()["monitors"]
    assert later["overdue"] is True


def test_a_shorter_timeout_takes_effect_at_the_next_pass(tmp_path: Path) -> None:
    with served(make_settings(tmp_path, heartbeat_timeout=timedelta(hours=1))) as app:
        app.ping("box")
        app.advance(minutes=3)
        assert app.watch().went_down == []
        app.http.put("/monitors/box", json={"timeout": "2m"}, headers=AUTH)
        assert app.watch().went_down == ["box"]
