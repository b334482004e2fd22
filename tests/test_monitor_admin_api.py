"""`GET|PUT|DELETE /monitors/<host>`: one monitor for the admin (Bearer REAPER_ADMIN_KEY). A
wrong or missing key is 401, an unset one makes the route unknown (404); bad input is one line
of 4xx and changes nothing."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from reaper.core.units import iso
from tests.heartbeat_support import ADMIN, KEY, Served, make_settings, served

AUTH = {"Authorization": f"Bearer {ADMIN}"}


def put(app: Served, host: str, body: Any, *, raw: bytes | None = None) -> httpx.Response:
    content = raw if raw is not None else json.dumps(body).encode()
    return app.http.put(f"/monitors/{host}", content=content, headers=AUTH)


def test_get_shows_the_monitor_and_its_log(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        app.ping("trainer", "start", method="POST", body=b"epoch 0")
        app.ping("trainer")
        response = app.http.get("/monitors/trainer", headers=AUTH)
    assert response.status_code == 200
    data = response.json()
    assert set(data) == {"monitor", "events"}
    monitor = data["monitor"]
    assert monitor["host"] == "trainer" and monitor["status"] == "up"
    assert (monitor["timeout"], monitor["timeout_default"], monitor["grace"]) == (300, True, 0)
    assert (monitor["paused"], monitor["muted_until"], monitor["events"]) == (False, None, 2)
    assert [(e["seq"], e["kind"], e["body"]) for e in data["events"]] == [
        (1, "start", "epoch 0"),
        (2, "ping", ""),
    ]
    assert data["events"][0]["client"] == "127.0.0.1"


def test_put_sets_the_settings_durations_as_text_or_seconds(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        app.ping("trainer")
        response = put(app, "trainer", {"timeout": "2h", "grace": 600})
        assert response.status_code == 200, response.text
        assert response.json()["created"] is False
        stored = app.store.get_monitor("trainer")
        assert stored is not None
        assert (stored.timeout, stored.grace) == (timedelta(hours=2), timedelta(minutes=10))
        assert stored.status == "new" and stored.events == 1, "the state is left alone"
        # null goes back to the default; a field not sent stays as it is.
        assert put(app, "trainer", {"timeout": None}).status_code == 200
        again = app.store.get_monitor("trainer")
        assert again is not None
        assert (again.timeout, again.grace) == (None, timedelta(minutes=10))
        assert put(app, "trainer", {"grace": "0"}).json()["monitor"]["grace"] == 0


def test_put_of_an_unknown_host_creates_its_monitor(tmp_path: Path) -> None:
    with served(make_settings(tmp_path, auto_create=False)) as app:
        assert app.ping("night-job").status_code == 404
        response = put(app, "night-job", {"timeout": "1d", "grace": "1h"})
        assert response.status_code == 200
        assert response.json()["created"] is True
        assert app.ping("night-job").status_code == 200
        monitor = app.store.get_monitor("night-job")
    assert monitor is not None and monitor.timeout == timedelta(days=1)


def test_put_pauses_and_mutes(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        app.ping("box")
        until = app.clock.now() + timedelta(days=1)
        response = put(app, "box", {"paused": True, "muted_until": iso(until)})
        assert response.status_code == 200
        monitor = response.json()["monitor"]
        assert monitor["paused"] is True and monitor["muted_until"] == iso(until)
        assert put(app, "box", {"paused": False, "muted_until": None}).status_code == 200
        stored = app.store.get_monitor("box")
    assert stored is not None and not stored.paused and stored.muted_until is None


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({"timeout": "2h", "colour": "red"}, "unknown field 'colour'"),
        ({"timeout": "30s"}, "timeout: expected 1m to 365d"),
        ({"timeout": "400d"}, "timeout: expected 1m to 365d"),
        ({"timeout": 0}, "timeout: expected 1m to 365d"),
        ({"grace": -5}, "grace: expected 0 to"),
        ({"grace": "2 hours"}, "grace: expected a duration"),
        ({"timeout": True}, "timeout: expected a duration"),
        ({"timeout": 1.5}, "timeout: expected a duration"),
        ({"paused": "yes"}, "paused: expected true or false"),
        ({"muted_until": "tomorrow"}, "muted_until: expected a time"),
        ({"muted_until": "2020-01-01T00:00:00Z"}, "not in the future"),
        ({"muted_until": "2030-01-01T00:00:00"}, "with its zone"),
        ([1, 2], "expected a JSON object"),
    ],
)
def test_bad_input_is_one_line_of_400_and_changes_nothing(
    tmp_path: Path, body: Any, reason: str
) -> None:
    with served(make_settings(tmp_path)) as app:
        app.ping("box")
        before = app.store.get_monitor("box")
        # A valid field beside the bad one is not applied either.
        response = put(app, "box", body if not isinstance(body, dict) else {"grace": 60, **body})
        after = app.store.get_monitor("box")
    assert response.status_code == 400
    assert reason in response.text
    assert response.text.count("\n") == 1
    assert after == before


def test_a_body_that_is_not_json_or_too_large(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        app.ping("box")
        assert put(app, "box", None, raw=b"{not json").status_code == 400
        assert put(app, "box", None, raw=b"\xff\xfe").status_code == 400
        big = put(app, "box", None, raw=b'{"timeout": "' + b"1" * 8000 + b'm"}')
        assert big.status_code == 413
        assert app.store.get_monitor("box") is not None


def test_an_invalid_host_is_400(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        for method in ("GET", "PUT", "DELETE"):
            response = app.http.request(method, "/monitors/bad%20host", headers=AUTH, content=b"{}")
            assert response.status_code == 400, method
            assert "invalid host" in response.text
        assert app.store.list_monitors() == []


def test_delete_removes_the_monitor_and_its_log(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        app.ping("typo-job")
        app.ping("typo-job", "fail")
        response = app.http.delete("/monitors/typo-job", headers=AUTH)
        assert response.status_code == 200 and response.json() == {"deleted": "typo-job"}
        assert app.store.get_monitor("typo-job") is None
        assert app.store.monitor_log("typo-job") == []
        assert app.http.delete("/monitors/typo-job", headers=AUTH).status_code == 404
        assert app.http.get("/monitors/typo-job", headers=AUTH).status_code == 404


def test_a_wrong_or_missing_admin_key_is_401_and_touches_nothing(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        app.ping("box")
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Bearer {KEY}"}):
            for method in ("GET", "PUT", "DELETE"):
                response = app.http.request(
                    method, "/monitors/box", headers=headers, content=b'{"paused": true}'
                )
                assert response.status_code == 401, (method, headers)
                assert "box" not in response.text
        monitor = app.store.get_monitor("box")
    assert monitor is not None and not monitor.paused


def test_unset_admin_key_makes_the_route_unknown(tmp_path: Path) -> None:
    with served(make_settings(tmp_path, admin_key=None)) as app:
        app.ping("box")
        answer = app.http.delete("/monitors/box", headers={"Authorization": "Bearer x"})
        unknown = app.http.get("/nothing-here")
        assert app.store.get_monitor("box") is not None
    assert answer.status_code == 404 and answer.content == unknown.content


def test_other_methods_are_405(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        response = app.http.post("/monitors/box", headers=AUTH)
    assert response.status_code == 405
    assert response.headers["allow"] == "GET, PUT, DELETE, HEAD"


def test_past_the_monitor_cap_a_put_is_refused(tmp_path: Path) -> None:
    with served(make_settings(tmp_path, max_monitors=1)) as app:
        app.ping("one")
        response = put(app, "two", {"timeout": "1h"})
    assert response.status_code == 403
    assert "REAPER_MAX_MONITORS" in response.text
