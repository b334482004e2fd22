"""The daily digest runs at REAPER_DIGEST_AT (08:00 UTC) under `reaper serve`, as EventBridge
runs it on AWS from the same variable — never at start-up."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import time
from datetime import UTC, datetime, timedelta
from datetime import time as dtime
from pathlib import Path

import pytest

from emulators.channels import RecordingNotifier
from emulators.clock import FakeClock
from reaper.interfaces.serve import Job, Scheduler, next_daily, serve_jobs
from reaper.settings.parse import Account
from tests.heartbeat_support import make_settings

ROOT = Path(__file__).resolve().parents[1]
EIGHT = dtime(8, 0)


@pytest.mark.parametrize(
    ("now", "expected"),
    [
        (datetime(2026, 5, 4, 7, 59, tzinfo=UTC), datetime(2026, 5, 4, 8, 0, tzinfo=UTC)),
        (datetime(2026, 5, 4, 8, 0, tzinfo=UTC), datetime(2026, 5, 5, 8, 0, tzinfo=UTC)),
        (datetime(2026, 5, 4, 23, 30, tzinfo=UTC), datetime(2026, 5, 5, 8, 0, tzinfo=UTC)),
        (datetime(2026, 12, 31, 9, 0, tzinfo=UTC), datetime(2027, 1, 1, 8, 0, tzinfo=UTC)),
    ],
)
def test_next_daily(now: datetime, expected: datetime) -> None:
    assert next_daily(EIGHT, now) == expected


def test_next_daily_reads_the_time_in_utc() -> None:
    from zoneinfo import ZoneInfo

    tokyo = datetime(2026, 5, 4, 16, 0, tzinfo=ZoneInfo("Asia/Tokyo"))  # 07:00 UTC
    assert next_daily(EIGHT, tokyo) == datetime(2026, 5, 4, 8, 0, tzinfo=UTC)


def test_the_digest_waits_for_its_time_of_day(tmp_path: Path) -> None:
    clock = FakeClock(datetime(2026, 5, 4, 6, 30, tzinfo=UTC))
    settings = make_settings(
        tmp_path,
        runpod_accounts=(Account("runpod", "m", "k" * 8),),
        digest_at=dtime(17, 45),
    )
    jobs = {j.name: j for j in serve_jobs(settings, None, RecordingNotifier(), clock, [])}  # type: ignore[arg-type]
    assert jobs["watch"].delay is None and jobs["reap"].delay is None
    delay = jobs["digest"].delay
    assert delay is not None
    assert delay() == timedelta(hours=11, minutes=15).total_seconds()
    clock.advance(timedelta(hours=11, minutes=15))
    assert delay() == timedelta(days=1).total_seconds()  # just sent: tomorrow's


def test_a_delayed_job_does_not_run_at_start_up_and_runs_after_its_delay() -> None:
    ran: list[float] = []

    async def scenario() -> int:
        started = time.perf_counter()
        done = asyncio.Event()

        async def digest() -> None:
            ran.append(time.perf_counter() - started)
            done.set()

        # The delay is asked again after each run (the next 08:00): a day later here. Asking
        # it is the job's way back to waiting, so once it is asked twice no second run can
        # have come at once.
        delays = iter([0.3])
        asked: list[float] = []
        waiting_again = asyncio.Event()

        def delay() -> float:
            asked.append(next(delays, 86400.0))
            if len(asked) == 2:
                waiting_again.set()
            return asked[-1]

        scheduler = Scheduler([Job("digest", timedelta(days=1), digest, delay=delay)])
        scheduler.start()
        await done.wait()  # until it has run (a fixed wait lost that race on a loaded machine)
        await waiting_again.wait()
        await scheduler.stop()
        return len(ran)

    runs = asyncio.run(asyncio.wait_for(scenario(), timeout=30))
    assert runs == 1
    assert ran[0] >= 0.29, "not before its delay"


def test_a_stop_during_the_wait_ends_the_job_without_running_it() -> None:
    ran: list[int] = []

    async def scenario() -> None:
        async def digest() -> None:
            ran.append(1)

        waiting = asyncio.Event()

        def delay() -> float:
            waiting.set()  # asked right before the wait: the job is waiting now
            return 3600

        scheduler = Scheduler([Job("digest", timedelta(days=1), digest, delay=delay)])
        scheduler.start()
        await waiting.wait()
        await asyncio.wait_for(scheduler.stop(), timeout=2)

    asyncio.run(scenario())
    assert ran == []


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_aws_runs_the_digest_at_the_same_time_of_day() -> None:
    """serverless.yml's digest schedule is `${reaperCron:REAPER_DIGEST_AT}`: the same variable,
    the same grammar, and weeks in the rates as in reaper's durations."""
    assert "${reaperCron:REAPER_DIGEST_AT}" in (ROOT / "serverless.yml").read_text()
    cases = ["08:00", "7:05", "23:59", "24:00", "8", "08:60", "8am"]
    script = (
        "const p = require('./infra/aws/reaper-plugin.js'); const out = {};"
        f"for (const t of {json.dumps(cases)}) {{"
        "  try { out[t] = p.cronExpression('REAPER_DIGEST_AT', t); }"
        "  catch (e) { out[t] = 'error: ' + e.message; } }"
        "out.week = p.rateExpression('REAPER_REAP_EVERY', '1w');"
        "console.log(JSON.stringify(out));"
    )
    done = subprocess.run(
        ["node", "-e", script], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True
    )
    answers = json.loads(done.stdout)
    assert answers["08:00"] == "cron(0 8 * * ? *)"
    assert answers["7:05"] == "cron(5 7 * * ? *)"
    assert answers["23:59"] == "cron(59 23 * * ? *)"
    for bad in ("24:00", "8", "08:60", "8am"):
        assert answers[bad].startswith("error: REAPER_DIGEST_AT: expected a UTC time of day")
    assert answers["week"] == "rate(7 days)"
