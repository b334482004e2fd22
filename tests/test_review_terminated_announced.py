"""Review ("Crash-consistent": a confirmed termination is announced at least once). The audit
record's `announced` flag is set after the "Terminated …" alert is *sent*, whatever the sending
answered: when Telegram fails that one message (a 500 on every attempt), the record still says
announced, and no later pass ever tells the person their pod is gone. A warning that failed is
sent again by the next pass; the news of the delete must be too."""

from __future__ import annotations

from pathlib import Path

from tests.phone_support import phone
from tests.reap_support import action_of


def test_a_terminated_message_that_telegram_failed_is_sent_again(tmp_path: Path) -> None:
    with phone(tmp_path) as p:
        assert p.telegram is not None
        pod = p.w.runpod.add_pod(status="EXITED", name="trainer-7")
        p.w.runpod.add_pod(status="RUNNING", name="witness")
        p.warn()
        p.w.advance(1)
        # Telegram is down for the one message of the pass at the deadline: both attempts 500.
        p.telegram.fail(500, times=2)
        report = p.run()
        assert action_of(report, pod) == "terminate" and report.actions[0].confirmed
        assert not [m for m in p.telegram.messages if m.text.startswith("Terminated")]

        for _ in range(3):  # Telegram is back
            p.w.advance(1)
            p.run()

        terminated = [m.text for m in p.telegram.messages if m.text.startswith("Terminated")]
        assert terminated, "the person is told at least once that their pod was terminated"
