"""results.py runs on a stock GPU image: python3's standard library only (no boto3, no aws
CLI), nothing newer than Python 3.8 (Ubuntu 20.04's python3), lint-clean."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from tests.kit_fakes.harness import KIT_DIR

RESULTS_PY = KIT_DIR / "results.py"
RUFF = Path(sys.executable).parent / "ruff"


def test_it_imports_nothing_but_the_standard_library() -> None:
    tree = ast.parse(RESULTS_PY.read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])

    assert {"hmac", "hashlib", "http", "urllib"} <= imported
    assert imported - sys.stdlib_module_names == {"__future__"} - sys.stdlib_module_names


def test_it_runs_without_site_packages(tmp_path: Path) -> None:
    """-I -S: no site-packages at all, as on an image without pip installs."""
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "a.txt").write_text("a")
    env = {"AWS_ACCESS_KEY_ID": "AKIAEXAMPLE", "AWS_SECRET_ACCESS_KEY": "secret"}
    save = ["save", str(tmp_path / "results"), "s3://bucket-1/runs", "host-1/20261201T000000Z"]

    done = subprocess.run(
        [sys.executable, "-I", "-S", str(RESULTS_PY), *save, "--dry-run"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "dry run: would save 1 file, 1 B, s3://bucket-1/runs/host-1/20261201T000000Z/ and verify\n"
    )


def test_it_is_lint_clean_for_python_3_8() -> None:
    done = subprocess.run(
        [str(RUFF), "check", "--target-version", "py38", "--no-cache", str(RESULTS_PY)],
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.returncode == 0, done.stdout + done.stderr
