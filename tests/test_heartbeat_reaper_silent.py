"""The watch pass watches the reaper: no completed reap for twice REAPER_REAP_EVERY → "the
reaper itself is silent", once per episode; reaping off (no provider key) → no such alert."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from reaper.core.models import ReapRun
from reaper.settings.parse import Account
from tests.heartbeat_support import Served, make_settings, served

ACCOUNT = (Account("runpod", "main", "rp-key-main"),)


def _reaped(app: Served, at: datetime) -> None:
    app.store.record_reap(
        ReapRun(
            at=at, finished_at=at, dry_run=False, mode="enforce",
            instances=1, terminated=0, warned=0, errors=0, exit_code=0,
        )
    )  # fmt: skip


def _silent_alerts(app: Served) -> int:
    return app.events().count("reaper_silent")


def test_silence_after_the_last_reap_alerts_once(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, runpod_accounts=ACCOUNT, reap_every=timedelta(hours=1))
    with served(settings) as app:
        _reaped(app, app.clock.now())
        app.advance(hours=1, minutes=59)
        assert app.watch().reaper_silent is False
        app.advance(minutes=1)
        report = app.watch()
        assert report.reaper_silent is True and report.exit_code == 1
        for _ in range(10):
            app.advance(minutes=30)
            app.watch()
        assert _silent_alerts(app) == 1
        assert "2h" in app.notifier.alerts[0].title


def test_a_reap_closes_the_episode_and_a_new_silence_alerts_again(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, runpod_accounts=ACCOUNT, reap_every=timedelta(hours=1))
    with served(settings) as app:
        _reaped(app, app.clock.now())
        app.advance(hours=3)
        app.watch()
        _reaped(app, app.clock.now())
        app.advance(minutes=1)
        assert app.watch().reaper_silent is False
        app.advance(hours=2)
        app.watch()
        assert _silent_alerts(app) == 2


def test_a_reaper_that_never_completed_a_pass_is_silent_too(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, runpod_accounts=ACCOUNT, reap_every=timedelta(hours=1))
    with served(settings) as app:
        app.watch()  # the watcher starts counting from its first look
        app.advance(hours=2)
        assert app.watch().reaper_silent is True
        assert app.notifier.alerts[0].event == "reaper_silent"


def test_no_provider_key_means_reaping_is_off_and_never_silent(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        app.advance(days=3)
        report = app.watch()
        assert report.reaping is False and report.reaper_silent is False
        assert app.notifier.alerts == []
