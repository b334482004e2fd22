"""Review ("One reap pass at a time per store, fenced"; "Whose clock").

Two processes share one store — `reaper serve` on one host and a scheduled `reaper reap` (or a
second deployment) on another. Their clocks differ by three minutes: well inside the five
minutes "Whose clock" accepts, so both decide. The reap lease lives two minutes and is judged
expired by the *taker's* clock, so the process whose clock is ahead takes a lease the other
renewed a moment ago, and runs beside it. With a DELETE of the first process waiting its turn,
both delete the same pod: two terminations of one instance in `reaper audit`, two "Terminated".
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from pathlib import Path

from reaper.passes.reap import ReapReport
from reaper.providers.http import HttpOptions
from tests.other_process_support import other_process_pass as _other_process_pass
from tests.reap_support import world

# Inside MAX_CLOCK_SKEW (5 minutes): this process's pass decides like any other.
AHEAD = timedelta(minutes=3)
ONE_AT_A_TIME = HttpOptions(
    timeout=2.0, max_attempts=2, backoff_base=0.01, backoff_cap=0.02, max_concurrency=1
)


def test_a_process_whose_clock_is_minutes_ahead_does_not_take_a_live_lease(
    tmp_path: Path,
) -> None:
    with world(tmp_path) as w:
        w.runpod.add_pod(status="EXITED", name="trainer")
        other: list[ReapReport] = []
        w.runpod.after_next("list", lambda: _other_process_pass(w, AHEAD, other))
        first = w.run()
        [second] = other
        assert second.lease_taken, "two passes ran at once on one store"
        assert not first.lease_lost


def test_two_processes_do_not_terminate_one_pod_twice(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        pods = [w.runpod.add_pod(status="EXITED", name=f"job-{n}") for n in (1, 2)]
        w.runpod.add_pod(status="RUNNING", name="witness")
        w.reach_deadline()
        other: list[ReapReport] = []
        # The first process's first DELETE is answered; its second waits for the slot. Then
        # the other process's pass runs.
        w.runpod.after_next("delete", lambda: _other_process_pass(w, AHEAD, other))
        w.run(http=ONE_AT_A_TIME)
        w.advance(1)
        w.run()

        store = w.store(read_only=True)
        try:
            confirmed = Counter(r.id for r in store.audit_log() if r.confirmed)
        finally:
            store.close()
        deletes = Counter(m.path for m in w.runpod.mutations if m.method == "DELETE")
        terminated = Counter(a.title for a in w.notifier.alerts if a.event == "terminated")
        assert all(confirmed[p] == 1 for p in pods), f"audit: {confirmed}; DELETEs: {deletes}"
        assert all(n == 1 for n in terminated.values()), terminated
        assert all(n == 1 for n in deletes.values()), f"one DELETE per pod: {deletes}"
