"""HEARTBEAT_AUTO_CREATE: on (the default), the first ping of a host creates its monitor and
the new monitor announces itself once, through the normal alert path, so that a typo'd host is
seen; off, a ping to an unknown host answers 404 with a one-line reason and creates nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from reaper.app.settings import load_settings
from reaper.core.models import Monitor
from reaper.settings.parse import Account, ConfigError
from tests.heartbeat_support import KEY, make_settings, served


def test_a_new_host_announces_itself_once(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        app.ping("trainnig-job")
        app.ping("trainnig-job")
        app.ping("trainnig-job", "start")
        assert app.events(announced=True) == ["monitor_created"]
        [alert] = app.notifier.alerts
        assert alert.title == "New monitor trainnig-job created by a first ping"
        assert "reaper monitor delete trainnig-job" in alert.body
        assert alert.dedup_key == "monitor_created:trainnig-job"


def test_a_first_ping_that_fails_is_one_alert_saying_both(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        app.ping("job", "1")
        [alert] = app.notifier.alerts
    assert alert.event == "monitor_failed"
    assert "exit 1" in alert.title and "New monitor job created by a first ping" in alert.body


def test_a_deleted_host_that_pings_again_is_announced_again(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        app.ping("box")
        app.store.delete_monitor("box")
        app.ping("box")
    assert app.events(announced=True) == ["monitor_created", "monitor_created"]


def test_a_provider_host_is_cross_checked_not_announced(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, runpod_accounts=(Account("runpod", "main", "rp-key"),))
    with served(settings) as app:
        app.ping("runpod-abc123")
        assert app.store.get_monitor("runpod-abc123") is not None
    assert app.events(announced=True) == []


def test_auto_create_off_answers_404_with_a_reason(tmp_path: Path) -> None:
    with served(make_settings(tmp_path, auto_create=False)) as app:
        for suffix in (None, "start", "fail", "0", "bye"):
            response = app.ping("trainnig-job", suffix)
            expected = 200 if suffix == "bye" else 404  # bye of nothing retires nothing
            assert response.status_code == expected, suffix
        response = app.ping("trainnig-job")
        assert response.text.count("\n") == 1
        assert "HEARTBEAT_AUTO_CREATE is off" in response.text
        assert "reaper monitor set trainnig-job" in response.text
        assert app.store.list_monitors() == []
        assert app.events(announced=True) == []
        # A wrong key is still byte for byte the unknown route, as ever.
        wrong = app.ping("trainnig-job", key="not-" + KEY)
        unknown = app.http.get("/nothing-here")
        assert wrong.content == unknown.content != response.content


def test_auto_create_off_still_serves_known_monitors(tmp_path: Path) -> None:
    with served(make_settings(tmp_path, auto_create=False)) as app:
        app.store.create_monitor(Monitor(host="known", created_at=app.clock.now()), 10)
        assert app.ping("known").status_code == 200
        assert app.ping("known", "fail").status_code == 200
    assert app.events(announced=True) == ["monitor_failed"]


def test_the_variable_parses_and_a_bad_value_is_one_line() -> None:
    env = {"HEARTBEAT_AUTO_CREATE": "false"}
    assert load_settings(env, dotenv=None).auto_create is False
    assert load_settings({}, dotenv=None).auto_create is True
    with pytest.raises(ConfigError) as refused:
        load_settings({"HEARTBEAT_AUTO_CREATE": "perhaps"}, dotenv=None)
    assert str(refused.value) == "HEARTBEAT_AUTO_CREATE: expected true or false, got 'perhaps'"
