"""`reaper demo`: the whole product against the built-in emulators, with no key and no sleep.

It starts every provider's emulator with a small mixed fleet (the example fleet of `reaper
emulate`, plus what `emulators.demo` stages: a pod in a state nobody can read, the instances
that play each scene) and reaper's own HTTP API on loopback,
then runs real passes over real HTTP while a fake clock jumps forward: first sight, the
dead-man's switch catching a watchdog that went silent while its pod bills, a job's message
forwarded through `/alert`, the on-instance kit ending a job (dry run), the warning an hour
before the deadline, the termination and its confirmation by re-listing. What it prints is what
a user would see, plus the alerts that reached their phone: the demo's alerts go through reaper's
real push channel into an emulated phone (`emulators.phone`), whose buttons are links to
`/act/<token>` on the demo's own server — the demo presses one (Keep) and the next pass spares
that instance. `reaper demo --serve` then keeps the status page and the phone up until Ctrl-C.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from reaper import log
from reaper.app import wiring
from reaper.app.settings import load_settings
from reaper.channels.base import ActionSlots, Notifier
from reaper.core.models import Alert, Delivery
from reaper.core.units import HOURS_PER_MONTH, humanize, money, utc
from reaper.interfaces.emulate import reaper_command, stopped_by_signals
from reaper.interfaces.table import format_table, terminal_width
from reaper.interfaces.views import reap_table, watch_lines
from reaper.passes.reap import ConfirmOptions, reap_pass
from reaper.providers.base import HttpOptions
from reaper.providers.plugins import label, plugin, plugins
from reaper.settings.model import Settings
from reaper.settings.parse import ConfigError
from reaper.store.ports import Store

if TYPE_CHECKING:
    from emulators.clock import FakeClock
    from emulators.phone import PhoneEmulator

DEMO_START = datetime(2026, 11, 27, 18, 0, tzinfo=UTC)  # a Friday evening
PING_KEY = "demo-ping-key-not-secret"
DEMO_ADMIN_KEY = "demo-admin-key-not-secret"
KIT_DIR = Path(__file__).resolve().parents[2] / "infra" / "instance"
_KIT_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ ")


def phone_actions(alert: Alert) -> list[str]:
    """The buttons a phone shows under `alert`, as text ("[Keep 1 day] [Keep 1 week]"): what a
    chat shows as inline buttons and a push channel as action buttons (see "Acting from the
    phone" in docs/alerts.md)."""
    return [f"[{action.label}]" for action in alert.actions]


def status_page_line(base_url: str) -> str | None:
    """The status page's address on the demo's own server, as one line to print: open while
    the demo runs, or until Ctrl-C with `--serve` (sign in with DEMO_ADMIN_KEY)."""
    return f"status page: {base_url}/ (admin key {DEMO_ADMIN_KEY})"


class ShownNotifier:
    """The demo's notifier: every alert goes through the configured channels (the emulated
    phone) and is kept, to be printed as the phone shows it."""

    def __init__(self, channels: Notifier) -> None:
        self.channels = channels
        self.alerts: list[Alert] = []

    @property
    def body_budget(self) -> int:
        return self.channels.body_budget

    @property
    def actions(self) -> ActionSlots:
        return self.channels.actions

    async def send(self, alert: Alert) -> list[Delivery]:
        self.alerts.append(alert)
        return await self.channels.send(alert)


# --- the fleet and the printing ---------------------------------------------------------------


def _print_alerts(alerts: list[Alert]) -> None:
    for alert in alerts:
        print(f"  📱 [{alert.level}] {alert.title}")
        if alert.body:
            for line in alert.body.splitlines()[:3]:
                print(f"       {line}")
        buttons = phone_actions(alert)
        if buttons:
            print(f"       {' '.join(buttons)}")


def _heading(text: str) -> None:
    print(f"\n━━ {text}")


@dataclass
class _Demo:
    runtime: wiring.Runtime
    clock: FakeClock
    notifier: ShownNotifier
    confirm: ConfirmOptions
    workdir: Path
    base_url: str | None = None

    @property
    def settings(self) -> Settings:
        return self.runtime.settings

    @property
    def store(self) -> Store:
        return self.runtime.store

    async def reap(self, number: int, title: str) -> int:
        _heading(f"pass {number}: {title}")
        before = len(self.notifier.alerts)
        async with self.runtime.clients() as clients:
            report = await reap_pass(
                self.settings, self.store, clients, self.notifier, self.clock, confirm=self.confirm
            )
        print(reap_table(report, width=terminal_width()))
        _print_alerts(self.notifier.alerts[before:])
        print(f"  exit status {report.exit_code}")
        return report.exit_code

    async def watch(self) -> int:
        before = len(self.notifier.alerts)
        report = await wiring.watch_once(self.runtime)
        first, *rest = watch_lines(report)
        print(f"  reaper watch: {first}")
        for line in rest:
            print(f"  {line}")
        _print_alerts(self.notifier.alerts[before:])
        return 0


@contextmanager
def _api(demo: _Demo, sock: socket.socket, channel: str) -> Iterator[str | None]:
    """reaper's HTTP API (what `reaper serve` runs) on a loopback port, on the demo's clock and
    its phone (`channel`: the phone's channel); None when uvicorn is not installed."""
    try:
        import uvicorn  # noqa: F401
    except ImportError:
        yield None
        return
    from reaper.interfaces.serve import build_asgi, serving

    store = wiring.open_state(demo.settings)
    asgi = build_asgi(demo.settings, store, demo.notifier, demo.clock, channels=(channel,))
    try:
        with serving(asgi, sock=sock) as running:
            yield running.url
    finally:
        store.close()


def _dead_mans_switch(demo: _Demo, base: str) -> None:
    """The watchdog of the running pod pings for a while, then goes silent; the watch pass
    cross-checks the pod with its provider: still running, still billing."""
    from emulators.demo import WATCHED

    host = _host(*WATCHED)
    with httpx.Client(base_url=base, timeout=5) as http:
        for _ in range(3):
            http.get(f"/ping/{PING_KEY}/{host}")
            demo.clock.advance(timedelta(minutes=1))
    print(f"  {host} pinged every minute until {utc(demo.clock.now())}, then went silent")
    demo.clock.advance(timedelta(minutes=7))


def _alert_from_a_job(demo: _Demo, base: str) -> None:
    from emulators.demo import MESSAGING

    before = len(demo.notifier.alerts)
    text = f"{_host(*MESSAGING)}: eval-harness finished: 3 of 3 suites passed, accuracy 0.871"
    with httpx.Client(base_url=base, timeout=5) as http:
        answer = http.post(f"/alert/{PING_KEY}", json={"text": text})
    print(f'  curl -d \'{{"text": "{text}"}}\' $NOTIFY_URL   → HTTP {answer.status_code}')
    _print_alerts(demo.notifier.alerts[before:])


def _kit_missing() -> str | None:
    missing = [tool for tool in ("bash", "curl") if shutil.which(tool) is None]
    if missing:
        return f"skipped: the kit needs {' and '.join(missing)}, not found on this machine"
    if not (KIT_DIR / "run.sh").is_file():
        return "skipped: infra/instance/ is not beside this installation (run it in the repository)"
    return None


def _bash() -> str:
    found = shutil.which("bash")
    assert found is not None  # _kit_missing said so
    return found


def _kit_ends_a_job(demo: _Demo, base: str) -> None:
    """run.sh on the watched pod, DRY_RUN=1: the job ends, the kit tells the phone and the
    heartbeat, and says what it would destroy; nothing is uploaded or destroyed."""
    from emulators.demo import KIT_ENV

    reason = _kit_missing()
    if reason is not None:
        print(f"  {reason}")
        return
    before = len(demo.notifier.alerts)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(demo.workdir),
        "LANG": "C.UTF-8",
        "DRY_RUN": "1",
        **KIT_ENV,
        "HEARTBEAT_URL": f"{base}/ping/{PING_KEY}",
        "NOTIFY_URL": f"{base}/alert/{PING_KEY}",
        "KEEP_FILE": str(demo.workdir / "keep"),
    }
    job = "echo 'epoch 3/3: loss 0.412'; echo 'saved checkpoint-final'"
    print(f'  DRY_RUN=1 run.sh bash -c "{job}"')
    done = subprocess.run(  # noqa: S603 - the kit's own script and a fixed job line
        [_bash(), str(KIT_DIR / "run.sh"), "bash", "-c", job],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    for line in (done.stdout + done.stderr).splitlines():
        print(f"    {_KIT_TIME.sub('', line)}")
    print(f"  run.sh exited {done.returncode}")
    _print_alerts(demo.notifier.alerts[before:])


def _press_keep(phone: PhoneEmulator) -> None:
    """Keep 1 day, pressed on the phone under one warning: the phone's app POSTs the button's
    link, an empty body; the next pass spares that instance."""
    from emulators.demo import KEPT_FROM_PHONE

    provider, instance_id = KEPT_FROM_PHONE
    subject = f"({provider}:{instance_id}) will be terminated"
    for message in reversed(phone.messages):
        if subject not in str(message.get("title", "")):
            continue
        for action in message.get("actions", []):
            if action.get("label") == "Keep 1 day" and action.get("method") == "POST":
                answer = httpx.post(str(action["url"]), content=b"", timeout=5)
                print(f"  📱 [Keep 1 day] pressed under: {message['title']}")
                print(f"     → HTTP {answer.status_code}: {answer.text.strip()}")
                return
    print(f"  (no Keep button reached the phone for {provider}:{instance_id})")


def _host(provider: str, instance_id: str) -> str:
    """The heartbeat host of a provider's instance, as the kit names it."""
    return f"{plugin(provider).host_prefix}{instance_id}"


async def _run(state_dir: Path, stop: threading.Event | None) -> int:
    """The demo; with `stop`, its status page and phone stay up until it is set."""
    from emulators.clock import FakeClock
    from emulators.demo import extras
    from emulators.fleet import EXAMPLE, load_fleet
    from emulators.phone import PhoneEmulator

    clock = FakeClock(DEMO_START)
    classes = {p.name: wiring.emulator(p) for p in plugins()}
    fleet = load_fleet(EXAMPLE, classes)
    with ExitStack() as running:
        # Bound now, served later: the settings name its port (REAPER_PUBLIC_URL, the action
        # links' base) before the server exists, and nobody else can take it meanwhile.
        sock = running.enter_context(socket.create_server(("127.0.0.1", 0)))
        port: int = sock.getsockname()[1]
        phone = running.enter_context(PhoneEmulator())
        emulators = {
            name: running.enter_context(
                emulator(fleet.sections[name].accounts, now=clock.now, delete_linger_reads=1)
            )
            for name, emulator in classes.items()
        }
        environment: dict[str, str] = {}
        for name, started in emulators.items():
            started.populate(fleet.sections[name])
            keys = ",".join(f"{a}={key}" for a, key in fleet.sections[name].accounts.items())
            environment |= started.environment(keys)
        extras(emulators)
        settings = load_settings(
            {
                **environment,
                "REAPER_STATE": f"sqlite:///{state_dir / 'state.db'}",
                "REAPER_PING_KEY": PING_KEY,
                "REAPER_ADMIN_KEY": DEMO_ADMIN_KEY,
                # The phone: a real channel into the emulated phone, whose buttons are links to
                # the demo's own server.
                **phone.environment(),
                "REAPER_PUBLIC_URL": f"http://127.0.0.1:{port}",
            },
            dotenv=None,
        )
        notifier = ShownNotifier(wiring.make_notifier(settings))
        demo = _Demo(
            runtime=wiring.Runtime(
                settings,
                wiring.open_state(settings),
                notifier=notifier,
                clock=clock,
                http=HttpOptions(timeout=5.0, backoff_base=0.05, backoff_cap=0.2),
            ),
            clock=clock,
            notifier=notifier,
            confirm=ConfirmOptions(attempts=5, backoff=0.05, max_delay=0.2),
            workdir=state_dir,
        )
        worst = 0
        try:
            with _api(demo, sock, phone.channel) as base:
                worst = max(
                    worst,
                    await demo.reap(
                        1, "Friday 18:00 — first sight: the reaper records what it finds stopped"
                    ),
                )
                await _scenes(demo, base)
                for number, at, title in (
                    (2, DEMO_START + timedelta(hours=12), "Saturday 06:00 — nothing is due yet"),
                    (
                        3,
                        DEMO_START + timedelta(hours=23),
                        "Saturday 17:00 — one hour before the deadline: warnings go out",
                    ),
                    (
                        4,
                        DEMO_START + timedelta(hours=24),
                        "Saturday 18:00 — due and warned by an earlier pass: terminate, then"
                        " prove it",
                    ),
                    (
                        5,
                        DEMO_START + timedelta(hours=25),
                        "Saturday 19:00 — the next pass: what is left",
                    ),
                ):
                    clock.set(at)
                    worst = max(worst, await demo.reap(number, title))
                    if number == 3 and base is not None:
                        _heading("Saturday 17:05 — on the phone: Keep 1 day, under one warning")
                        clock.advance(timedelta(minutes=5))
                        _press_keep(phone)
                _summary(demo, emulators)
                await _serve_or_stop(base, phone, stop)
        finally:
            demo.store.close()
        return worst


async def _serve_or_stop(
    base: str | None, phone: PhoneEmulator, stop: threading.Event | None
) -> None:
    """With `stop`: the status page and the phone stay up until it is set (Ctrl-C). Without:
    the last line says how to keep them."""
    if base is None:
        return
    if stop is None:
        print(
            f"\nThe status page ({base}/) and the phone stopped with the demo;"
            f" `{reaper_command()} demo --serve` keeps them up until Ctrl-C."
        )
        return
    _heading("serving until Ctrl-C")
    print(f"  {status_page_line(base)}")
    print(f"  phone (emulated): {phone.url}/ — its buttons open reaper's action pages")
    print("  Ctrl-C stops them (the demo's state goes with them).", flush=True)
    await asyncio.to_thread(stop.wait)


async def _scenes(demo: _Demo, base: str | None) -> None:
    """Friday evening on the instances: the dead-man's switch, a job's message, the kit."""
    if base is None:
        _heading("the dead-man's switch, /alert and the kit")
        print("  skipped: reaper's HTTP API needs the serve extra: pip install 'reaper[serve]'")
        return
    _heading(f"Friday 18:00–18:10 — the dead-man's switch (reaper serve's API on {base})")
    line = status_page_line(base)
    if line:
        print(f"  {line}")
    _dead_mans_switch(demo, base)
    await demo.watch()
    _heading("Friday 18:10 — a job's message, forwarded to the phone through /alert")
    _alert_from_a_job(demo, base)
    _heading("Friday 18:10 — the on-instance kit ends the job (run.sh, DRY_RUN=1)")
    _kit_ends_a_job(demo, base)


def _summary(demo: _Demo, emulators: Mapping[str, Any]) -> None:
    _heading("reaper audit: every termination, why, and whether it was confirmed")
    records = demo.store.audit_log()
    rows = [
        [
            r.provider,
            r.id,
            r.name,
            r.result,
            "yes" if r.confirmed else "NO",
            utc(r.requested_at),
            r.reason,
        ]
        for r in records
    ]
    print(
        format_table(
            ["provider", "id", "name", "result", "confirmed", "when", "why"],
            rows,
            width=terminal_width(),
            shrink_first=(6, 2),
        )
    )
    saved = sum((r.cost_per_hour or 0.0) * HOURS_PER_MONTH for r in records if r.confirmed)
    print(
        f"\nBilling stopped: about {money(saved)}/month. "
        "Mutating calls the emulators received: "
        + ", ".join(f"{label(name)} {len(e.mutations)}" for name, e in emulators.items())
        + ". "
        f"Simulated time: {humanize(demo.clock.now() - DEMO_START)}."
    )
    print(
        "Never touched: the running instances, the protected and locked ones, the one kept from"
        " the phone, and the pod in a state the reaper cannot read (MIGRATING → unknown: assume"
        " busy)."
    )
    print(
        f"Next: `{reaper_command()} emulate` serves this fleet on loopback for `reap`, `serve`,"
        " `watch`, `keep` and `status` of your own."
    )


def demo_command(*, serve: bool = False, stop: threading.Event | None = None) -> int:
    """Run the demo in a throwaway state directory; no key, no network beyond loopback.
    `serve`: then keep its status page and phone up until Ctrl-C/SIGTERM (or `stop`, for
    tests)."""
    try:
        import emulators  # noqa: F401
    except ImportError:
        raise ConfigError(
            "reaper demo",
            "needs the emulators, which are not installed: pip install -e ./emulators "
            "(or run `make demo` in the repository)",
        ) from None
    log.configure(quiet=True)
    waiting = (stop or threading.Event()) if serve else None
    with tempfile.TemporaryDirectory(prefix="reaper-demo-") as tmp:
        if waiting is None:
            code = asyncio.run(_run(Path(tmp), None))
        else:
            with stopped_by_signals(waiting):
                code = asyncio.run(_run(Path(tmp), waiting))
    return 0 if code == 0 else 1
