"""Issue 24.10: a confirmed termination is announced ("Terminated …") at least once, even when
the process dies between confirming it and sending the alert: the audit record says whether it
was announced, and every pass first sends what was confirmed and never announced."""

from __future__ import annotations

from pathlib import Path

import pytest

from reaper.core.models import Alert
from tests.reap_support import ActingNotifier, events, world


class Killed(BaseException):
    """The process dying at this point (kill -9): nothing after it runs."""


def _die_on_terminated(alert: Alert) -> None:
    if alert.event == "terminated":
        raise Killed


def test_a_termination_confirmed_but_never_announced_is_announced_by_the_next_pass(
    tmp_path: Path,
) -> None:
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED", name="lost-news")
        w.runpod.add_pod(status="RUNNING", name="witness")
        w.reach_deadline()
        with pytest.raises(Killed):
            w.run(notifier=ActingNotifier(_die_on_terminated))
        assert "terminated" not in events(w.notifier)

        w.advance(1)
        w.run()
        [announced] = [a for a in w.notifier.alerts if a.event == "terminated"]
        assert announced.title.startswith(f"Terminated lost-news (runpod:{pod})")
        store = w.store(read_only=True)
        [record] = store.audit_log()
        store.close()
        assert record.announced

        w.advance(1)
        w.run()
        assert events(w.notifier).count("terminated") == 1, "announced once"


def test_records_written_before_the_flag_existed_count_as_announced(tmp_path: Path) -> None:
    from reaper.core.models import AuditRecord

    old = AuditRecord.model_validate_json(
        '{"provider": "runpod", "account": "main", "id": "p1", "name": "n", "reason": "r",'
        ' "requested_at": "2026-01-01T00:00:00Z", "result": "deleted", "confirmed": true}'
    )
    assert old.announced
