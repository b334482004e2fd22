"""The DynamoDB store's monitors and ping logs (`reaper.store.ports.Monitors`)."""

from __future__ import annotations

from datetime import UTC, datetime

from reaper.core.monitors import SettingsChange, apply_change
from reaper.core.records import Monitor, PingEvent
from reaper.core.units import as_utc
from reaper.store.dynamodb.connection import DynamoDBTable, Item, _error_code, _key, _n, _s
from reaper.store.rows import last_heard, log_slot, retired_to_delete, utc_record

# How often a monitor write re-reads and retries after losing a race on the same host.
CONFLICT_RETRIES = 20
# A mute changes no pause, so the time of its change dates nothing.
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class StoreConflictError(RuntimeError):
    """A monitor write kept losing races on the same host; nothing was written."""


def _cancellation_codes(error: BaseException) -> list[str]:
    response = getattr(error, "response", None)
    reasons = response.get("CancellationReasons", []) if isinstance(response, dict) else []
    return [str(reason.get("Code", "None")) for reason in reasons]


class MonitorStore(DynamoDBTable):
    """Heartbeat monitors and their ping logs (`Monitors`)."""

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
