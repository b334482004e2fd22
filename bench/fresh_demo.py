"""Benchmark: `make demo` from a fresh clone, install included — a newcomer's first command.

Clones this repository's committed HEAD into a temporary directory (nothing of this checkout's
`.venv` is reused), runs `make demo` there and times it; then runs the demo once more on the
installed venv to show how much of the figure is the install. Prints the figures, the number of
packages and the venv's size, and whether the whole stayed under the target.

Target (issue 19): under 60 s, install included. The install's share depends on the package
index and the network (pip's own cache is used as on any machine that installed before):
measure on the machine you care about.

    python3 -m bench.fresh_demo        # or: make bench-demo
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_SECONDS = 60.0
ROOT = Path(__file__).resolve().parents[1]


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, check=False)


def _size_mb(path: Path) -> float:
    total = 0
    for dirpath, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += (Path(dirpath) / name).lstat().st_size
    return total / 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", action="store_true", help="keep the clone and print its path")
    args = parser.parse_args()

    dirty = _run(["git", "status", "--porcelain", "--untracked-files=no"], ROOT).stdout.strip()
    if dirty:
        print("note: uncommitted changes are not in the clone; this measures HEAD", flush=True)
    head = _run(["git", "rev-parse", "--short", "HEAD"], ROOT).stdout.strip()
    work = Path(tempfile.mkdtemp(prefix="reaper-fresh-"))
    clone = work / "reaper"
    try:
        started = time.perf_counter()
        cloned = _run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(clone)], work)
        if cloned.returncode != 0:
            print(f"git clone failed: {cloned.stderr.strip()}", file=sys.stderr)
            return 1
        _run(["git", "checkout", "--quiet", head], clone)
        clone_s = time.perf_counter() - started

        started = time.perf_counter()
        demo = _run(["make", "demo"], clone)
        total_s = time.perf_counter() - started
        if demo.returncode != 0:
            print(demo.stdout[-2000:] + demo.stderr[-2000:], file=sys.stderr)
            print(f"make demo failed (exit {demo.returncode})", file=sys.stderr)
            return 1

        started = time.perf_counter()
        again = _run([str(clone / ".venv" / "bin" / "reaper"), "demo"], clone)
        demo_s = time.perf_counter() - started
        packages = _run([str(clone / ".venv" / "bin" / "pip"), "list", "--format=freeze"], clone)
        count = len([line for line in packages.stdout.splitlines() if line.strip()])
        size = _size_mb(clone / ".venv")

        print(f"fresh clone of {head}: git clone {clone_s:.1f} s")
        print(
            f"make demo (venv + install + demo): {total_s:.1f} s"
            f" — target < {TARGET_SECONDS:.0f} s: {'met' if total_s < TARGET_SECONDS else 'MISSED'}"
        )
        print(f"  of which the demo itself: {demo_s:.1f} s (exit {again.returncode})")
        print(f"  installed: {count} packages, {size:.0f} MB in .venv")
        if args.keep:
            print(f"  clone kept at {clone}")
        return 0 if total_s < TARGET_SECONDS and again.returncode == 0 else 1
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
