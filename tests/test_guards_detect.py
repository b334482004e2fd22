"""Pure leak detection, one leak kind at a time (issue 9: leaks that are not "stopped")."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from reaper.core.leaks import (
    frozen_instances,
    hours_left,
    idle_instances,
    leak_key,
    orphan_volumes,
    over_max_runtime,
    stuck_instances,
)
from reaper.core.models import Balance, Episode, Instance, Volume
from reaper.passes.guards import (
    Finding,
    detect,
    due,
    is_low,
    parse_leak_key,
    undetermined_keys,
    with_spend,
)
from reaper.settings.model import Settings

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
H = timedelta(hours=1)


def inst(id_: str, state: str, raw: str, provider: str = "vast", **kw: object) -> Instance:
    fields: dict[str, object] = {
        "provider": provider,
        "account": "main",
        "id": id_,
        "name": f"job-{id_}",
        "state": state,
        "raw_status": raw,
        # As the Vast client reads it: paused with its GPU still billed.
        "frozen": provider == "vast" and raw == "frozen",
    }
    fields.update(kw)
    return Instance.model_validate(fields)


def vol(id_: str, attached: bool | None, provider: str = "runpod", **kw: object) -> Volume:
    fields: dict[str, object] = {
        "provider": provider,
        "account": "main",
        "id": id_,
        "name": f"data-{id_}",
        "size_gb": 100.0,
        "attached": attached,
        "cost_per_month": 7.0,
    }
    fields.update(kw)
    return Volume.model_validate(fields)


def ids(findings: list[Finding]) -> list[str]:
    return sorted(f.id for f in findings)


def test_frozen_vast_instances_are_found_and_nothing_else() -> None:
    fleet = [
        inst("1", "unknown", "frozen", cost_per_hour=0.4),
        inst("2", "running", "running", cost_per_hour=0.4),
        inst("3", "unknown", "offline"),
        inst("4", "unknown", "FROZEN", provider="runpod"),  # not a RunPod status
    ]
    found = frozen_instances(fleet)
    assert ids(found) == ["1"]
    assert found[0].kind == "frozen"
    assert found[0].alert_after == timedelta(0)
    assert "$0.40/h" in found[0].detail


def test_unknown_and_error_instances_wait_for_the_ttl_and_frozen_is_not_stuck() -> None:
    fleet = [
        inst("p1", "unknown", "ERROR", provider="runpod"),
        inst("2", "unknown", "offline"),
        inst("3", "unknown", "frozen"),
        inst("4", "stopped", "exited"),
        inst("5", "running", "running"),
    ]
    found = stuck_instances(fleet, ttl=24 * H, stuck_after=6 * H)
    assert ids(found) == ["2", "p1"]
    assert {f.alert_after for f in found} == {24 * H}
    assert {f.raw_status for f in found} == {"ERROR", "offline"}


def test_orphan_volumes_need_attached_false_and_wait_for_the_setting() -> None:
    volumes = [
        vol("v1", False),
        vol("v2", True),
        vol("v3", None),  # cannot tell: never a leak
        vol("9", False, provider="vast", cost_per_month=None),
    ]
    found = orphan_volumes(volumes, orphan_after=6 * H)
    assert ids(found) == ["9", "v1"]
    assert {f.alert_after for f in found} == {6 * H}
    v1 = next(f for f in found if f.id == "v1")
    assert v1.cost_per_hour is not None and abs(v1.cost_per_hour * 730 - 7.0) < 1e-3
    assert next(f for f in found if f.id == "9").cost_per_hour is None


def test_max_runtime_uses_started_at_else_created_at_and_is_off_when_unset() -> None:
    fleet = [
        inst("1", "running", "running", started_at=NOW - 5 * H, created_at=NOW - 50 * H),
        inst("2", "running", "running", created_at=NOW - 13 * H),
        inst("3", "running", "running", started_at=NOW - 11 * H, created_at=NOW - 50 * H),
        inst("4", "stopped", "stopped", created_at=NOW - 50 * H),
        inst("5", "running", "running"),  # no start known: cannot tell
    ]
    assert over_max_runtime(fleet, NOW, None) == []
    assert ids(over_max_runtime(fleet, NOW, 12 * H)) == ["2"]
    assert ids(over_max_runtime(fleet, NOW, 4 * H)) == ["1", "2", "3"]


def test_a_restart_changes_the_max_runtime_detail() -> None:
    before = over_max_runtime([inst("1", "running", "running", started_at=NOW - 5 * H)], NOW, H)
    after = over_max_runtime([inst("1", "running", "running", started_at=NOW - 2 * H)], NOW, H)
    assert before[0].key == after[0].key
    assert before[0].detail != after[0].detail


def test_idle_is_running_under_one_percent_with_a_known_utilisation() -> None:
    fleet = [
        inst("1", "running", "running", gpu_util=0.0),
        inst("2", "running", "running", gpu_util=0.9),
        inst("3", "running", "running", gpu_util=1.0),
        inst("4", "running", "running", gpu_util=None),
        inst("5", "stopped", "stopped", gpu_util=0.0),
    ]
    found = idle_instances(fleet, idle_after=H)
    assert ids(found) == ["1", "2"]
    assert {f.alert_after for f in found} == {H}
    # The utilisation itself is not material: it moves every pass.
    assert found[0].detail == found[1].detail


def test_detect_gathers_every_kind_and_skips_terminated() -> None:
    settings = Settings(max_runtime=H, idle_alert_after=2 * H)
    fleet = [
        inst("1", "unknown", "frozen"),
        inst("2", "unknown", "offline"),
        inst("3", "running", "running", gpu_util=0.0, started_at=NOW - 3 * H),
        inst("p9", "terminated", "TERMINATED", provider="runpod", created_at=NOW - 90 * H),
    ]
    found = detect(fleet, [vol("v1", False)], NOW, replace(settings, volume_orphan_after=5 * H))
    kinds = sorted((f.kind, f.id) for f in found)
    assert kinds == [
        ("frozen", "1"),
        ("idle", "3"),
        ("max_runtime", "3"),
        ("orphan_volume", "v1"),
        ("stuck", "2"),
    ]
    assert len({f.key for f in found}) == len(found)


def test_leak_keys_round_trip() -> None:
    key = leak_key("orphan_volume", "runpod", "acct-1", "vol:odd")
    assert parse_leak_key(key) == ("orphan_volume", "runpod", "acct-1", "vol:odd")
    assert parse_leak_key("balance:vast:main") is None


def test_undetermined_keeps_idle_without_metrics_and_volumes_that_cannot_be_told() -> None:
    fleet = [inst("1", "running", "running"), inst("2", "running", "running", gpu_util=0.0)]
    keys = undetermined_keys(fleet, [vol("v1", None), vol("v2", False)])
    assert keys == {
        leak_key("idle", "vast", "main", "1"),
        leak_key("orphan_volume", "runpod", "main", "v1"),
    }


def episode(key: str, opened: datetime, detail: str, alerted: datetime | None) -> Episode:
    return Episode(key=key, opened_at=opened, detail=detail, alerted_at=alerted)


def test_due_waits_for_alert_after_then_once_then_again_only_on_change() -> None:
    [idle] = idle_instances([inst("1", "running", "running", gpu_util=0.0)], idle_after=H)
    young = {idle.key: episode(idle.key, NOW - 30 * timedelta(minutes=1), idle.detail, None)}
    old = {idle.key: episode(idle.key, NOW - H, idle.detail, None)}
    alerted = {idle.key: episode(idle.key, NOW - 2 * H, idle.detail, NOW - H)}
    changed = {idle.key: episode(idle.key, NOW - 2 * H, "under 1% GPU, $9.00/h", NOW - H)}
    assert due([idle], young, NOW) == []
    assert due([idle], old, NOW) == [idle]
    assert due([idle], alerted, NOW) == []
    assert due([idle], changed, NOW) == [idle]
    # No episode (a dry run): first seen now, so only immediate kinds are due.
    [frozen] = frozen_instances([inst("2", "unknown", "frozen")])
    assert due([idle, frozen], {}, NOW) == [frozen]


def test_balance_low_hours_left_and_vast_spend_from_the_fleet() -> None:
    fleet = [
        inst("1", "running", "running", cost_per_hour=0.5),
        inst("2", "stopped", "stopped", cost_per_hour=0.01),
        inst("3", "running", "running", account="other", cost_per_hour=9.0),
    ]
    vast = Balance(provider="vast", account="main", balance=2.55)
    runpod = Balance(provider="runpod", account="main", balance=20.0, spend_per_hour=4.0)
    filled = with_spend([vast, runpod], fleet)
    assert filled[0].spend_per_hour == 0.51
    # RunPod's own figure gives way to the fleet's, as the spend table counts it: nothing of
    # this account is listed, so nothing burns and its runway is endless.
    assert filled[1].spend_per_hour == 0.0
    assert hours_left(filled[0]) == 5.0
    assert hours_left(filled[1]) is None
    assert is_low(filled[0], 5.0) is True
    assert is_low(filled[1], 5.0) is False
    assert is_low(Balance(provider="vast", account="x"), 5.0) is None
    # A failed listing is not "nothing bills": the spend stays unknown.
    assert with_spend([vast], [], failed_accounts={("vast", "main")})[0].spend_per_hour is None
