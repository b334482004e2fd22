"""Benchmark of the dead-man's switch: pings/s and latency of the served app, and one watch pass.

    python -m bench.heartbeat [--seconds 5] [--connections 32] [--rate 1000]

What it measures (targets from the issue: >= 1,000 pings/s with p99 < 20 ms; a watch pass over
10,000 monitors < 1 s):
- the app as `reaper serve` runs it (uvicorn, one worker, httptools and uvloop when installed,
  SQLite WAL state checkpointed by its own thread, one log line per request written to
  /dev/null), in a thread of this process;
- a load generator in a separate process (raw sockets on asyncio: `wrk` is not installed),
  cycling over 2,000 hosts with the monitor cap raised, each mode with keep-alive and without:
  * saturation: N connections in a closed loop, as fast as the server answers;
  * fixed rate: an open loop at --rate pings/s; latency is counted from when each request was
    due, not when it was sent, so a stalled server cannot hide its queue (no coordinated
    omission);
- one watch pass over 10,000 monitors: all healthy, and with 10% of them going down.

The rate limits are raised for the run: one load generator on one address at >1,000/s is,
by design, a flood that the default per-client limit answers with 429.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import multiprocessing
import os
import tempfile
import time
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path
from typing import Literal

from emulators.channels import RecordingNotifier
from emulators.clock import FakeClock
from reaper import log
from reaper.clock import SystemClock
from reaper.core.models import Monitor
from reaper.interfaces.api import Limits
from reaper.interfaces.ratelimit import Rate
from reaper.interfaces.serve import build_asgi, serving
from reaper.passes.watch import watch_pass
from reaper.settings.model import Settings, StateURL
from reaper.store.sqlite import SQLiteStore

KEY = "bench-ping-key-0000"
# Thousands of hosts, as a fleet has: with a hundred the per-host limit (30, then 0.5/s)
# would throttle the load itself.
HOSTS = 2000
Mode = Literal["saturate", "rate"]


# --- the load generator (runs in its own process) ---------------------------------------------


@dataclass
class LoadResult:
    mode: Mode
    keep_alive: bool
    seconds: float
    latencies_ms: list[float] = field(default_factory=list)
    errors: int = 0
    statuses: dict[int, int] = field(default_factory=dict)

    @property
    def per_second(self) -> float:
        return len(self.latencies_ms) / self.seconds if self.seconds else 0.0

    def percentile(self, q: float) -> float:
        if not self.latencies_ms:
            return float("nan")
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _request(index: int, keep_alive: bool) -> bytes:
    host = f"bench-{index % HOSTS:04d}"
    connection = "" if keep_alive else "Connection: close\r\n"
    return f"GET /ping/{KEY}/{host} HTTP/1.1\r\nHost: bench\r\n{connection}\r\n".encode()


async def _read_response(reader: asyncio.StreamReader) -> int:
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    if length:
        await reader.readexactly(length)
    return status


class _Connections:
    """A pool of keep-alive connections, or a fresh connection per request."""

    def __init__(self, port: int, keep_alive: bool) -> None:
        self.port = port
        self.keep_alive = keep_alive
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

    async def ping(self, index: int) -> int:
        if self.keep_alive and self.idle:
            reader, writer = self.idle.pop()
        else:
            reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        writer.write(_request(index, self.keep_alive))
        status = await _read_response(reader)
        if self.keep_alive:
            self.idle.append((reader, writer))
        else:
            writer.close()
        return status

    def close(self) -> None:
        for _, writer in self.idle:
            writer.close()


def _record(result: LoadResult, status: int) -> None:
    result.statuses[status] = result.statuses.get(status, 0) + 1


async def _saturate(port: int, keep_alive: bool, seconds: float, connections: int) -> LoadResult:
    pool = _Connections(port, keep_alive)
    result = LoadResult("saturate", keep_alive, seconds)
    counter = iter(range(10**9))
    deadline = time.perf_counter() + seconds

    async def worker() -> None:
        while time.perf_counter() < deadline:
            started = time.perf_counter()
            try:
                _record(result, await pool.ping(next(counter)))
            except (OSError, asyncio.IncompleteReadError, ValueError):
                result.errors += 1
                continue
            result.latencies_ms.append((time.perf_counter() - started) * 1000)

    began = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(connections)))
    result.seconds = time.perf_counter() - began
    pool.close()
    return result


async def _fixed_rate(
    port: int, keep_alive: bool, seconds: float, rate: int, connections: int = 16
) -> LoadResult:
    """An open loop as wrk2 runs it: each of `connections` workers owns every n-th request
    of a schedule at `rate`, sends it when due (at once if late), and counts its latency
    from when it was due."""
    pool = _Connections(port, keep_alive)
    result = LoadResult("rate", keep_alive, seconds)
    total = int(seconds * rate)
    start = time.perf_counter() + 0.05

    async def worker(first: int) -> None:
        for index in range(first, total, connections):
            due = start + index / rate
            delay = due - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            try:
                _record(result, await pool.ping(index))
            except (OSError, asyncio.IncompleteReadError, ValueError):
                result.errors += 1
                continue
            result.latencies_ms.append((time.perf_counter() - due) * 1000)

    await asyncio.gather(*(worker(i) for i in range(connections)))
    # Achieved, not offered: a server that falls behind finishes late and shows a lower rate.
    result.seconds = time.perf_counter() - start
    pool.close()
    return result


def _load_process(
    port: int, mode: Mode, keep_alive: bool, seconds: float, knob: int, out: multiprocessing.Queue
) -> None:  # type: ignore[type-arg]
    if mode == "saturate":
        result = asyncio.run(_saturate(port, keep_alive, seconds, knob))
    else:
        result = asyncio.run(_fixed_rate(port, keep_alive, seconds, knob))
    out.put(result)


def run_load(port: int, mode: Mode, keep_alive: bool, seconds: float, knob: int) -> LoadResult:
    """One load run in a separate process, so the generator never shares the server's GIL."""
    context = multiprocessing.get_context("spawn")
    out = context.Queue()
    process = context.Process(
        target=_load_process, args=(port, mode, keep_alive, seconds, knob, out)
    )
    process.start()
    result: LoadResult = out.get(timeout=seconds + 120)
    process.join(timeout=30)
    return result


