"""Terminate now from the phone: a request the reap pass's own checks carry out at once — the
lease, a listing, the policy, a fresh read right before the DELETE, a re-list that confirms it,
the cap, the audit record — and refuse: a pod started meanwhile (before the listing or between
it and the fresh read), protected, locked, kept, in observe mode, under a cap of 0. What could
not be decided now (a pass holds the lease, the provider fails) waits for the next pass."""

from __future__ import annotations

import asyncio
from pathlib import Path

from reaper.app.wiring import make_clients
from reaper.core.models import KeptInstance, TerminationRequest
from reaper.passes.context import Context, DryRunEffects
from reaper.passes.reap import request_pass
from reaper.passes.reap.state import LEASE_NAME, LEASE_TTL
from tests.fakes.telegram import Message
from tests.phone_support import Phone, link_path, phone
from tests.reap_support import FAST_CONFIRM, FAST_HTTP, action_of
from tests.settings_support import replaced


def _confirm(p: Phone, message: Message) -> Message:
    """Press "Terminate now", then the confirmation it adds; the message as it is after."""
    assert p.telegram is not None
    p.telegram.press(message, "Terminate now")
    p.poll()
    asked = p.telegram.message(message.message_id)
    p.telegram.press(asked, "⚠️ Yes, terminate")
    p.poll()
    return p.telegram.message(message.message_id)


def _warnings(p: Phone) -> dict[str, Message]:
    """The warning messages by the name of their pod."""
    assert p.telegram is not None
    return {
        m.text.removeprefix("⚠️ ").split(" (")[0]: m
        for m in p.telegram.messages
        if "will be terminated" in m.text
    }


def _requests(p: Phone) -> list[TerminationRequest]:
    store = p.w.store()
    try:
        return store.termination_requests(p.w.clock.now())
    finally:
        store.close()


def test_two_presses_terminate_with_a_fresh_read_and_a_confirming_relist(tmp_path: Path) -> None:
    with phone(tmp_path) as p:
        assert p.telegram is not None
        pod = p.w.runpod.add_pod(status="EXITED", name="trainer-7")
        p.warn()
        message = p.warning_message()

        p.telegram.press(message, "Terminate now")
        p.poll()
        [prompt] = p.telegram.answers
        assert prompt["text"].startswith("Press “Yes, terminate” within 10 min")
        asked = p.telegram.message(message.message_id)
        assert asked.labels[-1].startswith("⚠️ Yes, terminate trainer-7")
        assert p.w.runpod.mutations == [], "the first press only asks"

        p.w.runpod.reset_log()
        p.telegram.press(asked, "⚠️ Yes, terminate")
        p.poll()
        kinds = [r.kind for r in p.w.runpod.requests]
        assert kinds.index("list") < kinds.index("get") < kinds.index("delete")
        assert "list" in kinds[kinds.index("delete") :], "confirmed by a re-list"
        assert [r.method for r in p.w.runpod.mutations] == ["DELETE"]

        answers = [a["text"] for a in p.telegram.answers]
        assert answers[-1] == "Checking it with the provider, then terminating…"
        done = p.telegram.message(message.message_id)
        assert done.text.endswith(
            f"✅ Terminated trainer-7 (runpod:{pod}), as @alice (Telegram user 42) asked;"
            " confirmed gone by a new listing."
        )
        store = p.w.store()
        [record] = store.audit_log()
        [action] = store.action_log()
        store.close()
        assert record.confirmed and record.result == "deleted"
        assert record.reason.startswith("terminate now asked by @alice (Telegram user 42)")
        assert (action.kind, action.done) == ("terminate", True)
        assert _requests(p) == []
        assert any(m.text.startswith("Terminated trainer-7") for m in p.telegram.messages)

        # Both buttons are spent: pressing them again does nothing.
        p.telegram.press(done, "Terminate now")
        p.poll()
        assert p.telegram.answers[-1]["text"].startswith("Already used")
        assert len(p.w.runpod.mutations) == 1


def test_a_pod_started_before_the_press_is_left_alone_and_the_answer_says_so(
    tmp_path: Path,
) -> None:
    with phone(tmp_path) as p:
        pod = p.w.runpod.add_pod(status="EXITED", name="trainer-7")
        p.warn()
        p.w.runpod.set_status(pod, "RUNNING")
        after = _confirm(p, p.warning_message())
        assert p.w.runpod.mutations == []
        assert after.text.endswith(
            f"⛔ Not terminated trainer-7 (runpod:{pod}): it is running now (RUNNING)."
        )
        [action] = p.actions()
        assert not action.done and "running" in action.result
        assert _requests(p) == [], "refused for good: the request is ended"
        store = p.w.store()
        assert f"runpod:{pod}" not in store.history().first_seen_stopped, "its clock reset"
        store.close()


