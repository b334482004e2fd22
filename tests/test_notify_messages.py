"""Every event's message renders: a one-line title of what, a one-line body of what to do, and
the facts a person needs on a phone (name, id, $/h, deadline, how to keep it)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from reaper.core import messages
from reaper.core.leaks import Finding
from reaper.core.models import Alert, Instance
from reaper.core.units import humanize
from reaper.providers.runpod.pods import what_is_lost as runpod_loses
from reaper.providers.vast.client import what_is_lost as vast_loses

NOW = datetime(2026, 3, 4, 12, 0, tzinfo=UTC)

RUNPOD = Instance(
    provider="runpod",
    account="main",
    id="abc123xyz",
    name="llama-finetune",
    state="stopped",
    raw_status="EXITED",
    stopped_since=NOW - timedelta(hours=23),
    cost_per_hour=0.04,
    container_disk_gb=20,
    volume_disk_gb=50,
    console_url="https://www.runpod.io/console/pods/abc123xyz",
    # The provider's words, as its client reads them into every instance.
    provider_label="RunPod",
    termination_loses=runpod_loses(20, 50, None),
)
VAST = Instance(
    provider="vast",
    account="2",
    id="987654",
    name="sd-batch",
    state="running",
    raw_status="running",
    cost_per_hour=0.35,
    started_at=NOW - timedelta(hours=3, minutes=20),
    container_disk_gb=100,
    provider_label="Vast",
    name_field="label",
    termination_loses=vast_loses(100),
)


LEAK = Finding(
    key="leak:frozen:vast:2:987654",
    kind="frozen",
    provider="vast",
    account="2",
    id="987654",
    detail="frozen, $0.35/h",
    cost_per_hour=0.35,
)


def assert_phone_readable(alert: Alert) -> None:
    """One line of title; one line of body, except a folded list (one line per instance)."""
    assert alert.title.strip()
    assert "\n" not in alert.title
    folded = alert.dedup_key.startswith(
        (
            "termination_warnings",
            "would_terminate:",
            "heartbeat:",
            # Instances a person must look at, one line each with what it bills.
            "needs_you:",
            "cap_exceeded",
            "no_channel_hold",
        )
    )
    if not folded:
        assert "\n" not in alert.body
    assert len(alert.title) <= 200
    assert alert.event != "alert"


@pytest.mark.parametrize(
    ("delta", "text"),
    [
        (timedelta(seconds=45), "45s"),
        (timedelta(minutes=7), "7m"),
        (timedelta(hours=1, minutes=30), "1h30m"),
        (timedelta(hours=23, seconds=59), "23h"),
        (timedelta(days=2, hours=3), "2d3h"),
        (timedelta(days=1), "1d"),
        (timedelta(hours=-2), "2h"),
    ],
)
def test_humanize(delta: timedelta, text: str) -> None:
    assert humanize(delta) == text


def test_termination_warning_runpod() -> None:
    alert = messages.termination_warning(
        RUNPOD, NOW + timedelta(hours=1), NOW, "reaper:keep", next_check=NOW + timedelta(hours=1)
    )
    assert_phone_readable(alert)
    assert alert.title == (
        "llama-finetune (runpod:abc123xyz) will be terminated in 1h (2026-03-04 13:00 UTC)"
    )
    for fact in ("$0.040/h", "$29.20/month", "container disk 20 GB", "volume disk 50 GB"):
        assert fact in alert.body
    assert "network volumes survive" in alert.body
    assert "`reaper keep runpod:abc123xyz`" in alert.body
    assert '"reaper:keep" in its name' in alert.body
    assert "start it" in alert.body
    assert alert.level == "warning"
    assert alert.url == RUNPOD.console_url
    assert alert.dedup_key == "termination_warning:runpod:abc123xyz"


def test_a_warning_without_a_visible_restart_does_not_promise_that_starting_saves_it() -> None:
    """Where the provider's answer cannot show a start between two checks (Vast; a RunPod pod
    without `startedAt`), a start and stop before the next check would go unseen."""
    hidden = RUNPOD.model_copy(update={"restart_visible": False})
    alert = messages.termination_warning(
        hidden, NOW + timedelta(hours=1), NOW, "reaper:keep", next_check=NOW + timedelta(hours=1)
    )
    assert "To keep it: start it" not in alert.body
    assert "leave it running past the next check (2026-03-04 13:00 UTC)" in alert.body
    assert "`reaper keep runpod:abc123xyz`" in alert.body


def test_an_observe_warning_says_would_and_never_will() -> None:
    alert = messages.termination_warning(
        RUNPOD, NOW + timedelta(hours=1), NOW, "k", next_check=NOW, observe=True
    )
    assert "would be terminated" in alert.title
    assert "will be terminated" not in alert.title
    assert "observe" in alert.body


def test_a_folded_warning_names_each_instance_and_its_deadline() -> None:
    [(keys, alert)] = messages.fold_warnings(
        [(RUNPOD, NOW + timedelta(hours=1)), (VAST, NOW + timedelta(hours=2))],
        NOW,
        "reaper:keep",
        next_check=NOW,
    )
    assert keys == ["runpod:abc123xyz", "vast:987654"]
    assert alert.title.startswith("2 stopped instances will be terminated")
    assert alert.body.splitlines()[:4] == [
        "At 2026-03-04 13:00 UTC:",
        "- llama-finetune (runpod:abc123xyz), $0.040/h",
        "At 2026-03-04 14:00 UTC:",
        "- sd-batch (vast:987654), $0.35/h",
    ]


def test_a_fold_too_long_for_its_channel_is_split_and_names_each_instance_once() -> None:
    many = [
        (RUNPOD.model_copy(update={"id": f"pod{n:04d}", "name": f"job-{n}"}), NOW)
        for n in range(200)
    ]
    folded = messages.fold_warnings(many, NOW, "k", next_check=NOW, budget=2000)
    assert len(folded) > 1
    assert all(len(alert.body.encode()) <= 2000 for _keys, alert in folded)
    named = [key for keys, _alert in folded for key in keys]
    assert sorted(named) == sorted(inst.key for inst, _at in many)
    assert len({alert.dedup_key for _keys, alert in folded}) == len(folded)


def test_termination_warning_vast() -> None:
    stopped = VAST.model_copy(update={"state": "stopped", "raw_status": "stopped"})
    alert = messages.termination_warning(
        stopped, NOW + timedelta(minutes=90), NOW, "do-not-reap", next_check=NOW
    )
    assert "in 1h30m" in alert.title
    assert "instance disk 100 GB" in alert.body
    assert "Vast volumes survive" in alert.body
    assert '"do-not-reap" in its label' in alert.body
    assert "`reaper keep vast:987654`" in alert.body


def test_network_volume_named_when_known() -> None:
    inst = RUNPOD.model_copy(
        update={"network_volume_id": "vol-42", "termination_loses": runpod_loses(20, 50, "vol-42")}
    )
    alert = messages.termination_warning(inst, NOW, NOW, "reaper:keep", next_check=NOW)
    assert "network volume vol-42 survives" in alert.body
    assert "terminated now" in alert.title


def test_terminated_reports_storage_it_stops() -> None:
    alert = messages.terminated(RUNPOD, storage_per_month=29.2)
    assert_phone_readable(alert)
    assert "llama-finetune (runpod:abc123xyz)" in alert.title
    assert "$29.20/month" in alert.body
    assert alert.level == "info"
    fallback = messages.terminated(RUNPOD, storage_per_month=None)
    assert "$29.20/month" in fallback.body


def test_instance_messages_carry_name_id_and_cost() -> None:
    rendered = [
        messages.termination_unconfirmed(RUNPOD),
        messages.would_terminate(RUNPOD),
        messages.watchdog_silent_billing("vast-987654", VAST, NOW - timedelta(minutes=12)),
        messages.instance_stopped_watchdog("runpod-abc123xyz", RUNPOD),
        messages.running_without_watchdog(VAST, NOW),
    ]
    for alert in rendered:
        assert_phone_readable(alert)
        text = f"{alert.title} {alert.body}"
        assert "(runpod:abc123xyz)" in text or "(vast:987654)" in text
    unconfirmed, would, silent, stopped, unwatched = rendered
    assert unconfirmed.level == "critical"
    assert "EXITED" in unconfirmed.body
    assert "observe" in would.title
    assert silent.title == "Watchdog silent while sd-batch (vast:987654) bills $0.35/h"
    assert "2026-03-04 11:48 UTC" in silent.body
    assert silent.level == "critical"
    assert "reaper takes over" in stopped.title
    assert "for 3h20m" in unwatched.body
    assert "$0.35/h" in unwatched.body


def test_provider_and_fleet_messages() -> None:
    failing = messages.provider_failing("runpod", "RunPod", "team", "HTTP 503 from /pods")
    assert_phone_readable(failing)
    assert failing.title == "RunPod account team: API failing"
    assert "HTTP 503 from /pods" in failing.body

    cap = messages.cap_exceeded(14, 10, [RUNPOD, VAST, RUNPOD, VAST, RUNPOD], "--max-terminations")
    assert_phone_readable(cap)
    assert "14" in cap.title
    assert "cap 10" in cap.title
    assert "--max-terminations" in cap.title
    assert "--max-terminations 14" in cap.body
    # Each held instance is named with what it bills.
    assert cap.body.count("- llama-finetune (runpod:abc123xyz): bills $0.040/h ($29.20/month)") == 3
    assert cap.body.count("- sd-batch (vast:987654): bills $0.35/h ($255.50/month)") == 2
    off = messages.cap_exceeded(2, 0, [RUNPOD, VAST], "REAPER_MAX_TERMINATIONS")
    assert "terminations are off" in off.title and off.level == "warning"


def test_needs_you_names_each_instance_what_it_bills_and_what_to_do() -> None:
    one = messages.needs_you("cluster", [(RUNPOD, "a member of cluster 'c1'")])
    assert_phone_readable(one)
    assert one.title == (
        "Needs you: llama-finetune (runpod:abc123xyz) is past its deadline and will not be reaped"
    )
    assert "bills $0.040/h ($29.20/month)" in one.body
    assert "terminate the cluster in the console" in one.body
    assert one.level == "critical" and one.event == "needs_you"
    many = messages.needs_you(
        "unreadable_protection",
        [(RUNPOD, "protection cannot be read (`name` is null)"), (VAST, "`label` is missing")],
    )
    assert many.title.startswith("Needs you: 2 stopped instances")
    assert "`name` is null" in many.body and "`label` is missing" in many.body
    assert many.dedup_key != one.dedup_key


def test_a_provider_clock_off_names_the_provider() -> None:
    alert = messages.provider_clock_off("vast", "Vast", "vast's clock is 10m ahead")
    assert_phone_readable(alert)
    assert alert.title == "Vast's clock is off: nothing on Vast is decided"
    assert alert.body.startswith("Vast's clock is 10m ahead.")


def test_heartbeat_messages() -> None:
    down = messages.monitor_down("train-1", NOW - timedelta(minutes=7), NOW)
    still = messages.monitor_still_down("train-1", NOW - timedelta(hours=2), NOW)
    back = messages.monitor_recovered("train-1", timedelta(hours=1, minutes=30))
    failed = messages.monitor_failed("train-1", 3, "CUDA out of memory")
    for alert in (down, still, back, failed):
        assert_phone_readable(alert)
        assert "train-1" in alert.title
    assert down.title == "train-1: no heartbeat for 7m"
    assert "11:53 UTC" in down.body
    assert "down 2h" in still.title
    # The reminder replaces the first alert on the phone; the recovery is its own.
    assert still.dedup_key == down.dedup_key
    assert back.dedup_key != down.dedup_key
    assert "1h30m" in back.title
    assert back.level == "info"
    assert failed.title == "train-1: job failed (exit 3)"
    assert "CUDA out of memory" in failed.body
    assert messages.monitor_down("h", None, NOW).title == "h: no heartbeat yet"


def test_reaper_silent_and_balance() -> None:
    silent = messages.reaper_silent(NOW - timedelta(hours=3), NOW)
    assert silent.title == "Reaper silent for 3h"
    never = messages.reaper_silent(None, NOW)
    assert "never" in never.title

    low = messages.balance_low("vast", "Vast", "2", 3.5, 0.5, 5.0)
    assert_phone_readable(low)
    assert low.title == "Vast 2: balance $3.50 (below $5.00)"
    assert "About 7h left at $0.50/h" in low.body
    assert low.level == "warning"
    assert messages.balance_low("vast", "Vast", "2", 0.8, 0.5, 5.0).level == "critical"
    assert "Nothing is billing" in messages.balance_low("runpod", "RunPod", "1", 3, 0, 5).body


def test_webhook_text_is_kept_exactly() -> None:
    alert = messages.webhook("run exp1 exited rc=3\n<stderr> & 显存不足 😱")
    assert (alert.title, alert.body) == ("run exp1 exited rc=3", "<stderr> & 显存不足 😱")
    assert alert.event == "webhook"
    same = messages.webhook("run exp1 exited rc=3\n<stderr> & 显存不足 😱")
    assert same.dedup_key == alert.dedup_key
    assert messages.webhook("other").dedup_key != alert.dedup_key
    long_line = "x" * 500
    assert messages.webhook(long_line).body == long_line


def test_webhook_title_body_level() -> None:
    alert = messages.webhook(title="Job done", body="results pushed", level="info")
    assert (alert.title, alert.body, alert.level) == ("Job done", "results pushed", "info")
    with pytest.raises(ValueError):
        messages.webhook("   ")


def _calls() -> dict[str, Callable[[], Alert]]:
    return {
        "termination_warning": lambda: messages.termination_warning(
            RUNPOD, NOW, NOW, "k", next_check=NOW
        ),
        "fold_warnings": lambda: messages.fold_warnings(
            [(RUNPOD, NOW), (VAST, NOW)], NOW, "k", next_check=NOW
        )[0][1],
        "fold_would_terminate": lambda: messages.fold_would_terminate([RUNPOD, VAST], NOW)[0],
        "fold_heartbeat": lambda: messages.fold_heartbeat(
            [messages.monitor_down(f"h{n}", NOW, NOW) for n in range(3)], 2
        )[-1],
        "leak_alert": lambda: messages.leak_alert(LEAK, NOW, NOW, label="Vast"),
        "fetch_failed_alert": lambda: messages.fetch_failed_alert(
            "vast", "1", "volumes", "HTTP 500", label="Vast"
        ),
        "clock_behind": lambda: messages.clock_behind("this clock is late"),
        "unknown_settings": lambda: messages.unknown_settings(["REAPER_STOPED_TTL"]),
        "no_channel_hold": lambda: messages.no_channel_hold([RUNPOD, VAST], "TELEGRAM_BOT_TOKEN"),
        "needs_you": lambda: messages.needs_you("cluster", [(RUNPOD, "a member of cluster 'c1'")]),
        "provider_clock_off": lambda: messages.provider_clock_off("vast", "Vast", "it is off"),
        "terminated": lambda: messages.terminated(VAST, None),
        "termination_unconfirmed": lambda: messages.termination_unconfirmed(VAST),
        "would_terminate": lambda: messages.would_terminate(VAST),
        "provider_failing": lambda: messages.provider_failing("vast", "Vast", "1", "boom"),
        "cap_exceeded": lambda: messages.cap_exceeded(1, 0, [VAST], "REAPER_MAX_TERMINATIONS"),
        "monitor_down": lambda: messages.monitor_down("h", NOW, NOW),
        "monitor_still_down": lambda: messages.monitor_still_down("h", NOW, NOW),
        "monitor_recovered": lambda: messages.monitor_recovered("h", timedelta(0)),
        "monitor_failed": lambda: messages.monitor_failed("h", None, ""),
        "watchdog_silent_billing": lambda: messages.watchdog_silent_billing("h", VAST, None),
        "instance_stopped_watchdog": lambda: messages.instance_stopped_watchdog("h", VAST),
        "running_without_watchdog": lambda: messages.running_without_watchdog(RUNPOD, NOW),
        "reaper_silent": lambda: messages.reaper_silent(None, NOW),
        "balance_low": lambda: messages.balance_low("runpod", "RunPod", "1", 1.0, None, 5.0),
        "balance_runway": lambda: messages.balance_runway(
            "vast", "Vast", "main", 16.95, 67.78, 0.25, 12.0
        ),
        "test_message": messages.test_message,
        "webhook": lambda: messages.webhook("hi"),
        # Monitors, one by one.
        "monitor_created": lambda: messages.monitor_created("trainnig-job"),
        "monitor_down_after_mute": lambda: messages.monitor_down_after_mute("h", NOW, NOW),
        "with_note": lambda: messages.with_note(messages.monitor_failed("h", 1, ""), "New."),
    }


def test_every_event_renders() -> None:
    public = {
        name
        for name, function in vars(messages).items()
        if inspect.isfunction(function)
        and not name.startswith("_")
        and inspect.signature(function).return_annotation in ("Alert", Alert)
    }
    calls = _calls()
    assert public <= set(calls), "a message function without a rendering test"
    for name, call in calls.items():
        alert = call()
        assert_phone_readable(alert)
        # A one-line webhook text is all title; every event of reaper's own says what to do.
        assert alert.body.strip() or name == "webhook", name
        expected = {
            "test_message": "test",
            "fold_warnings": "termination_warning",
            "fold_would_terminate": "would_terminate",
            "fold_heartbeat": "heartbeat_summary",
            "leak_alert": "frozen",
            "fetch_failed_alert": "guard_fetch_failed",
            "with_note": "monitor_failed",
        }.get(name, name)
        if name != "monitor_still_down":
            assert alert.event == expected
