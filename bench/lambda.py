"""Benchmark of the Lambda side: how long each handler takes to import, what it imports, how
much memory it needs, and how big the deployed package is.

    python -m bench.lambda [--runs 7]

Targets: the HTTP handler imports in under 150 ms (it took 196-297 ms before the ping path
stopped importing pydantic and asyncio), and the package is under 15 MB unzipped. The HTTP
handler must not import provider code, pydantic or asyncio: a ping never calls a provider, and
an ordinary ping validates nothing and waits for nothing (the other routes load what they need
on first use).

How it measures:
- import time, on the package itself: `infra/aws/build_package.py` builds the zip serverless
  deploys; it is unpacked and only its one native library (pydantic_core, built for arm64) is
  swapped for the same version built for this machine. A fresh CPython 3.12 — Lambda's — runs
  `python -S -X importtime -c "import handlers.X"` in it, median of --runs: once with the
  bytecode the package ships ("shipped .pyc") and once ignoring it ("no .pyc", what every cold
  start would cost without it). Without a CPython 3.12 here, the source tree is measured with
  this interpreter instead, and the output says so. boto3, which the handlers import only when
  they first touch the store, is timed on its own: the runtime provides it, but a cold start
  pays for it.
- memory: the peak RSS of a fresh interpreter after importing the handler, boto3 and building
  the two clients a cold start builds (DynamoDB, SSM) — what the function's memory size must
  hold before any work.
- package: the zip's zipped and unzipped sizes and its biggest parts.
- a cold ping, end to end: a fresh interpreter imports the HTTP handler and answers one ping
  of an existing monitor, its secrets from SSM and its state in DynamoDB — both moto's server
  on loopback — timing the import and the first request (boto3's import and clients, the SSM
  read, the DynamoDB read and writes), and listing whether pydantic or asyncio got imported.

This machine is x86_64 and Lambda runs arm64 (Graviton) at a fraction of a core under 1.8 GB of
memory, so the absolute numbers are a floor, not a forecast; the comparison between handlers and
the package size are what carry over.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import zipfile
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HANDLERS = ("http", "reap", "watch", "digest")
IMPORT_TARGET_MS = {"http": 150.0}
# What the HTTP handler's import must not load (a cold ping needs none of it).
NOT_ON_THE_PING_PATH = ("pydantic", "asyncio")
PACKAGE_TARGET_BYTES = 15 * 1024 * 1024
# Provider client code: never needed to answer an HTTP request.
PROVIDER_CODE = ("reaper.providers.runpod", "reaper.providers.vast", "reaper.providers.http")
RESULTS = ROOT / "bench" / "results" / "lambda.json"


@dataclass
class ImportResult:
    handler: str
    # Median and best of --runs with the shipped bytecode; the target is checked on the best,
    # the run least disturbed by whatever else this machine is doing.
    warm_ms: float
    best_ms: float
    cold_ms: float
    modules: int
    reaper_modules: list[str] = field(default_factory=list)
    provider_code: list[str] = field(default_factory=list)
    # Of NOT_ON_THE_PING_PATH, what the import loaded.
    heavy: list[str] = field(default_factory=list)
    slowest: list[tuple[str, float]] = field(default_factory=list)
    peak_rss_mb: float = 0.0


@dataclass(frozen=True)
class Runner:
    """Where and with what the imports are measured."""

    python: str
    tree: Path
    label: str
    # Searched after the tree: where third-party packages come from when `tree` has none.
    site: str = ""

    def env(self, *, cold: bool, extra_path: str = "") -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(self.tree), self.site, extra_path]))
        if cold:
            # Bytecode looked for (and written) only in an empty directory: every module
            # compiles from source, as a package without .pyc does on each cold start.
            env["PYTHONPYCACHEPREFIX"] = tempfile.mkdtemp(prefix="bench-pyc-")
        return env


def _importtime(
    runner: Runner, statement: str, *, cold: bool, extra_path: str = ""
) -> tuple[float, list[tuple[int, str, float]]]:
    """One fresh interpreter: (total ms, [(depth, module, cumulative ms)])."""
    result = subprocess.run(
        [runner.python, "-S", "-X", "importtime", "-c", statement],
        cwd=runner.tree,
        env=runner.env(cold=cold, extra_path=extra_path),
        capture_output=True,
        text=True,
        check=True,
    )
    rows: list[tuple[int, str, float]] = []
    for line in result.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, raw_name = line[len("import time:") :].split("|")
        depth = (len(raw_name) - len(raw_name.lstrip())) // 2
        rows.append((depth, raw_name.strip(), int(cumulative) / 1000))
    total = sum(ms for depth, _, ms in rows if depth == 0)
    return total, rows


def measure_import(runner: Runner, handler: str, runs: int) -> ImportResult:
    statement = f"import handlers.{handler}"
    warm = []
    rows: list[tuple[int, str, float]] = []
    for _ in range(runs):
        total, rows = _importtime(runner, statement, cold=False)
        warm.append(total)
    cold = [_importtime(runner, statement, cold=True)[0] for _ in range(max(1, runs // 2))]
    names = {name for _, name, _ in rows}
    # What the handler's own imports cost, biggest first (one level below the handler).
    children = sorted(((n, ms) for d, n, ms in rows if d == 1), key=lambda item: -item[1])
    return ImportResult(
        handler=handler,
        warm_ms=round(statistics.median(warm), 1),
        best_ms=round(min(warm), 1),
        cold_ms=round(statistics.median(cold), 1),
        modules=len(names),
        reaper_modules=sorted(n for n in names if n.split(".")[0] in ("reaper", "handlers")),
        provider_code=sorted(n for n in names if n in PROVIDER_CODE),
        heavy=sorted(n for n in names if n in NOT_ON_THE_PING_PATH),
        slowest=[(name, round(ms, 1)) for name, ms in children[:5]],
    )


def _boto3_site() -> str:
    """Where this environment's boto3 lives: the Lambda runtime has its own."""
    import boto3

    return str(Path(boto3.__file__).parent.parent)


