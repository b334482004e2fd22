"""The reap policy, one rule at a time (docs/safety.md, "Safety rules")."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from reaper.core.license import announced_deadline
from reaper.core.models import History, Instance, KeptInstance, WarningRecord
from reaper.core.policy import decide
from reaper.settings.model import Settings
from tests.settings_support import settings as settings_of

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
H = timedelta(hours=1)
# A channel that reaches a person: without one a warning licenses nothing and the policy holds
# (tests/test_no_channel_promises_no_termination.py).
SETTINGS = settings_of(
    stopped_ttl=24 * H,
    warn_before=H,
    max_terminations=10,
    telegram_bot_token="1:abc",
    telegram_chat_id="42",
)


def pod(id_: str = "p1", state: str = "stopped", **kw: object) -> Instance:
    fields: dict[str, object] = {
        "provider": "runpod",
        "account": "main",
        "id": id_,
        "name": f"train-{id_}",
        "state": state,
        "raw_status": {"stopped": "EXITED", "running": "RUNNING"}.get(state, state.upper()),
    }
    fields.update(kw)
    return Instance.model_validate(fields)


def history(
    stopped: dict[str, datetime] | None = None,
    warned: dict[str, datetime] | None = None,
    kept: dict[str, KeptInstance] | None = None,
) -> History:
    """Each warning as a pass records it: heard, in enforce mode, for the recorded stretch
    (else the warning's own time), announcing the deadline SETTINGS give it then."""
    stopped = stopped or {}
    warnings = {key: warning_of(stopped.get(key, at), at) for key, at in (warned or {}).items()}
    return History(first_seen_stopped=stopped, warnings=warnings, kept=kept or {})


def warning_of(stretch: datetime, at: datetime, settings: Settings = SETTINGS) -> WarningRecord:
    return WarningRecord(
        at=at,
        heard=True,
        mode="enforce",
        stretch=stretch,
        issued_at=at,
        terminate_at=announced_deadline(stretch, at, settings),
        ttl=settings.stopped_ttl,
        warn_before=settings.warn_before,
    )


def only(plan_decisions: list, key: str = "runpod:p1"):  # type: ignore[no-untyped-def]
    matching = [d for d in plan_decisions if d.instance.key == key]
    assert len(matching) <= 1
    return matching[0] if matching else None


def test_first_sight_of_a_stopped_pod_starts_its_clock_and_decides_nothing() -> None:
    plan = decide([pod()], history(), NOW, SETTINGS)
    assert plan.decisions == []
    assert [(c.key, c.change, c.at) for c in plan.clock_changes] == [("runpod:p1", "start", NOW)]
    assert plan.instances[0].stopped_since == NOW


def test_before_the_warning_window_nothing_happens() -> None:
    # The window is REAPER_WARN_BEFORE + REAPER_REAP_EVERY (1h + 1h) before the deadline.
    h = history(stopped={"runpod:p1": NOW - 22 * H + timedelta(seconds=1)})
    plan = decide([pod()], h, NOW, SETTINGS)
    assert plan.decisions == []
    assert plan.clock_changes == []
    assert plan.instances[0].stopped_since == NOW - 22 * H + timedelta(seconds=1)


def test_inside_the_warning_window_it_warns_with_the_deadline() -> None:
    h = history(stopped={"runpod:p1": NOW - 23 * H - timedelta(minutes=10)})
    decision = only(decide([pod()], h, NOW, SETTINGS).decisions)
    assert decision is not None
    assert decision.action == "warn"
    # Due in 50 minutes, but the warning promises the full hour of notice.
    assert decision.due_at == NOW + H
    assert "2026-06-01 13:00 UTC" in decision.reason


def test_due_without_a_warning_warns_first_and_gives_the_full_notice() -> None:
    # A reaper that was down for days: the pod is long past due, but has never been warned.
    h = history(stopped={"runpod:p1": NOW - 7 * 24 * H})
    decision = only(decide([pod()], h, NOW, SETTINGS).decisions)
    assert decision is not None and decision.action == "warn"
    assert decision.due_at == NOW + H


def test_due_and_warned_by_an_earlier_pass_terminates() -> None:
    h = history(stopped={"runpod:p1": NOW - 25 * H}, warned={"runpod:p1": NOW - 2 * H})
    decision = only(decide([pod()], h, NOW, SETTINGS).decisions)
    assert decision is not None and decision.action == "terminate"
    assert "stopped for 1d1h, limit 1d" in decision.reason


def test_a_late_warning_delays_termination_until_its_notice_has_passed() -> None:
    h = history(
        stopped={"runpod:p1": NOW - 30 * H}, warned={"runpod:p1": NOW - timedelta(minutes=30)}
    )
    # warned 30 minutes ago, WARN_BEFORE is 1h: not yet.
    assert only(decide([pod()], h, NOW, SETTINGS).decisions) is None
    later = decide([pod()], h, NOW + 31 * timedelta(minutes=1), SETTINGS)
    decision = only(later.decisions)
    assert decision is not None and decision.action == "terminate"


def test_a_warning_from_this_same_moment_does_not_count_as_an_earlier_pass() -> None:
    h = history(stopped={"runpod:p1": NOW - 30 * H}, warned={"runpod:p1": NOW})
    assert only(decide([pod()], h, NOW, SETTINGS).decisions) is None


def test_a_warning_from_an_earlier_stretch_is_void() -> None:
    # Warned during a previous stretch, then restarted and stopped again (first seen 25h ago).
    earlier = {"runpod:p1": warning_of(NOW - 50 * H, NOW - 26 * H)}
    h = history(stopped={"runpod:p1": NOW - 25 * H}).model_copy(update={"warnings": earlier})
    decision = only(decide([pod()], h, NOW, SETTINGS).decisions)
    assert decision is not None and decision.action == "warn"


@pytest.mark.parametrize("state", ["running", "starting"])
def test_running_or_starting_resets_the_clock_and_voids_warnings(state: str) -> None:
    h = history(stopped={"runpod:p1": NOW - 25 * H}, warned={"runpod:p1": NOW - 2 * H})
    plan = decide([pod(state=state)], h, NOW, SETTINGS)
    assert plan.decisions == []
    assert [(c.key, c.change) for c in plan.clock_changes] == [("runpod:p1", "reset")]
    assert plan.instances[0].stopped_since is None


def test_running_without_any_history_records_nothing() -> None:
    plan = decide([pod(state="running")], history(), NOW, SETTINGS)
    assert plan.clock_changes == [] and plan.decisions == []


@pytest.mark.parametrize("state", ["unknown", "terminated"])
def test_unknown_keeps_the_clock_and_is_never_acted_on(state: str) -> None:
    h = history(stopped={"runpod:p1": NOW - 100 * H}, warned={"runpod:p1": NOW - 2 * H})
    plan = decide([pod(state=state, raw_status="ERROR")], h, NOW, SETTINGS)
    assert plan.decisions == []
    assert plan.clock_changes == []
    assert plan.instances[0].stopped_since == NOW - 100 * H


def test_unknown_then_stopped_again_continues_the_same_stretch() -> None:
    h = history(stopped={"runpod:p1": NOW - 30 * H}, warned={"runpod:p1": NOW - 2 * H})
    decide([pod(state="unknown")], h, NOW - 3 * H, SETTINGS)  # pure: nothing to record
    decision = only(decide([pod()], h, NOW, SETTINGS).decisions)
    assert decision is not None and decision.action == "terminate"


DUE = history(stopped={"runpod:p1": NOW - 48 * H}, warned={"runpod:p1": NOW - 2 * H})


def test_protect_marker_in_the_name_protects() -> None:
    decision = only(decide([pod(name="exp reaper:keep")], DUE, NOW, SETTINGS).decisions)
    assert decision is not None and decision.action == "protect"
    assert "reaper:keep" in decision.reason


def test_a_custom_protect_marker_is_honoured() -> None:
    settings = replace(SETTINGS, protect_marker="DONOTREAP")
    assert only(decide([pod(name="x-DONOTREAP")], DUE, NOW, settings).decisions).action == "protect"
    assert (
        only(decide([pod(name="reaper:keep")], DUE, NOW, settings).decisions).action == "terminate"
    )


def test_locked_pods_are_protected() -> None:
    decision = only(decide([pod(locked=True)], DUE, NOW, SETTINGS).decisions)
    assert decision is not None and decision.action == "protect"
    assert "locked" in decision.reason


def test_reaper_keep_protects_until_it_expires_then_warns_anew() -> None:
    """A keep recorded after the warning voids it: when the keep ends, a new warning."""
    kept = KeptInstance(key="runpod:p1", since=NOW - H, until=NOW + H)
    h = DUE.model_copy(update={"kept": {"runpod:p1": kept}})
    assert only(decide([pod()], h, NOW, SETTINGS).decisions).action == "protect"
    assert only(decide([pod()], h, NOW + 2 * H, SETTINGS).decisions).action == "warn"


def test_a_keep_recorded_before_the_warning_leaves_it_licensed() -> None:
    kept = KeptInstance(key="runpod:p1", since=NOW - 10 * H, until=NOW - 5 * H)
    h = DUE.model_copy(update={"kept": {"runpod:p1": kept}})
    assert only(decide([pod()], h, NOW, SETTINGS).decisions).action == "terminate"


def test_reaper_keep_without_an_end_protects_forever() -> None:
    kept = KeptInstance(key="runpod:p1", since=NOW - H)
    h = DUE.model_copy(update={"kept": {"runpod:p1": kept}})
    later = NOW + 365 * 24 * H
    assert only(decide([pod()], h, later, SETTINGS).decisions).action == "protect"


def test_protection_does_not_stop_the_clock() -> None:
    plan = decide([pod(name="reaper:keep")], history(), NOW, SETTINGS)
    assert [c.change for c in plan.clock_changes] == ["start"]


def test_cluster_members_are_held_with_the_reason() -> None:
    decision = only(decide([pod(cluster_id="c9")], DUE, NOW, SETTINGS).decisions)
    assert decision is not None and decision.action == "hold"
    assert "cluster" in decision.reason and "c9" in decision.reason


def test_observe_mode_holds_what_would_be_terminated() -> None:
    settings = replace(SETTINGS, mode="observe")
    observed = DUE.model_copy(
        update={
            "warnings": {
                k: w.model_copy(update={"mode": "observe"}) for k, w in DUE.warnings.items()
            }
        }
    )
    decision = only(decide([pod()], observed, NOW, settings).decisions)
    assert decision is not None and decision.action == "hold"
    assert "would terminate" in decision.reason


def test_observe_mode_still_warns() -> None:
    settings = replace(SETTINGS, mode="observe")
    h = history(stopped={"runpod:p1": NOW - 23 * H - timedelta(minutes=1)})
    assert only(decide([pod()], h, NOW, settings).decisions).action == "warn"


def _due_fleet(count: int) -> tuple[list[Instance], History]:
    fleet = [pod(f"p{i}") for i in range(count)]
    stopped = {p.key: NOW - 48 * H for p in fleet}
    warned = {p.key: NOW - 2 * H for p in fleet}
    return fleet, history(stopped=stopped, warned=warned)


def test_at_the_cap_every_due_instance_terminates() -> None:
    fleet, h = _due_fleet(3)
    plan = decide(fleet, h, NOW, replace(SETTINGS, max_terminations=3))
    assert [d.action for d in plan.decisions] == ["terminate"] * 3
    assert not plan.cap_exceeded and plan.due_count == 3


def test_over_the_cap_nothing_terminates_and_all_are_held() -> None:
    fleet, h = _due_fleet(4)
    plan = decide(fleet, h, NOW, replace(SETTINGS, max_terminations=3))
    assert [d.action for d in plan.decisions] == ["hold"] * 4
    assert plan.cap_exceeded and plan.due_count == 4
    assert all("REAPER_MAX_TERMINATIONS=3" in d.reason for d in plan.decisions)


def test_the_cap_counts_over_all_accounts_and_providers() -> None:
    fleet = [
        pod("a", account="one"),
        pod("b", account="two"),
        pod("c", provider="vast", raw_status="stopped"),
    ]
    stopped = {p.key: NOW - 48 * H for p in fleet}
    warned = {p.key: NOW - 2 * H for p in fleet}
    plan = decide(fleet, history(stopped, warned), NOW, replace(SETTINGS, max_terminations=2))
    assert plan.cap_exceeded and {d.action for d in plan.decisions} == {"hold"}


def test_the_command_line_cap_overrides_the_setting() -> None:
    fleet, h = _due_fleet(4)
    plan = decide(fleet, h, NOW, replace(SETTINGS, max_terminations=3), max_terminations=4)
    assert [d.action for d in plan.decisions] == ["terminate"] * 4
    held = decide(fleet, h, NOW, replace(SETTINGS, max_terminations=9), max_terminations=2)
    assert all("--max-terminations=2" in d.reason for d in held.decisions)


def test_a_cap_of_zero_never_terminates() -> None:
    fleet, h = _due_fleet(1)
    plan = decide(fleet, h, NOW, replace(SETTINGS, max_terminations=0))
    assert [d.action for d in plan.decisions] == ["hold"]
    assert "turns terminations off" in plan.decisions[0].reason


def test_held_cluster_members_do_not_count_against_the_cap() -> None:
    fleet, h = _due_fleet(2)
    fleet.append(pod("c", cluster_id="c1"))
    h = h.model_copy(
        update={
            "first_seen_stopped": {**h.first_seen_stopped, "runpod:c": NOW - 48 * H},
            "warnings": {
                **h.warnings,
                "runpod:c": WarningRecord(at=NOW - 2 * H, heard=True, mode="enforce"),
            },
        }
    )
    plan = decide(fleet, h, NOW, replace(SETTINGS, max_terminations=2))
    assert sorted(d.action for d in plan.decisions) == ["hold", "terminate", "terminate"]


def test_the_policy_is_deterministic_and_does_not_mutate_its_inputs() -> None:
    fleet, h = _due_fleet(3)
    before = h.model_dump()
    assert decide(fleet, h, NOW, SETTINGS) == decide(fleet, h, NOW, SETTINGS)
    assert h.model_dump() == before


def test_a_restart_between_two_passes_starts_a_new_stretch_and_voids_the_warning() -> None:
    # Warned an hour ago; since then the provider saw it start (the reaper did not) and stop.
    h = history(stopped={"runpod:p1": NOW - 30 * H}, warned={"runpod:p1": NOW - H})
    plan = decide([pod(started_at=NOW - timedelta(minutes=40))], h, NOW, SETTINGS)
    assert plan.decisions == []
    assert [(c.change, c.at) for c in plan.clock_changes] == [("restart", NOW)]
    assert plan.instances[0].stopped_since == NOW


def test_a_start_before_the_stretch_is_not_a_restart() -> None:
    h = history(stopped={"runpod:p1": NOW - 30 * H}, warned={"runpod:p1": NOW - 2 * H})
    plan = decide([pod(started_at=NOW - 40 * H)], h, NOW, SETTINGS)
    assert plan.clock_changes == []
    assert only(plan.decisions).action == "terminate"
