"""`off` for every duration that turns an alert on: HEARTBEAT_REPEAT (no reminders: each
condition alerts once), IDLE_ALERT_AFTER, REAPER_MAX_RUNTIME and REAPER_STUCK_AFTER (that
alert never goes out) — through the watch pass, the reap pass's guards, `reaper report` and
`reaper watch`, none of which may trip over the missing duration."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from emulators import RunPodEmulator
from reaper.app.settings import load_settings
from reaper.settings.parse import Account
from tests.heartbeat_support import make_settings, served, watch_with_providers
from tests.reap_support import cli, events, world

H = timedelta(hours=1)
VARIABLES = {
    "HEARTBEAT_REPEAT": "heartbeat_repeat",
    "IDLE_ALERT_AFTER": "idle_alert_after",
    "REAPER_MAX_RUNTIME": "max_runtime",
    "REAPER_STUCK_AFTER": "stuck_after",
}


@pytest.mark.parametrize("variable", sorted(VARIABLES))
@pytest.mark.parametrize("spelling", ["off", "OFF", " off "])
def test_off_parses_to_none(variable: str, spelling: str) -> None:
    settings = load_settings({variable: spelling}, dotenv=None)
    assert getattr(settings, VARIABLES[variable]) is None


def test_heartbeat_repeat_off_alerts_a_silence_once(tmp_path: Path) -> None:
    with served(make_settings(tmp_path, heartbeat_repeat=None)) as app:
        app.ping("box")
        app.advance(minutes=6)
        assert app.watch().went_down == ["box"]
        for _ in range(24):
            app.advance(hours=1)
            report = app.watch()
            assert report.reminded == [] and report.down == ["box"]
        app.ping("box")
    assert app.events() == ["monitor_down", "monitor_recovered"]


def test_heartbeat_repeat_off_alerts_a_billing_silence_once(tmp_path: Path) -> None:
    with RunPodEmulator({"main": "rp-key"}) as runpod:
        settings = make_settings(
            tmp_path,
            heartbeat_repeat=None,
            runpod_accounts=(Account("runpod", "main", "rp-key"),),
            runpod_api_url=runpod.rest_url,
            runpod_graphql_url=runpod.graphql_url,
        )
        pod = runpod.add_pod(name="trainer", cost=2.0)
        with served(settings) as app:
            app.ping(f"runpod-{pod}")
            for _ in range(6):
                app.advance(hours=1)
                watch_with_providers(app)
            billing = [e for e in app.events() if e == "watchdog_silent_billing"]
    assert billing == ["watchdog_silent_billing"]


def test_guards_with_every_alert_off_find_nothing_and_never_fail(tmp_path: Path) -> None:
    with world(tmp_path, idle_alert_after=None, max_runtime=None, stuck_after=None) as w:
        start = w.clock.now()
        w.runpod.add_pod("podidle", name="idle-one", gpu_utils=[0], cost=1.25)
        w.runpod.add_pod("podlong", name="marathon", gpu_utils=[70], created_at=start - 400 * H)
        w.vast.add_instance(
            301, label="waiting", actual_status="scheduling", intended_status="running"
        )
        for _ in range(10):
            report = w.run()
            assert report.guards is not None and report.guards.warnings == []
            assert report.exit_code == 0
            w.advance(hours=6)
        found = {f.kind for f in report.guards.findings}
    assert found.isdisjoint({"idle", "max_runtime", "stuck"})
    assert not {"idle", "max_runtime", "stuck"} & set(events(w.notifier))


def test_the_same_guards_alert_when_on(tmp_path: Path) -> None:
    """The control: the fleet above does alert with the durations set."""
    with world(tmp_path, idle_alert_after=H, max_runtime=48 * H, stuck_after=6 * H) as w:
        start = w.clock.now()
        w.runpod.add_pod("podidle", name="idle-one", gpu_utils=[0], cost=1.25)
        w.runpod.add_pod("podlong", name="marathon", gpu_utils=[70], created_at=start - 400 * H)
        w.vast.add_instance(
            301, label="waiting", actual_status="scheduling", intended_status="running"
        )
        for _ in range(3):
            w.run()
            w.advance(hours=6)
    assert {"idle", "max_runtime", "stuck"} <= set(events(w.notifier))


def test_report_and_watch_run_with_every_alert_off(tmp_path: Path) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    off = {name: "off" for name in VARIABLES}
    with world(tmp_path, start=now) as w:
        w.runpod.add_pod("podidle", name="idle-one", gpu_utils=[0], created_at=now - 500 * H)
        # The watch pass creates the state a read command like `report` needs.
        watch = cli(w, "watch", "--json", extra_env=off)
        assert watch.returncode == 0, watch.stderr
        assert json.loads(watch.stdout)["exit_code"] == 0
        report = cli(w, "report", "--json", extra_env=off)
        assert report.returncode == 0, report.stderr
        assert json.loads(report.stdout)["leaks"] == []
        reap = cli(w, "reap", "--dry-run", "--json", extra_env=off)
        assert reap.returncode == 0, reap.stderr