def test_a_pod_started_between_the_listing_and_the_fresh_read_is_left_alone(
    tmp_path: Path,
) -> None:
    with phone(tmp_path) as p:
        pod = p.w.runpod.add_pod(status="EXITED", name="trainer-7")
        p.warn()
        assert p.telegram is not None
        message = p.warning_message()
        p.telegram.press(message, "Terminate now")
        p.poll()
        p.w.runpod.after_next("list", lambda: p.w.runpod.set_status(pod, "RUNNING"))
        p.telegram.press(p.telegram.message(message.message_id), "⚠️ Yes, terminate")
        p.poll()
        assert p.w.runpod.mutations == []
        assert p.telegram.message(message.message_id).text.endswith(
            "the fresh reading right before the delete shows it running (RUNNING)."
        )


def test_protected_locked_and_kept_pods_are_never_terminated_from_the_phone(
    tmp_path: Path,
) -> None:
    with phone(tmp_path) as p:
        marked = p.w.runpod.add_pod(status="EXITED", name="a")
        locked = p.w.runpod.add_pod(status="EXITED", name="b")
        kept = p.w.runpod.add_pod(status="EXITED", name="c")
        p.warn()
        assert p.telegram is not None
        warnings = _warnings(p)
        p.w.runpod.modify_entry(marked, name="a reaper:keep")
        p.w.runpod.modify_entry(locked, locked=True)
        store = p.w.store()
        store.keep(KeptInstance(key=f"runpod:{kept}", since=p.w.clock.now()))
        store.close()
        texts = [_confirm(p, warnings[name]).text for name in ("a", "b", "c")]
        assert p.w.runpod.mutations == []
        assert "name contains the protect marker 'reaper:keep'" in texts[0]
        assert "locked on RunPod" in texts[1]
        assert "kept by `reaper keep`" in texts[2]


def test_observe_mode_and_a_cap_of_zero_destroy_nothing(tmp_path: Path) -> None:
    with phone(tmp_path) as p:
        first = p.w.runpod.add_pod(status="EXITED", name="a")
        p.w.runpod.add_pod(status="EXITED", name="b")
        p.warn()
        assert p.telegram is not None
        warnings = _warnings(p)

        p.w.settings = replaced(p.settings, mode="observe")
        observed = _confirm(p, warnings["a"]).text
        assert observed.endswith("REAPER_MODE=observe destroys nothing.")

        p.w.settings = replaced(p.settings, mode="enforce", max_terminations=0)
        capped = _confirm(p, warnings["b"]).text
        assert "REAPER_MAX_TERMINATIONS=0 turns terminations off" in capped
        assert p.w.runpod.mutations == []
        assert _requests(p) == [], "refused requests never wait for another mode or cap"
        p.w.settings = replaced(p.settings, max_terminations=10)
        p.w.advance(0.25)
        assert action_of(p.run(), first) is None, "not due yet, and nothing asks for it now"
        assert p.w.runpod.mutations == []


def test_while_a_pass_holds_the_lease_the_request_waits_for_the_next_pass(tmp_path: Path) -> None:
    with phone(tmp_path) as p:
        pod = p.w.runpod.add_pod(status="EXITED", name="trainer-7")
        p.warn()
        store = p.w.store()
        assert store.acquire_lease(LEASE_NAME, "another pass", p.w.clock.now(), LEASE_TTL)
        store.close()
        after = _confirm(p, p.warning_message())
        assert "not done yet (a reap pass is running now)" in after.text
        assert p.w.runpod.mutations == []
        [request] = _requests(p)
        assert request.by == "@alice (Telegram user 42)"

        store = p.w.store()
        store.release_lease(LEASE_NAME, "another pass")
        store.close()
        p.w.advance(0.25)  # the next pass, well before the deadline
        report = p.run()
        assert action_of(report, pod) == "terminate"
        [done] = [a for a in report.actions if a.id == pod]
        assert done.confirmed and done.reason.startswith("terminate now asked by @alice")
        assert _requests(p) == []


