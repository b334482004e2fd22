"""Benchmark of a ping on DynamoDB: what each one costs with the ping log, two ways.

    python -m bench.dynamodb_ping [--pings 600] [--monitors 200]

DynamoDB bills (and throttles) by capacity units: a write costs one unit per started KB of the
item written, a strongly consistent read one unit per started 4 KB. So the question of where the
ping log lives — the last 100 events per monitor — is a question of item sizes:

- ring (what reaper does): the log is 100 items of its own per monitor, event n in slot
  n % 100, written with one plain put beside the monitor's one conditional put. The monitor
  item stays as small as it was.
- list: the log is a bounded list on the monitor's item. Still one conditional write per ping,
  but that write, every ping's read of the monitor, and every watch pass's read of every
  monitor carry the whole log.

The ring runs through reaper's own code (`record_ping` on a `DynamoDBStore`); the list is
simulated with the same calls a store of that design would make (read the item, put it back
with the event appended and the oldest dropped). Both run against moto in this process: its
milliseconds say what the client side costs (marshalling, sizes), not what DynamoDB's network
costs; the capacity units are computed from the items exactly as DynamoDB sizes them. Pings
carry no body, or a 1 KB body (the log keeps 1 KB of each).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}
TABLE = "reaper-bench"


def attribute_size(value: dict[str, Any]) -> int:
    """An attribute value's size by DynamoDB's rules (numbers approximated by their digits)."""
    (kind, inner), *_ = value.items()
    if kind == "S":
        return len(str(inner).encode())
    if kind == "B":
        return len(inner)
    if kind == "N":
        return math.ceil(len(str(inner).lstrip("-").replace(".", "")) / 2) + 1
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "L":
        return 3 + sum(1 + attribute_size(v) for v in inner)
    if kind == "M":
        return 3 + sum(1 + len(k.encode()) + attribute_size(v) for k, v in inner.items())
    raise ValueError(kind)


def item_size(item: dict[str, Any]) -> int:
    return sum(len(name.encode()) + attribute_size(value) for name, value in item.items())


def write_units(item: dict[str, Any]) -> int:
    return max(1, math.ceil(item_size(item) / 1024))


def read_units(size: int) -> int:
    return max(1, math.ceil(size / 4096))


@dataclass
class Costs:
    """What one run of pings cost, from the calls the store made."""

    calls: Counter[str] = field(default_factory=Counter)
    write_units: int = 0
    # Of those, the units spent on the log's own items (the ring's plain puts).
    log_units: int = 0
    read_units: int = 0
    conditional_writes: int = 0


class CountingClient:
    """A DynamoDB client that counts calls and the capacity units they would consume."""

    def __init__(self, inner: Any, costs: Costs) -> None:
        self._inner = inner
        self.costs = costs

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._inner, name)

        def call(**request: Any) -> Any:
            self.costs.calls[name] += 1
            if "ConditionExpression" in request:
                self.costs.conditional_writes += 1
            answer = method(**request)
            if name == "put_item":
                units = write_units(request["Item"])
                self.costs.write_units += units
                if request["Item"]["pk"]["S"] == "pinglog":
                    self.costs.log_units += units
            elif name == "get_item" and "Item" in answer:
                self.costs.read_units += read_units(item_size(answer["Item"]))
            elif name == "query":
                self.costs.read_units += read_units(sum(item_size(i) for i in answer["Items"]))
            elif name == "transact_write_items":
                for entry in request["TransactItems"]:
                    put = entry.get("Put")
                    self.costs.write_units += 2 * (write_units(put["Item"]) if put else 1)
            return answer

        return call


def _ring(client: Any, pings: int, monitors: int, body: bytes) -> tuple[Costs, float]:
    """reaper's own ping path on DynamoDB."""
    from emulators.channels import RecordingNotifier
    from emulators.clock import FakeClock
    from reaper.core.heartbeat import Ping
    from reaper.passes.ping import record_ping
    from reaper.settings.model import Settings, StateURL
    from reaper.store.dynamodb import DynamoDBStore

    counted = CountingClient(client, Costs())
    store = DynamoDBStore(TABLE, client=counted)
    settings = Settings(state=StateURL("dynamodb", TABLE), max_monitors=monitors * 2)
    clock = FakeClock()
    message = body.decode() or None

    async def run(count: int) -> None:
        for index in range(count):
            ping = Ping(host=f"bench-{index % monitors:04d}", message=message, client="10.0.0.1")
            await record_ping(settings, store, RecordingNotifier(), clock, ping)

    asyncio.run(run(monitors))  # create them (a slot costs the same, filled or not)
    counted.costs = costs = Costs()  # count from here
    started = time.perf_counter()
    asyncio.run(run(pings))
    elapsed = time.perf_counter() - started
    costs.calls.pop("query", None)  # a first ping of a revived monitor; none here
    listed = store.list_monitors()
    before = costs.read_units
    store.list_monitors()
    watch_units = costs.read_units - before
    costs.read_units = before
    assert len(listed) == monitors
    costs.calls["(watch pass: list_monitors read units)"] = watch_units
    costs.calls.pop("query", None)
    return costs, elapsed


