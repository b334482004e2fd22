"""The DynamoDB store's sign-in links, sessions, grants and phone actions (`PhoneAuth`)."""

from __future__ import annotations

import time
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

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
        ActionGrant,
        ActionRecord,
    )


# A sign-in token item outlives its expiry by this much before TTL may collect it.
LOGIN_TOKEN_RETENTION = timedelta(days=1)
# A session's item stays this long past its expiry, for TTL to collect.
SESSION_RETENTION = timedelta(days=1)


class PhoneStore(DynamoDBTable):
    """Sign-in links, sessions, action grants and the actions taken from the phone (`PhoneAuth`)."""

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

    def release_grant(self, grant_id: str, used_at: datetime) -> bool:
        self._writable()
        return self._conditional(
            "update_item",
            Key=_key("grant", grant_id),
            UpdateExpression="REMOVE used_at",
            ConditionExpression="used_at = :at",
            ExpressionAttributeValues={":at": _s(time_text(used_at))},
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
