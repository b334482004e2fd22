"""A monitor's buttons on the status page: pause, resume, mute for a day, unmute — each a
CSRF-checked POST doing what `reaper monitor pause|resume|mute|unmute` does, recorded as an
action naming the page; and the row saying what is in force (paused, muted until, down after)."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

from reaper.core.monitors import muted
from tests.web_support import csrf_of, fleet, page_of


def _row(page: str, host: str) -> str:
    match = re.search(rf'<li class="monitor" id="m-{re.escape(host)}"(.*?)</li>', page, re.S)
    assert match, host
    return match.group(1)


def _buttons(row: str) -> list[str]:
    return re.findall(r'action="(/[a-z]+)"', row)


def test_pause_then_resume_from_the_page(tmp_path: Path) -> None:
    with fleet(tmp_path) as f:
        page = page_of(f)
        assert _buttons(_row(page, "trainer-box")) == ["/pause", "/mute"]
        answer = f.http.post("/pause", data={"host": "trainer-box", "csrf": csrf_of(page)})
        assert answer.status_code == 303 and answer.headers["location"] == "/#m-trainer-box"
        stored = f.app.store.get_monitor("trainer-box")
        assert stored is not None and stored.paused
        row = _row(page_of(f), "trainer-box")
        assert 'data-state="paused"' in row and _buttons(row) == ["/resume"]

        f.app.clock.advance(timedelta(minutes=5))
        answer = f.http.post("/resume", data={"host": "trainer-box", "csrf": csrf_of(page)})
        assert answer.status_code == 303
        stored = f.app.store.get_monitor("trainer-box")
        assert stored is not None and not stored.paused
        assert stored.resumed_at == f.app.clock.now()
        actions = [(a.kind, a.subject, a.by, a.via, a.done) for a in f.app.store.action_log()]
        assert actions == [
            ("pause", "trainer-box", "status page", "status page", True),
            ("resume", "trainer-box", "status page", "status page", True),
        ]


def test_mute_for_a_day_then_unmute_from_the_page(tmp_path: Path) -> None:
    with fleet(tmp_path) as f:
        page = page_of(f)
        host = next(h for h in re.findall(r'id="m-([^"]+)"', page) if h.startswith("runpod-"))
        form = {"host": host, "for": "1d", "csrf": csrf_of(page)}
        assert f.http.post("/mute", data=form).status_code == 303
        stored = f.app.store.get_monitor(host)
        now = f.app.clock.now()
        assert stored is not None and stored.muted_until == now + timedelta(days=1)
        assert muted(stored, now)
        row = _row(page_of(f), host)
        assert "muted until" in row and _buttons(row) == ["/pause", "/unmute"]

        answer = f.http.post("/unmute", data={"host": host, "csrf": csrf_of(page)})
        assert answer.status_code == 303
        stored = f.app.store.get_monitor(host)
        assert stored is not None and stored.muted_until is None
        [mute, unmute] = f.app.store.action_log()
        assert (mute.kind, mute.done, unmute.kind, unmute.done) == ("mute", True, "unmute", True)
        assert "muted until" in mute.result and unmute.result == "unmuted"


def test_monitor_buttons_need_the_session_and_its_csrf_token(tmp_path: Path) -> None:
    with fleet(tmp_path) as f:
        csrf = csrf_of(page_of(f))
        for path in ("/pause", "/resume", "/mute", "/unmute"):
            refused = f.http.post(path, data={"host": "trainer-box", "for": "1d"})
            assert refused.status_code == 403 and "CSRF" in refused.text, path
        f.http.cookies.clear()
        answer = f.http.post("/pause", data={"host": "trainer-box", "csrf": csrf})
        assert answer.status_code == 403 and 'action="/login"' in answer.text
        stored = f.app.store.get_monitor("trainer-box")
        assert stored is not None and not stored.paused and stored.muted_until is None
        assert f.app.store.action_log() == []


def test_bad_monitor_forms_are_one_line_4xx_and_change_nothing(tmp_path: Path) -> None:
    with fleet(tmp_path) as f:
        csrf = csrf_of(page_of(f))
        for path, form, status in (
            ("/pause", {"host": "no-such-host", "csrf": csrf}, 404),
            ("/pause", {"host": "../x", "csrf": csrf}, 400),
            ("/pause", {"csrf": csrf}, 400),
            ("/mute", {"host": "trainer-box", "for": "99y", "csrf": csrf}, 400),
            ("/mute", {"host": "trainer-box", "csrf": csrf}, 400),
            ("/unmute", {"host": "x" * 101, "csrf": csrf}, 400),
        ):
            answer = f.http.post(path, data=form)
            assert answer.status_code == status, (path, form)
            assert answer.text.count("\n") == 1, (path, form)
        stored = f.app.store.get_monitor("trainer-box")
        assert stored is not None and not stored.paused and stored.muted_until is None
        assert f.app.store.action_log() == []


def test_a_monitors_own_timeout_is_what_the_page_goes_by(tmp_path: Path) -> None:
    """A monitor set to 2h is not late after the default hour, and the row says 2h."""
    with fleet(tmp_path) as f:
        page = page_of(f)
        host = next(h for h in re.findall(r'id="m-([^"]+)"', page) if h.startswith("runpod-"))
        stored = f.app.store.get_monitor(host)
        assert stored is not None
        f.app.store.put_monitor(stored.model_copy(update={"timeout": timedelta(hours=2)}))
        f.app.clock.advance(timedelta(hours=1, minutes=30))
        row = _row(page_of(f), host)
        assert 'data-state="up"' in row and "down after 2h of silence" in row
        f.app.clock.advance(timedelta(hours=1))
        assert 'data-state="late"' in _row(page_of(f), host)
