"""Every change a person makes to a monitor — from the command line or the admin API — is an
action record saying who asked, through what, when and what happened (`reaper audit`), as
keeps and phone presses are; a change that did not happen says so, and nothing else is
recorded."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from reaper.core.models import ActionRecord, Monitor
from tests.heartbeat_support import ADMIN, make_settings, served
from tests.reap_support import World, cli, world

AUTH = {"Authorization": f"Bearer {ADMIN}"}


@pytest.fixture
def w(tmp_path: Path) -> Iterator[World]:
    with world(tmp_path, start=datetime.now(UTC)) as w:
        yield w


def _actions(w: World) -> list[ActionRecord]:
    store = w.store(read_only=True)
    try:
        return store.action_log()
    finally:
        store.close()


def test_each_command_line_change_is_recorded_with_its_user(w: World) -> None:
    store = w.store()
    now = datetime.now(UTC)
    store.create_monitor(Monitor(host="trainer", status="up", created_at=now), 10)
    store.close()
    for args in (
        ("set", "trainer", "--timeout", "2h"),
        ("pause", "trainer"),
        ("resume", "trainer"),
        ("mute", "trainer", "--for", "1d"),
        ("unmute", "trainer"),
        ("delete", "trainer"),
    ):
        done = cli(w, "monitor", *args)
        assert done.returncode == 0, (args, done.stderr)
    actions = _actions(w)
    assert [a.kind for a in actions] == ["set", "pause", "resume", "mute", "unmute", "delete"]
    assert {a.via for a in actions} == {"command line"}
    assert all(a.by.endswith("(command line)") or a.by == "command line" for a in actions)
    assert all(a.subject == "trainer" and a.targets == ("trainer",) and a.done for a in actions)
    assert actions[0].result == "timeout 2h"
    assert actions[3].result.startswith("muted until ")
    # The audit shows them among the actions by people.
    audit = cli(w, "audit", "--json")
    assert audit.returncode == 0, audit.stderr
    kinds = [a["kind"] for a in json.loads(audit.stdout)["actions"]]
    assert kinds == ["set", "pause", "resume", "mute", "unmute", "delete"]


def test_a_command_on_a_missing_monitor_records_nothing(w: World) -> None:
    for args in (("pause", "ghost"), ("mute", "ghost", "--for", "1d"), ("delete", "ghost")):
        assert cli(w, "monitor", *args).returncode == 2, args
    cli(w, "monitor", "set", "fresh", "--grace", "5m")
    [created] = _actions(w)
    assert (created.kind, created.subject) == ("set", "fresh")
    assert created.result == "created with grace 5m"


def test_admin_api_changes_are_recorded_as_the_admin_key(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    with served(settings) as app:
        app.ping("trainer")
        body = json.dumps({"paused": True}).encode()
        assert app.http.put("/monitors/trainer", content=body, headers=AUTH).status_code == 200
        bad = json.dumps({"timeout": "never"}).encode()
        assert app.http.put("/monitors/trainer", content=bad, headers=AUTH).status_code == 400
        assert app.http.delete("/monitors/trainer", headers=AUTH).status_code == 200
        assert app.http.delete("/monitors/trainer", headers=AUTH).status_code == 404
        actions = app.store.action_log()
    assert [(a.kind, a.by, a.via, a.done) for a in actions] == [
        ("pause", "admin key", "admin API", True),
        ("delete", "admin key", "admin API", True),
    ]
