"""Review: attacks on the one gate and its license that held. Each is a path to a DELETE the
safety rules forbid; each test shows the product refusing it, through the real pass (and the
phone) over the loopback emulators."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from pathlib import Path

from reaper.passes import keeping
from reaper.passes.reap import ReapReport
from tests.other_process_support import other_process_pass as _other_process_pass
from tests.phone_support import phone
from tests.reap_support import World, action_of, events, world
from tests.settings_support import replaced


def _keep_now(w: World, key: str) -> None:
    store = w.store()
    try:
        now = w.clock.now()
        keeping.keep(store, key, now=now, until=now + timedelta(days=1), by="me", via="test")
    finally:
        store.close()


def test_an_old_button_is_refused_after_absence_ended_the_stretch(tmp_path: Path) -> None:
    """Warned; the pod then misses two listings a period apart (its stretch ends as gone) and
    comes back stopped: a new stretch. The old warning's Terminate now deletes nothing."""
    with phone(tmp_path) as p:
        assert p.telegram is not None
        pod = p.w.runpod.add_pod(status="EXITED", name="trainer-7")
        p.w.runpod.add_pod(status="RUNNING", name="witness")
        p.warn()
        message = p.warning_message()
        entry = p.w.runpod.entry(pod)
        assert entry is not None
        p.w.runpod.remove_entry(pod)
        p.w.advance(1)
        p.run()
        p.w.advance(1)
        p.run()
        p.w.runpod.add_pod_json(entry)
        p.w.advance(1)
        p.run()

        p.telegram.press(message, "Terminate now")
        p.poll()
        p.telegram.press(p.telegram.message(message.message_id), "⚠️ Yes, terminate")
        p.poll()

        assert p.w.runpod.mutations == []
        answer = p.telegram.message(message.message_id).text
        assert "Not terminated" in answer and "started and stopped again" in answer, answer


def test_a_restart_hidden_by_an_absence_voids_the_warning(tmp_path: Path) -> None:
    """Warned; missing from the next listing; meanwhile started and stopped again (RunPod's
    `startedAt` moves). Back in the listing at the old deadline: not terminated."""
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED", name="rescued")
        w.runpod.add_pod(status="RUNNING", name="witness")
        w.run()
        w.advance(23)
        assert action_of(w.run(), pod) == "warn"
        entry = w.runpod.entry(pod)
        assert entry is not None
        w.runpod.remove_entry(pod)
        w.advance(0.5)
        w.run()
        entry["startedAt"] = w.clock.now().isoformat()
        w.runpod.add_pod_json(entry)
        w.advance(0.5)
        assert action_of(w.run(), pod) is None
        assert w.runpod.mutations == []


def test_an_observe_pass_between_warning_and_deadline_needs_a_new_warning(tmp_path: Path) -> None:
    """Enforce warns, one pass runs in observe mode, enforce is back at the deadline: the
    first enforce pass warns anew instead of terminating on a warning it replaced."""
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED", name="trainer")
        w.run()
        w.advance(23)
        assert action_of(w.run(), pod) == "warn"
        w.advance(0.5)
        w.run(settings=replaced(w.settings, mode="observe"))
        w.advance(0.5)
        assert action_of(w.run(), pod) == "warn"
        assert w.runpod.mutations == []


def test_a_second_process_within_the_lease_ttl_is_held_off(tmp_path: Path) -> None:
    """The same attack as the skewed one, with a clock one minute ahead (inside the lease's
    two minutes): the second pass meets the lease and acts on nothing."""
    with world(tmp_path) as w:
        w.runpod.add_pod(status="EXITED", name="trainer")
        other: list[ReapReport] = []
        w.runpod.after_next("list", lambda: _other_process_pass(w, timedelta(minutes=1), other))
        w.run()
        [second] = other
        assert second.lease_taken and "holds the lease" in second.lease_note


def test_a_keep_recorded_right_after_the_fresh_read_stops_the_delete(tmp_path: Path) -> None:
    """The gate reads the store after the fresh reading: a keep made while that reading was on
    its way is seen, and the DELETE is not sent."""
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED", name="trainer")
        w.runpod.add_pod(status="RUNNING", name="witness")
        w.reach_deadline()
        w.runpod.after_next("get", lambda: _keep_now(w, f"runpod:{pod}"))
        report = w.run()
        assert action_of(report, pod) == "hold"
        assert w.runpod.mutations == []


def test_a_delete_that_never_takes_effect_is_one_termination_at_most(tmp_path: Path) -> None:
    """RunPod acknowledges the DELETE but keeps listing the pod stopped for two passes, then
    drops it: the audit shows one confirmed termination, and one "Terminated"."""
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED", name="sticky")
        w.runpod.add_pod(status="RUNNING", name="witness")
        w.reach_deadline()
        w.runpod.delete_never_confirms = True
        assert w.run().exit_code == 1
        w.advance(1)
        w.run()
        w.runpod.delete_never_confirms = False
        w.runpod.remove_pod(pod)
        w.advance(1)
        w.run()
        w.advance(1)
        w.run()
        store = w.store(read_only=True)
        try:
            confirmed = Counter(r.id for r in store.audit_log() if r.confirmed)
        finally:
            store.close()
        assert confirmed[pod] == 1
        assert events(w.notifier).count("terminated") == 1
