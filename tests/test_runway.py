"""Runway: a balance above BALANCE_MIN that lasts fewer than BALANCE_HOURS at the current spend
alerts, once per episode — the Vast account with 15 minutes left at $67.78/h that raised
nothing. The digest and `reaper report` show the runway."""

from __future__ import annotations

from pathlib import Path

import pytest

from reaper.core.runway import runway_hours, runway_short
from reaper.passes.digest import build_digest, digest_alert, survey
from tests.reap_support import events, world


@pytest.mark.parametrize(
    ("balance", "spend", "hours"),
    [
        (16.95, 67.78, 16.95 / 67.78),
        (100.0, 2.0, 50.0),
        (-3.0, 2.0, 0.0),
        (0.0, 1.0, 0.0),
        (None, 2.0, None),
        (10.0, None, None),
        (10.0, 0.0, None),
        (10.0, -1.0, None),
        (10.0, float("inf"), None),
        (float("nan"), 1.0, None),
    ],
)
def test_runway_hours(balance: float | None, spend: float | None, hours: float | None) -> None:
    assert runway_hours(balance, spend) == (None if hours is None else pytest.approx(hours))


def test_runway_short() -> None:
    assert runway_short(0.25, 12) is True
    assert runway_short(13.0, 12) is False
    assert runway_short(None, 12) is None
    assert runway_short(0.25, 0) is None  # BALANCE_HOURS=0: the check is off


def _burning(w, balance: float) -> None:  # type: ignore[no-untyped-def]
    w.vast.add_instance(501, label="a100-x8", actual_status="running", dph_total=67.78)
    w.vast.set_user(balance=balance, credit=balance)


def test_fifteen_minutes_left_above_balance_min_alerts_once(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        _burning(w, 16.95)
        report = w.run()
        assert events(w.notifier).count("balance_runway") == 1
        [alert] = [a for a in w.notifier.alerts if a.event == "balance_runway"]
        assert alert.title == "Vast main: balance lasts about 15m at $67.78/h"
        assert "$16.95 left" in alert.body and "BALANCE_HOURS" in alert.body
        assert alert.level == "critical"
        assert "balance_low" not in events(w.notifier)  # $16.95 is above BALANCE_MIN ($5)
        assert report.guards is not None
        [vast] = [b for b in report.guards.balances if b.provider == "vast"]
        assert vast.spend_per_hour == pytest.approx(67.78)

        w.advance(0.1)
        w.run()
        assert events(w.notifier).count("balance_runway") == 1  # once per episode


def test_a_long_runway_closes_the_episode_and_the_next_short_one_alerts(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        _burning(w, 16.95)
        w.run()
        w.vast.set_user(balance=5000.0, credit=5000.0)  # topped up: 73h
        w.advance(0.1)
        w.run()
        w.vast.set_user(balance=100.0, credit=100.0)  # 1h28m again
        w.advance(0.1)
        w.run()
        assert events(w.notifier).count("balance_runway") == 2


def test_below_balance_min_the_low_alert_speaks_alone(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        _burning(w, 3.0)
        w.run()
        assert "balance_low" in events(w.notifier)
        assert "balance_runway" not in events(w.notifier)


def test_balance_hours_zero_turns_it_off_and_nothing_billing_never_alerts(
    tmp_path: Path,
) -> None:
    with world(tmp_path, balance_hours=0.0) as w:
        _burning(w, 16.95)
        w.run()
        assert "balance_runway" not in events(w.notifier)
    with world(tmp_path / "idle") as w:
        w.vast.set_user(balance=6.0, credit=6.0)  # nothing runs: no runway to speak of
        w.run()
        assert "balance_runway" not in events(w.notifier)


def test_a_dry_run_reports_the_runway_and_sends_nothing(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        _burning(w, 16.95)
        report = w.run(dry_run=True)
        assert w.notifier.alerts == []
        assert report.guards is not None
        from reaper.interfaces.views import guards_json

        [vast] = [b for b in guards_json(report.guards)["balances"] if b["provider"] == "vast"]
        assert vast["runway_short"] is True and vast["hours_left"] == pytest.approx(0.25)


def test_the_digest_and_the_report_show_the_runway(tmp_path: Path) -> None:
    import asyncio

    from reaper.app.wiring import make_clients
    from reaper.interfaces.views import digest_text
    from tests.reap_support import FAST_HTTP

    with world(tmp_path) as w:
        _burning(w, 16.95)

        async def gather():  # type: ignore[no-untyped-def]
            clients = make_clients(w.settings, FAST_HTTP)
            try:
                return await survey(clients)
            finally:
                await asyncio.gather(*(c.aclose() for c in clients))

        live = asyncio.run(gather())
        digest = build_digest(w.clock.now(), live, [], [], [], w.settings)
    [vast] = [b for b in digest.balances if b.provider == "vast"]
    assert vast.runway_short is True and vast.low is False
    assert digest.needs_attention
    body = digest_alert(digest).body
    assert "Vast main $16.95, 15m left SHORT" in body
    text = digest_text(digest)
    header = next(line for line in text.splitlines() if "balance" in line.split())
    assert header.split()[-2:] == ["runway", "status"]
    [row] = [line for line in text.splitlines() if line.startswith("vast") and "16.95" in line]
    assert row.split()[-2:] == ["15m", "SHORT"]
