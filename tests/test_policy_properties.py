"""Property tests: the safety rules hold for every generated fleet, history and setting."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from reaper.config import Settings
from reaper.models import History, Instance, KeptInstance
from reaper.policy import decide

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
MARKER = "reaper:keep"
STATES = ["running", "starting", "stopped", "terminated", "unknown"]
RAW = {
    "runpod": ["RUNNING", "STARTING", "PROVISIONING", "EXITED", "ERROR", "TERMINATED", "WEIRD"],
    "vast": [
        "running",
        "loading",
        "stopped",
        "exited",
        "frozen",
        "offline",
        "unknown",
        "rebooting",
    ],
}

offsets = st.integers(min_value=0, max_value=10 * 24 * 3600).map(lambda s: timedelta(seconds=s))


@st.composite
def instances(draw: st.DrawFn) -> Instance:
    provider = draw(st.sampled_from(["runpod", "vast"]))
    return Instance(
        provider=provider,
        account=draw(st.sampled_from(["a", "b"])),
        id=str(draw(st.integers(0, 30))),
        name=draw(st.sampled_from(["train", "exp reaper:keep", "", "x"])),
        state=draw(st.sampled_from(STATES)),
        raw_status=draw(st.sampled_from(RAW[provider])),
        locked=provider == "runpod" and draw(st.booleans()),
        cluster_id=draw(st.sampled_from([None, None, "c1"])) if provider == "runpod" else None,
        started_at=draw(st.none() | offsets.map(lambda o: NOW - o)),
    )


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[list[Instance], History, Settings]:
    fleet = draw(st.lists(instances(), max_size=25, unique_by=lambda i: i.key))
    stopped: dict[str, datetime] = {}
    warned: dict[str, datetime] = {}
    kept: dict[str, KeptInstance] = {}
    for inst in fleet:
        if draw(st.booleans()):
            stopped[inst.key] = NOW - draw(offsets)
        if draw(st.booleans()):
            # Warnings anywhere: before the stretch, inside it, even "now" or in the future.
            warned[inst.key] = NOW - draw(offsets) + timedelta(hours=draw(st.integers(0, 1)))
        if draw(st.integers(0, 4)) == 0:
            until = draw(
                st.sampled_from([None, NOW - timedelta(hours=1), NOW + timedelta(hours=1)])
            )
            kept[inst.key] = KeptInstance(key=inst.key, since=NOW - timedelta(days=1), until=until)
    ttl = timedelta(hours=draw(st.integers(1, 72)))
    warn_before = timedelta(minutes=draw(st.integers(1, int(ttl.total_seconds() // 60) - 1)))
    config = Settings(
        stopped_ttl=ttl,
        warn_before=warn_before,
        max_terminations=draw(st.integers(0, 6)),
        mode=draw(st.sampled_from(["enforce", "observe"])),
        protect_marker=MARKER,
    )
    history = History(first_seen_stopped=stopped, warned_at=warned, kept=kept)
    return fleet, history, config


@settings(max_examples=400, deadline=None)
@given(scenarios())
def test_nothing_unsafe_is_ever_terminated(
    scenario: tuple[list[Instance], History, Settings],
) -> None:
    fleet, history, config = scenario
    plan = decide(fleet, history, NOW, config)
    terminated = [d for d in plan.decisions if d.action == "terminate"]

    # Never more than the cap; observe mode never terminates.
    assert len(terminated) <= config.max_terminations
    if config.mode == "observe":
        assert terminated == []

    for decision in terminated:
        inst = decision.instance
        key = inst.key
        # Only stopped; never protected, locked, kept or a cluster member.
        assert inst.state == "stopped"
        assert not inst.locked and MARKER not in inst.name and inst.cluster_id is None
        if key in history.kept:
            assert not history.kept[key].active(NOW)
        # Never before the TTL of a stretch the store already knew about (not first sight).
        assert key in history.first_seen_stopped
        since = history.first_seen_stopped[key]
        assert since + config.stopped_ttl <= NOW
        # Never without a warning from an earlier pass of the same stretch, with full notice.
        warned = history.warned_at[key]
        assert since <= warned < NOW
        assert warned + config.warn_before <= NOW


@settings(max_examples=300, deadline=None)
@given(scenarios())
def test_decisions_and_clock_changes_follow_the_states(
    scenario: tuple[list[Instance], History, Settings],
) -> None:
    fleet, history, config = scenario
    plan = decide(fleet, history, NOW, config)
    by_key = {i.key: i for i in fleet}

    # At most one decision per instance, and only for stopped ones.
    assert max(Counter(d.instance.key for d in plan.decisions).values(), default=0) <= 1
    assert all(by_key[d.instance.key].state == "stopped" for d in plan.decisions)

    for change in plan.clock_changes:
        state = by_key[change.key].state
        if change.change == "reset":
            assert state in ("running", "starting")
        elif change.change == "restart":
            started = by_key[change.key].started_at
            assert state == "stopped" and started is not None
            assert started > history.first_seen_stopped[change.key]
        else:
            assert state == "stopped" and change.key not in history.first_seen_stopped

    # Unknown and terminated keep whatever the store had.
    for inst in plan.instances:
        if inst.state in ("unknown", "terminated"):
            assert inst.stopped_since == history.first_seen_stopped.get(inst.key)

    # When the cap is exceeded, nothing at all terminates.
    if plan.cap_exceeded:
        assert plan.due_count > config.max_terminations
        assert not any(d.action == "terminate" for d in plan.decisions)


@settings(max_examples=200, deadline=None)
@given(scenarios())
def test_first_sight_never_acts(scenario: tuple[list[Instance], History, Settings]) -> None:
    fleet, _history, config = scenario
    plan = decide(fleet, History(), NOW, config)
    # With no history every stopped instance is seen for the first time: its clock starts.
    assert {c.key for c in plan.clock_changes} == {i.key for i in fleet if i.state == "stopped"}
    assert not any(d.action in ("terminate", "warn", "hold") for d in plan.decisions)
