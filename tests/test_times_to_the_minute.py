"""Every time a person reads is to the minute with its zone (`2026-12-02 21:32 UTC`): the
command line's tables and answers (keep, mute, audit, status, report, the ping log), the status
page and a monitor's page, and the alerts of a demo-like run. Machine output (`--json`, the
`datetime` of a page's `<time>` element) keeps ISO 8601 and is not scanned."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

from tests.reap_support import cli
from tests.web_support import csrf_of, fleet, page_of

# ISO 8601 (a `T` between date and time), a time with seconds, or fractions of a second.
MACHINE_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d|\b\d\d:\d\d:\d\d\b|:\d\d\.\d+")
TAG = re.compile(r"<[^>]*>")
TO_THE_MINUTE = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC")


def _readable(html: str) -> str:
    """What a person reads of a page: its text, not its markup's attributes."""
    return TAG.sub(" ", html)


def _scan(outputs: dict[str, str]) -> None:
    found = {name: MACHINE_TIME.findall(text) for name, text in outputs.items()}
    assert not any(found.values()), {name: hits for name, hits in found.items() if hits}


def test_no_human_output_of_a_demo_like_run_shows_seconds_or_iso(tmp_path: Path) -> None:
    with fleet(tmp_path) as f:
        w, app = f.world, f.app
        app.ping("trainer-box", "log", method="POST", body=b"checkpoint 3 written")
        page = page_of(f)
        kept = app.http.post(
            "/keep", data={"instance": f"runpod:{f.stopped_id}", "for": "7d", "csrf": csrf_of(page)}
        )
        assert kept.status_code == 303, kept.text
        app.clock.advance(timedelta(hours=3))
        app.watch()
        commands = {
            "keep": ("keep", f"vast:{f.vast_id}", "--for", "3d", "--force"),
            "mute": ("monitor", "mute", "trainer-box", "--for", "1d"),
            "status": ("status",),
            "audit": ("audit",),
            "report": ("report",),
            "monitor list": ("monitor", "list"),
            "monitor log": ("monitor", "log", "trainer-box"),
        }
        outputs = {}
        for name, args in commands.items():
            done = cli(w, *args)
            assert done.returncode in (0, 1), (name, done.stdout, done.stderr)
            outputs[f"reaper {name}"] = done.stdout
        outputs["status page"] = _readable(page_of(f))
        outputs["monitor page"] = _readable(app.http.get("/monitor/trainer-box").text)
        alerts = w.notifier.alerts + app.notifier.alerts
    assert alerts, "the run sent alerts: a warning, a termination, a monitor down"
    for n, alert in enumerate(alerts):
        outputs[f"alert {n} ({alert.event})"] = f"{alert.title}\n{alert.body}"
    _scan(outputs)
    # The scan reads real times: each of these shows at least one, to the minute.
    for name in ("reaper keep", "reaper mute", "reaper audit", "status page", "monitor page"):
        assert TO_THE_MINUTE.search(outputs[name]), (name, outputs[name])
    assert "kept until" in outputs["reaper audit"], outputs["reaper audit"]


def test_a_record_written_with_iso_times_reads_to_the_minute() -> None:
    # Keeps recorded before this rule carry ISO instants in their words.
    from datetime import UTC, datetime

    from reaper.core.models import ActionRecord
    from reaper.interfaces.views import actions_table

    record = ActionRecord(
        at=datetime(2026, 12, 2, 21, 32, 7, tzinfo=UTC),
        kind="keep",
        label="Keep until 2026-12-09T21:32:07.120031Z",
        targets=("runpod:p1",),
        subject="runpod:p1",
        by="ana (command line)",
        via="command line",
        done=True,
        result="kept until 2026-12-09T21:32:07.120031Z",
    )
    table = actions_table([record])
    assert not MACHINE_TIME.search(table), table
    assert "Keep until 2026-12-09 21:32 UTC" in table and "kept until 2026-12-09 21:32 UTC" in table
