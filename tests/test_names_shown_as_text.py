"""Names are shown as text: a pod named with U+202E (RIGHT-TO-LEFT OVERRIDE) would mirror the
rest of a warning's title — "… will be terminated in 1h" shown reversed. Every Unicode control
and format character in a name, a label or a forwarded message is replaced (by U+FFFD) before it
reaches an alert, a page, a table or a log; forwarded messages keep their line feeds and tabs,
and the joiners that emoji and scripts need stay."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from reaper import log
from reaper.interfaces.table import format_table
from reaper.text import REPLACEMENT, shown
from tests.heartbeat_support import KEY
from tests.phone_support import phone
from tests.web_support import fleet, page_of

RLO = "\u202e"  # RIGHT-TO-LEFT OVERRIDE
HIDDEN = [
    RLO,
    "\u202d",  # LEFT-TO-RIGHT OVERRIDE
    "\u2066",  # LEFT-TO-RIGHT ISOLATE
    "\u2069",  # POP DIRECTIONAL ISOLATE
    "\u200b",  # ZERO WIDTH SPACE
    "\u200e",  # LEFT-TO-RIGHT MARK
    "\ufeff",  # ZERO WIDTH NO-BREAK SPACE
    "\x00",
    "\x1b",  # ESC: a terminal's escape sequences
    "\x7f",
    "\u2028",  # LINE SEPARATOR
    "\ud800",  # a lone surrogate
]
EVIL = f"trainer-{RLO}1hni detanimret eb lliw"


@pytest.mark.parametrize("character", HIDDEN)
def test_every_control_and_format_character_is_replaced(character: str) -> None:
    assert shown(f"a{character}b") == f"a{REPLACEMENT}b"
    assert shown(f"a{character}b", lines=True) == f"a{REPLACEMENT}b"


def test_what_people_need_stays() -> None:
    family = "👩\u200d👩\u200d👧"  # joined by ZWJ
    persian = "می\u200cخواهم"  # ZWNJ
    for text in (family, persian, "Ünïcødé — ok", "名前", "a b\u00a0c"):
        assert shown(text) == text
    assert shown("line 1\n\tline 2", lines=True) == "line 1\n\tline 2"
    assert shown("line 1\n\tline 2") == f"line 1{REPLACEMENT}{REPLACEMENT}line 2"
    assert shown("a\r\nb\rc", lines=True) == "a\nb\nc"
    # A surrogate pair that arrived as two code points is joined, not replaced.
    assert shown("\ud83d\ude00") == "😀"


def test_a_pods_name_reaches_the_warning_the_table_and_the_log_as_text(tmp_path: Path) -> None:
    stream = io.StringIO()
    log.configure(stream=stream, json_lines=True)
    with phone(tmp_path) as p:
        assert p.telegram is not None
        pod = p.w.runpod.add_pod(status="EXITED", name=EVIL)
        report = p.warn()

        message = p.warning_message()
        assert RLO not in message.text
        assert message.text.startswith(f"⚠️ trainer-{REPLACEMENT}1hni")
        [instance] = [i for i in report.instances if i.id == pod]
        assert instance.name == f"trainer-{REPLACEMENT}1hni detanimret eb lliw"
    logged = stream.getvalue()
    assert "trainer-" in logged
    assert RLO not in logged and "\\u202e" not in logged


def test_a_forwarded_message_keeps_its_lines_but_not_its_overrides(tmp_path: Path) -> None:
    with phone(tmp_path, ping_key=KEY) as p, p.served() as app:
        assert p.telegram is not None
        response = app.http.post(
            f"/alert/{KEY}",
            json={"title": f"job {RLO}done", "body": f"step 1\n\tstep 2 {RLO}ok\u200b"},
        )
        assert response.status_code == 200, response.text
        text = p.telegram.last_message().text
        assert RLO not in text and "\u200b" not in text
        assert f"job {REPLACEMENT}done" in text
        assert f"step 1\n\tstep 2 {REPLACEMENT}ok{REPLACEMENT}" in text


def test_the_status_page_shows_names_and_messages_as_text(tmp_path: Path) -> None:
    with fleet(tmp_path) as f:
        f.world.runpod.add_pod("bidi-d4", name=EVIL, status="RUNNING", cost=0.5)
        f.world.run()
        f.app.ping("trainer-box", "fail", method="POST", body=f"OOM {RLO}at step 12".encode())
        page = page_of(f)
        assert f"trainer-{REPLACEMENT}1hni" in page
        assert RLO not in page
        monitor = f.http.get("/monitor/trainer-box")
        assert monitor.status_code == 200
        assert f"OOM {REPLACEMENT}at step 12" in monitor.text and RLO not in monitor.text


def test_a_terminal_table_shows_cells_as_text() -> None:
    table = format_table(["name", "state"], [[EVIL, "stopped"]])
    assert RLO not in table and f"trainer-{REPLACEMENT}" in table


def test_a_json_log_line_of_a_value_with_an_override_is_still_one_line(tmp_path: Path) -> None:
    stream = io.StringIO()
    log.configure(stream=stream, json_lines=True)
    log.event("list", name=EVIL, message=f"a\n{RLO}b")
    [line] = stream.getvalue().splitlines()
    fields = json.loads(line)
    assert fields["name"] == f"trainer-{REPLACEMENT}1hni detanimret eb lliw"
    assert fields["message"] == f"a\n{REPLACEMENT}b"
