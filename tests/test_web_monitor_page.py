"""A monitor's own page, linked from the status page: its ping log (newest first, bodies as
text), the form that sets its own timeout and grace (as `reaper monitor set`), delete with a
confirmation (as `reaper monitor delete`), its buttons coming back to it — every change
CSRF-checked and an audit record naming the page; bad input one line or the page with one
line, nothing applied."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

from tests.web_support import Fleet, csrf_of, fleet, page_of

HOST = "trainer-box"


def _monitor_page(f: Fleet, host: str = HOST) -> str:
    page_of(f)  # signs in
    response = f.http.get(f"/monitor/{host}")
    assert response.status_code == 200, response.text
    return response.text


def test_the_status_page_links_each_monitor_to_its_page(tmp_path: Path) -> None:
    with fleet(tmp_path) as f:
        page = page_of(f)
    assert f'<a href="/monitor/{HOST}">{HOST}</a>' in page


def test_the_page_shows_the_ping_log_newest_first_as_text(tmp_path: Path) -> None:
    with fleet(tmp_path) as f:
        f.app.ping(HOST, "start", method="POST", body=b"epoch 0 <b>bold</b>")
        f.app.ping(HOST, "3")
        page = _monitor_page(f)
    log = re.search(r'<section class="card" id="log">(.*?)</section>', page, re.S)
    assert log is not None
    rows = re.findall(r"<tr><td>(\d+)</td>", log.group(1))
    assert rows == ["2", "1"]
    assert "exit 3" in log.group(1) and "start" in log.group(1)
    assert "epoch 0 &lt;b&gt;bold&lt;/b&gt;" in log.group(1) and "<b>bold" not in page
    assert "127.0.0.1" in log.group(1)


def test_timeout_and_grace_from_the_page(tmp_path: Path) -> None:
    with fleet(tmp_path) as f:
        csrf = csrf_of(_monitor_page(f))
        form = {"timeout": "2h", "grace": "10m", "csrf": csrf}
        answer = f.http.post(f"/monitor/{HOST}/settings", data=form)
        assert answer.status_code == 303 and answer.headers["location"] == f"/monitor/{HOST}"
        stored = f.app.store.get_monitor(HOST)
        assert stored is not None
        assert (stored.timeout, stored.grace) == (timedelta(hours=2), timedelta(minutes=10))
        assert "now 2h + 10m" in _monitor_page(f)
        # Empty fields go back to the defaults.
        cleared = {"timeout": "", "grace": "", "csrf": csrf}
        assert f.http.post(f"/monitor/{HOST}/settings", data=cleared).status_code == 303
        stored = f.app.store.get_monitor(HOST)
        assert stored is not None and (stored.timeout, stored.grace) == (None, None)
        results = [(a.kind, a.by, a.result) for a in f.app.store.action_log()]
        assert results == [
            ("set", "status page", "timeout 2h, grace 10m"),
            ("set", "status page", "timeout default, grace default"),
        ]


def test_a_bad_duration_is_the_page_with_one_line_and_changes_nothing(tmp_path: Path) -> None:
    with fleet(tmp_path) as f:
        csrf = csrf_of(_monitor_page(f))
        for form in (
            {"timeout": "99y", "grace": "", "csrf": csrf},
            {"timeout": "30s", "grace": "", "csrf": csrf},
            {"timeout": "1h", "grace": "400d", "csrf": csrf},
        ):
            answer = f.http.post(f"/monitor/{HOST}/settings", data=form)
            assert answer.status_code == 400, form
            [problem] = re.findall(r'<p class="error">([^<]+)</p>', answer.text)
            assert problem.startswith(("timeout:", "grace:")), problem
        stored = f.app.store.get_monitor(HOST)
        assert stored is not None and (stored.timeout, stored.grace) == (None, None)
        assert f.app.store.action_log() == []


def test_delete_needs_its_confirmation(tmp_path: Path) -> None:
    with fleet(tmp_path) as f:
        f.app.ping(HOST, "log", method="POST", body=b"note")
        csrf = csrf_of(_monitor_page(f))
        refused = f.http.post(f"/monitor/{HOST}/delete", data={"csrf": csrf})
        assert refused.status_code == 400 and refused.text.count("\n") == 1
        assert f.app.store.get_monitor(HOST) is not None
        answer = f.http.post(f"/monitor/{HOST}/delete", data={"csrf": csrf, "confirm": "yes"})
        assert answer.status_code == 303 and answer.headers["location"] == "/#monitors"
        assert f.app.store.get_monitor(HOST) is None and f.app.store.monitor_log(HOST) == []
        assert HOST not in page_of(f)
        [deleted] = f.app.store.action_log()
        assert (deleted.kind, deleted.subject, deleted.via) == ("delete", HOST, "status page")
        again = f.http.post(f"/monitor/{HOST}/delete", data={"csrf": csrf, "confirm": "yes"})
        assert again.status_code == 404
        assert f.http.get(f"/monitor/{HOST}").status_code == 404


def test_the_buttons_on_the_monitor_page_come_back_to_it(tmp_path: Path) -> None:
    with fleet(tmp_path) as f:
        page = _monitor_page(f)
        assert 'name="back" value="monitor"' in page
        form = {"host": HOST, "back": "monitor", "csrf": csrf_of(page)}
        answer = f.http.post("/pause", data=form)
        assert answer.status_code == 303 and answer.headers["location"] == f"/monitor/{HOST}"
        assert 'data-state="paused"' in _monitor_page(f)
        # Any other `back` is the status page: never a redirect anywhere else.
        evil = {"host": HOST, "back": "https://evil.example/", "csrf": csrf_of(page)}
        assert f.http.post("/resume", data=evil).headers["location"] == f"/#m-{HOST}"


def test_without_a_session_or_its_token_nothing_shows_or_changes(tmp_path: Path) -> None:
    with fleet(tmp_path) as f:
        csrf = csrf_of(_monitor_page(f))
        no_token = f.http.post(f"/monitor/{HOST}/settings", data={"timeout": "2h"})
        assert no_token.status_code == 403 and "CSRF" in no_token.text
        f.http.cookies.clear()
        shown = f.http.get(f"/monitor/{HOST}")
        assert shown.status_code == 200 and 'action="/login"' in shown.text
        assert "trainer-box" not in shown.text
        for path in (f"/monitor/{HOST}/settings", f"/monitor/{HOST}/delete"):
            answer = f.http.post(path, data={"csrf": csrf, "timeout": "2h", "confirm": "yes"})
            assert answer.status_code == 403 and 'action="/login"' in answer.text
        stored = f.app.store.get_monitor(HOST)
        assert stored is not None and stored.timeout is None
        page_of(f)
        assert f.http.get("/monitor/a%20b").status_code == 400
