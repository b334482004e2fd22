"""The DynamoDB backend of the store: state for the AWS deployment (`dynamodb://<table>`).

Single-table design. Every item has a string partition key `pk` naming its kind and a string
sort key `sk` naming the item within it, so that every read the reaper makes is one Query on one
partition (no Scan, no index):

| pk        | sk                              | attributes                                      |
|-----------|---------------------------------|-------------------------------------------------|
| `history` | `stop#<instance key>`           | `since`, `started`, `missing_since`, `warned_*` |
| `history` | `keep#<instance key>`           | `since`, `until`                                |
| `lease`   | `<name>`                        | `owner`, `expires_at`, `ttl`                    |
| `audit`   | `<requested_at>#<provider>#<id>`| `record` (JSON)                                 |
| `reap`    | `<finished_at>#<ns counter>`    | `run` (JSON), `ttl`                             |
| `monitor` | `<host>`                        | `status`, `monitor` (JSON)                      |
| `meta`    | `monitors`                      | `active` (how many monitors are not retired)   |
| `claim`   | `<alert key>`                   | `claimed_at`, `ttl`                             |
| `episode` | `<episode key>`                 | `opened_at`, `detail`, `alerted_at`             |
| `listing` | `<provider>#<account>`          | `at`, `listing` (zlib-compressed JSON, binary)  |
| `snapshot`| `<at>#<ns counter>`             | `snapshot` (JSON), `ttl` (90 days)              |
| `login`   | `<sha256 of a sign-in token>`   | `expires_at`, `ttl`                             |
| `grant`   | `<sha256 of the action token>`  | `grant` (JSON), `expires_at`, `used_at`, `ttl`  |
| `action`  | `<at>#<ns counter>`             | `record` (JSON): an action taken from the phone |
| `request` | `<instance key>`                | `request` (JSON), `expires_at`, `ttl`           |
| `pinglog` | `<host>#<slot 000-099>`         | `seq`, `event` (JSON): the monitor's ping log   |
| `session` | `<sha256 of a session's nonce>` | `expires_at`, `ttl`: a signed-in status page    |

A `history/stop#...` item holds the stretch (`since`, the provider's start time `started`, the
first listing that missed it `missing_since`) and its warning (`warned_at`, `warned_heard`,
`warned_mode`, `warned_terminate_at`, `warned_stretch`, `warned_issued_at`, `warned_ttl` and
`warned_warn_before` in seconds, `warned_held_at`): deleting the item forgets both at once. A
`history/keep#...` item also carries `by` (who kept it) when recorded. The status page reads
the `listing`, `history`, `monitor`, `audit` (since 30 days) and `snapshot` (since 30 days)
partitions and the newest `reap` item: a fixed handful of single-partition Queries, whatever
the fleet's size, and never a provider.

Times are fixed-width ISO 8601 UTC text, so that DynamoDB's string comparison in a condition
or a sort key compares instants. Overlapping runs (an hourly reap and a manual one; two
concurrent first pings) are made safe by conditions evaluated inside DynamoDB, never by a read
followed by a write:

- `claim_alert`, `acquire_lease`, `renew_lease`, `use_grant`, `release_grant`: one conditional
  write each; the loser's condition fails and it answers False, so an alert goes out once, a
  lease is never taken back by a pass that lost it, and an action token acts once.
- `create_monitor` with its cap: a transaction of two writes — the monitor, conditional on the
  host not existing, and an increment of the `meta/monitors` counter, conditional on the count
  being under the cap. Either both happen or neither. `put_monitor` and `delete_monitor` keep
  the counter in step with a transaction conditional on the status they read (optimistic
  concurrency: a lost race reads again), and a ping that leaves a monitor active — almost every
  ping — takes a one-write fast path that does not touch the counter.

The `ttl` attribute (epoch seconds; the table's TTL attribute) lets DynamoDB drop what expires:
leases, alert claims, old reap runs. DynamoDB deletes expired items lazily (within days), so no
answer here depends on it: conditions compare the stored times, and TTL only collects garbage.

boto3 is imported when a store is first made, not at module import: it ships with the Lambda
runtime but is not a local runtime dependency (`pip install reaper[aws]`).

`DynamoDBStore` is one mixin per port (`ledger`, `coordination`, `monitors`, `phone`,
`readmodels`) over one table (`connection`).

The ping log is a ring of PING_LOG_KEPT (100) items per monitor, not a list on the monitor's
item: event n (the monitor's `events` counter) is written to slot n % 100 with a plain put,
so a ping stays one conditional write of the monitor plus one small unconditional put, the
log needs no trimming, and the monitor item — which every watch pass reads for every
monitor — stays small (a list of 100 events of up to 1 KB would make each ping rewrite, and
each watch pass read, about 100 KB per monitor). `bench/dynamodb_ping.py` measures both.
"""

from __future__ import annotations

from reaper.store.dynamodb.connection import (
    ATTRIBUTE_DEFINITIONS,
    KEY_SCHEMA,
    TTL_ATTRIBUTE,
    create_table,
    make_client,
)
from reaper.store.dynamodb.coordination import CoordinationStore
from reaper.store.dynamodb.ledger import LedgerStore
from reaper.store.dynamodb.monitors import MonitorStore, StoreConflictError
from reaper.store.dynamodb.phone import PhoneStore
from reaper.store.dynamodb.readmodels import ReadModelStore


class DynamoDBStore(LedgerStore, CoordinationStore, MonitorStore, PhoneStore, ReadModelStore):
    """The `Store` on one DynamoDB table; see `reaper.store.ports` for the contract.

    The table must exist (CloudFormation creates it); the store never creates one, so a dry
    run, which opens it read-only, creates nothing."""


__all__ = [
    "ATTRIBUTE_DEFINITIONS",
    "KEY_SCHEMA",
    "TTL_ATTRIBUTE",
    "DynamoDBStore",
    "StoreConflictError",
    "create_table",
    "make_client",
]
