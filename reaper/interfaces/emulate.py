"""`reaper emulate`: a fake cloud on loopback, so anyone can try `reap`, `serve`, `watch`, `keep`
and the status page without an account and without writing Python.

It starts every provider's emulator (the separate `emulators` distribution, installed by `make
demo` and `make test`; never a dependency of the `reaper` package: each provider's plugin names
its emulator, imported through `reaper.app.wiring` when the command runs) with a fleet from a
small JSON file, prints the `export` lines that point reaper at them, and serves until Ctrl-C
(or SIGTERM). The emulators keep their fleet in memory, on the real clock: a pod stopped now is
due a day from now, as on the real providers — unless the fleet says it has been stopped for a
while (`stopped_for`). No provider reports when an instance stopped, so that time is written
into the emulated fleet's own state, as a pass would have recorded it had it been watching.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reaper.app import wiring
from reaper.app.settings import load_settings
from reaper.core.models import instance_key
from reaper.providers.plugins import label, plugins
from reaper.settings.parse import ConfigError

if TYPE_CHECKING:
    from emulators.fleet import Fleet
    from emulators.phone import PhoneEmulator

# Where the action links of the emulated phone's alerts point: `reaper serve`'s default address.
SERVE_URL = "http://127.0.0.1:8080"
NOT_INSTALLED = (
    "needs the emulators, which are not installed: pip install -e ./emulators in the"
    " repository (`make demo` installs them)"
)


def _emulators() -> dict[str, Any]:
    """Each provider's emulator class, by provider name, in registry order."""
    try:
        return {provider.name: wiring.emulator(provider) for provider in plugins()}
    except ImportError:
        raise ConfigError("reaper emulate", NOT_INSTALLED) from None


def _load(fleet_path: str | None, emulators: Mapping[str, Any]) -> tuple[Fleet, Path]:
    try:
        from emulators.fleet import EXAMPLE, FleetError, load_fleet
    except ImportError:
        raise ConfigError("reaper emulate", NOT_INSTALLED) from None
    path = Path(fleet_path) if fleet_path else EXAMPLE
    try:
        return load_fleet(path, emulators), path
    except FleetError as exc:
        raise ConfigError(str(path), str(exc)) from None


def _phone() -> PhoneEmulator:
    try:
        from emulators.phone import PhoneEmulator
    except ImportError:
        raise ConfigError("reaper emulate", NOT_INSTALLED) from None
    return PhoneEmulator()


def export_lines(
    fleet: Fleet, emulators: Mapping[str, Any], state: Path | None, phone: PhoneEmulator
) -> list[str]:
    """The shell lines that point reaper at the (started) emulators: URLs, the fleet's (fake)
    keys, a state of its own, so that the emulated fleet never mixes with a real one's
    records, and the emulated phone, a channel that reaches a person (so a warning there
    licenses a termination), whose buttons link to `reaper serve` at its default address."""

    def keys(accounts: dict[str, str]) -> str:
        return ",".join(f"{name}={key}" for name, key in accounts.items())

    values: dict[str, str] = {}
    for name, emulator in emulators.items():
        values |= emulator.environment(keys(fleet.sections[name].accounts))
    if state is not None:
        values["REAPER_STATE"] = f"sqlite:///{state}"
    values |= phone.environment() | {"REAPER_PUBLIC_URL": SERVE_URL}
    return [f"export {name}={shlex.quote(value)}" for name, value in values.items()]


def seed_stopped_clocks(
    fleet: Fleet, ids: Mapping[str, list[str]], state: Path, now: datetime
) -> int:
    """Write each `stopped_for` of the fleet into the state at `state` as the start of that
    instance's stopped stretch (`ids`: the emulators' ids of each section's entries, in order);
    how many were written."""
    settings = load_settings({"REAPER_STATE": f"sqlite:///{state}"}, dotenv=None)
    seeded = 0
    with wiring.opened(settings) as runtime:
        for name, section in fleet.sections.items():
            for instance_id, age in zip(ids[name], section.stopped_for, strict=False):
                if age is not None:
                    runtime.store.start_stopped_clock(instance_key(name, instance_id), now - age)
                    seeded += 1
    return seeded


def reaper_command() -> str:
    """How to run reaper from here: `reaper` when that is on PATH and is this installation,
    else this installation's own script (`.venv/bin/reaper` after `make demo`, which puts
    nothing on PATH)."""
    script = Path(sys.executable).parent / "reaper"
    on_path = shutil.which("reaper")
    if on_path is not None and (not script.exists() or Path(on_path).samefile(script)):
        return "reaper"
    if not script.exists():
        return "reaper"
    relative = os.path.relpath(script)
    return relative if not relative.startswith("..") else str(script)


@contextmanager
def stopped_by_signals(stop: threading.Event) -> Iterator[None]:
    """Ctrl-C and SIGTERM set `stop`, from before the first line is printed (a signal that
    arrives while the servers start must still end in a clean stop), and only in the main
    thread (the only one that can take signals)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handled = (signal.SIGINT, signal.SIGTERM)
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in handled}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def emulate_command(
    *,
    fleet: str | None,
    ports: Mapping[str, int] | None = None,
    stop: threading.Event | None = None,
) -> int:
    """Serve until Ctrl-C/SIGTERM (or `stop`, for tests); 0 then, 1 when a port is taken,
    2 for a bad fleet file or missing emulators. `ports`: a provider's emulator's port by
    provider name (any free one for the others)."""
    classes = _emulators()
    checked, path = _load(fleet, classes)
    phone = _phone()
    ports = ports or {}
    stop = stop or threading.Event()
    emulators = {
        name: emulator(checked.sections[name].accounts, port=ports.get(name, 0))
        for name, emulator in classes.items()
    }
    state_dir = Path(tempfile.mkdtemp(prefix="reaper-emulate-"))
    try:
        with stopped_by_signals(stop):
            for name, emulator in emulators.items():
                try:
                    emulator.start()
                except OSError as exc:
                    reason = exc.strerror or str(exc)
                    port = ports.get(name, 0)
                    print(f"reaper: cannot listen on 127.0.0.1:{port}: {reason}", file=sys.stderr)
                    return 1
            phone.start()
            now = datetime.now(UTC)
            ids = {name: e.populate(checked.sections[name]) for name, e in emulators.items()}
            seed_stopped_clocks(checked, ids, state_dir / "state.db", now)
            where = ", ".join(f"{label(name)} on {e.url}" for name, e in emulators.items())
            sizes = " and ".join(
                f"{len(checked.sections[name].entries)} {e.FLEET_LIST}"
                for name, e in emulators.items()
            )
            print(
                f"# reaper emulate: {where}; {sizes} from {path.name}. Fake keys; nothing leaves"
                " this machine."
            )
            command = reaper_command()
            print(f"# In another shell, paste these lines, then try: {command} reap --dry-run")
            for line in export_lines(checked, emulators, state_dir / "state.db", phone):
                print(line)
            print(
                f"# The phone (emulated): {phone.url}/ shows the alerts; its buttons act through"
                f" `{command} serve` (on {SERVE_URL.removeprefix('http://')}) in that shell."
            )
            print("# Ctrl-C stops the emulators (their fleet and this state go with them).")
            sys.stdout.flush()
            while not stop.wait(0.2):
                pass
        print("reaper: emulators stopped", file=sys.stderr)
        return 0
    finally:
        for emulator in emulators.values():
            emulator.stop()
        phone.stop()
        shutil.rmtree(state_dir, ignore_errors=True)
