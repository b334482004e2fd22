"""A dry run sends nothing, so its log never says an alert went out: a warning it would send is
`result=dry_run`, and the guards count what they `would_alert`, never `alerted`."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from reaper import log
from tests.reap_support import events, world


def _lines(stream: io.StringIO, event: str) -> list[dict[str, Any]]:
    records = [json.loads(line) for line in stream.getvalue().splitlines()]
    return [r for r in records if r["event"] == event]


def test_a_dry_run_logs_its_warning_as_a_dry_run_not_as_sent(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED")
        w.run()
        w.advance(23)
        stream = io.StringIO()
        log.configure(json_lines=True, stream=stream)
        w.run(dry_run=True)
        (warned,) = _lines(stream, "warn")
        assert warned["id"] == pod
        assert warned["result"] == "dry_run"
        assert "termination_warning" not in events(w.notifier), "a dry run sends nothing"


def test_the_same_warning_for_real_is_logged_as_sent(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        w.runpod.add_pod(status="EXITED")
        w.run()
        w.advance(23)
        stream = io.StringIO()
        log.configure(json_lines=True, stream=stream)
        w.run()
        (warned,) = _lines(stream, "warn")
        assert warned["result"] == "sent"


def test_a_dry_runs_guards_count_what_they_would_alert(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        inst = w.vast.add_instance(label="waiting", storage_cost=0.2, disk_space=100.0)
        w.vast.set_scheduling(inst)
        w.run()
        w.advance(6)
        stream = io.StringIO()
        log.configure(json_lines=True, stream=stream)
        report = w.run(dry_run=True)
        assert report.guards is not None and report.guards.alerted, "a stuck alert is due"
        (guards,) = _lines(stream, "guards")
        assert "alerted" not in guards
        assert guards["would_alert"] == len(report.guards.alerted)
        live = io.StringIO()
        log.configure(json_lines=True, stream=live)
        w.run()
        (guards,) = _lines(live, "guards")
        assert guards["alerted"] >= 1 and "would_alert" not in guards
