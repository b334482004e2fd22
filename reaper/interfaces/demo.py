"""`reaper demo`: the whole reap loop against the built-in emulators, with no key and no sleep.

It starts local RunPod and Vast emulators with a small mixed fleet, then runs real reap passes
over real HTTP while a fake clock jumps forward: first sight, the warning an hour before the
deadline, the termination and its confirmation by re-listing. What it prints is what a user
would see, plus the alerts that would have reached their phone.
"""

from __future__ import annotations

import asyncio
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from reaper import log
from reaper.config import ConfigError, load_settings
from reaper.core.models import Alert
from reaper.core.units import HOURS_PER_MONTH, humanize, iso
from reaper.interfaces.table import format_table
from reaper.interfaces.views import reap_table
from reaper.passes.reap import ConfirmOptions, reap_pass
from reaper.providers.http import HttpOptions
from reaper.providers.plugins import make_clients
from reaper.store.sqlite import SQLiteStore

if TYPE_CHECKING:
    from emulators import RunPodEmulator, VastEmulator

DEMO_START = datetime(2026, 11, 27, 18, 0, tzinfo=UTC)  # a Friday evening


def _fleet(runpod: RunPodEmulator, vast: VastEmulator) -> None:
    runpod.add_pod(
        "llm-finetune-a1", name="llm-finetune", status="RUNNING", cost=1.64, gpu_utils=[97]
    )
    runpod.add_pod(
        "sweep-lr-3e4-b2", name="sweep-lr-3e-4", status="EXITED", cost=0.69, volume_gb=200
    )
    runpod.add_pod(
        "dataset-cache-c3", name="dataset-cache reaper:keep", status="EXITED", volume_gb=500
    )
    runpod.add_pod(
        "prod-serve-d4", name="prod-inference", status="EXITED", locked=True, volume_gb=50
    )
    runpod.add_pod("odd-one-e5", name="migrating-pod", status="MIGRATING", volume_gb=40)
    vast.add_instance(4242001, label="eval-harness", actual_status="running", dph_total=0.41)
    # Outbid: Vast stopped it, the user still intends it to run, and its disk bills all weekend.
    vast.add_instance(
        4242002,
        label="bid-a100-sweep",
        actual_status="stopped",
        intended_status="running",
        disk_space=250,
    )
    vast.add_instance(4242003, label=None, actual_status="exited", disk_space=64)


def _print_alerts(alerts: list[Alert]) -> None:
    for alert in alerts:
        print(f"  📱 [{alert.level}] {alert.title}")
        if alert.body:
            for line in alert.body.splitlines()[:3]:
                print(f"       {line}")


async def _run(state_dir: Path) -> int:
    from emulators import RunPodEmulator, VastEmulator
    from emulators.channels import RecordingNotifier
    from emulators.clock import FakeClock

    clock = FakeClock(DEMO_START)
    with (
        RunPodEmulator(
            {"demo": "rp-demo-key-not-secret"}, now=clock.now, delete_linger_reads=1
        ) as runpod,
        VastEmulator(
            {"demo": "vast-demo-key-not-secret"}, now=clock.now, delete_linger_reads=1
        ) as vast,
    ):
        _fleet(runpod, vast)
        settings = load_settings(
            {
                "RUNPOD_API_KEY": "demo=rp-demo-key-not-secret",
                "RUNPOD_API_URL": runpod.rest_url,
                "RUNPOD_GRAPHQL_URL": runpod.graphql_url,
                "VAST_API_KEY": "demo=vast-demo-key-not-secret",
                "VAST_API_URL": vast.url,
                "REAPER_STATE": f"sqlite:///{state_dir / 'state.db'}",
                # The demo's channel is the screen: what it prints reaches the person watching.
                "REAPER_REQUIRE_CHANNEL": "false",
            },
            dotenv=None,
        )
        store = SQLiteStore(settings.state.location)
        notifier = RecordingNotifier()
        options = HttpOptions(timeout=5.0, backoff_base=0.05, backoff_cap=0.2)
        confirm = ConfirmOptions(attempts=5, backoff=0.05, max_delay=0.2)

        steps = [
            (timedelta(0), "Friday 18:00 — first sight: the reaper records what it finds stopped"),
            (timedelta(hours=12), "Saturday 06:00 — nothing is due yet"),
            (timedelta(hours=11), "Saturday 17:00 — one hour before the deadline: warnings go out"),
            (
                timedelta(hours=1),
                "Saturday 18:00 — due and warned by an earlier pass: terminate, then prove it",
            ),
            (timedelta(hours=1), "Saturday 19:00 — the next pass: what is left"),
        ]
        worst = 0
        try:
            for number, (advance, title) in enumerate(steps, start=1):
                clock.advance(advance)
                print(f"\n━━ pass {number}: {title}")
                clients = make_clients(settings, options)
                before = len(notifier.alerts)
                try:
                    report = await reap_pass(
                        settings, store, clients, notifier, clock, confirm=confirm
                    )
                finally:
                    await asyncio.gather(*(c.aclose() for c in clients))
                print(reap_table(report))
                _print_alerts(notifier.alerts[before:])
                print(f"  exit status {report.exit_code}")
                worst = max(worst, report.exit_code)

            print("\n━━ reaper audit: every termination, why, and whether it was confirmed")
            rows = [
                [
                    r.provider,
                    r.id,
                    r.name,
                    r.result,
                    "yes" if r.confirmed else "NO",
                    iso(r.requested_at) or "",
                    r.reason,
                ]
                for r in store.audit_log()
            ]
            print(
                format_table(
                    ["provider", "id", "name", "result", "confirmed", "when", "why"],
                    rows,
                    max_width=70,
                )
            )
            saved = sum(
                (r.cost_per_hour or 0.0) * HOURS_PER_MONTH for r in store.audit_log() if r.confirmed
            )
            print(
                f"\nStorage stopped: about ${saved:.2f}/month. "
                f"Mutating calls the emulators received: RunPod {len(runpod.mutations)}, "
                f"Vast {len(vast.mutations)}. "
                f"Simulated time: {humanize(clock.now() - DEMO_START)}."
            )
            print(
                "Never touched: the running pods, the protected and locked pods, and the pod in a "
                "state the reaper cannot read (MIGRATING → unknown: assume busy)."
            )
        finally:
            store.close()
        return worst


def demo_command() -> int:
    """Run the demo in a throwaway state directory; no key, no network beyond loopback."""
    try:
        import emulators  # noqa: F401
    except ImportError:
        raise ConfigError(
            "reaper demo",
            "needs the emulators, which are not installed: pip install -e ./emulators "
            "(or run `make demo` in the repository)",
        ) from None
    log.configure(quiet=True)
    with tempfile.TemporaryDirectory(prefix="reaper-demo-") as tmp:
        code = asyncio.run(_run(Path(tmp)))
    return 0 if code == 0 else 1