def measure_boto3(runner: Runner, runs: int) -> float:
    times = [
        _importtime(runner, "import boto3", cold=False, extra_path=_boto3_site())[0]
        for _ in range(runs)
    ]
    return round(statistics.median(times), 1)


def peak_rss_mb(runner: Runner, handler: str) -> float:
    """Peak RSS after a cold start's imports and clients (ru_maxrss is in KiB on Linux)."""
    script = (
        f"import handlers.{handler}, boto3, resource;"
        "boto3.client('dynamodb', region_name='us-east-1');"
        "boto3.client('ssm', region_name='us-east-1');"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    )
    result = subprocess.run(
        [runner.python, "-S", "-c", script],
        cwd=runner.tree,
        env=runner.env(cold=False, extra_path=_boto3_site()),
        capture_output=True,
        text=True,
        check=True,
    )
    return round(int(result.stdout.strip()) / 1024, 1)


@dataclass
class ColdPing:
    import_ms: float
    first_ping_ms: float
    total_ms: float
    status: int
    heavy: list[str]


# Run in a fresh interpreter: import the handler, answer one ping, say what it took.
_COLD_PING = """
import json, sys, time
t0 = time.perf_counter()
import handlers.http as h
t1 = time.perf_counter()
path = "/ping/" + sys.argv[1] + "/trainer"
event = {"version": "2.0", "rawPath": path, "headers": {},
         "requestContext": {"http": {"method": "GET", "path": path, "sourceIp": "10.0.0.7"}}}
answer = h.handler(event)
t2 = time.perf_counter()
heavy = [m for m in json.loads(sys.argv[2]) if m in sys.modules]
print(json.dumps({"import_ms": (t1 - t0) * 1000, "first_ping_ms": (t2 - t1) * 1000,
                  "status": answer["statusCode"], "heavy": heavy}))
"""


