"""`reaper demo --serve`: after the demo, its status page and its phone stay up until Ctrl-C.
The phone is an emulated ntfy app that reaper's real ntfy channel delivered to; its buttons are
links to `/act/<token>` on the demo's own server, and they work: a Keep pressed there is done."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx


@contextmanager
def serving_demo(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], list[str]]]:
    """`reaper demo --serve` up to its "Ctrl-C stops them" line; the lines it printed."""
    process = subprocess.Popen(
        [sys.executable, "-m", "reaper", "demo", "--serve"],
        cwd=tmp_path,
        env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    try:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line.rstrip("\n"))
            if "Ctrl-C stops them" in line:
                break
        yield process, lines
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)


def _address(lines: list[str], label: str) -> str:
    """The address after `label`, the same wherever it is printed."""
    found = {m.group(1) for line in lines if (m := re.search(label + r"(http://\S+?)/? ", line))}
    assert len(found) == 1, found
    return found.pop()


def _keep_link(messages: list[dict[str, Any]], subject: str, label: str) -> str:
    for message in messages:
        if subject in message["title"]:
            for action in message["actions"]:
                if action["label"] == label:
                    return str(action["url"])
    raise AssertionError(f"no {label!r} under {subject!r}")


def test_the_page_and_the_phone_stay_up_and_the_phones_buttons_work(tmp_path: Path) -> None:
    with serving_demo(tmp_path) as (process, lines):
        assert any("serving until Ctrl-C" in line for line in lines), lines[-5:]
        page = _address(lines, r"status page: ")
        phone = _address(lines, r"phone \(emulated\): ")
        with httpx.Client(timeout=10) as http:
            assert http.get(f"{page}/").status_code == 200  # the sign-in page
            screen = http.get(f"{phone}/")
            assert screen.status_code == 200
            assert "will be terminated in 1h" in screen.text
            assert f'href="{page}/act/' in screen.text
            messages = http.get(f"{phone}/json").json()
            link = _keep_link(messages, "(vast:4242002) will be terminated", "Keep 1 week")
            assert link.startswith(f"{page}/act/")
            shown = http.get(link)
            assert shown.status_code == 200 and "Keep 1 week" in shown.text
            done = http.post(link, content=b"")
            assert done.status_code == 200, done.text
            assert done.text.startswith("Kept bid-a100-sweep (vast:4242002) until")
            assert http.post(link, content=b"").status_code == 404  # a link works once
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
        assert process.returncode == 0, err[-2000:]
