"""The gate re-checks every delete against the store's history read with the fresh reading —
once for a round of deletes, not once per delete: a hundred reads of the whole history, one per
delete, aged the reading past its few seconds before the last delete could leave, and every
delete after that went round again (measured: a 2,000-instance pass took twice as long)."""

from __future__ import annotations

from pathlib import Path

from reaper.core.models import History
from reaper.store.sqlite import SQLiteStore
from tests.reap_support import world


class CountingStore(SQLiteStore):
    reads = 0

    def history(self) -> History:
        CountingStore.reads += 1
        return super().history()


def test_one_history_read_serves_a_round_of_deletes(tmp_path: Path) -> None:
    with world(tmp_path, max_terminations=100) as w:
        pods = [w.runpod.add_pod(status="EXITED", name=f"job-{i}") for i in range(40)]
        w.reach_deadline()
        store = CountingStore(str(w.state_path))
        CountingStore.reads = 0
        try:
            report = w.run(store=store)
        finally:
            store.close()
    done = [a for a in report.actions if a.action == "terminate" and a.confirmed]
    assert sorted(a.id for a in done) == sorted(pods)
    # The plan's read, the round's read, and a few of the pass's own — not one per delete.
    assert CountingStore.reads < 10
