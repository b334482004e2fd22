"""Property tests: the safety rules hold for every generated fleet, history and setting."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from reaper.core.license import announced_deadline
from reaper.core.models import History, Instance, KeptInstance, WarningRecord
from reaper.core.policy import decide
from reaper.settings.model import Settings
from tests.settings_support import settings as settings_of

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

# Strategies are built once here, not inside each draw: building one validates it, and that
# was most of these tests' time.
PROVIDERS = st.sampled_from(["runpod", "vast"])
ACCOUNTS = st.sampled_from(["a", "b"])
IDS = st.integers(0, 30).map(str)
NAMES = st.sampled_from(["train", "exp reaper:keep", "", "x"])
STATE_NAMES = st.sampled_from(STATES)
RAW_STATUSES = {provider: st.sampled_from(raw) for provider, raw in RAW.items()}
CLUSTERS = st.sampled_from([None, None, "c1"])
# Start and creation times anywhere, the future (an unreadable clock) included.
MOMENTS = st.none() | offsets.map(lambda o: NOW - o + timedelta(hours=6))
UNREADABLE = st.sampled_from([None, None, None, "`locked` is null"])


@st.composite
def instances(draw: st.DrawFn) -> Instance:
    provider = draw(PROVIDERS)
    return Instance(
        provider=provider,
        account=draw(ACCOUNTS),
        id=draw(IDS),
        name=draw(NAMES),
        state=draw(STATE_NAMES),
        raw_status=draw(RAW_STATUSES[provider]),
        locked=provider == "runpod" and draw(st.booleans()),
        cluster_id=draw(CLUSTERS) if provider == "runpod" else None,
        started_at=draw(MOMENTS),
        created_at=draw(MOMENTS),
        protection_unreadable=draw(UNREADABLE),
        restart_visible=draw(st.booleans()),
    )


MODES = st.sampled_from(["enforce", "observe"])
HELD_AT = st.none() | offsets.map(lambda o: NOW - o)
TOKENS = st.sampled_from([None, "123:abc"])
KEEP_UNTIL = st.sampled_from([None, NOW - timedelta(hours=1), NOW + timedelta(hours=1)])
KEEP_SINCE = st.sampled_from([NOW - timedelta(days=1), NOW - timedelta(hours=2)])


@st.composite
def warning_records(draw: st.DrawFn, stretch: datetime | None, config: Settings) -> WarningRecord:
    """Warnings anywhere: before the stretch, inside it, even "now" or in the future; for this
    stretch or another, announcing the deadline the settings give or another, held or not, or
    an old record that names no stretch."""
    at = NOW - draw(offsets) + timedelta(hours=draw(st.integers(0, 1)))
    issued = at - timedelta(seconds=draw(st.integers(0, 120)))
    bound = draw(st.sampled_from([stretch, NOW - draw(offsets), None]))
    announced = (
        announced_deadline(bound, issued, config)
        if bound is not None and draw(st.booleans())
        else at + timedelta(minutes=draw(st.integers(-600, 600)))
    )
    return WarningRecord(
        at=at,
        heard=draw(st.booleans()),
        mode=draw(MODES),
        terminate_at=announced,
        stretch=bound,
        issued_at=issued if bound is not None else None,
        ttl=config.stopped_ttl,
        warn_before=config.warn_before,
        held_at=draw(HELD_AT),
    )


FLEETS = st.lists(instances(), max_size=25, unique_by=lambda i: i.key)


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[list[Instance], History, Settings]:
    ttl = timedelta(hours=draw(st.integers(1, 72)))
    warn_before = timedelta(minutes=draw(st.integers(1, int(ttl.total_seconds() // 60) - 1)))
    fleet = draw(FLEETS)
    config = settings_of(
        stopped_ttl=ttl,
        warn_before=warn_before,
        max_terminations=draw(st.integers(0, 6)),
        mode=draw(MODES),
        protect_marker=MARKER,
        reap_every=timedelta(minutes=draw(st.integers(1, 180))),
        require_channel=draw(st.booleans()),
        telegram_bot_token=draw(TOKENS),
        telegram_chat_id="42",
    )
    stopped: dict[str, datetime] = {}
    warned: dict[str, WarningRecord] = {}
    kept: dict[str, KeptInstance] = {}
    for inst in fleet:
        if draw(st.booleans()):
            stopped[inst.key] = NOW - draw(offsets)
        if draw(st.booleans()):
            warned[inst.key] = draw(warning_records(stopped.get(inst.key), config))
        if draw(st.integers(0, 4)) == 0:
            until = draw(KEEP_UNTIL)
            since = draw(KEEP_SINCE)
            kept[inst.key] = KeptInstance(key=inst.key, since=since, until=until)
    history = History(first_seen_stopped=stopped, warnings=warned, kept=kept)
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
        # Only stopped; never protected, locked, kept, unreadably protected or a cluster member.
        assert inst.state == "stopped"
        assert not inst.locked and MARKER not in inst.name and inst.cluster_id is None
        assert inst.protection_unreadable is None
        if key in history.kept:
            assert not history.kept[key].active(NOW)
        # Never before the TTL of a stretch the store already knew about (not first sight),
        # and never counting from before the instance's own creation or start.
        assert key in history.first_seen_stopped
        since = history.first_seen_stopped[key]
        assert since + config.stopped_ttl <= NOW
        for moment in (inst.created_at, inst.started_at):
            if moment is not None and moment <= NOW:
                assert inst.stopped_since is not None and moment <= inst.stopped_since
                assert inst.stopped_since + config.stopped_ttl <= NOW
        # Never without a warning from an earlier pass of the same stretch, with full notice,
        # sent in enforce mode (an observe warning never licenses) and heard by a person
        # unless REAPER_REQUIRE_CHANNEL=false.
        warning = history.warnings[key]
        assert since <= warning.at < NOW
        assert warning.at + config.warn_before <= NOW
        assert warning.mode == "enforce"
        assert warning.heard or not config.require_channel
        # ... issued for this very stretch, announcing the deadline the settings still give,
        # that deadline come, and its window not over.
        assert warning.stretch == inst.stopped_since and warning.issued_at is not None
        assert warning.terminate_at == announced_deadline(
            inst.stopped_since, warning.issued_at, config
        )
        assert warning.terminate_at <= NOW
        deadline = max(warning.terminate_at, warning.at + config.warn_before)
        last = max(deadline, warning.held_at or deadline)
        assert last + config.warn_before + config.reap_every >= NOW
        kept = history.kept.get(key)
        assert kept is None or kept.since < warning.issued_at


@settings(max_examples=300, deadline=None)
@given(scenarios())
def test_a_stretch_never_starts_before_creation_or_in_the_future(
    scenario: tuple[list[Instance], History, Settings],
) -> None:
    fleet, history, config = scenario
    plan = decide(fleet, history, NOW, config)
    for inst in plan.instances:
        if inst.stopped_since is None or inst.state != "stopped":
            continue
        assert inst.stopped_since <= NOW
        for moment in (inst.created_at, inst.started_at):
            if moment is not None and moment <= NOW:
                assert moment <= inst.stopped_since


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
            # A start after the stretch began, and never one in the future (unreadable).
            assert history.first_seen_stopped[change.key] < started <= NOW
        else:
            assert state == "stopped" and change.key not in history.first_seen_stopped

    # A start time in the future is never a restart, and never resets anything.
    for inst in fleet:
        if inst.started_at is not None and inst.started_at > NOW:
            assert (inst.key, "restart") not in {(c.key, c.change) for c in plan.clock_changes}

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
    assert not any(d.action in ("terminate", "hold") for d in plan.decisions)
    # It may warn at once only when the whole TTL fits in the warning window (the warning
    # must go out a pass before the deadline for the termination to land on time).
    if config.stopped_ttl > config.warn_before + config.reap_every:
        assert not any(d.action == "warn" for d in plan.decisions)


@settings(max_examples=300, deadline=None)
@given(
    ttl_h=st.integers(1, 72),
    warn_m=st.integers(1, 240),
    every_m=st.integers(5, 180),
    phase_s=st.integers(0, 3 * 3600),
    jitters=st.lists(st.integers(0, 60), min_size=50, max_size=50),
    delivery_s=st.integers(0, 30),
)
def test_a_stopped_pod_is_gone_at_most_one_period_after_its_deadline(
    ttl_h: int,
    warn_m: int,
    every_m: int,
    phase_s: int,
    jitters: list[int],
    delivery_s: int,
) -> None:
    """Passes every REAPER_REAP_EVERY (plus up to a minute of jitter), warnings delivered a
    little after their pass: the warning goes out early enough that the termination lands on
    the first pass at or after the deadline — at most TTL + one period after the stretch began
    (plus the jitter) — and never before the deadline or without the full notice."""
    ttl, warn_before = timedelta(hours=ttl_h), timedelta(minutes=warn_m)
    if warn_before >= ttl:
        warn_before = ttl - timedelta(minutes=1)
    every = timedelta(minutes=every_m)
    config = settings_of(stopped_ttl=ttl, warn_before=warn_before, reap_every=every)
    pod = Instance(
        provider="runpod", account="a", id="p", name="x", state="stopped", raw_status="EXITED"
    )
    start = NOW + timedelta(seconds=phase_s)
    stopped: dict[str, datetime] = {}
    warnings: dict[str, WarningRecord] = {}
    passes = int((ttl + warn_before) / every) + 4
    for k in range(passes):
        now = start + k * every + timedelta(seconds=jitters[k % len(jitters)])
        history = History(first_seen_stopped=stopped, warnings=warnings)
        plan = decide([pod], history, now, config)
        for change in plan.clock_changes:
            stopped[change.key] = change.at
        decision = plan.decisions[0] if plan.decisions else None
        if decision is not None and decision.action == "warn":
            delivered = now + timedelta(seconds=delivery_s)
            stretch = decision.instance.stopped_since
            assert stretch is not None
            warnings[pod.key] = WarningRecord(
                at=delivered,
                heard=True,
                mode="enforce",
                stretch=stretch,
                issued_at=now,
                terminate_at=announced_deadline(stretch, now, config),
            )
        if decision is not None and decision.action == "terminate":
            since = stopped[pod.key]
            assert now >= since + ttl
            assert now >= warnings[pod.key].at + warn_before
            assert now <= since + ttl + every + timedelta(seconds=60 + delivery_s)
            return
    raise AssertionError("never terminated")
