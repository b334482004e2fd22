"""The license over generated histories (issue 24): passes, keeps, unkeeps, restarts (seen and
unseen), absences from a listing, settings changes (TTL, REAPER_WARN_BEFORE, mode, the cap),
cap holds and "terminate now" presses with the stretch of a current or an old warning — run
through the pure policy and the gate's pure check (`policy.recheck`) with an in-memory history
that records what a pass records. No sequence reaches a termination without a valid license
for the current stretch (or, for "terminate now", a request bound to the current stretch);
every licensed termination is at or past the announced deadline, at least REAPER_WARN_BEFORE
after the warning's delivery and inside its window; and once nothing changes, a warned or
re-warned instance is terminated on a later pass — never warned for ever."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from reaper.core.license import announced_deadline, license_deadline
from reaper.core.models import (
    Decision,
    History,
    Instance,
    KeptInstance,
    TerminationRequest,
    WarningRecord,
)
from reaper.core.policy import decide, recheck
from reaper.settings.model import Settings
from tests.settings_support import settings as settings_of

T0 = datetime(2026, 6, 1, 0, 0, tzinfo=UTC)
KEY = "runpod:p"
MIN = timedelta(minutes=1)

Op = tuple[str, int]


@dataclass
class World:
    """One instance, the store's history as the passes record it, and the truth the reaper
    cannot always see: `real_stretch` counts the stops that followed a real start."""

    config: Settings
    now: datetime = T0
    running: bool = False
    started_at: datetime = T0 - timedelta(days=1)
    restart_visible: bool = True
    absent: bool = False
    real_stretch: int = 0
    stopped: dict[str, datetime] = field(default_factory=dict)
    started: dict[str, datetime] = field(default_factory=dict)
    missing: dict[str, datetime] = field(default_factory=dict)
    warnings: dict[str, WarningRecord] = field(default_factory=dict)
    kept: dict[str, KeptInstance] = field(default_factory=dict)
    requests: dict[str, TerminationRequest] = field(default_factory=dict)
    # Facts for the checks: the real stretch each warning was issued in, the last keep or
    # unkeep, every stretch a warning was issued for (the buttons a person holds).
    warned_in: dict[datetime, int] = field(default_factory=dict)
    keep_event: datetime | None = None
    buttons: list[datetime] = field(default_factory=list)
    terminated: bool = False
    warns_after_quiet: int = 0

    def instance(self) -> Instance:
        return Instance(
            provider="runpod",
            account="a",
            id="p",
            name="job",
            state="running" if self.running else "stopped",
            raw_status="RUNNING" if self.running else "EXITED",
            started_at=self.started_at if self.restart_visible else None,
            created_at=T0 - timedelta(days=2),
            restart_visible=self.restart_visible,
            cost_per_hour=0.01,
        )

    def history(self) -> History:
        return History(
            first_seen_stopped=dict(self.stopped),
            stretch_started=dict(self.started),
            missing_since=dict(self.missing),
            warnings=dict(self.warnings),
            kept=dict(self.kept),
            requests={k: r for k, r in self.requests.items() if self.now < r.expires_at},
        )

    # --- what a pass records ----------------------------------------------------------------
    def reset(self) -> None:
        for table in (self.stopped, self.started, self.missing, self.warnings, self.requests):
            table.pop(KEY, None)

    def absent_pass(self) -> None:
        """A complete, trustworthy listing that misses the instance (`passes.reap.run.absences`)."""
        if KEY not in self.stopped:
            self.warnings.pop(KEY, None)
            return
        first = self.missing.get(KEY)
        if first is None:
            self.missing[KEY] = self.now
        elif self.now - first >= self.config.reap_every:
            self.reset()

    def run_pass(self, *, quiet: bool = False) -> None:
        if self.absent:
            self.absent_pass()
            return
        self.missing.pop(KEY, None)
        history = self.history()
        plan = decide([self.instance()], history, self.now, self.config)
        for change in plan.clock_changes:
            if change.change in ("reset", "restart"):
                self.reset()
            if change.change in ("start", "restart"):
                self.stopped.setdefault(KEY, change.at)
                if change.started_at is not None:
                    self.started.setdefault(KEY, change.started_at)
        for decision in plan.decisions:
            if decision.action == "warn":
                self.warn(decision)
                self.warns_after_quiet += quiet
            elif decision.action == "hold" and decision.licensed_by is not None:
                held = self.warnings.get(KEY)
                if held is not None and held.at == decision.licensed_by:
                    self.warnings[KEY] = held.model_copy(update={"held_at": self.now})
            elif decision.action == "terminate":
                self.through_the_gate(decision)

    def warn(self, decision: Decision) -> None:
        stretch = decision.instance.stopped_since
        assert stretch is not None
        issued = self.now
        self.warnings[KEY] = WarningRecord(
            at=issued + timedelta(seconds=20),  # delivered a little later
            heard=True,
            # As the pass records it (`passes.reap.warn`): a warning sent while a cap of 0
            # turns terminations off says "would be terminated" and is an observe warning.
            mode=self.config.warning_mode,
            terminate_at=announced_deadline(stretch, issued, self.config),
            stretch=stretch,
            issued_at=issued,
            ttl=self.config.stopped_ttl,
            warn_before=self.config.warn_before,
        )
        self.warned_in[stretch] = self.real_stretch
        self.buttons.append(stretch)
        announced = self.warnings[KEY].terminate_at
        assert announced is not None and announced >= issued + self.config.warn_before

    def through_the_gate(self, planned: Decision) -> None:
        """The gate: the pure check again on a fresh reading (the same instance, now)."""
        now = self.now + timedelta(seconds=30)
        if recheck(planned, self.instance(), self.history(), now, self.config) is not None:
            return
        check_termination(self, planned, now)
        self.terminated = True

    def press(self, stretch: datetime) -> None:
        """A "terminate now" with the stretch of a warning the person holds, carried out at once
        by a request pass."""
        request = TerminationRequest(
            key=KEY,
            requested_at=self.now,
            by="test",
            mode=self.config.mode,
            expires_at=self.now + timedelta(hours=24),
            stretch=stretch,
        )
        self.requests[KEY] = request
        self.now += timedelta(seconds=1)
        if not self.absent:
            self.run_pass()
        self.requests.pop(KEY, None)


def check_termination(w: World, planned: Decision, now: datetime) -> None:
    inst = planned.instance
    stretch = inst.stopped_since
    assert inst.state == "stopped" and stretch is not None and not w.running
    assert w.config.mode == "enforce"
    kept = w.kept.get(KEY)
    assert kept is None or not kept.active(now)
    request = w.requests.get(KEY)
    if request is not None and planned.reason.startswith("terminate now"):
        # A press counts only in the stretch its warning was issued for.
        assert request.stretch == stretch
        if w.restart_visible:
            assert w.warned_in.get(stretch) == w.real_stretch, "a press from before a restart"
        return
    warning = w.warnings.get(KEY)
    assert warning is not None, "a termination without a warning"
    assert warning.stretch == stretch and warning.issued_at is not None
    assert warning.terminate_at is not None
    if w.restart_visible:
        assert w.warned_in[stretch] == w.real_stretch, "a license of an earlier stretch"
    assert warning.mode == "enforce" and warning.heard
    assert w.keep_event is None or w.keep_event <= warning.issued_at, "kept after its warning"
    announced = announced_deadline(stretch, warning.issued_at, w.config)
    assert warning.terminate_at == announced, "the settings moved the announced deadline"
    assert now >= warning.terminate_at, "before the announced deadline"
    assert now >= warning.at + w.config.warn_before, "without the full notice"
    deadline = license_deadline(warning.terminate_at, warning.at, w.config)
    last = max(deadline, warning.held_at or deadline)
    assert now <= last + w.config.warn_before + w.config.reap_every, "past its window"


def apply(w: World, op: Op) -> None:
    kind, value = op
    if kind == "pass":  # a quarter of a period to three periods after the last
        w.now += w.config.reap_every * value / 4
        w.run_pass()
    elif kind == "down":  # the reaper was down for hours
        w.now += timedelta(hours=value)
        w.run_pass()
    elif kind == "keep":  # for a quarter of a period up to four periods
        until = w.now + w.config.reap_every * value / 4
        w.kept[KEY] = KeptInstance(key=KEY, since=w.now, until=until)
        w.warnings.pop(KEY, None)  # the store drops the warning with the keep
        w.keep_event = w.now
    elif kind == "unkeep":
        w.kept.pop(KEY, None)
        w.warnings.pop(KEY, None)
        w.keep_event = w.now
    elif kind == "restart":  # started, `value` passes see it running (0: none), stopped
        w.running, w.started_at = True, w.now
        for _ in range(value):
            apply(w, ("pass", 2))
        w.now += MIN
        w.running = False
        w.real_stretch += 1
    elif kind == "absent":  # missing from `value` listings in a row
        w.absent = True
        for _ in range(value):
            apply(w, ("pass", 2))
        w.absent = False
    elif kind == "ttl":
        w.config = replace(w.config, stopped_ttl=timedelta(hours=value))
        if w.config.warn_before >= w.config.stopped_ttl:
            w.config = replace(w.config, warn_before=w.config.stopped_ttl - MIN)
    elif kind == "warn_before":
        w.config = replace(
            w.config, warn_before=min(timedelta(minutes=value), w.config.stopped_ttl - MIN)
        )
    elif kind == "mode":
        w.config = replace(w.config, mode="observe" if value else "enforce")
    elif kind == "cap":
        w.config = replace(w.config, max_terminations=value)
    elif kind == "press" and w.buttons:
        w.press(w.buttons[value % len(w.buttons)])


PASSES = st.tuples(st.just("pass"), st.integers(1, 12))
# Settings change now and then, and mostly back to what lets a termination happen.
SETTINGS_CHANGES = st.one_of(
    st.tuples(st.just("ttl"), st.integers(1, 8)),
    st.tuples(st.just("warn_before"), st.integers(1, 240)),
    st.tuples(st.just("mode"), st.sampled_from([0, 0, 0, 1])),
    st.tuples(st.just("cap"), st.sampled_from([0, 1, 10, 10])),
)
OPS = st.one_of(
    *[PASSES] * 8,
    st.tuples(st.just("down"), st.integers(1, 96)),
    st.tuples(st.just("keep"), st.integers(1, 16)),
    st.tuples(st.just("unkeep"), st.just(0)),
    st.tuples(st.just("restart"), st.integers(0, 2)),
    st.tuples(st.just("absent"), st.integers(1, 3)),
    SETTINGS_CHANGES,
    st.tuples(st.just("press"), st.integers(0, 20)),
)


@st.composite
def worlds(draw: st.DrawFn) -> World:
    ttl = timedelta(hours=draw(st.integers(1, 8)))
    config = settings_of(
        stopped_ttl=ttl,
        warn_before=min(timedelta(minutes=draw(st.integers(1, 180))), ttl - MIN),
        reap_every=timedelta(minutes=draw(st.integers(15, 120))),
        max_terminations=10,
        telegram_bot_token="1:abc",
        telegram_chat_id="42",
    )
    return World(config=config, restart_visible=draw(st.booleans()))


@settings(max_examples=600, deadline=None)
@given(worlds(), st.lists(OPS, min_size=20, max_size=80))
def test_no_history_reaches_a_termination_without_a_license(w: World, ops: list[Op]) -> None:
    for op in ops:
        if w.terminated:
            break
        apply(w, op)


@settings(max_examples=300, deadline=None)
@given(worlds(), st.lists(OPS, max_size=40))
def test_once_nothing_changes_a_warned_instance_is_terminated(w: World, ops: list[Op]) -> None:
    """After any history, with the instance stopped and listed, no keep in force, enforce mode
    and room under the cap, passes every REAPER_REAP_EVERY terminate it within a TTL and a
    notice (and a period or two) — after at most one new warning."""
    for op in ops:
        if w.terminated:
            return
        apply(w, op)
    if w.terminated:
        return
    w.kept.clear()
    w.config = replace(w.config, mode="enforce", max_terminations=10)
    budget = w.config.stopped_ttl + w.config.warn_before + 3 * w.config.reap_every
    passes = int(budget / w.config.reap_every) + 2
    for _ in range(passes):
        w.now += w.config.reap_every
        w.run_pass(quiet=True)
        if w.terminated:
            break
    assert w.terminated, "never terminated once nothing changed"
    assert w.warns_after_quiet <= 1, "warned again and again"


@settings(max_examples=200, deadline=None)
@given(worlds(), st.lists(OPS, max_size=40), st.booleans())
def test_while_held_back_the_license_stays_and_nobody_is_warned_again(
    w: World, ops: list[Op], observe: bool
) -> None:
    """Held back pass after pass (a cap of 0, or observe mode) for many deadlines' worth of
    time: warned at most once. Once terminations are allowed again (the cap raised), a warning
    sent while they were on terminates on the next pass, without warning again; one sent while
    the cap was 0 said "terminations are off" and licenses nothing: warned anew once, then
    terminated after the full notice."""
    for op in ops:
        if w.terminated:
            return
        apply(w, op)
    if w.terminated:
        return
    w.kept.clear()
    w.config = replace(w.config, mode="observe" if observe else "enforce", max_terminations=0)
    warned_before = len(w.buttons)
    held = 3 * (w.config.stopped_ttl + w.config.warn_before) + 3 * w.config.reap_every
    for _ in range(int(held / w.config.reap_every) + 1):
        w.now += w.config.reap_every
        w.run_pass()
    assert not w.terminated
    assert len(w.buttons) - warned_before <= 1, "warned again while held back"
    if observe:
        return
    held_warning = w.warnings.get(KEY)
    assert held_warning is not None, "held back without a warning"
    w.config = replace(w.config, max_terminations=10)
    warned_before = len(w.buttons)
    w.now += w.config.reap_every
    w.run_pass()
    if held_warning.mode == "enforce":
        assert w.terminated, "the held license went stale"
        assert len(w.buttons) == warned_before, "warned again although licensed"
        return
    assert not w.terminated, "terminated on a warning that said terminations are off"
    assert len(w.buttons) == warned_before + 1, "not warned anew once terminations were on"
    for _ in range(int((w.config.warn_before + w.config.reap_every) / w.config.reap_every) + 2):
        w.now += w.config.reap_every
        w.run_pass()
        if w.terminated:
            break
    assert w.terminated, "never terminated after the new warning"
    assert len(w.buttons) == warned_before + 1, "warned again and again"
