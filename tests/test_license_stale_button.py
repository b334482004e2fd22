"""Issue 24.1: a "Terminate now" button or link is bound to the stopped stretch its warning was
issued for. After a restart the reaper saw (a pass listed the pod running, so its warnings are
void), then a new stop, the old button pressed and confirmed an hour into the new, never-warned
stretch must delete nothing — and the answer says why."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.telegram import Message
from tests.phone_support import Phone, link_path, phone

WHY = "it was started and stopped again since this warning: a new warning will come"


def _confirm(p: Phone, message: Message) -> Message:
    """Press "Terminate now", then the confirmation it adds; the message as it is after."""
    assert p.telegram is not None
    p.telegram.press(message, "Terminate now")
    p.poll()
    asked = p.telegram.message(message.message_id)
    p.telegram.press(asked, "⚠️ Yes, terminate")
    p.poll()
    return p.telegram.message(message.message_id)


def _restart_seen_then_stopped(p: Phone, pod: str) -> None:
    """The user starts the pod, a pass sees it running, the user stops it, a pass sees it
    stopped (a new stretch), and an hour of that new stretch goes by."""
    p.w.runpod.set_status(pod, "RUNNING")
    p.w.advance(0.5)
    p.run()
    p.w.runpod.set_status(pod, "EXITED")
    p.w.advance(0.5)
    p.run()
    p.w.advance(1)


def test_an_old_telegram_button_is_refused_after_a_restart(tmp_path: Path) -> None:
    with phone(tmp_path) as p:
        pod = p.w.runpod.add_pod(status="EXITED", name="trainer-7")
        p.warn()
        message = p.warning_message()
        _restart_seen_then_stopped(p, pod)

        after = _confirm(p, message)

        assert p.w.runpod.mutations == [], "a button of an earlier stretch deletes nothing"
        assert after.text.endswith(f"⛔ Not terminated trainer-7 (runpod:{pod}): {WHY}.")
        [action] = p.actions()
        assert action.kind == "terminate" and not action.done and WHY in action.result
        store = p.w.store()
        try:
            assert store.termination_requests(p.w.clock.now()) == [], "refused for good"
            assert store.audit_log() == []
        finally:
            store.close()
        # And no pass carries it out later either: the new stretch is warned first.
        p.w.advance(1)
        report = p.run()
        assert p.w.runpod.mutations == []
        assert [a.action for a in report.actions if a.id == pod] in ([], ["warn"])


def test_an_old_action_link_is_refused_after_a_restart(tmp_path: Path) -> None:
    with phone(tmp_path, telegram=False, ntfy=True) as p:
        assert p.ntfy is not None
        pod = p.w.runpod.add_pod(status="EXITED", name="trainer-7")
        p.warn()
        [published] = [x for x in p.ntfy.published if "will be terminated" in x.payload["title"]]
        terminate = published.actions[2]
        assert terminate["label"] == "Terminate now…"
        _restart_seen_then_stopped(p, pod)

        with p.served() as app:
            done = app.http.post(link_path(terminate["url"]), data={"choice": "0"})

        assert done.status_code == 409, done.text  # checked and not done
        assert p.w.runpod.mutations == []
        assert done.text.startswith(f"Not terminated trainer-7 (runpod:{pod}): {WHY}.")


def test_a_button_of_the_current_stretch_still_terminates(tmp_path: Path) -> None:
    """The binding refuses only what belongs to another stretch: the button of the warning
    of this very stretch works, well before the deadline."""
    with phone(tmp_path) as p:
        pod = p.w.runpod.add_pod(status="EXITED", name="trainer-7")
        p.warn()
        p.w.advance(0.25)
        after = _confirm(p, p.warning_message())
        assert after.text.endswith(
            f"✅ Terminated trainer-7 (runpod:{pod}), as @alice (Telegram user 42) asked;"
            " confirmed gone by a new listing."
        )
        assert [m.method for m in p.w.runpod.mutations] == ["DELETE"]
