"""Mute from the phone: a silent-watchdog alert offers "Mute 1 day" and the status page; a press
mutes the monitor through the store's `mute_monitor`, the watch pass sends none of its alerts
while it lasts, and they come back after it."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

from reaper.core.models import Monitor
from reaper.core.units import utc
from reaper.passes.watch import WatchReport, watch_pass
from tests.phone_support import PUBLIC, Phone, phone


def _about(p: Phone, host: str) -> list[str]:
    assert p.telegram is not None
    return [m.text for m in p.telegram.messages if m.text.startswith(f"⚠️ {host}:")]


def _watch(p: Phone) -> WatchReport:
    store = p.w.store()
    try:
        return asyncio.run(watch_pass(p.settings, store, p.notifier(), p.w.clock, []))
    finally:
        store.close()


def test_a_muted_monitor_stays_quiet_for_a_day(tmp_path: Path) -> None:
    with phone(tmp_path) as p:
        assert p.telegram is not None
        store = p.w.store()
        now = p.w.clock.now()
        store.put_monitor(Monitor(host="trainer-1", status="up", created_at=now, last_ping_at=now))
        store.close()
        p.w.clock.advance(timedelta(minutes=6))
        assert _watch(p).went_down == ["trainer-1"]
        [down] = [m for m in p.telegram.messages if "trainer-1" in m.text]
        assert down.text.startswith("⚠️ trainer-1: no heartbeat for 6m")
        assert down.labels == ["Mute 1 day", "Status page"]
        assert down.button("Status page")["url"] == f"{PUBLIC}/"

        p.telegram.press(down, "Mute 1 day")
        muted_at = p.w.clock.now()
        p.poll()
        until = muted_at + timedelta(days=1)
        assert p.telegram.answers[0]["text"] == (
            f"Muted monitor trainer-1 until {utc(until)} by @alice (Telegram user 42)."
        )
        store = p.w.store()
        monitor = store.get_monitor("trainer-1")
        store.close()
        assert monitor is not None and monitor.muted_until == until

        for _ in range(5):
            p.w.clock.advance(timedelta(hours=4))
            report = _watch(p)
            assert report.down == ["trainer-1"], "its state is still tracked"
        assert len(_about(p, "trainer-1")) == 1, "no reminder while muted"

        p.w.clock.advance(timedelta(hours=5))
        _watch(p)
        assert len(_about(p, "trainer-1")) == 2
        assert _about(p, "trainer-1")[-1].startswith("⚠️ trainer-1: still no heartbeat")
        [action] = p.actions()
        assert (action.kind, action.targets, action.done) == ("mute", ("trainer-1",), True)


def test_muting_a_deleted_monitor_says_so(tmp_path: Path) -> None:
    with phone(tmp_path) as p:
        assert p.telegram is not None
        store = p.w.store()
        now = p.w.clock.now()
        store.put_monitor(Monitor(host="trainer-2", status="up", created_at=now, last_ping_at=now))
        store.close()
        p.w.clock.advance(timedelta(minutes=6))
        _watch(p)
        store = p.w.store()
        store.delete_monitor("trainer-2")
        store.close()
        [down] = [m for m in p.telegram.messages if "trainer-2" in m.text]
        p.telegram.press(down, "Mute 1 day")
        p.poll()
        assert p.telegram.answers[0]["text"] == (
            "Not muted: there is no monitor trainer-2 (deleted meanwhile?)."
        )
        assert p.telegram.message(down.message_id).text.endswith(
            "⛔ Not muted: there is no monitor trainer-2 (deleted meanwhile?)."
        )
