"""Issue 12.6: only a warning that reached a person licenses a termination."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from reaper.channels.base import LogNotifier
from tests.cli_process import run_reaper
from tests.fakes.notifiers import StandIn
from tests.reap_support import action_of, world
from tests.settings_support import replaced


def test_with_no_channel_the_due_pod_is_held_with_how_to_fix_it(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED")
        log_only = LogNotifier()
        w.run(notifier=log_only)
        w.advance(23)
        warned = w.run(notifier=log_only)
        assert action_of(warned, pod) == "warn"
        assert warned.no_channel
        w.advance(1)
        report = w.run(notifier=log_only)
        assert action_of(report, pod) == "hold"
        (held,) = [a for a in report.actions if a.id == pod]
        assert "REAPER_REQUIRE_CHANNEL=false" in held.reason
        assert "TELEGRAM_BOT_TOKEN" in held.reason
        assert w.runpod.mutations == []
        # And it stays held, pass after pass.
        w.advance(5)
        assert action_of(w.run(notifier=log_only), pod) == "hold"


def test_require_channel_false_accepts_a_warning_written_to_the_log(tmp_path: Path) -> None:
    with world(tmp_path, require_channel=False) as w:
        pod = w.runpod.add_pod(status="EXITED")
        log_only = LogNotifier()
        w.run(notifier=log_only)
        w.advance(23)
        w.run(notifier=log_only)
        w.advance(1)
        assert action_of(w.run(notifier=log_only), pod) == "terminate"


def test_a_channel_configured_later_warns_anew_before_any_termination(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED")
        log_only = LogNotifier()
        w.run(notifier=log_only)
        w.advance(23)
        w.run(notifier=log_only)
        w.advance(2)
        with_telegram = replaced(w.settings, telegram_bot_token="1:abc", telegram_chat_id="42")
        report = w.run(settings=with_telegram)  # the recording notifier reaches a person
        assert action_of(report, pod) == "warn"
        w.advance(1)
        assert action_of(w.run(settings=with_telegram), pod) == "terminate"


def test_every_cli_pass_says_on_stderr_that_no_channel_is_configured(tmp_path: Path) -> None:
    with world(tmp_path, start=datetime.now(UTC)) as w:
        result = run_reaper(
            ["reap"], env={**w.env(), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}, cwd=tmp_path
        )
        assert "no alert channel reaches a person" in result.stderr
        assert result.returncode == 0


def test_a_channel_that_is_down_for_good_exits_1(tmp_path: Path) -> None:
    """Review finding: every warning failing to send must not look like a quiet success."""
    from reaper.core.models import Alert, Delivery

    class Down(StandIn):
        async def send(self, alert: Alert) -> list[Delivery]:
            return [Delivery(channel="telegram", ok=False, detail="HTTP 502")]

    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED")
        w.run(notifier=Down())
        w.advance(23)
        report = w.run(notifier=Down())
        (action,) = [a for a in report.actions if a.id == pod]
        assert action.action == "warn" and not action.done
        assert report.exit_code == 1
