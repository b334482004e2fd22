"""Review ("Crash-consistent": `reaper audit` never shows two terminations of one instance; a
`requested` record whose DELETE may never have left is settled by the next pass as `not_sent`).

A pass dies right after writing its `requested` record, before the DELETE leaves (kill -9). The
record is settled only by a *reap* pass's reconciliation, and only when that pass trusts its
listing. Two paths reach a second DELETE of the same instance first, and the old record is then
confirmed by the pass after — two confirmed terminations of one pod, two "Terminated" messages:

1. the person presses "Terminate now" (the request's own pass reconciles nothing);
2. the next reap pass finds the account's listing untrustworthy for absences (the only other pod
   it showed last time was terminated by hand meanwhile), skips the settlement, and deletes.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from reaper.channels.base import Notifier
from reaper.core.models import AuditRecord
from reaper.store.sqlite import SQLiteStore
from tests.phone_support import Phone, phone
from tests.reap_support import World, action_of, events, world


class Killed(BaseException):
    """The process dying at this point (kill -9): nothing after it runs."""


class DiesAfterRequested(SQLiteStore):
    """A store under a process killed right after it wrote the `requested` record of a delete
    (the record is on disk; the DELETE never left)."""

    def record_termination(self, record: AuditRecord) -> None:
        super().record_termination(record)
        if record.result == "requested":
            raise Killed


def _killed_at_the_deadline(w: World, notifier: Notifier | None = None) -> None:
    store = DiesAfterRequested(str(w.state_path))
    try:
        with pytest.raises(Killed):
            w.run(store=store, notifier=notifier)
    finally:
        store.close()
    assert w.runpod.mutations == [], "the DELETE never left"


def _confirmed_terminations(w: World, instance_id: str) -> int:
    store = w.store(read_only=True)
    try:
        records = store.audit_log()
    finally:
        store.close()
    return Counter(r.id for r in records if r.confirmed)[instance_id]


def _terminate_now(p: Phone) -> None:
    assert p.telegram is not None
    message = p.warning_message()
    p.telegram.press(message, "Terminate now")
    p.poll()
    p.telegram.press(p.telegram.message(message.message_id), "⚠️ Yes, terminate")
    p.poll()


def test_terminate_now_after_a_killed_pass_is_one_termination(tmp_path: Path) -> None:
    with phone(tmp_path) as p:
        assert p.telegram is not None
        pod = p.w.runpod.add_pod(status="EXITED", name="trainer-7")
        p.w.runpod.add_pod(status="RUNNING", name="witness")
        p.warn()
        p.w.advance(1)
        _killed_at_the_deadline(p.w, p.notifier())
        p.w.advance(0.1)  # past the killed pass's short lease

        _terminate_now(p)  # no "Terminated" came: the person presses the button
        assert [m.method for m in p.w.runpod.mutations] == ["DELETE"]

        p.w.advance(1)
        p.run()
        p.w.advance(1)
        p.run()

        terminated = [m for m in p.telegram.messages if m.text.startswith("Terminated")]
        assert _confirmed_terminations(p.w, pod) == 1, "one pod, terminated once"
        assert len(terminated) == 1, [m.text for m in terminated]


def test_a_pass_that_cannot_settle_the_record_does_not_delete_again(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED", name="trainer-7")
        witness = w.runpod.add_pod(status="RUNNING", name="witness")
        w.reach_deadline()
        _killed_at_the_deadline(w)
        w.runpod.remove_pod(witness)  # the user terminates their other pod by hand
        w.advance(0.1)

        report = w.run()
        assert action_of(report, pod) == "terminate"
        w.advance(1)
        w.run()

        assert _confirmed_terminations(w, pod) == 1, "one pod, terminated once"
        terminated = [a for a in w.notifier.alerts if a.event == "terminated"]
        assert len(terminated) == 1, [a.title for a in terminated]


class DiesBeforeTheAnswerIsRecorded(SQLiteStore):
    """A store under a process killed after its DELETE left and was answered, before the
    answer was written: the record stays `requested`."""

    def record_termination(self, record: AuditRecord) -> None:
        if record.result != "requested":
            raise Killed
        super().record_termination(record)


def test_a_delete_that_left_before_the_crash_is_announced_once_it_shows(tmp_path: Path) -> None:
    """The DELETE left and RunPod answered 204; the process died before writing that. RunPod
    takes its time: the next pass still lists the pod stopped (the record is settled
    `not_sent`: "the delete never left"), and the pod is gone by the time that pass reads it
    again. It was terminated by the reaper — `reaper audit` must not say the delete never
    left, and the person must hear "Terminated"."""
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED", name="slow-delete")
        w.runpod.add_pod(status="RUNNING", name="witness")
        w.reach_deadline()
        w.runpod.delete_never_confirms = True  # acknowledged, still listed stopped for a while
        dying = DiesBeforeTheAnswerIsRecorded(str(w.state_path))
        try:
            with pytest.raises(Killed):
                w.run(store=dying)
        finally:
            dying.close()
        assert [m.method for m in w.runpod.mutations] == ["DELETE"]
        w.runpod.delete_never_confirms = False
        w.advance(0.1)
        # The next pass lists it stopped; RunPod finishes the delete right after that listing.
        w.runpod.after_next("list", lambda: w.runpod.remove_pod(pod))
        w.run()
        for _ in range(3):
            w.advance(1)
            w.run()

        assert w.runpod.pod(pod) is None
        store = w.store(read_only=True)
        try:
            records = store.audit_log()
        finally:
            store.close()
        assert [r.confirmed for r in records if r.id == pod] == [True], [
            (r.result, r.confirmed, r.detail) for r in records
        ]
        assert events(w.notifier).count("terminated") == 1
