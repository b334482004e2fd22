"""`python -m bench` (`make bench`): every benchmark, one after the other, each printing its
figures and whether it met the issue's targets."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCHMARKS = ["reap", "heartbeat", "dynamodb_ping", "lambda", "hostile"]


def main() -> int:
    here = Path(__file__).resolve().parent
    failed = 0
    for name in BENCHMARKS:
        if not (here / f"{name}.py").exists():
            continue
        print(f"\n=== bench.{name} ===", flush=True)
        result = subprocess.run([sys.executable, "-m", f"bench.{name}"], check=False)
        failed += result.returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
