"""A DELETE that left before a crash (answered, never recorded) while the provider still lists
the instance stopped for a while: the pass that finds it missing from the read right before a
second DELETE sends nothing and raises no "needs you" (the earlier delete is the likely cause),
and once two listings miss it, the earlier record is confirmed — the answer was lost — and
announced once."""

from __future__ import annotations

from pathlib import Path

import pytest

from reaper.core.models import AuditRecord
from reaper.store.sqlite import SQLiteStore
from tests.reap_support import events, world


class Killed(BaseException):
    """The process dying at this point (kill -9): nothing after it runs."""


class DiesBeforeTheAnswerIsRecorded(SQLiteStore):
    """A process killed after its DELETE left and was answered, before the answer was
    written: the record stays `requested`."""

    def record_termination(self, record: AuditRecord) -> None:
        if record.result != "requested":
            raise Killed
        super().record_termination(record)


def test_a_lost_answer_is_confirmed_when_the_instance_is_gone(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED", name="slow-delete")
        w.runpod.add_pod(status="RUNNING", name="witness")
        w.reach_deadline()
        w.runpod.delete_never_confirms = True
        dying = DiesBeforeTheAnswerIsRecorded(str(w.state_path))
        try:
            with pytest.raises(Killed):
                w.run(store=dying)
        finally:
            dying.close()
        w.runpod.delete_never_confirms = False
        w.advance(0.1)
        w.runpod.after_next("list", lambda: w.runpod.remove_pod(pod))
        report = w.run()
        [action] = [a for a in report.actions if a.id == pod]
        assert action.exempt is None and "may have taken effect" in action.reason, action
        assert [m.method for m in w.runpod.mutations] == ["DELETE"], "no second DELETE"
        for _ in range(3):
            w.advance(1)
            w.run()

        store = w.store(read_only=True)
        try:
            [record] = [r for r in store.audit_log() if r.id == pod]
        finally:
            store.close()
        assert record.confirmed and record.result == "deleted" and record.announced
        assert "answer was lost" in record.detail
        assert events(w.notifier).count("terminated") == 1
        assert "needs_you" not in events(w.notifier)
