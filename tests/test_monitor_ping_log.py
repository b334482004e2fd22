"""The ping log: the last 100 events per monitor — kind, exit status, time, the first 1 KB of
the body, the client's address — and `/ping/<key>/<host>/log`, which adds one without
changing the monitor's state."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from tests.heartbeat_support import ADMIN, make_settings, served

AUTH = {"Authorization": f"Bearer {ADMIN}"}


def test_every_ping_is_an_event(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        app.ping("job", "start", method="POST", body=b"run 7")
        app.advance(seconds=30)
        app.ping("job", "1", method="POST", body="Traceback ✗\n".encode() * 400)
        app.ping("job", "bye")
        events = app.store.monitor_log("job")
    assert [(e.seq, e.kind, e.exit_status) for e in events] == [
        (1, "start", None),
        (2, "exit", 1),
        (3, "bye", None),
    ]
    assert events[0].body == "run 7" and events[0].client == "127.0.0.1"
    assert events[0].note == "created the monitor"
    assert events[1].at == events[0].at + timedelta(seconds=30)
    body = events[1].body
    assert len(body.encode()) <= 1024 and body.startswith("Traceback ✗")
    assert "\ufffd" not in body, "a character cut in half at 1 KB is dropped, not mangled"


def test_log_adds_a_message_and_changes_no_state(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        app.ping("job")
        app.advance(minutes=6)
        app.watch()
        before = app.store.get_monitor("job")
        assert before is not None and before.status == "down"
        response = app.ping("job", "log", method="POST", body=b"checkpoint saved")
        assert response.status_code == 200
        after = app.store.get_monitor("job")
        assert after is not None
        assert after.model_copy(update={"events": before.events}) == before
        assert after.events == before.events + 1
        [*_, event] = app.store.monitor_log("job")
        assert (event.kind, event.body) == ("log", "checkpoint saved")
        assert app.events() == ["monitor_down"], "a log line is no sign of life"
        # GET and ?msg= work too (curl without a body).
        assert app.ping("job", "log?msg=epoch%205").status_code == 200
        assert app.store.monitor_log("job")[-1].body == "epoch 5"


def test_log_to_an_unknown_host_is_404_and_creates_nothing(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        response = app.ping("nobody", "log", method="POST", body=b"hello")
        assert response.status_code == 404
        assert response.text == "no monitor nobody: /log never creates one (ping it first)\n"
        assert app.store.list_monitors() == []


def test_a_2_mb_log_body_is_413_and_changes_nothing(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        app.ping("job")
        before = app.store.monitor_log("job")
        response = app.ping("job", "log", method="POST", body=b"x" * (2 * 1024 * 1024))
        assert response.status_code == 413
        assert response.text.count("\n") == 1
        assert app.store.monitor_log("job") == before


def test_the_log_keeps_the_last_100_events(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        app.ping("busy")
        for number in range(1, 130):
            app.ping("busy", "log", method="POST", body=f"line {number}".encode())
        data = app.http.get("/monitors/busy", headers=AUTH).json()
    assert len(data["events"]) == 100
    assert [e["seq"] for e in data["events"]] == list(range(31, 131))
    assert data["events"][-1]["body"] == "line 129"
    assert data["monitor"]["events"] == 130
