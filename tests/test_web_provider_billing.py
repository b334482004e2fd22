"""The provider's own billing history on the status page: each reap pass reads RunPod's
`GET /v2/billing` beside the balance, its snapshot keeps it, and the Spend section says what
RunPod billed over 7 and 30 days next to reaper's own estimate — by name in `/status` too. A
history that does not cover the days says so; a failed read keeps the last one and fails
nothing; Vast, which offers none, shows none."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

from tests.heartbeat_support import ADMIN
from tests.web_support import Fleet, fleet, page_of


def _spend(page: str) -> str:
    match = re.search(r'<section class="card" id="spend">(.*?)</section>', page, re.S)
    assert match
    return match.group(1)


def _billed_lines(page: str) -> list[str]:
    return re.findall(r'<p class="small billed">([^<]+)</p>', _spend(page))


def _status(f: Fleet) -> dict[str, dict[str, object]]:
    data = f.http.get("/status", headers={"Authorization": f"Bearer {ADMIN}"}).json()
    return {b["provider"]: b for b in data["balances"]}


def test_runpod_billing_is_shown_beside_the_estimate(tmp_path: Path) -> None:
    with fleet(tmp_path) as f:
        now = f.app.clock.now()
        f.world.runpod.set_billing({now - timedelta(days=n): 10.0 + n for n in range(30)})
        f.world.run()  # a pass reads the history into its snapshot
        page = page_of(f)
        balances = _status(f)
    seven = sum(10.0 + n for n in range(7))
    thirty = sum(10.0 + n for n in range(30))
    assert _billed_lines(page) == [
        f"RunPod (main) billed ${seven:,.2f} over these 7 days, by its own billing history",
        f"RunPod (main) billed ${thirty:,.2f} over these 30 days, by its own billing history",
    ]
    runpod, vast = balances["runpod"], balances["vast"]
    assert (runpod["billed_7d"], runpod["billed_30d"]) == (seven, thirty)
    billed = runpod["billed"]
    assert isinstance(billed, list) and len(billed) == 30
    assert (vast["billed_7d"], vast["billed"]) == (None, None)


def test_days_without_a_record_billed_nothing(tmp_path: Path) -> None:
    with fleet(tmp_path) as f:
        f.world.runpod.set_billing({f.app.clock.now(): 2.0})
        f.world.run()
        lines = _billed_lines(page_of(f))
    # Every day of the answer's window is covered: one with no record billed nothing.
    assert lines[0].startswith("RunPod (main) billed $2.00 over these 7 days")
    assert lines[1].startswith("RunPod (main) billed $2.00 over these 30 days")


def test_a_history_that_does_not_cover_the_days_says_so(tmp_path: Path) -> None:
    with fleet(tmp_path) as f:
        f.world.runpod.set_billing({f.app.clock.now(): 2.0})
        f.world.run()
        f.world.advance(24 * 3)  # three days on, with no pass since: the history ends early
        lines = _billed_lines(page_of(f))
    assert lines == [
        "RunPod (main): its billing history does not cover these 7 days yet",
        "RunPod (main): its billing history does not cover these 30 days yet",
    ]


def test_a_failed_read_keeps_the_last_history_and_fails_nothing(tmp_path: Path) -> None:
    with fleet(tmp_path) as f:
        f.world.runpod.set_billing({f.app.clock.now(): 5.0})
        f.world.run()
        f.world.advance(1)
        f.world.runpod.fail_next("billing", status=500, count=10)
        report = f.world.run()
        assert report.errors == [] and report.exit_code == 0, "a billing read fails nothing"
        lines = _billed_lines(page_of(f))
    assert lines and "$5.00" in lines[0]


def test_each_pods_own_billing_on_its_row(tmp_path: Path) -> None:
    with fleet(tmp_path) as f:
        now = f.app.clock.now()
        f.world.runpod.set_pod_billing(
            f.running_id, {now - timedelta(days=n): 20.0 for n in range(3)}
        )
        f.world.runpod.set_pod_billing(f.stopped_id, {now - timedelta(days=1): 1.32})
        f.world.run()
        page = page_of(f)
        data = f.http.get("/status", headers={"Authorization": f"Bearer {ADMIN}"}).json()
    running = re.search(r'<section class="card" id="running">(.*?)</section>', page, re.S)
    stopped = re.search(r'<section class="card" id="stopped">(.*?)</section>', page, re.S)
    assert running and "RunPod billed $60.00 for it in 30 days" in running.group(1)
    assert stopped and "RunPod billed $1.32 for it in 30 days" in stopped.group(1)
    by_id = {r["id"]: r for r in data["running"] + data["stopped"]}
    assert by_id[f.running_id]["billed_30d"] == 60.0
    assert by_id[f.stopped_id]["billed_30d"] == 1.32
    assert by_id[f.vast_id]["billed_30d"] is None
