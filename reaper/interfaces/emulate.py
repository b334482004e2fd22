"""`reaper emulate`: a fake cloud on loopback, so anyone can try `reap`, `serve`, `watch`, `keep`
and the status page without an account and without writing Python.

It starts the RunPod and Vast emulators (the separate `emulators` distribution, installed by
`make demo` and `make test`; never a dependency of the `reaper` package, so it is imported here,
when the command runs) with a fleet from a small JSON file, prints the `export` lines that point
reaper at them, and serves until Ctrl-C (or SIGTERM). The emulators keep their fleet in memory,
on the real clock: a pod stopped now is due a day from now, as on the real providers.
"""

from __future__ import annotations

import shlex
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from reaper.settings.parse import ConfigError

if TYPE_CHECKING:
    from emulators.fleet import Fleet

NOT_INSTALLED = (
    "needs the emulators, which are not installed: pip install -e ./emulators in the"
    " repository (`make demo` installs them)"
)


def _load(fleet_path: str | None) -> tuple[Fleet, Path]:
    try:
        from emulators.fleet import EXAMPLE, FleetError, load_fleet
    except ImportError:
        raise ConfigError("reaper emulate", NOT_INSTALLED) from None
    path = Path(fleet_path) if fleet_path else EXAMPLE
    try:
        return load_fleet(path), path
    except FleetError as exc:
        raise ConfigError(str(path), str(exc)) from None


def export_lines(fleet: Fleet, runpod_url: str, vast_url: str, state: Path | None) -> list[str]:
    """The shell lines that point reaper at the emulators: URLs, the fleet's (fake) keys, and
    a state of its own, so that the emulated fleet never mixes with a real one's records."""

    def keys(accounts: dict[str, str]) -> str:
        return ",".join(f"{name}={key}" for name, key in accounts.items())

    values = {
        "RUNPOD_API_URL": f"{runpod_url}/v2",
        "RUNPOD_GRAPHQL_URL": f"{runpod_url}/graphql",
        "RUNPOD_API_KEY": keys(fleet.runpod.accounts),
        "VAST_API_URL": vast_url,
        "VAST_API_KEY": keys(fleet.vast.accounts),
    }
    if state is not None:
        values["REAPER_STATE"] = f"sqlite:///{state}"
    return [f"export {name}={shlex.quote(value)}" for name, value in values.items()]


@contextmanager
def _stopped_by_signals(stop: threading.Event) -> Iterator[None]:
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
    runpod_port: int = 0,
    vast_port: int = 0,
    stop: threading.Event | None = None,
) -> int:
    """Serve until Ctrl-C/SIGTERM (or `stop`, for tests); 0 then, 1 when a port is taken,
    2 for a bad fleet file or missing emulators."""
    checked, path = _load(fleet)
    from emulators import RunPodEmulator, VastEmulator
    from emulators.fleet import populate

    stop = stop or threading.Event()
    runpod = RunPodEmulator(checked.runpod.accounts, port=runpod_port)
    vast = VastEmulator(checked.vast.accounts, port=vast_port)
    state_dir = Path(tempfile.mkdtemp(prefix="reaper-emulate-"))
    try:
        with _stopped_by_signals(stop):
            for emulator, port in ((runpod, runpod_port), (vast, vast_port)):
                try:
                    emulator.start()
                except OSError as exc:
                    reason = exc.strerror or str(exc)
                    print(f"reaper: cannot listen on 127.0.0.1:{port}: {reason}", file=sys.stderr)
                    return 1
            populate(checked, runpod, vast)
            pods, instances = checked.size
            print(
                f"# reaper emulate: RunPod on {runpod.url}, Vast on {vast.url}; {pods} pods and"
                f" {instances} instances from {path.name}. Fake keys; nothing leaves this machine."
            )
            print("# In another shell, paste these lines, then try: reaper reap --dry-run")
            for line in export_lines(checked, runpod.url, vast.url, state_dir / "state.db"):
                print(line)
            print("# Ctrl-C stops the emulators (their fleet and this state go with them).")
            sys.stdout.flush()
            while not stop.wait(0.2):
                pass
        print("reaper: emulators stopped", file=sys.stderr)
        return 0
    finally:
        runpod.stop()
        vast.stop()
        shutil.rmtree(state_dir, ignore_errors=True)
