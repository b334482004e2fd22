"""One alert per failure: run.sh reports a failed job through its notify (`POST /alert`, text
`<host>: ...`) and through its monitor (`/<status>`, `/fail`), in either order; the phone hears
it once, from whichever came first. Only a delivered message counts, and only for a moment."""

from __future__ import annotations

from pathlib import Path

from tests.heartbeat_support import KEY, FailingNotifier, Served, make_settings, served

EXITED = "job-7: run.sh: job exited with status 1; results saved; destroying this instance"
DESTROY = "job-7: run.sh: destroy failed: HTTP 500. The instance is still running (and billing)"


def notify(app: Served, text: str) -> dict[str, object]:
    response = app.http.post(f"/alert/{KEY}", json={"text": text})
    assert response.status_code in (200, 502), response.text
    answer: dict[str, object] = response.json()
    return answer


def test_notify_then_failure_ping_is_one_alert(tmp_path: Path) -> None:
    """run.sh's exit path: notify, then /<status>, then /bye."""
    with served(make_settings(tmp_path)) as app:
        app.ping("job-7", "start")
        assert notify(app, EXITED)["delivered"] is True
        app.advance(seconds=1)
        app.ping("job-7", "1", method="POST", body=b"run.sh: job exited with status 1")
        app.ping("job-7", "bye")
        monitor = app.store.get_monitor("job-7")
        assert monitor is not None and monitor.status in ("down", "retired")
        assert app.events() == ["webhook"]
        failed = [e for e in app.store.monitor_log("job-7") if e.kind == "exit"]
        assert failed[0].note == "alert already sent by the instance's notify"


def test_failure_ping_then_notify_is_one_alert(tmp_path: Path) -> None:
    """run.sh's failed destroy: /fail, then the notify."""
    with served(make_settings(tmp_path)) as app:
        app.ping("job-7")
        app.ping("job-7", "fail", method="POST", body=b"run.sh: destroy failed: HTTP 500")
        answer = notify(app, DESTROY)
        assert answer == {"deduplicated": True, "already_alerted": "job-7 failed"}
        assert app.events() == ["monitor_failed"]
        # The mark is taken once: the next notify of the run goes out.
        assert notify(app, "job-7: idle-watch: idle for 20 min")["delivered"] is True
    assert app.events() == ["monitor_failed", "webhook"]


def test_a_ping_in_between_ends_the_pairing(tmp_path: Path) -> None:
    """A notify about a success, a success ping, then a failure: two separate things."""
    with served(make_settings(tmp_path)) as app:
        app.ping("job-7")
        notify(app, "job-7: run.sh: job exited with status 0; results saved; destroying")
        app.ping("job-7", "0")
        app.ping("job-7", "fail", method="POST", body=b"destroy failed")
    assert app.events() == ["webhook", "monitor_failed"]


def test_pairing_lasts_only_a_moment(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        app.ping("job-7")
        notify(app, EXITED)
        app.advance(minutes=3)
        app.ping("job-7", "1")
        app.advance(minutes=3)
        notify(app, DESTROY)
    assert app.events() == ["webhook", "monitor_failed", "webhook"]


def test_a_notify_that_reached_nobody_does_not_silence_the_failure(tmp_path: Path) -> None:
    with served(make_settings(tmp_path), notifier=FailingNotifier()) as app:
        app.ping("job-7")
        assert notify(app, EXITED)["delivered"] is False
        app.ping("job-7", "1")
        monitor = app.store.get_monitor("job-7")
        assert monitor is not None and monitor.notified_at is None
        assert app.store.open_episodes("failure-alerted:") == [], (
            "an undelivered alert pairs nothing"
        )
    assert app.events() == ["webhook", "monitor_failed"]


def test_a_notify_naming_no_monitor_pairs_nothing(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        notify(app, "somebody-else: run.sh: job exited with status 1")
        notify(app, "Just a message: with a colon")
        app.ping("somebody-else", "1")
    assert app.events() == ["webhook", "webhook", "monitor_failed"]


def test_marks_nobody_took_are_dropped_by_the_watch_pass(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        app.ping("job-7", "fail")
        assert len(app.store.open_episodes("failure-alerted:")) == 1
        app.advance(minutes=3)
        app.watch()
        assert app.store.open_episodes("failure-alerted:") == []
        assert notify(app, DESTROY)["delivered"] is True
