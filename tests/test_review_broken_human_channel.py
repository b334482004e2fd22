"""Review: Telegram is configured (so REAPER_REQUIRE_CHANNEL's "no channel" hold never applies)
but every message to it fails — a revoked bot token answers 401 — while the plain webhook beside
it takes every message. Each warning is then delivered only where no person reads it: it
licenses nothing (right), so the pass warns again, and again, past the deadline, for ever. That
is an instance past its deadline left alone because no channel reaches a person: "No silent
exemption" asks for exit 1 while it lasts, not exit 0 pass after pass."""

from __future__ import annotations

from pathlib import Path

from reaper.app.wiring import make_notifier
from tests.phone_support import FAST_CHANNEL, telegram_beside_webhook
from tests.reap_support import action_of


def test_a_configured_channel_that_reaches_nobody_is_not_an_exit_0_for_ever(
    tmp_path: Path,
) -> None:
    with telegram_beside_webhook(tmp_path) as (telegram, hook, w):
        assert w.settings.human_channel and w.settings.require_channel
        telegram.fail(401, times=1000, description="Unauthorized")
        notifier = make_notifier(w.settings, options=FAST_CHANNEL)
        pod = w.runpod.add_pod(status="EXITED", name="trainer", volume_gb=50)
        w.run(notifier=notifier)
        w.advance(23)
        assert action_of(w.run(notifier=notifier), pod) == "warn"

        seen: list[str | None] = []
        codes: list[int] = []
        for _ in range(6):
            w.advance(1)
            report = w.run(notifier=notifier)
            seen.append(action_of(report, pod))
            codes.append(report.exit_code)

        assert w.runpod.mutations == [], "an unheard warning licenses nothing (this part holds)"
        warned = [e for e in hook.events if e["event"] == "termination_warning"]
        assert len(warned) >= 6, "warned again on every pass past the deadline"
        assert set(codes) == {1}, f"past its deadline, nobody told: {seen}, exit {codes}"
