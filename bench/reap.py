"""Benchmark: one reap pass over an emulated fleet of 2,000 instances.

1,000 RunPod pods and 1,000 Vast instances, 200 of them due (stopped past the TTL and warned by an
earlier pass), the cap raised, emulator rate limits off, 50 ms latency on every API call. The pass
runs in a child process so its peak RSS is its own (the emulators stay in this one). A naive
sequential pass over the same fleet runs in the same way for comparison.

Targets (issue 4): under 5 s wall (the latency floor is about 2.2 s: 40 Vast pages plus a
delete), under 100 MB RSS, `import reaper` under 300 ms.

    python -m bench.reap            # or: make bench
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

PER_PROVIDER = 1000
DUE_PER_PROVIDER = 100
LATENCY = 0.05
NOW = datetime(2026, 5, 4, 12, 0, tzinfo=UTC)
RUNPOD_KEY = "bench-runpod-key-0001"
VAST_KEY = "bench-vast-key-0001"


def _settings(config: dict[str, Any]) -> Any:
    from reaper.config import Account, Settings, StateURL

    return Settings(
        runpod_accounts=(Account("runpod", "bench", RUNPOD_KEY),),
        vast_accounts=(Account("vast", "bench", VAST_KEY),),
        runpod_api_url=config["runpod_rest"],
        runpod_graphql_url=config["runpod_graphql"],
        vast_api_url=config["vast"],
        state=StateURL("sqlite", config["state"]),
        max_terminations=10_000,
    )


async def _pass(config: dict[str, Any]) -> dict[str, Any]:
    from emulators.channels import RecordingNotifier
    from emulators.clock import FakeClock
    from reaper.passes.reap import ConfirmOptions, reap_pass
    from reaper.providers.http import HttpOptions
    from reaper.providers.plugins import make_clients
    from reaper.store.sqlite import SQLiteStore

    settings = _settings(config)
    store = SQLiteStore(settings.state.location)
    clients = make_clients(settings, HttpOptions())
    try:
        report = await reap_pass(
            settings, store, clients, RecordingNotifier(), FakeClock(NOW), confirm=ConfirmOptions()
        )
    finally:
        await asyncio.gather(*(c.aclose() for c in clients))
        store.close()
    return {
        "instances": len(report.instances),
        "terminated": sum(1 for a in report.actions if a.action == "terminate" and a.confirmed),
        "exit_code": report.exit_code,
    }


async def _sequential(config: dict[str, Any]) -> dict[str, Any]:
    """The naive way: one call at a time, list, delete each, re-list each account."""
    from reaper.core.policy import decide
    from reaper.providers.http import HttpOptions
    from reaper.providers.plugins import make_clients
    from reaper.store.sqlite import SQLiteStore

    settings = _settings(config)
    store = SQLiteStore(settings.state.location)
    options = HttpOptions(max_concurrency=1, min_concurrency=1)
    clients = make_clients(settings, options)
    terminated = 0
    try:
        fleet = []
        for client in clients:
            fleet += await client.list_instances()
        plan = decide(fleet, store.history(), NOW, settings)
        by_account = {(c.provider, c.account): c for c in clients}
        for decision in plan.decisions:
            if decision.action == "terminate":
                inst = decision.instance
                await by_account[(inst.provider, inst.account)].terminate(inst.id)
        for client in clients:
            listed = {i.id: i for i in await client.list_instances()}
            terminated += sum(
                1
                for d in plan.decisions
                if d.action == "terminate"
                and d.instance.account == client.account
                and d.instance.provider == client.provider
                and (d.instance.id not in listed or listed[d.instance.id].state == "terminated")
            )
    finally:
        await asyncio.gather(*(c.aclose() for c in clients))
        store.close()
    return {"instances": len(fleet), "terminated": terminated, "exit_code": 0}


def child(mode: str, config_json: str) -> None:
    config = json.loads(config_json)
    started = time.perf_counter()
    result = asyncio.run(_pass(config) if mode == "pass" else _sequential(config))
    result["wall_s"] = round(time.perf_counter() - started, 3)
    result["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print(json.dumps(result))


def _populate(runpod: Any, vast: Any, state: str) -> None:
    from reaper.store.sqlite import SQLiteStore

    store = SQLiteStore(state)
    for i in range(PER_PROVIDER):
        due = i < DUE_PER_PROVIDER
        status = "EXITED" if due or i % 3 == 0 else "RUNNING"
        pod = runpod.add_pod(
            f"bench{i:05d}pod",
            name=f"job-{i}",
            status=status,
            gpu_utils=[50],
            created_at=NOW - timedelta(days=7),
        )
        vid = vast.add_instance(
            500_000 + i,
            label=f"job-{i}",
            actual_status="stopped" if status == "EXITED" else "running",
        )
        if due:
            for key in (f"runpod:{pod}", f"vast:{vid}"):
                store.start_stopped_clock(key, NOW - timedelta(hours=48))
                store.record_warning(key, NOW - timedelta(hours=2))
    store.close()


def _run_child(mode: str, config: dict[str, Any]) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "bench.reap", "--child", mode, json.dumps(config)],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def _import_ms(module: str) -> float:
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    runs = [
        float(
            subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True
            ).stdout
        )
        for _ in range(5)
    ]
    return round(min(runs) * 1000, 1)


def _measure(mode: str, tmp: Path) -> tuple[dict[str, Any], dict[str, dict[str, int]]]:
    from emulators import RunPodEmulator, VastEmulator

    with (
        RunPodEmulator({"bench": RUNPOD_KEY}, now=lambda: NOW) as runpod,
        VastEmulator({"bench": VAST_KEY}, now=lambda: NOW) as vast,
    ):
        state = str(tmp / f"{mode}.db")
        _populate(runpod, vast, state)
        runpod.set_latency(LATENCY)
        vast.set_latency(LATENCY)
        runpod.reset_log()
        vast.reset_log()
        config = {
            "runpod_rest": runpod.rest_url,
            "runpod_graphql": runpod.graphql_url,
            "vast": vast.url,
            "state": state,
        }
        result = _run_child(mode, config)
        calls = {
            name: {k: v for k, v in sorted(emu.calls.items()) if v}
            for name, emu in (("runpod", runpod), ("vast", vast))
        }
        return result, calls


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--child", nargs=2, metavar=("MODE", "CONFIG"))
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return

    print(
        f"reap benchmark: {2 * PER_PROVIDER} instances ({PER_PROVIDER} per provider), "
        f"{2 * DUE_PER_PROVIDER} due, {int(LATENCY * 1000)} ms per API call"
    )
    with tempfile.TemporaryDirectory(prefix="reaper-bench-") as tmp:
        concurrent, calls = _measure("pass", Path(tmp))
        sequential, seq_calls = _measure("sequential", Path(tmp))
    for name, result, counted in (
        ("reap pass", concurrent, calls),
        ("sequential baseline", sequential, seq_calls),
    ):
        print(
            f"  {name:<20} wall {result['wall_s']:>6.2f} s   "
            f"peak RSS {result['peak_rss_mb']:>6.1f} MB   "
            f"listed {result['instances']}   terminated+confirmed {result['terminated']}"
        )
        for provider, kinds in counted.items():
            print(
                f"  {'':<20} {provider:<7} calls: "
                + ", ".join(f"{k} {v}" for k, v in kinds.items())
            )
    ratio = sequential["wall_s"] / concurrent["wall_s"] if concurrent["wall_s"] else float("inf")
    print(f"  speed-up over sequential: {ratio:.1f}x")
    print(
        f"  import reaper: {_import_ms('reaper')} ms   "
        f"import reaper.passes.reap: {_import_ms('reaper.passes.reap')} ms"
    )
    verdict = concurrent["wall_s"] < 5.0 and concurrent["peak_rss_mb"] < 100
    print(f"  targets (< 5 s, < 100 MB): {'met' if verdict else 'NOT met'}")


if __name__ == "__main__":
    main()
