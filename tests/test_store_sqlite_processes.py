"""Two OS processes on one SQLite file: a `serve` and a manual `reaper reap` may share a store.

Workers are spawned (a fresh interpreter, as a second command would be) and start together at
a barrier, so their writes really overlap. Each worker opens the store itself; the lease test
even lets them race to create a fresh file.
"""

from __future__ import annotations

import multiprocessing
import traceback
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from reaper.core.models import Monitor, WarningRecord
from reaper.store.sqlite import SQLiteStore

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
WINDOW = timedelta(hours=1)
JOIN_TIMEOUT = 20.0
# Below the number of keys, so the cap is reached while both processes are creating.
MONITOR_LIMIT = 120


@dataclass(frozen=True)
class Outcome:
    worker: int
    lease: bool = False
    warnings_won: tuple[str, ...] = ()
    claims_won: tuple[str, ...] = ()
    monitors_created: tuple[str, ...] = ()
    error: str = ""


def lease_worker(path: str, worker: int, barrier: Any, results: Any) -> None:
    try:
        barrier.wait()
        store = SQLiteStore(path)
        won = store.acquire_lease("reap", f"owner-{worker}", T0, timedelta(minutes=10))
        store.close()
        results.put(Outcome(worker, lease=won))
    except BaseException:
        results.put(Outcome(worker, error=traceback.format_exc()))


def writer_worker(path: str, worker: int, keys: list[str], barrier: Any, results: Any) -> None:
    try:
        store = SQLiteStore(path)
        barrier.wait()
        warned: list[str] = []
        claimed: list[str] = []
        created: list[str] = []
        for key in keys:
            store.record_warning(
                key, WarningRecord(at=T0 + timedelta(seconds=worker), heard=True, mode="enforce")
            )
            warned.append(key)
            if store.claim_alert(key, T0, WINDOW):
                claimed.append(key)
            if store.create_monitor(Monitor(host=key, created_at=T0), MONITOR_LIMIT):
                created.append(key)
        store.close()
        results.put(
            Outcome(
                worker,
                warnings_won=tuple(warned),
                claims_won=tuple(claimed),
                monitors_created=tuple(created),
            )
        )
    except BaseException:
        results.put(Outcome(worker, error=traceback.format_exc()))


def run_workers(target: Any, args_for: list[tuple[Any, ...]]) -> list[Outcome]:
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(len(args_for))
    results = ctx.Queue()
    processes = [
        ctx.Process(target=target, args=(*args, barrier, results), daemon=True) for args in args_for
    ]
    for process in processes:
        process.start()
    outcomes = [results.get(timeout=JOIN_TIMEOUT) for _ in processes]
    for process in processes:
        process.join(timeout=JOIN_TIMEOUT)
        assert process.exitcode == 0
    for outcome in outcomes:
        assert outcome.error == "", f"worker {outcome.worker} failed:\n{outcome.error}"
    return sorted(outcomes, key=lambda outcome: outcome.worker)


def test_exactly_one_process_wins_the_lease(tmp_path: Path) -> None:
    path = str(tmp_path / "fresh" / "state.db")
    outcomes = run_workers(lease_worker, [(path, worker) for worker in range(2)])
    winners = [outcome.worker for outcome in outcomes if outcome.lease]
    assert len(winners) == 1, outcomes
    # The winner is the one the file remembers.
    store = SQLiteStore(path)
    assert store.acquire_lease("reap", f"owner-{winners[0]}", T0, timedelta(minutes=10))
    loser = next(outcome.worker for outcome in outcomes if not outcome.lease)
    assert not store.acquire_lease("reap", f"owner-{loser}", T0, timedelta(minutes=10))
    store.close()


def test_concurrent_writers_never_lock_out_double_claim_or_overfill(tmp_path: Path) -> None:
    path = str(tmp_path / "state.db")
    SQLiteStore(path).close()
    keys = [f"runpod:{i}" for i in range(200)]
    # Both walk the same keys, one forwards and one backwards, so every key is contended:
    # they meet in the middle, and each key must be won by exactly one of them.
    outcomes = run_workers(writer_worker, [(path, 0, keys), (path, 1, keys[::-1])])

    warned = [key for outcome in outcomes for key in outcome.warnings_won]
    claimed = [key for outcome in outcomes for key in outcome.claims_won]
    assert sorted(warned) == sorted(keys * 2), "no write was lost to a lock"
    assert sorted(claimed) == sorted(keys)
    created = [key for outcome in outcomes for key in outcome.monitors_created]
    assert len(created) == MONITOR_LIMIT, "the monitor cap holds under contention"
    assert len(set(created)) == MONITOR_LIMIT, "no host was created twice"

    store = SQLiteStore(path, read_only=True)
    warnings = store.history().warnings
    assert set(warnings) == set(keys)
    assert {w.at for w in warnings.values()} <= {T0, T0 + timedelta(seconds=1)}
    assert sorted(m.host for m in store.list_monitors()) == sorted(created)
    store.close()
