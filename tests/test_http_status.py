"""`GET /status`: the admin key as a Bearer token; wrong → 401, unset → 404 like any unknown
route; the answer is `reaper status --json`'s object plus the status page's data by name."""

from __future__ import annotations

from pathlib import Path

from reaper.core.models import ReapRun
from tests.heartbeat_support import ADMIN, KEY, make_settings, served


def test_the_admin_key_reads_monitors_and_the_last_reap(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        app.ping("trainer", "start")
        now = app.clock.now()
        app.store.record_reap(
            ReapRun(
                at=now, finished_at=now, dry_run=False, mode="enforce",
                instances=3, terminated=1, warned=0, errors=0, exit_code=0,
            )
        )  # fmt: skip
        response = app.http.get("/status", headers={"Authorization": f"Bearer {ADMIN}"})
    assert response.status_code == 200
    data = response.json()
    assert {"at", "counts", "monitors", "reaping", "last_reap", "fleet", "actions"} <= set(data)
    # The status page's data by name (docs/http-api.md: GET /status).
    assert {"running", "stopped", "balances", "terminations", "snapshots", "listed_at"} <= set(data)
    [monitor] = data["monitors"]
    assert monitor["host"] == "trainer" and monitor["job_running"] is True
    assert data["counts"] == {"new": 1, "up": 0, "down": 0, "retired": 0}
    assert data["last_reap"]["terminated"] == 1


def test_a_wrong_or_missing_admin_key_is_401(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        for headers in (
            {},
            {"Authorization": "Bearer wrong"},
            {"Authorization": f"Basic {ADMIN}"},
            {"Authorization": ADMIN},
            {"Authorization": f"Bearer {KEY}"},  # the ping key is not the admin key
        ):
            response = app.http.get("/status", headers=headers)
            assert response.status_code == 401
            assert response.headers["www-authenticate"] == "Bearer"
            assert "monitors" not in response.text


def test_unset_admin_key_makes_status_an_unknown_route(tmp_path: Path) -> None:
    with served(make_settings(tmp_path, admin_key=None)) as app:
        status = app.http.get("/status", headers={"Authorization": "Bearer anything"})
        unknown = app.http.get("/nothing-here")
    assert status.status_code == 404
    assert status.content == unknown.content


def test_status_takes_only_get_and_head(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        auth = {"Authorization": f"Bearer {ADMIN}"}
        assert app.http.post("/status", headers=auth).status_code == 405
        assert app.http.head("/status", headers=auth).status_code == 200
