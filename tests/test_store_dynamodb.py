"""The DynamoDB store: the shared contract against moto, plus what only DynamoDB can get wrong
(the cap counter under races, TTL attributes, read-only, lazy boto3)."""

from __future__ import annotations

import itertools
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from reaper.core.models import KeptInstance, Monitor
from reaper.store.dynamodb import DynamoDBStore, create_table
from reaper.store.ports import ReadOnlyStoreError, Store
from tests.aws_support import atomic
from tests.store_contract import StoreContract
from tests.store_contract.records import HOUR, MINUTE, T0, WRITES, audit_record, reap_run

AWS_ENV = {
    # Fake credentials and a region, so that nothing can reach a real account.
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
}
_tables = itertools.count()


@pytest.fixture(scope="module")
def moto_client() -> Iterator[Any]:
    """One mocked account for the module (starting moto and a client costs far more than a
    table); every test gets its own fresh table in it."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in AWS_ENV.items():
            patch.setenv(name, value)
        with mock_aws():
            yield atomic(boto3.client("dynamodb", region_name="us-east-1"))


@pytest.fixture
def table(moto_client: Any) -> str:
    name = f"reaper-test-{next(_tables)}"
    create_table(name, moto_client)
    return name


class TestDynamoDBStore(StoreContract):
    @pytest.fixture
    def store(self, moto_client: Any, table: str) -> Iterator[Store]:
        store = DynamoDBStore(table, client=moto_client)
        yield store
        store.close()


class Table:
    """The test's table and a raw client on it, to look at the items themselves."""

    def __init__(self, client: Any, name: str) -> None:
        self.client = client
        self.name = name

    def store(self, *, read_only: bool = False, client: Any = None) -> DynamoDBStore:
        return DynamoDBStore(self.name, client=client or self.client, read_only=read_only)

    def items(self, pk: str | None = None) -> list[dict[str, Any]]:
        if pk is None:
            return list(self.client.scan(TableName=self.name)["Items"])
        answer = self.client.query(
            TableName=self.name,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": pk}},
        )
        return list(answer["Items"])

    def active_count(self) -> int:
        [counter] = self.items("meta") or [{"active": {"N": "0"}}]
        return int(counter["active"]["N"])

    def ttl_of(self, pk: str) -> int:
        [item] = self.items(pk)
        return int(item["ttl"]["N"])


@pytest.fixture
def db(moto_client: Any, table: str) -> Table:
    return Table(moto_client, table)


class SerialClient:
    """Every call runs alone, as each DynamoDB request is atomic; threads interleave only
    between calls — exactly where a store's read-then-write could race. (moto itself is not
    safe for concurrent requests.)"""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._client, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                return method(*args, **kwargs)

        return call


