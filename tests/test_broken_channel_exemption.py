"""A configured person channel that fails (a revoked Telegram token) beside a working webhook:
each warning reaches nobody, so it licenses nothing and is not done (exit 1); past the deadline
that is the no-channel exemption, alerted once per episode (the webhook and the log carry it);
the warning is retried every pass, so the channel's recovery warns at once — and the
termination follows that warning's notice."""

from __future__ import annotations

from pathlib import Path

from reaper.app.wiring import make_notifier
from tests.fakes.telegram import FAKE_TOKEN
from tests.phone_support import FAST_CHANNEL, telegram_beside_webhook
from tests.reap_support import action_of


def test_a_broken_channel_is_an_exemption_until_it_recovers(tmp_path: Path) -> None:
    with telegram_beside_webhook(tmp_path) as (telegram, hook, w):
        notifier = make_notifier(w.settings, options=FAST_CHANNEL)
        telegram.token = "123456:revoked"  # the configured token now answers 401
        pod = w.runpod.add_pod(status="EXITED", name="trainer")
        w.run(notifier=notifier)
        w.advance(23)
        warned = w.run(notifier=notifier)
        assert action_of(warned, pod) == "warn" and warned.exit_code == 1, "reached nobody"
        [reason] = [a.reason for a in warned.actions if a.id == pod]
        # The channel is configured and failed: said as such, never "no channel is configured".
        assert "no configured channel took it" in reason, reason
        assert "not configured" not in reason and "is configured" not in reason, reason
        for _ in range(3):
            w.advance(1)
            report = w.run(notifier=notifier)
            [action] = [a for a in report.actions if a.id == pod]
            assert (action.action, action.exempt, report.exit_code) == ("warn", "no_channel", 1)
        held = [e for e in hook.events if e["event"] == "no_channel_hold"]
        assert len(held) == 1, "once per episode"

        telegram.token = FAKE_TOKEN  # the person fixes the bot
        w.advance(1)
        recovered = w.run(notifier=notifier)
        assert action_of(recovered, pod) == "warn" and recovered.exit_code == 0
        assert any(pod in m.text for m in telegram.messages), "warned at once"
        assert w.runpod.mutations == []
        w.advance(1)
        assert action_of(w.run(notifier=notifier), pod) == "terminate"
        assert [m.method for m in w.runpod.mutations] == ["DELETE"]
