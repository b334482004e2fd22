"""A key Vast refuses (here `name:key` written with a colon, read as one unnamed key, account
`1`) is named in the first lines a person reads, with its reason and the variable to check:
the summary does not read as the whole fleet while an account is left out of it."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from tests.reap_support import RUNPOD_KEY, VAST_KEY, cli, world

COLON_KEYS = {"RUNPOD_API_KEY": f"main={RUNPOD_KEY}", "VAST_API_KEY": f"main:{VAST_KEY}"}
HEADLINE = "did not answer: vast/1: HTTP 401 — check VAST_API_KEY (name=key)"


def test_the_reap_summary_names_the_account_and_why_once(tmp_path: Path) -> None:
    with world(tmp_path, start=datetime.now(UTC)) as w:
        w.runpod.add_pod(status="RUNNING", name="rp-job")
        w.vast.add_instance(actual_status="stopped", account="main")
        result = cli(w, "reap", "--dry-run", extra_env=COLON_KEYS)
    assert result.returncode == 1, result.stdout + result.stderr
    summary = result.stdout.splitlines()[1]
    assert summary.startswith("1 instances,") and summary.endswith(HEADLINE), summary
    assert result.stdout.count("check VAST_API_KEY (name=key)") == 1, result.stdout
    assert VAST_KEY not in result.stdout + result.stderr


def test_every_account_refused_is_named_not_read_as_no_instances(tmp_path: Path) -> None:
    with world(tmp_path, start=datetime.now(UTC)) as w:
        w.vast.add_instance(actual_status="stopped", account="main")
        env = {**COLON_KEYS, "RUNPOD_API_KEY": "", "RUNPOD_API_URL": ""}
        result = cli(w, "reap", "--dry-run", extra_env=env)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "no instances" not in result.stdout
    assert result.stdout.splitlines()[1].endswith(HEADLINE), result.stdout
