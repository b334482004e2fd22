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

- `claim_alert`, `acquire_lease`, `renew_lease`, `use_grant`: one conditional write each; the
  loser's condition fails and it answers False, so an alert goes out once, a lease is never
  taken back by a pass that lost it, and an action token acts once.
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

The ping log is a ring of PING_LOG_KEPT (100) items per monitor, not a list on the monitor's
item: event n (the monitor's `events` counter) is written to slot n % 100 with a plain put,
so a ping stays one conditional write of the monitor plus one small unconditional put, the
log needs no trimming, and the monitor item — which every watch pass reads for every
monitor — stays small (a list of 100 events of up to 1 KB would make each ping rewrite, and
each watch pass read, about 100 KB per monitor). `bench/dynamodb_ping.py` measures both.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from reaper.core.monitors import SettingsChange, apply_change
from reaper.core.records import Monitor, PingEvent
from reaper.core.units import as_utc
from reaper.store.base import (
    SNAPSHOT_RETENTION,
    Lease,
    ReadOnlyStoreError,
    last_heard,
    log_slot,
    retired_to_delete,
    text_time,
    time_text,
    utc_record,
)

if TYPE_CHECKING:  # pydantic models, imported where used: a cold ping needs none of them
    from reaper.core.models import (
        ActionGrant,
        ActionRecord,
        AuditRecord,
        Episode,
        History,
        KeptInstance,
        Listing,
        ReapRun,
        TerminationRequest,
        WarningRecord,
    )
    from reaper.core.snapshot import Snapshot

# A claim is kept at least this long (or its window, if longer), as the SQLite store keeps it,
# so that a caller with a longer window than the last claimer's still sees a duplicate.
CLAIM_RETENTION = timedelta(days=7)
# Reap runs are only read for "the last one"; DynamoDB drops them this long after they finish.
REAP_RUN_RETENTION = timedelta(days=90)
# A sign-in token item outlives its expiry by this much before TTL may collect it.
LOGIN_TOKEN_RETENTION = timedelta(days=1)
# A session's item stays this long past its expiry, for TTL to collect.
SESSION_RETENTION = timedelta(days=1)
# A lease item outlives its expiry by this much before TTL may collect it.
LEASE_RETENTION = timedelta(days=1)
# How often a monitor write re-reads and retries after losing a race on the same host.
CONFLICT_RETRIES = 20
# Grants and termination requests outlive their expiry by this much before TTL may collect
# them ("expired" can still be told from "unknown" meanwhile).
GRANT_RETENTION = timedelta(days=1)
# A mute changes no pause, so the time of its change dates nothing.
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

Item = dict[str, Any]

# The table's schema, shared by `create_table` (tests, DynamoDB Local) and serverless.yml
# (checked against each other by the AWS tests).
KEY_SCHEMA = [
    {"AttributeName": "pk", "KeyType": "HASH"},
    {"AttributeName": "sk", "KeyType": "RANGE"},
]
ATTRIBUTE_DEFINITIONS = [
    {"AttributeName": "pk", "AttributeType": "S"},
    {"AttributeName": "sk", "AttributeType": "S"},
]
TTL_ATTRIBUTE = "ttl"


class StoreConflictError(RuntimeError):
    """A monitor write kept losing races on the same host; nothing was written."""


def _epoch(moment: datetime) -> int:
    return int(as_utc(moment).timestamp())


def _s(value: str) -> dict[str, str]:
    return {"S": value}


def _n(value: int) -> dict[str, str]:
    return {"N": str(value)}


def _key(pk: str, sk: str) -> Item:
    return {"pk": _s(pk), "sk": _s(sk)}


def _str(item: Mapping[str, Any], name: str) -> str | None:
    value = item.get(name)
    return None if value is None else str(value["S"])


# A warning's attributes on its stretch's item (`history/stop#<key>`).
_WARNING_ATTRIBUTES = (
    "warned_at",
    "warned_heard",
    "warned_mode",
    "warned_terminate_at",
    "warned_stretch",
    "warned_issued_at",
    "warned_ttl",
    "warned_warn_before",
    "warned_held_at",
)


def _opt_s(moment: datetime | None) -> dict[str, str] | None:
    return None if moment is None else _s(time_text(moment))


def _opt_seconds(delta: timedelta | None) -> dict[str, str] | None:
    return None if delta is None else {"N": repr(delta.total_seconds())}


def _warning_attributes(warning: WarningRecord) -> dict[str, Any]:
    """Each of `_WARNING_ATTRIBUTES` as DynamoDB stores it; None: not set (removed)."""
    return {
        "warned_at": _s(time_text(warning.at)),
        "warned_heard": {"BOOL": warning.heard},
        "warned_mode": _s(warning.mode),
        "warned_terminate_at": _opt_s(warning.terminate_at),
        "warned_stretch": _opt_s(warning.stretch),
        "warned_issued_at": _opt_s(warning.issued_at),
        "warned_ttl": _opt_seconds(warning.ttl),
        "warned_warn_before": _opt_seconds(warning.warn_before),
        "warned_held_at": _opt_s(warning.held_at),
    }


def _warning(item: Mapping[str, Any]) -> WarningRecord | None:
    """The warning on a stretch's item, None when it has none. Written before `warned_heard`
    and `warned_mode` existed: an unheard observe warning; before `warned_stretch`: a warning
    of no known stretch. Neither licenses anything (the next pass warns anew)."""
    from reaper.core.models import WarningRecord

    warned_at = _str(item, "warned_at")
    if warned_at is None:
        return None

    def moment(name: str) -> datetime | None:
        text = _str(item, name)
        return None if text is None else text_time(text)

    def seconds(name: str) -> timedelta | None:
        value = item.get(name)
        return None if value is None else timedelta(seconds=float(value["N"]))

    return WarningRecord(
        at=text_time(warned_at),
        heard=bool(item.get("warned_heard", {}).get("BOOL", False)),
        mode="enforce" if _str(item, "warned_mode") == "enforce" else "observe",
        terminate_at=moment("warned_terminate_at"),
        stretch=moment("warned_stretch"),
        issued_at=moment("warned_issued_at"),
        ttl=seconds("warned_ttl"),
        warn_before=seconds("warned_warn_before"),
        held_at=moment("warned_held_at"),
    )


def _error_code(error: BaseException) -> str | None:
    """The AWS error code of a botocore ClientError (duck-typed: botocore is imported lazily)."""
    response = getattr(error, "response", None)
    if isinstance(response, dict):
        code = response.get("Error", {}).get("Code")
        return str(code) if code else None
    return None


def _cancellation_codes(error: BaseException) -> list[str]:
    response = getattr(error, "response", None)
    reasons = response.get("CancellationReasons", []) if isinstance(response, dict) else []
    return [str(reason.get("Code", "None")) for reason in reasons]


def make_client(region: str | None = None) -> Any:
    """A DynamoDB client with short timeouts and bounded retries: a scheduled Lambda must finish
    its pass well within its timeout even when DynamoDB is slow."""
    import boto3  # type: ignore[import-untyped,unused-ignore]
    from botocore.config import Config  # type: ignore[import-untyped,unused-ignore]

    config = Config(
        connect_timeout=3,
        read_timeout=5,
        retries={"mode": "standard", "max_attempts": 4},
    )
    return boto3.client("dynamodb", region_name=region, config=config)


def create_table(table_name: str, client: Any = None) -> None:
    """Create the table with the schema serverless.yml deploys (for tests and DynamoDB Local;
    on AWS CloudFormation creates it)."""
    client = client or make_client()
    client.create_table(
        TableName=table_name,
        KeySchema=KEY_SCHEMA,
        AttributeDefinitions=ATTRIBUTE_DEFINITIONS,
        BillingMode="PAY_PER_REQUEST",
    )
    client.get_waiter("table_exists").wait(TableName=table_name)
    client.update_time_to_live(
        TableName=table_name,
        TimeToLiveSpecification={"Enabled": True, "AttributeName": TTL_ATTRIBUTE},
    )


class DynamoDBStore:
    """The `Store` protocol on one DynamoDB table; see `reaper.store.base` for the contract.

    The table must exist (CloudFormation creates it); the store never creates one, so a dry
    run, which opens it read-only, creates nothing.
    """

    def __init__(self, table_name: str, *, read_only: bool = False, client: Any = None) -> None:
        self.table_name = table_name
        self.read_only = read_only
        self._client = client if client is not None else make_client()

    # --- low-level helpers ------------------------------------------------------------------
    def _writable(self) -> None:
        if self.read_only:
            raise ReadOnlyStoreError("the store is open read-only (a dry run writes nothing)")

    def _query(
        self, pk: str, *, sk_from: str | None = None, prefix: str = "", newest_first: bool = False
    ) -> Iterator[Item]:
        """Every item of one partition, in sort-key order, across pages. Strongly consistent:
        a watch pass must see the ping that was written just before it."""
        condition = "pk = :pk"
        values: Item = {":pk": _s(pk)}
        if sk_from is not None:
            condition += " AND sk >= :sk"
            values[":sk"] = _s(sk_from)
        elif prefix:
            condition += " AND begins_with(sk, :prefix)"
            values[":prefix"] = _s(prefix)
        request: Item = {
            "TableName": self.table_name,
            "KeyConditionExpression": condition,
            "ExpressionAttributeValues": values,
            "ConsistentRead": True,
            "ScanIndexForward": not newest_first,
        }
        while True:
            page = self._client.query(**request)
            yield from page.get("Items", [])
            if "LastEvaluatedKey" not in page:
                return
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def _get(self, pk: str, sk: str) -> Item | None:
        answer = self._client.get_item(
            TableName=self.table_name, Key=_key(pk, sk), ConsistentRead=True
        )
        item: Item | None = answer.get("Item")
        return item

    def _conditional(self, operation: str, **request: Any) -> bool:
        """Run one conditional write; False when its condition failed (someone else won)."""
        try:
            getattr(self._client, operation)(TableName=self.table_name, **request)
        except Exception as error:
            if _error_code(error) == "ConditionalCheckFailedException":
                return False
            raise
        return True

    # --- the reap history ----------------------------------------------------------------
    def history(self) -> History:
        from reaper.core.models import History, KeptInstance

        first_seen: dict[str, datetime] = {}
        started_seen: dict[str, datetime] = {}
        missing: dict[str, datetime] = {}
        warned: dict[str, WarningRecord] = {}
        kept: dict[str, KeptInstance] = {}
        for item in self._query("history"):
            kind, _, key = str(item["sk"]["S"]).partition("#")
            since = _str(item, "since")
            if kind == "stop":
                if since is not None:
                    first_seen[key] = text_time(since)
                if (started := _str(item, "started")) is not None:
                    started_seen[key] = text_time(started)
                if (missed := _str(item, "missing_since")) is not None:
                    missing[key] = text_time(missed)
                if (warning := _warning(item)) is not None:
                    warned[key] = warning
            elif kind == "keep" and since is not None:
                until = _str(item, "until")
                kept[key] = KeptInstance(
                    key=key,
                    since=text_time(since),
                    until=None if until is None else text_time(until),
                    by=_str(item, "by") or "",
                )
        return History(
            first_seen_stopped=first_seen,
            stretch_started=started_seen,
            missing_since=missing,
            warnings=warned,
            kept=kept,
        )

    def start_stopped_clock(
        self, key: str, at: datetime, *, started_at: datetime | None = None
    ) -> None:
        self._writable()
        update = "SET since = if_not_exists(since, :at)"
        values: Item = {":at": _s(time_text(at))}
        if started_at is not None:
            update += ", started = if_not_exists(started, :started)"
            values[":started"] = _s(time_text(started_at))
        self._client.update_item(
            TableName=self.table_name,
            Key=_key("history", f"stop#{key}"),
            UpdateExpression=update,
            ExpressionAttributeValues=values,
        )

    def reset_stopped_clock(self, key: str) -> None:
        """The warning lives on the stretch's item, so deleting it forgets both at once."""
        self._writable()
        self._client.delete_item(TableName=self.table_name, Key=_key("history", f"stop#{key}"))

    def mark_missing(self, key: str, at: datetime) -> None:
        """Only on a recorded stretch (an update would otherwise create the item)."""
        self._writable()
        self._conditional(
            "update_item",
            Key=_key("history", f"stop#{key}"),
            UpdateExpression="SET missing_since = if_not_exists(missing_since, :at)",
            ConditionExpression="attribute_exists(since)",
            ExpressionAttributeValues={":at": _s(time_text(at))},
        )

    def clear_missing(self, key: str) -> None:
        self._writable()
        self._conditional(
            "update_item",
            Key=_key("history", f"stop#{key}"),
            UpdateExpression="REMOVE missing_since",
            ConditionExpression="attribute_exists(pk)",
        )

    def record_warning(self, key: str, warning: WarningRecord) -> None:
        """Every `warned_*` attribute set or removed: nothing of an earlier warning remains."""
        self._writable()
        values: Item = {}
        sets: list[str] = []
        removes: list[str] = []
        for name, value in _warning_attributes(warning).items():
            if value is None:
                removes.append(name)
            else:
                sets.append(f"{name} = :{name}")
                values[f":{name}"] = value
        update = "SET " + ", ".join(sets) + (" REMOVE " + ", ".join(removes) if removes else "")
        self._client.update_item(
            TableName=self.table_name,
            Key=_key("history", f"stop#{key}"),
            UpdateExpression=update,
            ExpressionAttributeValues=values,
        )

    def mark_warning_held(self, key: str, warned_at: datetime, at: datetime) -> bool:
        """Conditional on the recorded warning being the one delivered at `warned_at`."""
        self._writable()
        return self._conditional(
            "update_item",
            Key=_key("history", f"stop#{key}"),
            UpdateExpression="SET warned_held_at = :at",
            ConditionExpression="warned_at = :warned",
            ExpressionAttributeValues={
                ":at": _s(time_text(at)),
                ":warned": _s(time_text(warned_at)),
            },
        )

    def _drop_warning(self, key: str) -> None:
        self._conditional(
            "update_item",
            Key=_key("history", f"stop#{key}"),
            UpdateExpression="REMOVE " + ", ".join(_WARNING_ATTRIBUTES),
            ConditionExpression="attribute_exists(warned_at)",
        )

    def keep(self, kept: KeptInstance) -> None:
        """The warning (and any "terminate now" request) is dropped first, then the keep
        written: a crash in between leaves no license behind, only no keep (the person sees
        the press fail)."""
        self._writable()
        self._drop_warning(kept.key)
        self.end_termination_request(kept.key)
        item = {**_key("history", f"keep#{kept.key}"), "since": _s(time_text(kept.since))}
        if kept.until is not None:
            item["until"] = _s(time_text(kept.until))
        if kept.by:
            item["by"] = _s(kept.by)
        self._client.put_item(TableName=self.table_name, Item=item)

    def unkeep(self, key: str) -> bool:
        self._writable()
        self._drop_warning(key)
        self.end_termination_request(key)
        answer = self._client.delete_item(
            TableName=self.table_name, Key=_key("history", f"keep#{key}"), ReturnValues="ALL_OLD"
        )
        return "Attributes" in answer

    # --- the reap lease ---------------------------------------------------------------------
    def acquire_lease(self, name: str, owner: str, now: datetime, ttl: timedelta) -> bool:
        """Free, expired (`now` at or past its expiry) or already ours: take it until now+ttl."""
        self._writable()
        expires = now + ttl
        return self._conditional(
            "put_item",
            Item={
                **_key("lease", name),
                "owner": _s(owner),
                "expires_at": _s(time_text(expires)),
                TTL_ATTRIBUTE: _n(_epoch(expires + LEASE_RETENTION)),
            },
            ConditionExpression=(
                "attribute_not_exists(pk) OR #owner = :owner OR expires_at <= :now"
            ),
            ExpressionAttributeNames={"#owner": "owner"},
            ExpressionAttributeValues={":owner": _s(owner), ":now": _s(time_text(now))},
        )

    def renew_lease(self, name: str, owner: str, now: datetime, ttl: timedelta) -> bool:
        """Extends only a lease this owner holds and that has not expired (fencing)."""
        self._writable()
        expires = now + ttl
        return self._conditional(
            "update_item",
            Key=_key("lease", name),
            UpdateExpression="SET expires_at = :expires, #ttl = :ttl",
            ConditionExpression="#owner = :owner AND expires_at > :now",
            ExpressionAttributeNames={"#owner": "owner", "#ttl": TTL_ATTRIBUTE},
            ExpressionAttributeValues={
                ":owner": _s(owner),
                ":now": _s(time_text(now)),
                ":expires": _s(time_text(expires)),
                ":ttl": _n(_epoch(expires + LEASE_RETENTION)),
            },
        )

    def release_lease(self, name: str, owner: str) -> None:
        self._writable()
        self._conditional(
            "delete_item",
            Key=_key("lease", name),
            ConditionExpression="#owner = :owner",
            ExpressionAttributeNames={"#owner": "owner"},
            ExpressionAttributeValues={":owner": _s(owner)},
        )

    def lease_holder(self, name: str) -> Lease | None:
        item = self._get("lease", name)
        if item is None:
            return None
        owner, expires = _str(item, "owner"), _str(item, "expires_at")
        if owner is None or expires is None:
            return None
        return Lease(owner=owner, expires_at=text_time(expires))

    # --- audit and runs ---------------------------------------------------------------------
    def record_termination(self, record: AuditRecord) -> None:
        """Upsert by (provider, id, requested_at): the sort key spells exactly that, time first
        so that the audit log reads oldest first. Audit records never expire."""
        self._writable()
        record = utc_record(record)
        sk = f"{time_text(record.requested_at)}#{record.provider}#{record.id}"
        self._client.put_item(
            TableName=self.table_name,
            Item={**_key("audit", sk), "record": _s(record.model_dump_json())},
        )

    def audit_log(self, since: datetime | None = None) -> list[AuditRecord]:
        from reaper.core.models import AuditRecord

        items = self._query("audit", sk_from=None if since is None else time_text(since))
        return [AuditRecord.model_validate_json(item["record"]["S"]) for item in items]

    def record_reap(self, run: ReapRun) -> None:
        """The nanosecond counter after the time keeps runs finishing in the same microsecond
        apart, the later write sorting last, as SQLite's row sequence does."""
        self._writable()
        run = utc_record(run)
        sk = f"{time_text(run.finished_at)}#{time.time_ns():020d}"
        self._client.put_item(
            TableName=self.table_name,
            Item={
                **_key("reap", sk),
                "run": _s(run.model_dump_json()),
                TTL_ATTRIBUTE: _n(_epoch(run.finished_at + REAP_RUN_RETENTION)),
            },
        )

    def last_reap(self) -> ReapRun | None:
        from reaper.core.models import ReapRun

        for item in self._query("reap", newest_first=True):
            return ReapRun.model_validate_json(item["run"]["S"])
        return None

    # --- last listings ----------------------------------------------------------------------
    def record_listing(self, listing: Listing) -> None:
        """One item per account, its JSON compressed: a thousand instances fit one item well
        under DynamoDB's 400 KB, and a status read stays one Query."""
        self._writable()
        listing = utc_record(listing)
        body = zlib.compress(listing.model_dump_json(exclude_defaults=True).encode(), 6)
        self._client.put_item(
            TableName=self.table_name,
            Item={
                **_key("listing", f"{listing.provider}#{listing.account}"),
                "at": _s(time_text(listing.at)),
                "listing": {"B": body},
            },
        )

    def listings(self) -> list[Listing]:
        from reaper.core.models import Listing

        return [
            Listing.model_validate_json(zlib.decompress(bytes(item["listing"]["B"])))
            for item in self._query("listing")
        ]

    # --- heartbeat monitors -----------------------------------------------------------------
    def get_monitor(self, host: str) -> Monitor | None:
        item = self._get("monitor", host)
        return None if item is None else Monitor.model_validate_json(item["monitor"]["S"])

    @staticmethod
    def _monitor_item(monitor: Monitor) -> Item:
        monitor = utc_record(monitor)
        return {
            **_key("monitor", monitor.host),
            "status": _s(monitor.status),
            "monitor": _s(monitor.model_dump_json(exclude_defaults=True)),
        }

    def _counter_update(self, delta: int) -> Item:
        return {
            "Update": {
                "TableName": self.table_name,
                "Key": _key("meta", "monitors"),
                "UpdateExpression": "ADD active :delta",
                "ExpressionAttributeValues": {":delta": _n(delta)},
            }
        }

    def _transact(self, items: list[Item]) -> bool:
        """Run a transaction; False when a condition failed or it collided with another
        transaction on the same items (the caller re-reads and decides again)."""
        try:
            self._client.transact_write_items(TransactItems=items)
        except Exception as error:
            if _error_code(error) in ("TransactionCanceledException", "TransactionConflict"):
                return False
            raise
        return True

    def _replace_monitor(self, new: Item | None, host: str) -> None:
        """Write (or delete, `new` None) a monitor, keeping the active counter in step: read the
        current status, then write conditional on it together with the counter change."""
        active_after = new is not None and new["status"]["S"] != "retired"
        for _ in range(CONFLICT_RETRIES):
            old = self._get("monitor", host)
            if old is None and new is None:
                return
            active_before = old is not None and old["status"]["S"] != "retired"
            if old is None:
                condition: Item = {"ConditionExpression": "attribute_not_exists(pk)"}
            else:
                condition = {
                    "ConditionExpression": "#status = :old",
                    "ExpressionAttributeNames": {"#status": "status"},
                    "ExpressionAttributeValues": {":old": old["status"]},
                }
            write: Item = (
                {"Put": {"TableName": self.table_name, "Item": new, **condition}}
                if new is not None
                else {
                    "Delete": {
                        "TableName": self.table_name,
                        "Key": _key("monitor", host),
                        **condition,
                    }
                }
            )
            delta = int(active_after) - int(active_before)
            if self._transact([write, self._counter_update(delta)] if delta else [write]):
                return
        raise StoreConflictError(f"monitor {host!r}: too many concurrent writes, nothing written")

    def put_monitor(self, monitor: Monitor) -> None:
        """Fast path: a write that leaves the active count unchanged (an active monitor stays
        active, a retired one stays retired) is one conditional put and no counter write."""
        self._writable()
        item = self._monitor_item(monitor)
        stays = "#status <> :retired" if monitor.status != "retired" else "#status = :retired"
        if self._conditional(
            "put_item",
            Item=item,
            ConditionExpression=f"attribute_exists(pk) AND {stays}",
            ExpressionAttributeNames={"#status": "status"},
            ExpressionAttributeValues={":retired": _s("retired")},
        ):
            return
        self._replace_monitor(item, monitor.host)

    def create_monitor(self, monitor: Monitor, limit: int) -> bool:
        """One transaction: the monitor if the host is new, and the counter if under the cap.

        A read of the counter comes first: once the cap is reached, every further first ping
        (a leaked key inventing hosts) costs one read instead of a cancelled transaction's four
        write units. The transaction stays the authority when the read says there is room.
        """
        self._writable()
        if limit <= 0 or self._active_monitors() >= limit:
            return False
        item = self._monitor_item(monitor)
        counter = self._counter_update(0 if monitor.status == "retired" else 1)
        counter["Update"]["ConditionExpression"] = "attribute_not_exists(active) OR active < :limit"
        counter["Update"]["ExpressionAttributeValues"][":limit"] = _n(limit)
        put = {
            "Put": {
                "TableName": self.table_name,
                "Item": item,
                "ConditionExpression": "attribute_not_exists(pk)",
            }
        }
        for _ in range(CONFLICT_RETRIES):
            try:
                self._client.transact_write_items(TransactItems=[put, counter])
                return True
            except Exception as error:
                codes = _cancellation_codes(error)
                if "ConditionalCheckFailed" in codes:
                    return False  # the host exists, or the cap is reached
                if _error_code(error) not in (
                    "TransactionCanceledException",
                    "TransactionConflict",
                ):
                    raise
        raise StoreConflictError(f"monitor {monitor.host!r}: too many concurrent writes")

    def _active_monitors(self) -> int:
        counter = self._get("meta", "monitors")
        return 0 if counter is None else int(counter.get("active", {"N": "0"})["N"])

    def list_monitors(self) -> list[Monitor]:
        return [
            Monitor.model_validate_json(item["monitor"]["S"]) for item in self._query("monitor")
        ]

    def delete_monitor(self, host: str) -> None:
        self._writable()
        self._replace_monitor(None, host)
        self._delete_log(host)

    def delete_retired(self, before: datetime, keep: int) -> int:
        """One read of the monitors, then one delete per chosen monitor, conditional on its
        still being retired (a ping may revive it meanwhile). Retired monitors are not in the
        active counter, so the counter is left alone."""
        self._writable()
        heard: dict[str, datetime] = {}
        for item in self._query("monitor"):
            if item["status"]["S"] == "retired":
                monitor = Monitor.model_validate_json(item["monitor"]["S"])
                heard[monitor.host] = last_heard(monitor)
        deleted = 0
        for host in retired_to_delete(heard, as_utc(before), keep):
            gone = self._conditional(
                "delete_item",
                Key=_key("monitor", host),
                ConditionExpression="#status = :retired",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={":retired": _s("retired")},
            )
            if gone:
                self._delete_log(host)
            deleted += gone
        return deleted

    # --- alert de-duplication and episodes ------------------------------------------------
    def claim_alert(self, key: str, now: datetime, window: timedelta) -> bool:
        """A claim stands for `window` from its time: `now` at or past claim + window claims
        anew and restarts the window."""
        self._writable()
        return self._conditional(
            "put_item",
            Item={
                **_key("claim", key),
                "claimed_at": _s(time_text(now)),
                TTL_ATTRIBUTE: _n(_epoch(now + max(window, CLAIM_RETENTION))),
            },
            ConditionExpression="attribute_not_exists(pk) OR claimed_at <= :horizon",
            ExpressionAttributeValues={":horizon": _s(time_text(now - window))},
        )

    @staticmethod
    def _episode(item: Mapping[str, Any]) -> Episode:
        from reaper.core.models import Episode

        alerted_at = _str(item, "alerted_at")
        return Episode(
            key=str(item["sk"]["S"]),
            opened_at=text_time(str(item["opened_at"]["S"])),
            detail=_str(item, "detail") or "",
            alerted_at=None if alerted_at is None else text_time(alerted_at),
        )

    def open_episode(self, key: str, at: datetime, detail: str = "") -> Episode:
        """One atomic update: fields are set only where absent, so an open episode comes back
        unchanged (the older one) and a new one comes back as opened."""
        self._writable()
        answer = self._client.update_item(
            TableName=self.table_name,
            Key=_key("episode", key),
            UpdateExpression=(
                "SET opened_at = if_not_exists(opened_at, :at), "
                "detail = if_not_exists(detail, :detail)"
            ),
            ExpressionAttributeValues={":at": _s(time_text(at)), ":detail": _s(detail)},
            ReturnValues="ALL_NEW",
        )
        return self._episode(answer["Attributes"])

    def mark_episode_alerted(self, key: str, at: datetime, detail: str | None = None) -> None:
        self._writable()
        update = "SET alerted_at = :at" + (", detail = :detail" if detail is not None else "")
        values: Item = {":at": _s(time_text(at))}
        if detail is not None:
            values[":detail"] = _s(detail)
        self._conditional(
            "update_item",
            Key=_key("episode", key),
            UpdateExpression=update,
            ConditionExpression="attribute_exists(pk)",
            ExpressionAttributeValues=values,
        )

    def close_episode(self, key: str) -> Episode | None:
        self._writable()
        answer = self._client.delete_item(
            TableName=self.table_name, Key=_key("episode", key), ReturnValues="ALL_OLD"
        )
        old = answer.get("Attributes")
        return None if old is None else self._episode(old)

    def open_episodes(self, prefix: str = "") -> list[Episode]:
        return [self._episode(item) for item in self._query("episode", prefix=prefix)]

    def close(self) -> None:
        """Nothing to close: the client's connections are pooled for warm invocations."""

    # --- the status page: snapshots and sign-in links ------------------------------------
    def record_snapshot(self, snapshot: Snapshot) -> None:
        """One item; TTL drops it SNAPSHOT_RETENTION after it was taken. The counter after the
        time keeps two snapshots of the same microsecond apart."""
        self._writable()
        snapshot = utc_record(snapshot)
        self._client.put_item(
            TableName=self.table_name,
            Item={
                **_key("snapshot", f"{time_text(snapshot.at)}#{time.time_ns():020d}"),
                "snapshot": _s(snapshot.model_dump_json()),
                TTL_ATTRIBUTE: _n(_epoch(snapshot.at + SNAPSHOT_RETENTION)),
            },
        )

    def snapshots(self, since: datetime) -> list[Snapshot]:
        """One Query from `since` on (the sort key starts with the time)."""
        from reaper.core.snapshot import Snapshot

        return [
            Snapshot.model_validate_json(item["snapshot"]["S"])
            for item in self._query("snapshot", sk_from=time_text(since))
        ]

    def record_login_token(self, token_hash: str, expires_at: datetime) -> None:
        self._writable()
        self._client.put_item(
            TableName=self.table_name,
            Item={
                **_key("login", token_hash),
                "expires_at": _s(time_text(expires_at)),
                TTL_ATTRIBUTE: _n(_epoch(expires_at + LOGIN_TOKEN_RETENTION)),
            },
        )

    def use_login_token(self, token_hash: str, now: datetime) -> bool:
        """One conditional delete: DynamoDB lets exactly one of two concurrent uses meet the
        condition; an expired token (TTL collects lazily) fails it too."""
        self._writable()
        return self._conditional(
            "delete_item",
            Key=_key("login", token_hash),
            ConditionExpression="attribute_exists(pk) AND expires_at > :now",
            ExpressionAttributeValues={":now": _s(time_text(now))},
        )

    # --- actions from the phone -----------------------------------------------------------
    def add_grant(self, grant: ActionGrant) -> None:
        self._writable()
        grant = utc_record(grant)
        item: Item = {
            **_key("grant", grant.id),
            "grant": _s(grant.model_dump_json(exclude={"used_at"})),
            "expires_at": _s(time_text(grant.expires_at)),
            TTL_ATTRIBUTE: _n(_epoch(grant.expires_at + GRANT_RETENTION)),
        }
        if grant.used_at is not None:
            item["used_at"] = _s(time_text(grant.used_at))
        self._client.put_item(TableName=self.table_name, Item=item)

    def get_grant(self, grant_id: str) -> ActionGrant | None:
        from reaper.core.models import ActionGrant

        item = self._get("grant", grant_id)
        if item is None:
            return None
        grant = ActionGrant.model_validate_json(item["grant"]["S"])
        used_at = _str(item, "used_at")
        return grant.model_copy(update={"used_at": None if used_at is None else text_time(used_at)})

    def use_grant(self, grant_id: str, now: datetime) -> bool:
        """Conditional on the grant existing, unused and unexpired, evaluated inside DynamoDB:
        of two concurrent presses exactly one write succeeds."""
        self._writable()
        return self._conditional(
            "update_item",
            Key=_key("grant", grant_id),
            UpdateExpression="SET used_at = :now",
            ConditionExpression=(
                "attribute_exists(pk) AND attribute_not_exists(used_at) AND expires_at > :now"
            ),
            ExpressionAttributeValues={":now": _s(time_text(now))},
        )

    def record_action(self, record: ActionRecord) -> None:
        """Kept like the termination audit: never expires."""
        self._writable()
        record = utc_record(record)
        sk = f"{time_text(record.at)}#{time.time_ns():020d}"
        self._client.put_item(
            TableName=self.table_name,
            Item={**_key("action", sk), "record": _s(record.model_dump_json())},
        )

    def action_log(self, since: datetime | None = None) -> list[ActionRecord]:
        from reaper.core.models import ActionRecord

        items = self._query("action", sk_from=None if since is None else time_text(since))
        return [ActionRecord.model_validate_json(item["record"]["S"]) for item in items]

    def request_termination(self, request: TerminationRequest) -> None:
        self._writable()
        request = utc_record(request)
        self._client.put_item(
            TableName=self.table_name,
            Item={
                **_key("request", request.key),
                "request": _s(request.model_dump_json()),
                "expires_at": _s(time_text(request.expires_at)),
                TTL_ATTRIBUTE: _n(_epoch(request.expires_at + GRANT_RETENTION)),
            },
        )

    def termination_requests(self, now: datetime) -> list[TerminationRequest]:
        """TTL collects lazily: the stored expiry decides."""
        from reaper.core.models import TerminationRequest

        requests = [
            TerminationRequest.model_validate_json(item["request"]["S"])
            for item in self._query("request")
        ]
        return [r for r in requests if now < r.expires_at]

    def end_termination_request(self, key: str) -> None:
        self._writable()
        self._client.delete_item(TableName=self.table_name, Key=_key("request", key))

    # --- monitor settings, pause, mute and the ping log -----------------------------------
    def set_monitor_settings(self, host: str, change: SettingsChange) -> Monitor | None:
        """Optimistic: read the monitor, write it changed on condition that it is still
        exactly what was read (a ping meanwhile makes the condition fail: read again). The
        status does not change, so the active counter is left alone."""
        self._writable()
        for _ in range(CONFLICT_RETRIES):
            item = self._get("monitor", host)
            if item is None:
                return None
            monitor = apply_change(Monitor.model_validate_json(item["monitor"]["S"]), change)
            if self._conditional(
                "put_item",
                Item=self._monitor_item(monitor),
                ConditionExpression="#monitor = :old",
                ExpressionAttributeNames={"#monitor": "monitor"},
                ExpressionAttributeValues={":old": item["monitor"]},
            ):
                return utc_record(monitor)
        raise StoreConflictError(f"monitor {host!r}: too many concurrent writes, nothing written")

    def pause_monitor(self, host: str, paused: bool, at: datetime) -> bool:
        change = SettingsChange(at=at, given=frozenset({"paused"}), paused=paused)
        return self.set_monitor_settings(host, change) is not None

    def mute_monitor(self, host: str, until: datetime | None) -> bool:
        change = SettingsChange(at=_EPOCH, given=frozenset({"muted_until"}), muted_until=until)
        return self.set_monitor_settings(host, change) is not None

    def log_event(self, host: str, event: PingEvent) -> None:
        """One unconditional put into the event's slot. Two pings of one host racing may
        number their events alike; the later write wins the slot (a log, not the state)."""
        self._writable()
        event = utc_record(event)
        self._client.put_item(
            TableName=self.table_name,
            Item={
                **_key("pinglog", f"{host}#{log_slot(event):03d}"),
                "seq": _n(event.seq),
                "event": _s(event.model_dump_json(exclude_defaults=True)),
            },
        )

    def monitor_log(self, host: str) -> list[PingEvent]:
        """One Query of the host's slots (`#` is no host character, so the prefix is the
        host's alone)."""
        events = [
            PingEvent.model_validate_json(item["event"]["S"])
            for item in self._query("pinglog", prefix=f"{host}#")
        ]
        return sorted(events, key=lambda event: event.seq)

    def put_monitor_logged(self, monitor: Monitor, event: PingEvent) -> None:
        """No transaction (it would double the cost of every ping): the monitor's conditional
        put, then the event's plain put. A failure in between loses one log line, never state."""
        self.put_monitor(monitor)
        self.log_event(monitor.host, event)

    def _delete_log(self, host: str) -> None:
        """One delete per slot (at most PING_LOG_KEPT): a monitor is deleted rarely, and the
        function's role allows DeleteItem, not BatchWriteItem."""
        for item in list(self._query("pinglog", prefix=f"{host}#")):
            self._client.delete_item(
                TableName=self.table_name, Key={"pk": item["pk"], "sk": item["sk"]}
            )

    # --- sessions of the status page ------------------------------------------------------
    def start_session(self, session_id: str, started_at: datetime, expires_at: datetime) -> None:
        """One put; TTL collects the session a day after it expired."""
        self._writable()
        self._client.put_item(
            TableName=self.table_name,
            Item={
                **_key("session", session_id),
                "expires_at": _s(time_text(expires_at)),
                TTL_ATTRIBUTE: _n(_epoch(expires_at + SESSION_RETENTION)),
            },
        )

    def session_active(self, session_id: str, now: datetime) -> bool:
        """One strongly consistent read: a sign-out in another container counts at once. The
        expiry is compared here, since TTL deletes lazily."""
        item = self._get("session", session_id)
        expires_at = None if item is None else _str(item, "expires_at")
        return expires_at is not None and expires_at > time_text(now)

    def end_session(self, session_id: str) -> None:
        self._writable()
        self._client.delete_item(TableName=self.table_name, Key=_key("session", session_id))


__all__ = [
    "ATTRIBUTE_DEFINITIONS",
    "KEY_SCHEMA",
    "TTL_ATTRIBUTE",
    "DynamoDBStore",
    "StoreConflictError",
    "create_table",
    "make_client",
]
