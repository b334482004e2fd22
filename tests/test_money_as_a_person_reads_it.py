"""Every amount a person reads is written one way — a dollar sign, thousands separators, cents
(a tenth of a cent below $0.10) — in the tables of `reap` and `report` as in their summary lines
and the demo's; the JSON keeps plain numbers."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from reaper.core.digest import BalanceLine, Digest, ReapedLine, SpendLine
from reaper.interfaces.views import digest_json, digest_text, reap_json, reap_table
from tests.reap_support import world

AT = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)


def _digest() -> Digest:
    return Digest(
        at=AT,
        spend_per_hour=1570.5,
        spend=[
            SpendLine(provider="runpod", account="main", per_hour=1570.5, billing=3, unknown_cost=0)
        ],
        reaped_24h=[
            ReapedLine(
                provider="runpod",
                account="main",
                id="big-p1",
                name="archive",
                reason="stopped for 1d, limit 1d",
                requested_at=AT,
                cost_per_hour=1.57,
                per_month=1146.1,
            )
        ],
        reaped_per_month=1146.1,
        monitors_down=[],
        balances=[
            BalanceLine(
                provider="runpod",
                account="main",
                balance=12345.678,
                spend_per_hour=1570.5,
                spend_limit=None,
                hours_left=7.9,
                low=False,
            )
        ],
        leaks=[],
        errors=[],
        warnings=[],
    )


def test_the_report_writes_every_amount_the_same_way() -> None:
    text = digest_text(_digest())
    for amount in ("$1,146.10", "$12,345.68", "$1,570.50"):
        assert amount in text, text
    for plain in ("1146.10", "12345.68", "1570.500", "1570.50 "):
        assert plain not in text, text


def test_the_report_json_keeps_plain_numbers() -> None:
    data = digest_json(_digest())
    assert data["reaped_per_month"] == 1146.1 and data["balances"][0]["balance"] == 12345.678


def test_the_reap_table_writes_what_an_instance_bills_as_money(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        w.runpod.add_pod("big-p1", name="cluster", status="RUNNING", cost=1234.5)
        w.runpod.add_pod("old-p2", name="old", status="EXITED", volume_gb=100)
        report = w.run(dry_run=True)
    text = reap_table(report, show_all=True)
    assert "$1,234.50" in text and "1234.500" not in text, text
    [stored] = [i for i in reap_json(report)["instances"] if i["id"] == "old-p2"]
    assert f"${stored['cost_per_hour']:.3f}" in text
    [big] = [i for i in reap_json(report)["instances"] if i["id"] == "big-p1"]
    assert big["cost_per_hour"] == 1234.5
