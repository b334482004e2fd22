""" "Due" means one thing: what `reaper reap` acts on in its pass. `reaper status`, read a
second after a pass that found nothing due, must not say "3 due" for instances that merely
have a deadline ahead: those are "scheduled", and one past its deadline says so."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

from emulators.clock import FakeClock
from tests.reap_support import cli, world

DUE_WORD = re.compile(r"\bdue\b")
# A channel that reaches a person: deadlines bring terminations (with none, they bring holds).
PHONE = {"NTFY_URL": "http://127.0.0.1:9/phone"}


def test_reap_says_none_due_and_status_says_scheduled(tmp_path: Path) -> None:
    with world(tmp_path, start=datetime.now(UTC)) as w:
        for n in range(3):
            w.runpod.add_pod(f"p{n}", name=f"sweep-{n}", status="EXITED", volume_gb=10)
        w.run()
        w.set_clock(FakeClock(datetime.now(UTC)))  # the CLI's clock from here on
        reap = cli(w, "reap", "--dry-run", extra_env=PHONE)
        status = cli(w, "status", extra_env=PHONE)
    assert reap.returncode == 0 and status.returncode == 0, reap.stderr + status.stderr
    assert " 0 due," in reap.stdout, reap.stdout
    summary = status.stdout.splitlines()[0]
    assert "stopped 3 (3 scheduled, 0 protected)" in summary, summary
    assert not DUE_WORD.search(status.stdout), status.stdout


def test_a_deadline_already_past_is_counted_apart(tmp_path: Path) -> None:
    # The world's pass ran long ago; read now, its deadline is behind it.
    with world(tmp_path) as w:
        w.runpod.add_pod("p0", name="sweep-old", status="EXITED", volume_gb=10)
        w.run()
        status = cli(w, "status", extra_env=PHONE)
    summary = status.stdout.splitlines()[0]
    assert "stopped 1 (0 scheduled, 1 past their deadline, 0 protected)" in summary, summary
    assert not DUE_WORD.search(status.stdout), status.stdout
