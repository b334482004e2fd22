"""The push conventions users bring from other monitors: Uptime Kuma's push URL
(`?status=up|down&msg=...&ping=`) on `/ping/<key>/<host>`: `down` is a failure with `msg` as
its message, `up` a success, anything else one line of 400 that changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.heartbeat_support import make_settings, served


def test_status_down_is_a_failure_with_its_message(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        app.ping("kuma")
        response = app.http.get(
            f"/ping/{app.settings.ping_key}/kuma?status=down&msg=disk%20full&ping="
        )
        assert response.status_code == 200
        monitor = app.store.get_monitor("kuma")
        assert monitor is not None
        assert (monitor.status, monitor.last_message, monitor.last_ping_kind) == (
            "down",
            "disk full",
            "fail",
        )
        assert app.events() == ["monitor_failed"]
        assert "disk full" in app.notifier.alerts[-1].body
        assert app.store.monitor_log("kuma")[-1].kind == "fail"


def test_status_up_is_a_success_and_revives(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        key = app.settings.ping_key
        app.http.get(f"/ping/{key}/kuma?status=down&msg=bad")
        app.advance(minutes=2)
        assert app.http.get(f"/ping/{key}/kuma?status=up&msg=OK&ping=12").status_code == 200
        monitor = app.store.get_monitor("kuma")
    assert monitor is not None and monitor.status == "up" and monitor.last_message == "OK"
    assert app.events() == ["monitor_failed", "monitor_recovered"]


def test_msg_is_the_message_of_a_get(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        app.ping("box", "start?msg=run%2042")
        monitor = app.store.get_monitor("box")
    assert monitor is not None and monitor.last_message == "run 42"


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        ("status=sideways", 'status= expected "up" or "down"'),
        ("status=up&status=down", "status= given more than once"),
        ("msg=a&msg=b", "msg= given more than once"),
    ],
)
def test_bad_status_is_one_line_of_400(tmp_path: Path, query: str, reason: str) -> None:
    with served(make_settings(tmp_path)) as app:
        app.ping("box")
        before = app.store.get_monitor("box")
        response = app.http.get(f"/ping/{app.settings.ping_key}/box?{query}")
        after = app.store.get_monitor("box")
    assert response.status_code == 400
    assert response.text == reason + "\n"
    assert after == before


def test_status_goes_with_the_plain_ping_only(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        response = app.ping("box", "fail?status=up")
        assert response.status_code == 400
        assert "not with /fail" in response.text
        assert app.store.get_monitor("box") is None


def test_a_wrong_key_with_a_query_is_still_the_unknown_route(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        wrong = app.http.get("/ping/wrong-key/box?status=sideways")
        unknown = app.http.get("/nothing-here")
    assert wrong.status_code == 404 and wrong.content == unknown.content