# --- the served app ---------------------------------------------------------------------------


def bench_settings(directory: Path) -> Settings:
    return Settings(
        state=StateURL("sqlite", str(directory / "bench.db")),
        ping_key=KEY,
        max_monitors=HOSTS * 2,
    )


BENCH_LIMITS = Limits(
    per_client=Rate(10**7, 10**7), per_host=Rate(10**7, 10**7), alerts=Rate(10**7, 10**7)
)


def bench_serving(seconds: float, connections: int, rate: int) -> list[LoadResult]:
    results: list[LoadResult] = []
    with tempfile.TemporaryDirectory() as directory:
        settings = bench_settings(Path(directory))
        store = SQLiteStore(settings.state.location)
        asgi = build_asgi(
            settings,
            store,
            RecordingNotifier(),
            SystemClock(),
            channels=("recording",),
            limits=BENCH_LIMITS,
        )
        with serving(asgi) as running:
            run_load(running.port, "saturate", True, 1.0, connections)  # warm-up: creates hosts
            for keep_alive in (True, False):
                results.append(run_load(running.port, "saturate", keep_alive, seconds, connections))
                results.append(run_load(running.port, "rate", keep_alive, seconds, rate))
            monitors = len(store.list_monitors())
        assert monitors == HOSTS, f"expected {HOSTS} monitors, found {monitors}"
    return results


# --- the watch pass ---------------------------------------------------------------------------


def _fill(store: SQLiteStore, count: int, clock: FakeClock, silent_every: int) -> None:
    now = clock.now()
    for index in range(count):
        quiet = silent_every and index % silent_every == 0
        last = now - timedelta(minutes=30 if quiet else 1)
        store.put_monitor(
            Monitor(host=f"node-{index:05d}", status="up", created_at=last, last_ping_at=last)
        )


def bench_watch(count: int = 10_000, silent_every: int = 0) -> tuple[float, int]:
    """Seconds for one watch pass over `count` monitors; and how many went down."""
    with tempfile.TemporaryDirectory() as directory:
        settings = replace(bench_settings(Path(directory)), max_monitors=count)
        store = SQLiteStore(settings.state.location)
        clock = FakeClock()
        _fill(store, count, clock, silent_every)
        started = time.perf_counter()
        report = asyncio.run(watch_pass(settings, store, RecordingNotifier(), clock, []))
        elapsed = time.perf_counter() - started
        store.close()
    return elapsed, len(report.went_down)


# --- report -----------------------------------------------------------------------------------


def _line(result: LoadResult) -> str:
    mode = "saturation" if result.mode == "saturate" else "fixed rate"
    alive = "keep-alive" if result.keep_alive else "new conn. "
    non_ok = sum(n for status, n in result.statuses.items() if status != 200) + result.errors
    return (
        f"  {mode:<11} {alive}  {result.per_second:8.0f} pings/s   "
        f"p50 {result.percentile(0.50):6.2f} ms   p99 {result.percentile(0.99):6.2f} ms   "
        f"non-200/errors {non_ok}"
    )


def _stack() -> str:
    """What uvicorn's "auto" picks here: httptools and uvloop when installed."""
    found = [m for m in ("httptools", "uvloop") if importlib.util.find_spec(m) is not None]
    return "+".join(found) if found else "h11, asyncio"


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.heartbeat", description=__doc__)
    parser.add_argument("--seconds", type=float, default=5.0, help="per load run (default 5)")
    parser.add_argument("--connections", type=int, default=32, help="saturation (default 32)")
    parser.add_argument("--rate", type=int, default=1000, help="fixed-rate pings/s (default 1000)")
    args = parser.parse_args()

    log.configure(stream=open(os.devnull, "w"))  # noqa: SIM115 - lives as long as the run
    print(f"reaper serve, one uvicorn worker ({_stack()}), SQLite WAL; {HOSTS} hosts; loopback")
    print(f"load: {args.seconds:g} s per run, {args.connections} connections at saturation")
    for result in bench_serving(args.seconds, args.connections, args.rate):
        print(_line(result))
    healthy, _ = bench_watch(10_000)
    stormy, went_down = bench_watch(10_000, silent_every=10)
    print(f"  watch pass   10,000 monitors, all healthy      {healthy * 1000:7.0f} ms")
    print(f"  watch pass   10,000 monitors, {went_down:,} go down   {stormy * 1000:7.0f} ms")
    print("targets: >= 1,000 pings/s with p99 < 20 ms; watch pass over 10,000 monitors < 1 s")


if __name__ == "__main__":
    main()
