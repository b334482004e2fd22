"""The SQLite backend of the store: the embedded default for `reaper serve` and local runs.

`SQLiteStore` is one mixin per port (`ledger`, `coordination`, `monitors`, `phone`,
`readmodels`) over one connection (`connection`; the tables are `schema`).

One connection per store, guarded by a lock, so that the event loop and worker threads of
`reaper serve` can share it. Two processes (a `serve` and a manual `reaper reap`) may share one
file: the database runs in WAL mode (readers never block the writer), every write takes the
write lock up front (`BEGIN IMMEDIATE`) so that a read-modify-write never works on a stale
snapshot, and a busy timeout makes a contended writer wait instead of failing.

Times are stored as fixed-width ISO 8601 UTC text (`2026-01-01T00:00:00.000000Z`), so that
comparing the text compares the instants and indexes on time columns work.

The ping log is a ring of 100 rows per host (`ping_log`, keyed by host and slot = event number
% 100): never trimmed, one row written per ping in the ping's own transaction. Monitors and
events are stored without their default values: a smaller row is a cheaper page to write on
every ping and a cheaper read for every watch pass. Under `reaper serve` the WAL is copied into
the file by a thread of its own (`checkpoint_apart`), not by the commit of whichever ping
crosses the checkpoint size.
"""

from __future__ import annotations

from reaper.store.sqlite.connection import StoreSchemaError
from reaper.store.sqlite.coordination import CoordinationStore
from reaper.store.sqlite.ledger import LedgerStore
from reaper.store.sqlite.monitors import MonitorStore
from reaper.store.sqlite.phone import PhoneStore
from reaper.store.sqlite.readmodels import ReadModelStore


class SQLiteStore(LedgerStore, CoordinationStore, MonitorStore, PhoneStore, ReadModelStore):
    """The `Store` on one SQLite file; see `reaper.store.ports` for the contract."""


__all__ = ["SQLiteStore", "StoreSchemaError"]