def _list(client: Any, pings: int, monitors: int, body: bytes) -> tuple[Costs, float]:
    """The other design: the last 100 events as a list on the monitor item (simulated)."""
    from reaper.core.models import Monitor, PingEvent
    from reaper.core.monitors import PING_LOG_KEPT, log_body

    costs = Costs()
    counted = CountingClient(client, costs)
    now = Monitor(host="x", created_at=_now()).created_at
    text = log_body(body.decode())

    def event(seq: int) -> dict[str, Any]:
        e = PingEvent(seq=seq, at=now, kind="ping", body=text, client="10.0.0.1")
        return {"S": e.model_dump_json()}

    def item(host: str, log: list[dict[str, Any]], seq: int) -> dict[str, Any]:
        monitor = Monitor(host=host, status="up", created_at=now, last_ping_at=now, events=seq)
        return {
            "pk": {"S": "monitor"},
            "sk": {"S": host},
            "status": {"S": "up"},
            "monitor": {"S": monitor.model_dump_json()},
            "log": {"L": log},
        }

    full = [event(n) for n in range(PING_LOG_KEPT)]
    for index in range(monitors):  # every monitor with a full log, as after a day of pings
        client.put_item(TableName=TABLE + "-list", Item=item(f"bench-{index:04d}", full, 100))
    started = time.perf_counter()
    for index in range(pings):
        host = f"bench-{index % monitors:04d}"
        got = counted.get_item(
            TableName=TABLE + "-list", Key={"pk": {"S": "monitor"}, "sk": {"S": host}}
        )["Item"]
        seq = 101 + index
        log = [*got["log"]["L"][1:], event(seq)]
        counted.put_item(
            TableName=TABLE + "-list",
            Item=item(host, log, seq),
            ConditionExpression="attribute_exists(pk) AND #status <> :retired",
            ExpressionAttributeNames={"#status": "status"},
            ExpressionAttributeValues={":retired": {"S": "retired"}},
        )
    elapsed = time.perf_counter() - started
    before = costs.read_units
    request: dict[str, Any] = {
        "TableName": TABLE + "-list",
        "KeyConditionExpression": "pk = :pk",
        "ExpressionAttributeValues": {":pk": {"S": "monitor"}},
    }
    while True:
        page = counted.query(**request)
        if "LastEvaluatedKey" not in page:
            break
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    costs.calls["(watch pass: list_monitors read units)"] = costs.read_units - before
    costs.read_units = before
    costs.calls["query"] = 0
    return costs, elapsed


def _now() -> Any:
    from emulators.clock import FakeClock

    return FakeClock().now()


def _line(name: str, costs: Costs, elapsed: float, pings: int) -> str:
    calls = ", ".join(f"{n} {c / pings:g}" for n, c in costs.calls.items() if c and "(" not in n)
    watch = costs.calls["(watch pass: list_monitors read units)"]
    return (
        f"  {name:<5} {pings / elapsed:7.0f} pings/s (moto)   per ping: {calls};"
        f" conditional writes {costs.conditional_writes / pings:g};"
        f" WCU {costs.write_units / pings:.1f} (log {costs.log_units / pings:.1f}),"
        f" RCU {costs.read_units / pings:.1f};"
        f" a watch pass reads {watch} RCU"
    )


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.dynamodb_ping", description=__doc__)
    parser.add_argument("--pings", type=int, default=600)
    parser.add_argument("--monitors", type=int, default=200)
    args = parser.parse_args()
    for name, value in AWS_ENV.items():
        os.environ.setdefault(name, value)
    import boto3
    from moto import mock_aws

    from reaper import log
    from reaper.store.dynamodb import create_table

    log.configure(stream=open(os.devnull, "w"))  # noqa: SIM115 - lives as long as the run
    print(f"DynamoDB (moto, in process): {args.pings} pings over {args.monitors} monitors")
    for label, body in (("no body", b""), ("1 KB body", b"x" * 1024)):
        with mock_aws():
            client = boto3.client("dynamodb", region_name="us-east-1")
            create_table(TABLE, client)
            create_table(TABLE + "-list", client)
            print(f" {label}:")
            costs, elapsed = _ring(client, args.pings, args.monitors, body)
            print(_line("ring", costs, elapsed, args.pings))
            costs, elapsed = _list(client, args.pings, args.monitors, body)
            print(_line("list", costs, elapsed, args.pings))
    print("Without a log a ping was the ring's figures less its log: 1 get, 1 conditional put.")
    print("reaper keeps the ring: one conditional write per ping either way, and the monitor")
    print("item (read by every ping and every watch pass) stays small.")


if __name__ == "__main__":
    main()