def measure_cold_ping(runner: Runner, runs: int) -> ColdPing | None:
    """Median of `runs` fresh interpreters, each answering one ping of an existing monitor."""
    from datetime import UTC, datetime

    import boto3

    from emulators.aws import start_moto_server
    from reaper.core.records import Monitor
    from reaper.store.dynamodb import DynamoDBStore, create_table

    try:
        server = start_moto_server()
    except RuntimeError:
        return None
    url = server.url
    aws = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": url,
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    key, table, prefix = "bench-ping-key-0123456789", "reaper-bench", "/reaper/bench/"
    try:
        options = {"endpoint_url": url, "region_name": "us-east-1"}
        credentials = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
        dynamodb = boto3.client("dynamodb", **options, **credentials)
        create_table(table, dynamodb)
        now = datetime.now(UTC)
        DynamoDBStore(table, client=dynamodb).put_monitor(
            Monitor(host="trainer", status="up", created_at=now, last_ping_at=now)
        )
        ssm = boto3.client("ssm", **options, **credentials)
        ssm.put_parameter(Name=prefix + "REAPER_PING_KEY", Value=key, Type="SecureString")
        env_extra = aws | {
            "REAPER_STATE": f"dynamodb://{table}",
            "REAPER_SSM_PREFIX": prefix,
            "LOG_LEVEL": "warning",
        }
        results = []
        for _ in range(runs):
            env = runner.env(cold=False, extra_path=_boto3_site()) | env_extra
            done = subprocess.run(
                [runner.python, "-S", "-c", _COLD_PING, key, json.dumps(NOT_ON_THE_PING_PATH)],
                cwd=runner.tree,
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            results.append(json.loads(done.stdout.strip().splitlines()[-1]))
    finally:
        server.stop()
    middle = sorted(results, key=lambda r: r["import_ms"] + r["first_ping_ms"])[len(results) // 2]
    return ColdPing(
        import_ms=round(middle["import_ms"], 1),
        first_ping_ms=round(middle["first_ping_ms"], 1),
        total_ms=round(middle["import_ms"] + middle["first_ping_ms"], 1),
        status=middle["status"],
        heavy=sorted({m for r in results for m in r["heavy"]}),
    )


@dataclass
class PackageResult:
    zipped_bytes: int
    unzipped_bytes: int
    files: int
    biggest: list[tuple[str, int]]


def _build_package() -> tuple[Path, object]:
    sys.path.insert(0, str(ROOT / "infra" / "aws"))
    try:
        import build_package  # type: ignore[import-not-found,unused-ignore]
    finally:
        sys.path.pop(0)
    target: Path = build_package.build(build_package.DEFAULT_OUT)
    return target, build_package


def measure_package(target: Path) -> PackageResult:
    with zipfile.ZipFile(target) as archive:
        infos = archive.infolist()
    parts: Counter[str] = Counter()
    for info in infos:
        parts[info.filename.split("/")[0]] += info.file_size
    return PackageResult(
        zipped_bytes=target.stat().st_size,
        unzipped_bytes=sum(i.file_size for i in infos),
        files=len(infos),
        biggest=parts.most_common(6),
    )


def _native_pydantic_core(out: Path, version: str) -> Path:
    """pydantic_core of the pinned version, built for this machine and CPython 3.12."""
    target = out / f"pydantic-core-{version}-native"
    if not (target / "pydantic_core").is_dir():
        command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps"]
        command += ["--disable-pip-version-check", "--no-compile", "--only-binary=:all:"]
        command += ["--python-version", "3.12", "--implementation", "cp", "--target", str(target)]
        subprocess.run([*command, f"pydantic-core=={version}"], check=True)
    return target / "pydantic_core"


def package_runner(target: Path, build_package: object) -> Runner:
    """The unpacked package with this machine's pydantic_core, under CPython 3.12."""
    out = target.parent
    tree = out / "bench-tree"
    shutil.rmtree(tree, ignore_errors=True)
    with zipfile.ZipFile(target) as archive:
        archive.extractall(tree)
    version = next(
        line.split("==")[1].strip()
        for line in (ROOT / "infra" / "aws" / "requirements-lambda.txt").read_text().splitlines()
        if line.startswith("pydantic-core==")
    )
    for shipped in (tree / "pydantic_core").glob("_pydantic_core.*.so"):
        shipped.unlink()
    for native in _native_pydantic_core(out, version).glob("_pydantic_core.*.so"):
        shutil.copy2(native, tree / "pydantic_core" / native.name)
    python312 = build_package.python312()  # type: ignore[attr-defined]
    return Runner(python=python312, tree=tree, label="the package, CPython 3.12")


def _mb(size: int) -> str:
    return f"{size / 1024 / 1024:.1f} MB"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Lambda handler import time and package size")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args(argv)

    failures: list[str] = []
    target, build_package = _build_package()
    package = measure_package(target)
    if build_package.python312() is not None:  # type: ignore[attr-defined]
        runner = package_runner(target, build_package)
    else:
        site = str(Path(__import__("pydantic").__file__).parent.parent)
        runner = Runner(sys.executable, ROOT, f"the source tree, {sys.version.split()[0]}", site)
    print(f"imports measured in {runner.label}")
    imports = []
    print(
        f"{'handler':<8} {'import':>9} {'(best)':>9} {'no .pyc':>9} {'modules':>8} {'peak RSS':>9}"
    )
    for handler in HANDLERS:
        result = measure_import(runner, handler, args.runs)
        result.peak_rss_mb = peak_rss_mb(runner, handler)
        imports.append(result)
        print(
            f"{handler:<8} {result.warm_ms:>6.0f} ms {result.best_ms:>6.0f} ms "
            f"{result.cold_ms:>6.0f} ms "
            f"{result.modules:>8} {result.peak_rss_mb:>6.0f} MB"
        )
        print("         slowest: " + ", ".join(f"{n} {ms:.0f} ms" for n, ms in result.slowest))
        limit = IMPORT_TARGET_MS.get(handler)
        if limit is not None and result.best_ms >= limit:
            failures.append(
                f"{handler} handler imports in {result.best_ms:.0f} ms at best (target {limit:.0f})"
            )
        if handler == "http" and result.provider_code:
            failures.append(
                "the HTTP handler imports provider client code: " + ", ".join(result.provider_code)
            )
        if handler == "http" and result.heavy:
            failures.append("the HTTP handler imports " + ", ".join(result.heavy))
    boto3_ms = measure_boto3(runner, args.runs)
    print(f"boto3 (imported on first store use, provided by the runtime): {boto3_ms:.0f} ms")
    ping = measure_cold_ping(runner, args.runs)
    if ping is not None:
        print(
            f"cold ping: import {ping.import_ms:.0f} ms + first ping {ping.first_ping_ms:.0f} ms "
            f"(boto3, SSM and DynamoDB on loopback) = {ping.total_ms:.0f} ms, median of "
            f"{args.runs}; answered {ping.status}; loaded: "
            + (", ".join(ping.heavy) or f"neither {' nor '.join(NOT_ON_THE_PING_PATH)}")
        )
        if ping.status != 200:
            failures.append(f"the cold ping answered {ping.status}")
        if ping.heavy:
            failures.append("an ordinary cold ping imports " + ", ".join(ping.heavy))
    else:
        print("cold ping: not measured (no moto_server here)")

    print(
        f"package: {_mb(package.zipped_bytes)} zipped, {_mb(package.unzipped_bytes)} "
        f"unzipped, {package.files} files (target < {_mb(PACKAGE_TARGET_BYTES)} unzipped)"
    )
    print("         biggest: " + ", ".join(f"{n} {_mb(s)}" for n, s in package.biggest))
    if package.unzipped_bytes >= PACKAGE_TARGET_BYTES:
        failures.append(f"package is {_mb(package.unzipped_bytes)} unzipped")

    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "imports": [asdict(r) for r in imports],
                "boto3_ms": boto3_ms,
                "measured_in": runner.label,
                "package": asdict(package),
                "cold_ping": asdict(ping) if ping is not None else None,
                "failures": failures,
            },
            indent=2,
        )
    )
    for failure in failures:
        print(f"MISSED: {failure}")
    print("all targets met" if not failures else f"{len(failures)} target(s) missed")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
