"""The two-way heartbeat, server side: a ping that lists `application/json` in `Accept` is
answered `{"ok": true, "keep_until", "idle_after"}` with the guard's own Date — the keep of its
instance (`reaper keep <provider>:<id>`, the page, a phone button) or of its monitor host
(`reaper keep host:<host>`), and the idle limit `reaper idle` set; every other ping stays `OK`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from email.utils import parsedate_to_datetime
from pathlib import Path

import pytest

from reaper.core.monitors import KEEP_FOREVER, SettingsChange
from reaper.core.units import iso
from reaper.passes import keeping
from tests.heartbeat_support import Served, make_settings, served

JSON = {"accept": "application/json"}


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Served]:
    with served(make_settings(tmp_path)) as s:
        yield s


def _answer(app: Served, host: str, method: str = "POST", **headers: str) -> dict[str, object]:
    response = app.ping(host, method=method, body=b"idle 3/7", headers={**JSON, **headers})
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.headers.get_list("date") == [response.headers["date"]]
    assert parsedate_to_datetime(response.headers["date"]) == app.clock.now().replace(microsecond=0)
    data: dict[str, object] = json.loads(response.text)
    return data


def test_plain_pings_still_answer_ok(app: Served) -> None:
    for accept in (None, "*/*", "application/*", "text/plain, */*;q=0.1"):
        headers = {"accept": accept} if accept else None
        response = app.ping("trainer", headers=headers)
        assert (response.status_code, response.text) == (200, "OK\n")


def test_an_unkept_host_reads_nulls(app: Served) -> None:
    assert _answer(app, "trainer") == {"ok": True, "keep_until": None, "idle_after": None}
    assert _answer(app, "trainer", method="GET")["ok"] is True
    head = app.ping("trainer", method="HEAD", headers=JSON)
    assert (head.status_code, head.content) == (200, b"")
    assert head.headers["content-type"] == "application/json"


def test_an_instance_keep_reaches_its_provider_host(app: Served) -> None:
    host, now = "runpod-abc123", app.clock.now()
    app.ping(host)
    keeping.keep(
        app.store, "runpod:abc123", now=now, until=now + timedelta(hours=2), by="t", via="t"
    )
    assert _answer(app, host, accept="text/html, application/json;q=0.9")["keep_until"] == iso(
        now + timedelta(hours=2)
    )
    keeping.keep(app.store, "runpod:abc123", now=now, until=None, by="t", via="t")
    assert _answer(app, host)["keep_until"] == iso(KEEP_FOREVER)
    keeping.unkeep(app.store, "runpod:abc123", now=now, by="t", via="t")
    assert _answer(app, host)["keep_until"] is None


def test_a_host_keep_and_idle_limit_are_read_back_until_the_keep_ends(app: Served) -> None:
    now = app.clock.now()
    app.ping("my-box")
    change = SettingsChange(
        at=now,
        given=frozenset({"keep_until", "idle_after"}),
        keep_until=now + timedelta(hours=1),
        idle_after="90m",
    )
    app.store.set_monitor_settings("my-box", change)
    assert _answer(app, "my-box") == {
        "ok": True,
        "keep_until": iso(now + timedelta(hours=1)),
        "idle_after": "90m",
    }
    app.advance(hours=1, seconds=1)
    assert _answer(app, "my-box") == {"ok": True, "keep_until": None, "idle_after": "90m"}


def test_a_refused_ping_is_not_answered_as_json(tmp_path: Path) -> None:
    with served(make_settings(tmp_path, auto_create=False)) as app:
        response = app.ping("nobody", headers=JSON)
        assert response.status_code == 404
        assert not response.text.startswith("{")
