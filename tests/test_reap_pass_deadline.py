"""One slow account never delays another's decisions: a reap pass lists every account until its
listing cutoff (half of REAPER_PASS_DEADLINE), turns the accounts not listed by then into errors,
and decides and acts on the others — the due instance of a healthy account is warned, terminated
and confirmed while another account's endpoint trickles or hangs — and the pass ends within its
deadline, every time."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from reaper.passes.deadline import PassDeadline
from reaper.passes.reap import ReapReport
from reaper.providers.base import HttpOptions
from tests.hostile_support import HostileServer
from tests.reap_support import World, action_of, world

# The requests' own bounds far beyond the pass's: only the pass's deadline can end the wait.
PATIENT = HttpOptions(timeout=30, deadline=60, max_attempts=1, backoff_base=0.01, backoff_cap=0.02)
PASS_SECONDS = 3.0


def _pass(w: World) -> tuple[float, ReapReport]:
    started = time.monotonic()
    report = w.run(http=PATIENT, deadline=PassDeadline.start(PASS_SECONDS))
    return time.monotonic() - started, report


@pytest.mark.parametrize("mode", ["hang", "trickle"])
def test_a_healthy_account_is_reaped_on_time_beside_a_hanging_one(
    tmp_path: Path, mode: str
) -> None:
    with HostileServer(mode) as slow, world(tmp_path, vast_api_url=slow.url) as w:
        pod = w.runpod.add_pod(status="EXITED", name="trainer")
        took, first = _pass(w)
        w.advance(23)
        _took_warn, warned = _pass(w)
        w.advance(1)
        took_last, last = _pass(w)

        for report in (first, warned, last):
            assert [(e.provider, e.account) for e in report.errors] == [("vast", "main")]
            assert "did not finish" in report.errors[0].message
            assert report.exit_code == 1
        assert action_of(warned, pod) == "warn"
        [done] = [a for a in last.actions if a.id == pod]
        assert (done.action, done.done, done.confirmed) == ("terminate", True, True)
        assert [m.method for m in w.runpod.mutations] == ["DELETE"]
        # Within the deadline (and its wrap-up), on a loaded machine too: the slow account's
        # listing was cut at half of it.
        assert took < PASS_SECONDS + 2 and took_last < PASS_SECONDS + 2
