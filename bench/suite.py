"""Benchmark: the whole test suite's wall time, quiet and under a CPU hog, and its flaky tests.

The suite is what a contributor runs before every change (`make test`); it has to be quick
and it must not fail from timing on a loaded machine. This runs it as `make test`'s pytest
does (every module, browser tests included when Debian's chromium is there), first on a quiet
machine, then N times beside a hog (a process spinning on one core, as another job on a
2-core machine would), and reports each run's wall time, what failed, the tests that failed in
some runs and not in others (flaky), and the slowest tests of the quiet run.

Targets (issue 31): under 6 minutes quiet, under 15 with a hog, no flaky test in 5 runs
under the hog. "Quiet" means nothing else of yours is running: on a shared machine, say what
else ran beside it when you report the figures.

    python3 -m bench.suite                  # or: make bench-suite (1 quiet run, 5 with a hog)
    python3 -m bench.suite --hog-runs 1     # a shorter measure
    python3 -m bench.suite -- tests/test_web_page.py   # pytest arguments after `--`
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUIET_TARGET = 6 * 60.0
HOG_TARGET = 15 * 60.0
SLOWEST = 25


@dataclass
class Run:
    label: str
    seconds: float
    exit_code: int
    tests: int = 0
    failed: list[str] = field(default_factory=list)
    skipped: int = 0
    durations: list[tuple[float, str]] = field(default_factory=list)


def _read_junit(path: Path, run: Run) -> None:
    """Counts, failures and per-test times from pytest's JUnit XML."""
    if not path.exists():
        return
    # pytest wrote this file a moment ago, for this run: not untrusted input.
    for case in ET.parse(path).getroot().iter("testcase"):  # noqa: S314
        test = f"{case.get('classname', '')}::{case.get('name', '')}"
        run.tests += 1
        run.durations.append((float(case.get("time") or 0.0), test))
        if case.find("failure") is not None or case.find("error") is not None:
            run.failed.append(test)
        elif case.find("skipped") is not None:
            run.skipped += 1


def run_suite(label: str, pytest_args: list[str]) -> Run:
    """One whole run of the suite in a subprocess; its wall time and what it found."""
    with tempfile.TemporaryDirectory(prefix="reaper-suite-") as work:
        report = Path(work) / "junit.xml"
        args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        args += [f"--junitxml={report}", *pytest_args]
        print(f"[{label}] {' '.join(args[1:])}", flush=True)
        started = time.perf_counter()
        done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=False)
        run = Run(label, time.perf_counter() - started, done.returncode)
        _read_junit(report, run)
    if done.returncode not in (0, 1):  # 1: tests failed; anything else: pytest itself did
        print(done.stdout[-2000:] + done.stderr[-2000:], file=sys.stderr)
    print(f"[{label}] {_summary(run)}", flush=True)
    return run


@contextmanager
def cpu_hog() -> Iterator[None]:
    """A process spinning on one core for as long as the block runs; stopped by its own id."""
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield
    finally:
        hog.kill()
        hog.wait()


def _summary(run: Run) -> str:
    failed = f", {len(run.failed)} failed" if run.failed else ""
    return (
        f"{run.seconds:.0f} s ({run.seconds / 60:.1f} min), {run.tests} tests"
        f"{failed}, {run.skipped} skipped, exit {run.exit_code}"
    )


def _verdict(seconds: float, target: float) -> str:
    return f"{'met' if seconds < target else 'MISSED'} (target < {target / 60:.0f} min)"


def report(quiet: list[Run], hogged: list[Run]) -> int:
    """The figures against the targets; 0 when every target measured was met."""
    print(f"\nmachine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} now")
    missed = 0
    for run in quiet:
        print(f"quiet: {_summary(run)} — {_verdict(run.seconds, QUIET_TARGET)}")
        missed += run.seconds >= QUIET_TARGET or bool(run.failed)
    for run in hogged:
        print(f"{run.label}: {_summary(run)} — {_verdict(run.seconds, HOG_TARGET)}")
        missed += run.seconds >= HOG_TARGET or bool(run.failed)
    runs = quiet + hogged
    failures = Counter(test for run in runs for test in run.failed)
    flaky = sorted(test for test, n in failures.items() if n < len(runs))
    broken = sorted(test for test, n in failures.items() if n == len(runs))
    if hogged:
        verdict = "met" if not any(r.failed for r in hogged) else "MISSED"
        print(f"no failure in {len(hogged)} runs under the hog: {verdict}")
    for test in flaky:
        print(f"flaky ({failures[test]} of {len(runs)} runs): {test}")
    for test in broken:
        print(f"failed in every run: {test}")
    if runs and runs[0].durations:
        print(f"\nthe {SLOWEST} slowest tests of the {runs[0].label} run:")
        for seconds, test in sorted(runs[0].durations, reverse=True)[:SLOWEST]:
            print(f"  {seconds:6.1f} s  {test}")
    return 1 if missed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quiet-runs", type=int, default=1, help="runs with no hog (1)")
    parser.add_argument("--hog-runs", type=int, default=5, help="runs beside a CPU hog (5)")
    parser.add_argument("pytest_args", nargs="*", help="after `--`: passed to pytest")
    args = parser.parse_args()
    quiet = [run_suite(f"quiet {n + 1}", args.pytest_args) for n in range(args.quiet_runs)]
    hogged = []
    for n in range(args.hog_runs):
        with cpu_hog():
            hogged.append(run_suite(f"hog {n + 1}", args.pytest_args))
    return report(quiet, hogged)


if __name__ == "__main__":
    raise SystemExit(main())
