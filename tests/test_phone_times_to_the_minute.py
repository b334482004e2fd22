"""The action pages and the answers to presses write times as every time a person reads is
written — `2026-12-05 19:00 UTC`, with the year — not as "Sat 05 Dec 19:00 UTC"."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

from reaper.core.units import utc
from tests.phone_support import link_path, phone

WEEKDAY_TIME = re.compile(r"\b(Mon|Tue|Wed|Thu|Fri|Sat|Sun) \d\d [A-Z][a-z]{2} \d\d:\d\d")
TAG = re.compile(r"<[^>]*>")


def test_the_action_page_and_its_answers_write_times_to_the_minute(tmp_path: Path) -> None:
    with phone(tmp_path, telegram=False, bark=True) as p:
        assert p.bark is not None
        pod = p.w.runpod.add_pod(status="EXITED", name="trainer-7")
        p.warn()
        [push] = [x for x in p.bark.pushes if "will be terminated" in x["title"]]
        page_at = p.w.clock.now()
        with p.served() as app:
            page = TAG.sub(" ", app.http.get(link_path(push["url"])).text)
            done = app.http.post(link_path(push["url"]), data={"choice": "1"})
        assert done.status_code == 200, done.text
    assert WEEKDAY_TIME.findall(page + done.text) == []
    expires = page_at + timedelta(hours=24)
    assert f"This link works once, until {utc(expires)}." in " ".join(page.split())
    assert f"until {utc(page_at + timedelta(days=1))} (1d from now)" in page
    assert done.text == (
        f"Kept trainer-7 (runpod:{pod}) until {utc(page_at + timedelta(weeks=1))} by action link.\n"
    )


def test_a_press_and_a_used_button_say_when_to_the_minute(tmp_path: Path) -> None:
    with phone(tmp_path) as p:
        assert p.telegram is not None
        pod = p.w.runpod.add_pod(status="EXITED", name="trainer-7")
        p.warn()
        message = p.warning_message()
        p.telegram.press(message, "Keep 1 day")
        p.telegram.press(message, "Keep 1 day")  # twice before the first is answered
        p.poll()
        first, second = (a["text"] for a in p.telegram.answers)
        assert first == (
            f"Kept trainer-7 (runpod:{pod}) until {utc(p.w.clock.now() + timedelta(days=1))}"
            " by @alice (Telegram user 42)."
        )
        assert second == f"Already used ({utc(p.w.clock.now())}): nothing done."
