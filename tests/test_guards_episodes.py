"""The guard pass over several passes: each leak alerts once per episode, again only on change;
balance crossings; idle only after IDLE_ALERT_AFTER; failures are warnings (issue 9)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from emulators.channels import RecordingNotifier
from emulators.clock import FakeClock
from reaper.channels.base import Notifier
from reaper.core.leaks import leak_key
from reaper.core.models import (
    AccountError,
    Alert,
    Balance,
    Delivery,
    Instance,
    ProviderName,
    Volume,
)
from reaper.interfaces.views import guards_json
from reaper.passes.context import Context
from reaper.passes.guards import GuardReport, guard_pass
from reaper.passes.observe import Observation
from reaper.providers.base import ProviderError, TerminateOutcome
from reaper.settings.model import Settings
from reaper.settings.parse import Account
from reaper.store.sqlite import SQLiteStore
from tests.fakes.notifiers import StandIn
from tests.settings_support import settings as settings_of

START = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
H = timedelta(hours=1)
M = timedelta(minutes=1)


@dataclass
class FakeClient:
    """A `ProviderClient` whose balance and volumes a test sets between passes."""

    provider: ProviderName
    account: str = "main"
    balance_value: float | None = 100.0
    spend: float | None = None
    volume_list: list[Volume] = field(default_factory=list)
    balance_error: str | None = None
    volumes_error: str | None = None
    calls: list[str] = field(default_factory=list)

    async def list_instances(self) -> list[Instance]:
        raise AssertionError("the guard pass must not list instances again")

    async def terminate(self, instance_id: str) -> TerminateOutcome:
        raise AssertionError("the guards never delete anything")

    async def balance(self) -> Balance:
        self.calls.append("balance")
        if self.balance_error:
            raise ProviderError(self.provider, self.account, self.balance_error)
        return Balance(
            provider=self.provider,
            account=self.account,
            balance=self.balance_value,
            spend_per_hour=self.spend,
        )

    async def billing(self, days: int) -> None:
        return None  # as a provider without a billing history answers

    async def instance_billing(self, days: int) -> None:
        return None

    async def volumes(self, instances: Sequence[Instance] | None = None) -> list[Volume]:
        self.calls.append("volumes")
        if self.volumes_error:
            raise ProviderError(self.provider, self.account, self.volumes_error)
        return list(self.volume_list)

    async def aclose(self) -> None:
        return None


class FailingNotifier(StandIn):
    def __init__(self) -> None:
        self.alerts: list[Alert] = []

    async def send(self, alert: Alert) -> list[Delivery]:
        self.alerts.append(alert)
        return [Delivery(channel="telegram", ok=False, detail="HTTP 500")]


def vast_inst(id_: str, state: str, raw: str, **kw: object) -> Instance:
    fields: dict[str, object] = {
        "provider": "vast",
        "account": "main",
        "id": id_,
        "name": f"job-{id_}",
        "state": state,
        "raw_status": raw,
        # As the Vast client reads it: paused with its GPU still billed.
        "frozen": raw == "frozen",
    }
    fields.update(kw)
    return Instance.model_validate(fields)


def runpod_volume(id_: str, attached: bool | None) -> Volume:
    return Volume(
        provider="runpod",
        account="main",
        id=id_,
        name=f"data-{id_}",
        size_gb=50,
        attached=attached,
        cost_per_month=3.5,
    )


SETTINGS = settings_of(
    runpod_accounts=(Account("runpod", "main", "rp-key-000000"),),
    vast_accounts=(Account("vast", "main", "vast-key-000000"),),
    balance_min=5.0,
    idle_alert_after=H,
    stopped_ttl=24 * H,
)


@dataclass
class Rig:
    store: SQLiteStore
    clock: FakeClock
    notifier: RecordingNotifier
    runpod: FakeClient
    vast: FakeClient
    settings: Settings = SETTINGS

    def run(
        self,
        fleet: list[Instance],
        *,
        failed: tuple[tuple[str, str], ...] = (),
        dry_run: bool = False,
        volume_orphan_after: timedelta | None = None,
        store: SQLiteStore | None = None,
        notifier: Notifier | None = None,
        clients: list[FakeClient] | None = None,
    ) -> GuardReport:
        """One guard pass on `fleet` as the reap pass's listing (`failed`: accounts whose
        listing failed)."""
        settings = self.settings
        if volume_orphan_after is not None:
            settings = replace(settings, volume_orphan_after=volume_orphan_after)
        clients = clients or [self.runpod, self.vast]
        accounts = [(c.provider, c.account) for c in clients]
        seen = Observation(
            instances=fleet,
            errors=[AccountError(provider=p, account=a, message="failed") for p, a in failed],
            listed=accounts,
            complete={a for a in accounts if a not in failed},
        )
        ctx = Context.make(
            settings,
            store or self.store,
            clients,
            notifier or self.notifier,
            self.clock,
            dry_run=dry_run,
        )
        return asyncio.run(guard_pass(ctx, seen, fleet))

    def events(self, event: str) -> list[Alert]:
        return [a for a in self.notifier.alerts if a.event == event]


@pytest.fixture
def rig(tmp_path: Path) -> Rig:
    store = SQLiteStore(str(tmp_path / "state.db"))
    yield Rig(
        store, FakeClock(START), RecordingNotifier(), FakeClient("runpod"), FakeClient("vast")
    )
    store.close()


def test_a_frozen_instance_alerts_once_over_many_passes_and_again_on_change(rig: Rig) -> None:
    frozen = vast_inst("7", "unknown", "frozen", cost_per_hour=0.4)
    for _ in range(4):
        report = rig.run([frozen])
        assert [f.kind for f in report.findings] == ["frozen"]
        rig.clock.advance(H)
    assert len(rig.events("frozen")) == 1
    assert "frozen" in rig.events("frozen")[0].title
    # A material change (the price) alerts again, once.
    pricier = frozen.model_copy(update={"cost_per_hour": 0.9})
    rig.run([pricier])
    rig.run([pricier])
    assert len(rig.events("frozen")) == 2
    # Gone: the episode closes; frozen again later is a new episode and a new alert.
    rig.run([])
    assert rig.store.open_episodes("leak:") == []
    rig.run([frozen])
    assert len(rig.events("frozen")) == 3


def test_idle_alerts_only_once_the_span_reaches_idle_alert_after(rig: Rig) -> None:
    idle = vast_inst("3", "running", "running", gpu_util=0.2, cost_per_hour=1.5)
    rig.run([idle])
    rig.clock.advance(30 * M)
    rig.run([idle.model_copy(update={"gpu_util": 0.0})])
    assert rig.events("idle") == []
    rig.clock.advance(30 * M)
    rig.run([idle])
    [alert] = rig.events("idle")
    assert "idle while billing $1.50/h" in alert.title
    assert "1h" in alert.body
    rig.clock.advance(H)
    rig.run([idle])
    assert len(rig.events("idle")) == 1


def test_idle_span_restarts_when_the_gpu_works_but_not_when_metrics_are_missing(
    rig: Rig,
) -> None:
    idle = vast_inst("3", "running", "running", gpu_util=0.0)
    key = leak_key("idle", "vast", "main", "3")
    rig.run([idle])
    rig.clock.advance(40 * M)
    rig.run([idle.model_copy(update={"gpu_util": None})])  # no metric: the span goes on
    assert [e.key for e in rig.store.open_episodes("leak:")] == [key]
    rig.clock.advance(20 * M)
    rig.run([idle])
    assert len(rig.events("idle")) == 1

    rig.run([idle.model_copy(update={"gpu_util": 55.0})])  # busy: episode over
    assert rig.store.open_episodes("leak:") == []
    rig.clock.advance(10 * M)
    rig.run([idle])
    rig.clock.advance(50 * M)
    rig.run([idle])
    assert len(rig.events("idle")) == 1  # the new span is 50m: not yet
    rig.clock.advance(10 * M)
    rig.run([idle])
    assert len(rig.events("idle")) == 2


def test_stuck_instances_alert_after_the_ttl(rig: Rig) -> None:
    stuck = Instance(
        provider="runpod", account="main", id="p1", name="err", state="unknown", raw_status="ERROR"
    )
    rig.run([stuck])
    rig.clock.advance(23 * H)
    rig.run([stuck])
    assert rig.events("stuck") == []
    rig.clock.advance(H)
    rig.run([stuck])
    rig.clock.advance(H)
    rig.run([stuck])
    [alert] = rig.events("stuck")
    assert "ERROR for 1d" in alert.title


def test_orphan_volume_alerts_after_the_orphan_setting_once(rig: Rig) -> None:
    after = 6 * H
    rig.runpod.volume_list = [runpod_volume("v1", False), runpod_volume("v2", True)]
    rig.run([], volume_orphan_after=after)
    rig.clock.advance(5 * H)
    rig.run([], volume_orphan_after=after)
    assert rig.events("orphan_volume") == []
    rig.clock.advance(H)
    rig.run([], volume_orphan_after=after)
    rig.clock.advance(H)
    rig.run([], volume_orphan_after=after)
    [alert] = rig.events("orphan_volume")
    assert "data-v1" in alert.title and "$3.50/month" in alert.title
    # Attached again: closed. Unattached again: a fresh 6h wait.
    rig.runpod.volume_list = [runpod_volume("v1", True)]
    rig.run([], volume_orphan_after=after)
    rig.runpod.volume_list = [runpod_volume("v1", False)]
    rig.run([], volume_orphan_after=after)
    assert len(rig.events("orphan_volume")) == 1


def test_a_failed_volume_listing_keeps_the_orphan_clock(rig: Rig) -> None:
    rig.runpod.volume_list = [runpod_volume("v1", False)]
    rig.run([], volume_orphan_after=2 * H)
    rig.runpod.volumes_error = "HTTP 503"
    rig.clock.advance(H)
    report = rig.run([], volume_orphan_after=2 * H)
    assert [w.message for w in report.warnings] == ["HTTP 503"]
    assert len(rig.store.open_episodes("leak:orphan_volume")) == 1
    rig.runpod.volumes_error = None
    rig.clock.advance(H)
    rig.run([], volume_orphan_after=2 * H)
    assert len(rig.events("orphan_volume")) == 1


def test_max_runtime_alerts_once_per_run(tmp_path: Path, rig: Rig) -> None:
    rig.settings = replace(SETTINGS, max_runtime=10 * H)
    long = vast_inst("4", "running", "running", started_at=START - 11 * H, gpu_util=80.0)
    for _ in range(3):
        rig.run([long])
        rig.clock.advance(H)
    assert len(rig.events("max_runtime")) == 1
    restarted = long.model_copy(update={"started_at": rig.clock.now() - 10 * H - M})
    rig.run([restarted])
    assert len(rig.events("max_runtime")) == 2


def test_balance_crossing_down_and_up_alerts_once_per_crossing(rig: Rig) -> None:
    seen: list[int] = []
    for amount in (20.0, 4.0, 3.0, 2.0, 9.0, 12.0, 4.5, 4.0, 6.0):
        rig.vast.balance_value = amount
        rig.run([vast_inst("1", "running", "running", cost_per_hour=0.5)])
        seen.append(len(rig.events("balance_low")))
        rig.clock.advance(H)
    assert seen == [0, 1, 1, 1, 1, 1, 2, 2, 2]
    first = rig.events("balance_low")[0]
    # Vast has no spend rate: the fleet's $0.50/h gives 8h left from $4.
    assert "$4.00" in first.title and "8h" in first.body


def test_unreadable_balance_neither_alerts_nor_closes(rig: Rig) -> None:
    rig.vast.balance_value = 1.0
    rig.run([])
    rig.vast.balance_value = None
    rig.run([])
    rig.vast.balance_value = 1.0
    rig.run([])
    assert len(rig.events("balance_low")) == 1


def test_graphql_gone_is_one_warning_never_an_error(rig: Rig) -> None:
    rig.runpod.balance_error = "reading the balance (GraphQL): HTTP 410"
    for _ in range(3):
        report = rig.run([])
        assert [(w.provider, w.message) for w in report.warnings] == [
            ("runpod", "reading the balance (GraphQL): HTTP 410")
        ]
        rig.clock.advance(H)
    [alert] = rig.events("guard_fetch_failed")
    assert "GraphQL" in alert.title
    assert [e.key for e in rig.store.open_episodes("graphql:")] == ["graphql:main"]
    rig.runpod.balance_error = None
    rig.run([])
    assert rig.store.open_episodes("graphql:") == []


def test_a_failed_listing_infers_nothing_gone_and_adds_no_second_alert(rig: Rig) -> None:
    frozen = vast_inst("7", "unknown", "frozen")
    rig.run([frozen])
    rig.vast.balance_error = "HTTP 401"
    rig.vast.volumes_error = "HTTP 401"
    report = rig.run([], failed=(("vast", "main"),))
    assert len(report.warnings) == 2
    assert [e.key for e in rig.store.open_episodes("leak:")] == [
        leak_key("frozen", "vast", "main", "7")
    ]
    assert rig.events("guard_fetch_failed") == []  # the reap pass alerted provider_failing


def test_undelivered_alerts_are_retried_next_pass(rig: Rig) -> None:
    failing = FailingNotifier()
    frozen = vast_inst("7", "unknown", "frozen")
    rig.run([frozen], notifier=failing, clients=[rig.vast])
    rig.run([frozen])
    rig.run([frozen])
    assert len(failing.alerts) == 1
    assert len(rig.events("frozen")) == 1


def test_dry_run_writes_and_sends_nothing(tmp_path: Path, rig: Rig) -> None:
    read_only = SQLiteStore(str(tmp_path / "absent.db"), read_only=True)
    rig.vast.balance_value = 1.0
    frozen = vast_inst("7", "unknown", "frozen")
    report = rig.run([frozen], store=read_only, dry_run=True)
    read_only.close()
    assert report.warnings == []
    # What it would have alerted: the frozen instance and the low balance; nothing was sent.
    assert report.alerted == ["balance:vast:main", leak_key("frozen", "vast", "main", "7")]
    assert rig.notifier.alerts == []
    assert not (tmp_path / "absent.db").exists()


def test_guard_report_json_has_leaks_balances_and_warnings(rig: Rig) -> None:
    rig.vast.balance_value = 2.0
    rig.runpod.balance_error = "GraphQL HTTP 404"
    report = rig.run([vast_inst("7", "unknown", "frozen", cost_per_hour=None)])
    data = guards_json(report)
    assert data["leaks"][0]["kind"] == "frozen" and data["leaks"][0]["alerted"] is True
    [vast] = [b for b in data["balances"] if b["provider"] == "vast"]
    assert vast["low"] is True and vast["balance"] == 2.0
    assert data["warnings"][0]["provider"] == "runpod"
