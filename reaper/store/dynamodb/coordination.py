"""The DynamoDB store's leases, alert claims and episodes (`Leases`, `Episodes`)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from reaper.store.dynamodb.connection import (
    TTL_ATTRIBUTE,
    DynamoDBTable,
    Item,
    _epoch,
    _key,
    _n,
    _s,
    _str,
)
from reaper.store.ports import Lease
from reaper.store.rows import text_time, time_text

if TYPE_CHECKING:  # pydantic models, imported where used: a cold ping needs none of them
    from reaper.core.models import (
        Episode,
    )


# A claim is kept at least this long (or its window, if longer), as the SQLite store keeps it,
# so that a caller with a longer window than the last claimer's still sees a duplicate.
CLAIM_RETENTION = timedelta(days=7)
# A lease item outlives its expiry by this much before TTL may collect it.
LEASE_RETENTION = timedelta(days=1)


class CoordinationStore(DynamoDBTable):
    """Leases (`Leases`), alert claims and episodes (`Episodes`)."""

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
