"""The on-instance scripts and the fake tools pass shellcheck without a single remark."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.kit_fakes.harness import FAKE_BIN, KIT_DIR

SHELLCHECK = Path(sys.executable).parent / "shellcheck"


def test_shellcheck_has_nothing_to_say() -> None:
    assert SHELLCHECK.exists(), "shellcheck missing: .venv/bin/pip install -r requirements-dev.txt"
    scripts = sorted(KIT_DIR.glob("*.sh")) + sorted(p for p in FAKE_BIN.iterdir() if p.is_file())
    assert {p.name for p in scripts} >= {"common.sh", "run.sh", "idle-watch.sh", "nvidia-smi"}

    done = subprocess.run(
        [str(SHELLCHECK), "--external-sources", *map(str, scripts)],
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == ""
