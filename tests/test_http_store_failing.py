"""A store that cannot be written is said, over real HTTP: a ping that cannot be stored answers
503 with `Retry-After` (never a silent 500; a bad request still a 4xx), the cause is logged at
ERROR once per episode whatever LOG_LEVEL and alerted once, `/healthz` answers 503 with the
cause while the episode lasts, and the first ping stored again closes it with one line.

The full disk is SQLite's own: `max_page_count` on the store's connection makes every write
that needs a new page fail with SQLITE_FULL ("database or disk is full"), exactly as a full
disk does; `query_only` makes every write fail with SQLITE_READONLY. Raising the limit is the
space coming back."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from reaper import log
from reaper.store.sqlite import SQLiteStore
from tests.heartbeat_support import KEY, Served, make_settings, served


def pragma(store: SQLiteStore, statement: str) -> None:
    """A pragma on the store's own connection (SQLite applies these per connection)."""
    with store._lock:
        store._connection().execute(statement)


def fill(app: Served) -> httpx.Response:
    """Pings to new hosts until one cannot be stored; its answer."""
    (pages,) = app.store._connection().execute("PRAGMA page_count").fetchone()
    pragma(app.store, f"PRAGMA max_page_count = {pages}")
    for number in range(500):
        answer = app.ping(f"host-{number}")
        if answer.status_code != 200:
            return answer
    raise AssertionError("the store never filled up")


@pytest.fixture
def lines() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    # Only errors are written: the episode must be heard even so.
    log.configure(json_lines=True, stream=stream, level="error")
    try:
        yield stream
    finally:
        log.configure()


def events(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines() if line.strip()]


def test_a_full_disk_is_a_503_logged_and_alerted_once_and_recovers(
    tmp_path: Path, lines: io.StringIO
) -> None:
    with served(make_settings(tmp_path), dedicated=True) as app:
        assert app.ping("first").status_code == 200
        refused = fill(app)
        assert refused.status_code == 503
        assert refused.headers["retry-after"] == "30"
        assert refused.text == "the state store is failing (disk full); retry later\n"
        again = [app.ping("first").status_code, app.ping("newcomer").status_code]
        health = app.http.get("/healthz")
        bad = app.ping("not a host!")
        stranger = app.ping("first", key="wrong-key-wrong-key")

        pragma(app.store, "PRAGMA max_page_count = 1073741823")  # the space comes back
        back = app.ping("newcomer")
        healthy = app.http.get("/healthz")

    assert 503 in again
    assert health.status_code == 503
    assert health.json() == {"ok": False, "store": "disk full"}
    assert bad.status_code == 400
    assert stranger.status_code == 404
    assert back.status_code == 200
    assert healthy.status_code == 200 and healthy.json() == {"ok": True}

    said = [e for e in events(lines) if str(e["event"]).startswith("store_")]
    assert [(e["event"], e["level"], e["cause"]) for e in said] == [
        ("store_failing", "error", "disk full"),
        ("store_recovered", "error", "disk full"),
    ]
    assert "database or disk is full" in str(said[0]["error"])
    assert KEY not in lines.getvalue()
    alerts = [a for a in app.notifier.alerts if a.event == "store_failing"]
    assert len(alerts) == 1
    assert alerts[0].level == "critical"
    assert "disk full" in alerts[0].title


def test_a_read_only_database_is_said_as_such(tmp_path: Path, lines: io.StringIO) -> None:
    with served(make_settings(tmp_path), dedicated=True) as app:
        assert app.ping("box").status_code == 200
        pragma(app.store, "PRAGMA query_only = 1")
        refused = app.ping("box")
        head = app.ping("box", method="HEAD")
        health = app.http.get("/healthz").json()
        pragma(app.store, "PRAGMA query_only = 0")
        assert app.ping("box").status_code == 200
    assert refused.status_code == 503
    assert "read-only" in refused.text
    assert head.status_code == 503 and head.content == b""
    assert health == {"ok": False, "store": "read-only"}
    failing = [e for e in events(lines) if e["event"] == "store_failing"]
    assert [e["cause"] for e in failing] == ["read-only"]


def test_healthz_makes_no_store_call(tmp_path: Path) -> None:
    """Closed, the store raises on any call: /healthz still answers from what it last saw."""
    with served(make_settings(tmp_path), dedicated=True) as app:
        app.store.close()
        assert app.http.get("/healthz").json() == {"ok": True}