def run_threads(count: int, target: Callable[[int], None]) -> None:
    threads = [threading.Thread(target=target, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


# --- the cap counter stays true ------------------------------------------------------------


def test_the_counter_follows_every_status_change(db: Table) -> None:
    store = db.store()
    assert store.create_monitor(Monitor(host="a", created_at=T0), limit=10)
    assert store.create_monitor(Monitor(host="b", created_at=T0), limit=10)
    assert db.active_count() == 2
    store.put_monitor(Monitor(host="a", status="up", created_at=T0))  # active -> active
    assert db.active_count() == 2
    store.put_monitor(Monitor(host="a", status="retired", created_at=T0))
    assert db.active_count() == 1
    store.put_monitor(Monitor(host="a", status="retired", created_at=T0))  # retired -> retired
    assert db.active_count() == 1
    store.put_monitor(Monitor(host="a", status="down", created_at=T0))  # revived
    assert db.active_count() == 2
    store.put_monitor(Monitor(host="c", status="up", created_at=T0))  # a new host by put
    assert db.active_count() == 3
    store.delete_monitor("b")
    store.delete_monitor("b")
    assert db.active_count() == 2
    store.put_monitor(Monitor(host="a", status="retired", created_at=T0))
    store.delete_monitor("a")  # a retired one leaves the count alone
    assert db.active_count() == 1
    assert [m.host for m in store.list_monitors()] == ["c"]


def test_concurrent_first_pings_never_pass_the_cap(db: Table) -> None:
    """Six threads race to create 20 hosts under a cap of 12: exactly 12 are created, once
    each, and the counter agrees with the table."""
    limit, hosts = 12, [f"host-{i:02d}" for i in range(20)]
    client = SerialClient(db.client)
    created: list[str] = []

    def worker(n: int) -> None:
        store = db.store(client=client)
        for i in range(len(hosts)):
            host = hosts[(i + 3 * n) % len(hosts)]
            if store.create_monitor(Monitor(host=host, created_at=T0), limit=limit):
                created.append(host)

    run_threads(6, worker)
    assert len(created) == limit
    assert len(set(created)) == limit, "a host was created twice"
    assert len(db.items("monitor")) == limit
    assert db.active_count() == limit


class Interfering(SerialClient):
    """Runs `meddle` once, right after the store under test first reads a monitor: another
    writer acting between the store's read and its write."""

    def __init__(self, client: Any, meddle: Callable[[], None]) -> None:
        super().__init__(client)
        self._meddle: Callable[[], None] | None = meddle

    def get_item(self, **kwargs: Any) -> Any:
        answer = self._client.get_item(**kwargs)
        if self._meddle is not None and kwargs["Key"]["pk"]["S"] == "monitor":
            meddle, self._meddle = self._meddle, None
            meddle()
        return answer


@pytest.mark.parametrize(
    ("start", "ours", "theirs"),
    [
        ("up", "retired", "retired"),  # both retire it: the count drops once
        ("retired", "up", "up"),  # both revive it: the count rises once
        ("up", "retired", "down"),  # they keep it active, we retire it
        ("retired", "down", "retired"),
        ("up", None, "retired"),  # we delete what they just retired
        ("retired", None, "up"),  # we delete what they just revived
    ],
)
def test_a_write_that_loses_a_race_reads_again(
    db: Table, start: str, ours: str | None, theirs: str
) -> None:
    """The counter must equal the live monitors after another writer changed the status
    between our read and our write."""
    db.store().put_monitor(Monitor.model_validate({"host": "h", "status": start, "created_at": T0}))
    other = db.store()

    def meddle() -> None:
        other.put_monitor(Monitor.model_validate({"host": "h", "status": theirs, "created_at": T0}))

    store = db.store(client=Interfering(db.client, meddle))
    if ours is None:
        store.delete_monitor("h")
    else:
        store.put_monitor(Monitor.model_validate({"host": "h", "status": ours, "created_at": T0}))
    live = [m for m in store.list_monitors() if m.status != "retired"]
    assert db.active_count() == len(live)


def test_concurrent_leases_and_claims_go_out_once(db: Table) -> None:
    """Eight passes race for the lease and then to renew it: one holds it, and only it
    renews; eight watchers race for one alert: one sends it."""
    client = SerialClient(db.client)
    leased: list[str] = []
    renewed: list[str] = []
    claimed: list[bool] = []

    def worker(n: int) -> None:
        store = db.store(client=client)
        if store.acquire_lease("reap", f"owner-{n}", T0, HOUR):
            leased.append(f"owner-{n}")
        if store.renew_lease("reap", f"owner-{n}", T0 + MINUTE, HOUR):
            renewed.append(f"owner-{n}")
        claimed.append(store.claim_alert("down:h", T0 + n * MINUTE, HOUR))

    run_threads(8, worker)
    assert len(leased) == 1
    assert renewed == leased
    assert claimed.count(True) == 1


def test_a_cap_race_lost_in_a_transaction_is_retried(db: Table) -> None:
    """A transaction that collides with another (TransactionConflict) is tried again, not
    reported as "cap reached"."""
    conflicts = iter([True, False])

    class Conflicting(SerialClient):
        def transact_write_items(self, **kwargs: Any) -> Any:
            if next(conflicts):
                error = db.client.exceptions.TransactionCanceledException(
                    {
                        "Error": {"Code": "TransactionCanceledException", "Message": "x"},
                        "CancellationReasons": [
                            {"Code": "TransactionConflict"},
                            {"Code": "None"},
                        ],
                    },
                    "TransactWriteItems",
                )
                raise error
            return db.client.transact_write_items(**kwargs)

    store = db.store(client=Conflicting(db.client))
    assert store.create_monitor(Monitor(host="h", created_at=T0), limit=5) is True
    assert db.active_count() == 1


def test_past_the_cap_a_first_ping_costs_one_read(db: Table) -> None:
    """A leaked key inventing hosts past the cap must not cost a transaction each time."""
    calls: list[str] = []

    class Counting(SerialClient):
        def __getattr__(self, name: str) -> Any:
            calls.append(name)
            return super().__getattr__(name)

    store = db.store(client=Counting(db.client))
    assert store.create_monitor(Monitor(host="a", created_at=T0), limit=1)
    calls.clear()
    assert store.create_monitor(Monitor(host="b", created_at=T0), limit=1) is False
    assert calls == ["get_item"]


# --- TTL -------------------------------------------------------------------------------------


def test_the_table_expires_items_by_the_ttl_attribute(db: Table) -> None:
    answer = db.client.describe_time_to_live(TableName=db.name)
    assert answer["TimeToLiveDescription"]["AttributeName"] == "ttl"
    assert answer["TimeToLiveDescription"]["TimeToLiveStatus"] == "ENABLED"


def test_expiring_records_carry_a_ttl_after_their_use(db: Table) -> None:
    store = db.store()
    epoch = int(T0.timestamp())
    store.acquire_lease("reap", "alice", T0, 30 * MINUTE)
    assert db.ttl_of("lease") >= epoch + 30 * 60, "a lease must outlive its expiry"
    store.claim_alert("k", T0, HOUR)
    assert db.ttl_of("claim") >= epoch + 7 * 24 * 3600
    store.claim_alert("long", T0 + 2 * HOUR, timedelta(days=30))
    claims = {item["sk"]["S"]: int(item["ttl"]["N"]) for item in db.items("claim")}
    assert claims["long"] >= epoch + 2 * 3600 + 30 * 24 * 3600, "kept for its whole window"
    store.record_reap(reap_run(T0, T0 + MINUTE))
    assert db.ttl_of("reap") > epoch + 30 * 24 * 3600


def test_the_audit_log_and_monitors_never_expire(db: Table) -> None:
    store = db.store()
    store.record_termination(audit_record())
    store.put_monitor(Monitor(host="h", created_at=T0))
    store.keep(KeptInstance(key="runpod:a", since=T0))
    store.open_episode("e", T0)
    for pk in ("audit", "monitor", "history", "episode"):
        found = db.items(pk)
        assert found, pk
        assert all("ttl" not in item for item in found), pk


# --- read-only -----------------------------------------------------------------------------


@pytest.mark.parametrize("write", sorted(WRITES))
def test_a_read_only_store_refuses_every_write(write: str, db: Table) -> None:
    with pytest.raises(ReadOnlyStoreError):
        WRITES[write](db.store(read_only=True))
    assert db.items() == [], "a refused write must not reach the table"


def test_a_read_only_store_reads(db: Table) -> None:
    store = db.store()
    store.start_stopped_clock("runpod:a", T0)
    store.put_monitor(Monitor(host="h", created_at=T0))
    reader = db.store(read_only=True)
    assert reader.read_only is True
    assert reader.history().first_seen_stopped == {"runpod:a": T0}
    assert [m.host for m in reader.list_monitors()] == ["h"]


# --- reads across pages --------------------------------------------------------------------


def test_reads_follow_pagination(db: Table) -> None:
    """Big messages push the monitor partition past DynamoDB's 1 MB page."""
    store = db.store()
    big = "x" * 120 * 1024
    hosts = [f"h{i:02d}" for i in range(12)]
    for host in hosts:
        store.put_monitor(Monitor(host=host, created_at=T0, last_message=big))
    first_page = db.client.query(
        TableName=db.name,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": "monitor"}},
    )
    assert "LastEvaluatedKey" in first_page, "the test needs more than one page"
    assert [m.host for m in store.list_monitors()] == hosts


# --- boto3 is imported lazily ----------------------------------------------------------------


def test_the_module_imports_without_boto3() -> None:
    code = (
        "import sys; sys.modules['boto3'] = None; sys.modules['botocore'] = None\n"
        "import reaper.store.dynamodb as d\n"
        "try:\n"
        "    d.DynamoDBStore('t')\n"
        "except ImportError:\n"
        "    print('import error when used')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "import error when used"


# --- the status page -----------------------------------------------------------------------


def test_snapshots_and_sign_in_tokens_expire_by_ttl(db: Table) -> None:
    from reaper.core.snapshot import Snapshot
    from reaper.store.rows import SNAPSHOT_RETENTION

    store = db.store()
    store.record_snapshot(Snapshot(at=T0))
    assert db.ttl_of("snapshot") == int((T0 + SNAPSHOT_RETENTION).timestamp())
    store.record_login_token("hash", T0 + 15 * MINUTE)
    [item] = db.items("login")
    assert item["sk"]["S"] == "hash", "the token's hash is the key; the token is never stored"
    assert int(item["ttl"]["N"]) >= int((T0 + 15 * MINUTE).timestamp())
