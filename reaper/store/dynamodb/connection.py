"""The DynamoDB store's table: the client (short timeouts, bounded retries), the table's
schema, the attribute helpers and the queries and conditional writes every port's methods
use. Each port's methods are a mixin over this (`ledger`, `coordination`, `monitors`,
`phone`, `readmodels`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime, timedelta
from typing import Any

from reaper.core.units import as_utc
from reaper.store.ports import ReadOnlyStoreError

# Grants and termination requests outlive their expiry by this much before TTL may collect
# them ("expired" can still be told from "unknown" meanwhile).
GRANT_RETENTION = timedelta(days=1)
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


def _error_code(error: BaseException) -> str | None:
    """The AWS error code of a botocore ClientError (duck-typed: botocore is imported lazily)."""
    response = getattr(error, "response", None)
    if isinstance(response, dict):
        code = response.get("Error", {}).get("Code")
        return str(code) if code else None
    return None


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


class DynamoDBTable:
    """One DynamoDB table: the client, and the reads and conditional writes under every
    port's methods."""

    def __init__(self, table_name: str, *, read_only: bool = False, client: Any = None) -> None:
        self.table_name = table_name
        self.read_only = read_only
        self._client = client if client is not None else make_client()

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

    def close(self) -> None:
        """Nothing to close: the client's connections are pooled for warm invocations."""
