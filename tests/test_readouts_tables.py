"""The tables of `reap` and `report`: a summary line first, running instances with nothing to
do folded away unless `--all`, the terminal's width respected, times to the minute in UTC, the
cap's summary naming what set the cap, and the report's headline naming an account that did
not answer."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from reaper.interfaces.table import format_table
from reaper.interfaces.views import reap_table
from tests.reap_support import World, cli, world


def _fleet(w: World) -> None:
    for n in range(4):
        w.runpod.add_pod(f"busy-{n}", name=f"trainer-{n}", status="RUNNING", cost=1.0)
    w.runpod.add_pod(
        "old-p1", name="a-pod-with-a-rather-long-name-for-a-table", status="EXITED", volume_gb=100
    )
    w.runpod.add_pod("safe-p2", name="prod", status="EXITED", locked=True)
    w.vast.add_instance(8001, label="eval", actual_status="running", dph_total=0.5)


def test_a_summary_line_first_and_running_ones_folded(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        _fleet(w)
        report = w.run(dry_run=True)
    text = reap_table(report)
    lines = text.splitlines()
    assert lines[0] == "reap dry run at 2026-03-02 09:00 UTC (mode enforce)"
    assert lines[1] == (
        "7 instances, billing $4.53/h now: 5 running, 2 stopped; 0 due, 0 warned, 1 protected"
    )
    assert lines[2].split()[:3] == ["provider", "account", "id"]
    assert "busy-0" not in text and "8001" not in text
    assert "(+5 running with nothing to do; --all shows them)" in text
    shown = reap_table(report, show_all=True)
    assert all(f"busy-{n}" in shown for n in range(4)) and "8001" in shown
    assert "--all" not in shown


def test_free_text_columns_give_way_first() -> None:
    rows = [["runpod", "p1", "x" * 50, "a reason that goes on " * 4]]
    text = format_table(["provider", "id", "name", "reason"], rows, width=60, shrink_first=(3, 2))
    header, row = text.splitlines()
    assert len(row) <= 60 and row.startswith("runpod    p1  ")  # ids and providers intact
    assert header.split() == ["provider", "id", "name", "reason"]


@pytest.mark.parametrize(
    ("flag", "setting", "source"),
    [(1, 10, "--max-terminations (1)"), (None, 1, "REAPER_MAX_TERMINATIONS (1)")],
)
def test_the_cap_summary_names_what_set_the_cap(
    tmp_path: Path, flag: int | None, setting: int, source: str
) -> None:
    with world(tmp_path, max_terminations=setting) as w:
        for n in range(3):
            w.runpod.add_pod(f"old-{n}", name=f"old-{n}", status="EXITED")
        w.reach_deadline()
        report = w.run(max_terminations=flag)
    assert report.cap_exceeded and report.cap_source == source.split()[0]
    assert f"cap: more terminations were due than {source} allows; none were done" in (
        reap_table(report)
    )


def test_the_report_headline_names_an_account_that_did_not_answer(tmp_path: Path) -> None:
    with world(tmp_path, start=datetime.now(UTC)) as w:
        _fleet(w)
        assert cli(w, "reap", "--dry-run").returncode == 0
        w.store().close()  # the report reads an existing state
        w.runpod.set_down("503")
        done = cli(w, "report")
    # Once, under a loaded machine, stdout came back empty: say what stderr held if it does.
    assert done.returncode == 1, done.stderr
    assert done.stdout, done.stderr
    headline = done.stdout.splitlines()[0]
    when = r"\d{4}-\d\d-\d\d \d\d:\d\d UTC"
    failed = "not counted, did not answer: runpod/main: HTTP 503"
    expected = rf"report at {when}: spend now \$0\.50/h — {failed}"
    assert re.fullmatch(expected, headline), headline


def test_the_digest_title_names_an_account_that_did_not_answer() -> None:
    from reaper.core.digest import ProblemLine, Survey, build_digest, digest_alert
    from tests.settings_support import settings as settings_of

    live = Survey(
        errors=[ProblemLine(provider="runpod", account="main", message="HTTP 503")],
        listed=[("vast", "main")],
        labels={"runpod": "RunPod", "vast": "Vast"},
    )
    now = datetime(2026, 5, 4, 8, 0, tzinfo=UTC)
    alert = digest_alert(build_digest(now, live, [], [], [], settings_of()))
    assert alert.title == (
        "Daily digest: $0.00/h now (RunPod main did not answer); nothing reaped in 24h"
    )


def test_the_audit_table_opens_with_what_is_not_confirmed() -> None:
    from reaper.core.models import AuditRecord
    from reaper.interfaces.views import audit_table

    at = datetime(2026, 5, 4, 9, 30, 12, 345678, tzinfo=UTC)
    records = [
        AuditRecord(
            provider="runpod",
            account="main",
            id=f"p{n}",
            name=f"sweep-{n}",
            reason="stopped for 1d, limit 1d",
            requested_at=at,
            cost_per_hour=0.05,
            result="deleted",
            confirmed=n == 0,
        )
        for n in range(2)
    ]
    lines = audit_table(records).splitlines()
    assert lines[0] == "2 terminations: 1 confirmed, 1 NOT confirmed (check them in the console)"
    assert lines[1].split()[:2] == ["when", "provider"]
    assert lines[2].startswith("2026-05-04 09:30 UTC  runpod")
