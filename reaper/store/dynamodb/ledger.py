"""The DynamoDB store's reap ledger (`reaper.store.ports.ReapLedger`)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from reaper.store.dynamodb.connection import (
    GRANT_RETENTION,
    TTL_ATTRIBUTE,
    DynamoDBTable,
    Item,
    _epoch,
    _key,
    _n,
    _s,
    _str,
)
from reaper.store.rows import text_time, time_text, utc_record

if TYPE_CHECKING:  # pydantic models, imported where used: a cold ping needs none of them
    from reaper.core.models import (
        AuditRecord,
        History,
        KeptInstance,
        ReapRun,
        TerminationRequest,
        WarningRecord,
    )


# Reap runs are only read for "the last one"; DynamoDB drops them this long after they finish.
REAP_RUN_RETENTION = timedelta(days=90)
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


def _history(items: Iterable[Item]) -> History:
    """The history the items of the `history` partition hold."""
    from reaper.core.models import History, KeptInstance

    first_seen: dict[str, datetime] = {}
    started_seen: dict[str, datetime] = {}
    missing: dict[str, datetime] = {}
    warned: dict[str, WarningRecord] = {}
    kept: dict[str, KeptInstance] = {}
    for item in items:
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


class LedgerStore(DynamoDBTable):
    """The reap ledger (`ReapLedger`): stopped clocks, warnings, keeps, terminate-now requests,
    audit records and reap runs."""

    def history(self) -> History:
        return _history(self._query("history"))

    def history_of(self, key: str, now: datetime) -> History:
        """Three strongly consistent point reads: the stretch's item (with its warning), the
        keep's, the request's."""
        from reaper.core.models import TerminationRequest

        items = [self._get("history", f"{kind}#{key}") for kind in ("stop", "keep")]
        history = _history(item for item in items if item is not None)
        request_item = self._get("request", key)
        if request_item is None:
            return history
        request = TerminationRequest.model_validate_json(request_item["request"]["S"])
        if now >= request.expires_at:
            return history
        return history.model_copy(update={"requests": {key: request}})

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
