"""Vast's intent (`intended_status`, `cur_state`) read as the live API answers it, over
loopback: an abandoned start is stopped (and reaped), a destroyed instance that lingers is
terminated, scheduling and error are never reaped, an outbid instance stays reapable."""

from __future__ import annotations

from pathlib import Path

from emulators import VastEmulator
from tests.provider_support import on_vast
from tests.reap_support import action_of, world

KEY = "vast-intent-key-0123"


def read(server: VastEmulator, instance_id: int) -> tuple[str, str | None, str]:
    (inst,) = [
        i for i in on_vast(server, KEY, lambda c: c.list_instances()) if i.id == str(instance_id)
    ]
    return inst.state, inst.stalled, inst.state_note


def test_each_state_reads_as_vast_means_it() -> None:
    with VastEmulator({"main": KEY}) as server:
        abandoned = server.add_instance()
        server.abandon_start(abandoned, "docker_build() error writing dockerfile")
        scheduling = server.add_instance()
        server.set_scheduling(scheduling)
        failing = server.add_instance()
        server.fail_start(failing, "Error response from daemon: manifest for x:y not found")
        errored = server.add_instance(actual_status="error")
        destroyed = server.add_instance(actual_status="destroyed", intended_status="destroyed")
        outbid = server.add_instance(actual_status="stopped", is_bid=True)
        state, stalled, note = read(server, abandoned)
        assert state == "stopped" and stalled and "abandoned" in note
        assert read(server, scheduling)[:1] == ("unknown",)
        assert "scheduling" in (read(server, scheduling)[1] or "")
        assert read(server, failing)[0] == "starting"
        assert "manifest" in (read(server, failing)[1] or "")
        assert read(server, errored)[0] == "unknown" and read(server, errored)[1]
        assert read(server, destroyed)[0] == "terminated"
        state, stalled, note = read(server, outbid)
        assert state == "stopped" and stalled is None
        assert note == "Vast still means to run it: it resumes if your bid wins"


def test_intent_fields_of_the_wrong_type_make_the_instance_unknown() -> None:
    with VastEmulator({"main": KEY}) as server:
        odd = server.add_instance(actual_status="loading")
        server.modify_instance(odd, intended_status=["stopped"])
        assert read(server, odd)[0] == "unknown"
        numbered = server.add_instance()
        server.modify_instance(numbered, actual_status=3)
        assert read(server, numbered)[0] == "unknown"


def test_an_abandoned_start_is_warned_with_why_and_reaped_after_the_ttl(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        inst = w.vast.add_instance(label="never-started")
        w.vast.abandon_start(inst)
        w.vast.add_instance(actual_status="running")
        w.run()
        w.advance(23)
        assert action_of(w.run(), str(inst)) == "warn"
        (warning,) = [a for a in w.notifier.alerts if a.event == "termination_warning"]
        assert "Vast abandoned its start" in warning.body
        w.advance(1)
        report = w.run()
        assert action_of(report, str(inst)) == "terminate"
        assert all(a.confirmed for a in report.actions if a.action == "terminate")


def test_a_destroyed_instance_that_lingers_confirms_its_termination(tmp_path: Path) -> None:
    """After the destroy Vast keeps listing it (`actual_status` null, intended stopped,
    `cur_state` unloaded) for a few reads: that reads as terminated, not as an abandoned start
    waiting to be reaped again."""
    with world(tmp_path) as w:
        w.vast.delete_linger_reads = 5
        inst = w.vast.add_instance(actual_status="stopped")
        w.vast.add_instance(actual_status="running")
        w.reach_deadline()
        report = w.run()
        (action,) = [a for a in report.actions if a.id == str(inst)]
        assert action.confirmed
        assert w.vast.instance(inst) is not None, "still listed, as the live API does"
        w.advance(1)
        again = w.run()
        assert action_of(again, str(inst)) is None
        assert len([m for m in w.vast.mutations if m.kind == "delete"]) == 1


def test_scheduling_and_error_are_never_deleted(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        waiting = w.vast.add_instance()
        w.vast.set_scheduling(waiting)
        broken = w.vast.add_instance(actual_status="error", status_msg="Error: no space left")
        for _ in range(3):
            w.run()
            w.advance(24)
        assert [m for m in w.vast.mutations if m.kind == "delete"] == []
        assert broken
