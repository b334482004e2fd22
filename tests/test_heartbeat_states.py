"""The monitor state machine over real HTTP, time moved by the injected clock:
new → up → down → up, /fail and exit statuses, /start, /bye, revival, alert once, remind,
recover."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from reaper.core.models import Monitor
from reaper.passes.watch import STORM_LIMIT
from tests.heartbeat_support import ADMIN, Served, make_settings, served


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Served]:
    with served(make_settings(tmp_path)) as running:
        yield running


def _monitor(app: Served, host: str) -> Monitor:
    monitor = app.store.get_monitor(host)
    assert monitor is not None
    return monitor


def test_new_up_down_up(app: Served) -> None:
    app.ping("box")
    assert _monitor(app, "box").status == "new"
    app.advance(minutes=1)
    app.ping("box")
    assert _monitor(app, "box").status == "up"

    app.advance(minutes=4, seconds=59)
    assert app.watch().down == []
    app.advance(seconds=1)  # exactly HEARTBEAT_TIMEOUT of silence
    report = app.watch()
    assert report.went_down == ["box"]
    down = _monitor(app, "box")
    assert down.status == "down"
    assert down.down_since == down.last_ping_at  # the outage began at the last ping

    app.advance(minutes=10)
    app.ping("box")
    assert _monitor(app, "box").status == "up"
    assert app.events() == ["monitor_down", "monitor_recovered"]
    assert "15m" in app.notifier.alerts[-1].title  # downtime from the last ping


def test_a_silent_new_monitor_goes_down_too(app: Served) -> None:
    app.ping("died-at-once")
    app.advance(minutes=6)
    assert app.watch().went_down == ["died-at-once"]


def test_down_alerts_once_then_reminds_every_repeat(app: Served) -> None:
    app.ping("box")
    app.advance(minutes=6)
    app.watch()
    for _ in range(5):  # a pass every minute for a while: no more alerts
        app.advance(minutes=1)
        app.watch()
    assert app.events() == ["monitor_down"]

    app.advance(minutes=55)  # an hour after the down alert
    assert app.watch().reminded == ["box"]
    app.advance(minutes=1)
    app.watch()
    app.advance(minutes=59)
    app.watch()
    assert app.events() == ["monitor_down", "monitor_still_down", "monitor_still_down"]


def test_fail_is_down_and_an_alert_at_once(app: Served) -> None:
    app.ping("job")
    app.ping("job", "fail", method="POST", body=b"CUDA out of memory")
    monitor = _monitor(app, "job")
    assert monitor.status == "down" and monitor.last_message == "CUDA out of memory"
    assert app.events() == ["monitor_failed"]
    assert "CUDA out of memory" in app.notifier.alerts[-1].body
    app.ping("job", "fail")  # already down: no second alert
    app.watch()
    assert app.events() == ["monitor_failed"]
    app.advance(minutes=3)
    app.ping("job")
    assert _monitor(app, "job").status == "up"
    assert app.events() == ["monitor_failed", "monitor_recovered"]


@pytest.mark.parametrize(("code", "status"), [("0", "up"), ("1", "down"), ("137", "down")])
def test_an_exit_status_is_ok_or_a_failure(app: Served, code: str, status: str) -> None:
    app.ping("job")
    app.ping("job", code)
    monitor = _monitor(app, "job")
    assert (monitor.status, monitor.last_exit_status) == (status, int(code))
    if status == "down":
        assert app.events() == ["monitor_failed"]
        assert f"exit {code}" in app.notifier.alerts[-1].title
    else:
        assert app.events() == []


def test_a_started_job_that_never_finishes_is_visible(app: Served) -> None:
    app.ping("job", "start")
    started = app.clock.now()
    app.advance(minutes=3)
    assert _monitor(app, "job").job_started_at == started
    status = app.http.get("/status", headers={"Authorization": f"Bearer {ADMIN}"}).json()
    [job] = status["monitors"]
    assert job["job_running"] is True and job["job_started_at"] == "2026-01-01T00:00:00Z"
    app.ping("job", "0")
    assert _monitor(app, "job").job_started_at is None


def test_bye_retires_a_plain_monitor_and_silence_is_then_fine(app: Served) -> None:
    app.ping("laptop")
    app.ping("laptop", "bye")
    assert _monitor(app, "laptop").status == "retired"
    app.advance(hours=5)
    report = app.watch()
    assert report.down == [] and app.events() == []


def test_any_later_ping_revives_a_retired_monitor(app: Served) -> None:
    app.ping("laptop")
    app.ping("laptop", "bye")
    app.advance(hours=1)
    app.ping("laptop", "start")
    monitor = _monitor(app, "laptop")
    assert monitor.status == "up" and monitor.bye_at is None
    app.advance(minutes=6)
    assert app.watch().went_down == ["laptop"]


def test_bye_for_an_unknown_host_creates_nothing(app: Served) -> None:
    assert app.ping("never-seen", "bye").status_code == 200
    assert app.store.get_monitor("never-seen") is None


def test_silence_is_counted_from_when_the_server_started_listening(app: Served) -> None:
    """After a restart, pings that could not arrive are not held against anybody."""
    app.ping("box")
    app.advance(hours=2)  # the server was down all this time
    listening_since = app.clock.now()
    app.advance(minutes=4)
    assert app.watch(listening_since=listening_since).down == []
    app.advance(minutes=1)
    assert app.watch(listening_since=listening_since).went_down == ["box"]


def test_a_storm_is_folded_into_one_summary(app: Served) -> None:
    hosts = [f"node-{i:02d}" for i in range(STORM_LIMIT + 10)]
    for host in hosts:
        app.ping(host)
    app.notifier.alerts.clear()  # the announcements of the new monitors
    app.advance(minutes=6)
    report = app.watch()
    assert sorted(report.went_down) == hosts
    assert len(app.notifier.alerts) == STORM_LIMIT
    summary = app.notifier.alerts[-1]
    assert summary.event == "heartbeat_summary" and "11 more" in summary.title


def test_monitors_keep_their_timeline(app: Served) -> None:
    app.ping("box")
    created = app.clock.now()
    app.advance(seconds=30)
    app.ping("box")
    monitor = _monitor(app, "box")
    assert monitor.created_at == created
    assert monitor.last_ping_at == created + timedelta(seconds=30)