def test_a_failing_provider_leaves_the_request_for_the_next_pass(tmp_path: Path) -> None:
    with phone(tmp_path) as p:
        pod = p.w.runpod.add_pod(status="EXITED", name="trainer-7")
        p.warn()
        p.w.runpod.fail_next("list", 500, count=4)
        after = _confirm(p, p.warning_message())
        assert "not done yet (the listing failed" in after.text
        assert len(_requests(p)) == 1 and p.w.runpod.mutations == []
        p.w.runpod.clear_faults()
        p.w.advance(0.25)
        assert action_of(p.run(), pod) == "terminate"


def test_a_request_from_before_a_restart_asks_nothing(tmp_path: Path) -> None:
    with phone(tmp_path) as p:
        pod = p.w.runpod.add_pod(status="EXITED", name="trainer-7")
        p.warn()
        store = p.w.store()
        store.acquire_lease(LEASE_NAME, "another pass", p.w.clock.now(), LEASE_TTL)
        store.close()
        _confirm(p, p.warning_message())
        store = p.w.store()
        store.release_lease(LEASE_NAME, "another pass")
        store.close()
        p.w.runpod.set_status(pod, "RUNNING")
        p.w.advance(0.25)
        p.run()
        p.w.runpod.set_status(pod, "EXITED")
        p.w.advance(0.25)
        report = p.run()
        assert action_of(report, pod) is None
        assert p.w.runpod.mutations == []
        assert _requests(p) == []


def test_a_delete_the_relist_does_not_confirm_is_said_and_alerted(tmp_path: Path) -> None:
    with phone(tmp_path) as p:
        pod = p.w.runpod.add_pod(status="EXITED", name="trainer-7")
        p.warn()
        p.w.runpod.delete_never_confirms = True
        after = _confirm(p, p.warning_message())
        assert after.text.endswith("a new listing still shows it: the next pass checks again.")
        assert p.telegram is not None
        assert any(m.text.startswith("🚨 Termination of trainer-7") for m in p.telegram.messages)
        store = p.w.store()
        [record] = store.audit_log()
        store.close()
        assert record.id == pod and not record.confirmed


def test_a_vast_instance_is_terminated_through_an_ntfy_page(tmp_path: Path) -> None:
    with phone(tmp_path, telegram=False, ntfy=True) as p:
        assert p.ntfy is not None
        inst = str(p.w.vast.add_instance(actual_status="stopped", label="big-run"))
        p.warn()
        [published] = [x for x in p.ntfy.published if "will be terminated" in x.payload["title"]]
        terminate = published.actions[2]
        assert terminate["action"] == "view" and terminate["label"] == "Terminate now…"
        with p.served() as app:
            page = app.http.get(link_path(terminate["url"]))
            assert page.status_code == 200
            assert 'class="danger"' in page.text and "cannot be brought back" in page.text
            assert p.w.vast.mutations == []
            done = app.http.post(link_path(terminate["url"]), data={"choice": "0"})
        assert done.status_code == 200, done.text
        assert done.text.startswith(f"Terminated big-run (vast:{inst}), as action link asked")
        assert [r.method for r in p.w.vast.mutations] == ["DELETE"]


def test_a_dry_run_request_pass_deletes_nothing(tmp_path: Path) -> None:
    with phone(tmp_path) as p:
        pod = p.w.runpod.add_pod(status="EXITED", name="trainer-7")
        p.warn()
        now = p.w.clock.now()
        store = p.w.store()
        store.request_termination(
            TerminationRequest(
                key=f"runpod:{pod}",
                requested_at=now,
                by="test",
                mode="enforce",
                expires_at=now.replace(year=now.year + 1),
                stretch=store.history().first_seen_stopped[f"runpod:{pod}"],
            )
        )

        async def go() -> str:
            clients = make_clients(p.settings, FAST_HTTP)
            try:
                ctx = Context.make(
                    p.settings, store, clients, p.notifier(), p.w.clock, dry_run=True
                )
                outcome = await request_pass(ctx, f"runpod:{pod}", confirm=FAST_CONFIRM)
                assert isinstance(ctx.effects, DryRunEffects)
                assert f"delete runpod:{pod}" in ctx.effects.recorded
                return outcome.why
            finally:
                for client in clients:
                    await client.aclose()

        assert asyncio.run(go()) == "a dry run deletes nothing"
        store.close()
        assert p.w.runpod.mutations == []
