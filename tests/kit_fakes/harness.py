"""Drives infra/instance/*.sh under bash with fake tools first on PATH, one recording HTTP
server in front of every endpoint the kit talks to, and the project's RunPod and Vast
emulators behind it answering the destroy calls.

Emulator accounts: RunPod "pod" (POD_KEY, the pod-scoped key) and "self" (SELF_KEY, the
user's REAPER_SELF_KEY); Vast "instance" (VAST_KEY, the per-instance CONTAINER_API_KEY). A
pod is visible only to its own account's key, as RunPod's "404: not found or not accessible".
The heartbeat and the alert webhook are `Guard`, reaper's routes as the contract writes them;
DigitalOcean's droplet API (DO_TOKEN) is `Droplets`, and its metadata service `Metadata`, on a
server of its own.

No kit run here may ask the real metadata address (169.254.169.254): every environment the
Kit builds points DIGITALOCEAN_METADATA_URL at the loopback `Metadata`, and `_env` refuses
one that does not."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

from emulators import RunPodEmulator, VastEmulator
from tests.kit_fakes.digitalocean import Droplets, Metadata
from tests.kit_fakes.guard import Guard, Notify, read_notify
from tests.kit_fakes.recorder import Recorder, Request, Response, recording_server

KIT_DIR = Path(__file__).resolve().parents[2] / "infra" / "instance"
FAKE_BIN = Path(__file__).resolve().parent / "bin"
FAKE_TOOLS = ("nvidia-smi", "who", "pgrep", "hostname")
BASH = shutil.which("bash") or "/bin/bash"
_ENV_BASH = "#!/usr/bin/env bash"
PING_KEY = "pk-ping-secret"
POD_KEY = "rp-pod-scoped-secret"
SELF_KEY = "rp-self-key-secret"
VAST_KEY = "vast-container-secret"
DO_TOKEN = "dop_v1_droplet-secret"

_PING = re.compile(rf"/ping/{PING_KEY}/(?P<host>[^/]+)(?:/(?P<suffix>[^/]+))?")
_ALERT = re.compile(rf"/alert/{PING_KEY}(?:/[^/]+)?")


@dataclass
class Kit:
    tmp: Path
    http: Recorder
    runpod: RunPodEmulator
    vast: VastEmulator
    bin: Path
    fakes: Path
    env: dict[str, str]
    guard: Guard
    metadata: Metadata
    droplets: Droplets

    @classmethod
    @contextmanager
    def on_pod(cls, tmp: Path, **env: str) -> Iterator[Kit]:
        """A kit on RunPod pod pod-1, with the pod's own key and `env` on top: where most
        tests of the on-instance scripts start."""
        with cls.start(tmp) as kit:
            kit.env |= {"RUNPOD_POD_ID": "pod-1", "RUNPOD_API_KEY": POD_KEY, **env}
            kit.add_pod("pod-1")
            yield kit

    @classmethod
    @contextmanager
    def on_droplet(cls, tmp: Path, droplet_id: int = 3164444, **env: str) -> Iterator[Kit]:
        """A kit on DigitalOcean droplet `droplet_id`, found by its metadata, with the user's
        token (DO_TOKEN) and `env` on top."""
        with cls.start(tmp) as kit:
            kit.metadata.droplet(droplet_id)
            kit.droplets.droplets[str(droplet_id)] = "active"
            kit.env |= {"DIGITALOCEAN_TOKEN": DO_TOKEN, **env}
            yield kit

    @classmethod
    @contextmanager
    def start(cls, tmp: Path) -> Iterator[Kit]:
        bin_dir, fakes = tmp / "bin", tmp / "fakes"
        bin_dir.mkdir()
        fakes.mkdir()
        install_fakes(bin_dir)
        stock_python(bin_dir)
        (tmp / "tmp").mkdir()
        with (
            recording_server() as http,
            recording_server() as metadata_http,
            RunPodEmulator({"pod": POD_KEY, "self": SELF_KEY}) as runpod,
            VastEmulator({"instance": VAST_KEY}) as vast,
        ):
            http.forward("/runpod", runpod.url)
            http.forward("/vast", vast.url)
            guard = Guard(PING_KEY, start=datetime.now(UTC).replace(microsecond=0))
            guard.install(http)
            droplets = Droplets(DO_TOKEN)
            droplets.install(http)
            metadata = Metadata(metadata_http)
            kit = cls(tmp, http, runpod, vast, bin_dir, fakes, {}, guard, metadata, droplets)
            http.on("POST", r"/runpod/v2/pods/([^/]+)/action", kit._pod_action)
            kit.env = {
                "PATH": f"{bin_dir}:{os.environ['PATH']}",
                "HOME": str(tmp),
                "LANG": "C.UTF-8",
                "KIT_FAKE_DIR": str(fakes),
                "HEARTBEAT_URL": f"{http.base}/ping/{PING_KEY}",
                "NOTIFY_URL": f"{http.base}/alert/{PING_KEY}",
                "RUNPOD_API_URL": f"{http.base}/runpod/v2",
                "VAST_API_URL": f"{http.base}/vast",
                "DIGITALOCEAN_API_URL": f"{http.base}{droplets.prefix}",
                "DIGITALOCEAN_METADATA_URL": metadata.url,
                "TMPDIR": str(tmp / "tmp"),
                "KEEP_FILE": str(tmp / "keep"),
                "IDLE_WATCH_LOCK": str(tmp / "idle-watch.lock"),
                "JUPYTER_RUNTIME_DIR": str(tmp / "jupyter-runtime"),
                "KIT_HTTP_TIMEOUT": "3",
                "KIT_DESTROY_TIMEOUT": "3",
                "CHECK_EVERY": "60",
                "IDLE_WATCH_SLEEP": "0",
            }
            kit.fake("nvidia-smi", "0")
            kit.fake("who", "")
            kit.fake("pgrep", "1 /sbin/init")
            kit.fake("hostname", "test-box")
            yield kit

    # -- the instance ---------------------------------------------------------------------
    def fake(self, tool: str, *sections: str) -> None:
        """What `tool` answers at idle-watch's check 1, 2, ...; the last answer repeats."""
        (self.fakes / f"{tool}.txt").write_text("\n---\n".join(sections) + "\n")

    def without(self, tool: str) -> None:
        (self.bin / tool).unlink()

    def calls(self) -> list[str]:
        log = self.fakes / "calls.log"
        return log.read_text().splitlines() if log.exists() else []

    # -- running the scripts --------------------------------------------------------------
    def _env(self, overrides: dict[str, str | None]) -> dict[str, str]:
        env = dict(self.env)
        for name, value in overrides.items():
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value
        refuse_the_real_metadata_address(env)
        return env

    def run(
        self, script: str, *args: str, timeout: float = 20, **env: str | None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", str(KIT_DIR / script), *args],
            env=self._env(env),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    def popen(self, script: str, *args: str, **env: str | None) -> subprocess.Popen[str]:
        return subprocess.Popen(
            ["bash", str(KIT_DIR / script), *args],
            env=self._env(env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # its own process group: `kill_all` reaches its children
        )

    @staticmethod
    def kill_all(proc: subprocess.Popen[str]) -> None:
        """SIGKILL the script and its children (a sleep would keep the pipes open)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()

    def watch(self, loops: int, **env: str | None) -> subprocess.CompletedProcess[str]:
        return self.run("idle-watch.sh", IDLE_WATCH_MAX_LOOPS=str(loops), **env)

    def source(self, snippet: str, **env: str | None) -> subprocess.CompletedProcess[str]:
        """Run `snippet` in bash -u with common.sh sourced."""
        script = f'set -u; . "{KIT_DIR}/common.sh"; {snippet}'
        return subprocess.run(
            ["bash", "-c", script],
            env=self._env(env),
            capture_output=True,
            text=True,
            timeout=20,
        )

    # -- what the endpoints saw -----------------------------------------------------------
    def events(self) -> list[str]:
        """Every request as a short label, in arrival order: push, notify, ping[:suffix],
        delete, jupyter."""
        labels = []
        for r in self.http.requests:
            if r.path.startswith("/push"):
                labels.append("push")
            elif r.method == "POST" and _ALERT.fullmatch(r.path):
                labels.append("notify")
            elif m := _PING.fullmatch(r.path):
                labels.append("ping" + (f":{m['suffix']}" if m["suffix"] else ""))
            elif r.method == "DELETE":
                labels.append("delete")
            else:
                labels.append(f"{r.method} {r.path}")
        return labels

    def pings(self) -> list[tuple[str, str | None, str]]:
        """(host, suffix, body) of every heartbeat ping."""
        out = []
        for r in self.http.requests:
            if m := _PING.fullmatch(r.path):
                out.append((m["host"], m["suffix"], r.body))
        return out

    def status_lines(self) -> list[str]:
        return [body for _, suffix, body in self.pings() if suffix is None]

    def notifies(self) -> list[Notify]:
        """Every notify the guard took, in order."""
        return list(self.guard.notifies)

    def alerts(self) -> list[str]:
        """Each notify as a person reads it: its title, then its details."""
        return [n.text for n in self.guard.notifies]

    def titles(self) -> list[str]:
        return [n.title for n in self.guard.notifies]

    def sent_notifies(self) -> list[Notify]:
        """Every notify the kit sent, whatever the answer."""
        return [n for r in self.http.requests if (n := read_notify(r)) is not None]

    def deletes(self) -> list[Request]:
        return [r for r in self.http.requests if r.method == "DELETE"]

    # -- providers ------------------------------------------------------------------------
    def add_pod(self, pod_id: str, account: str = "pod") -> None:
        """A running RunPod pod owned by `account` ("pod": POD_KEY sees it; "self": only
        SELF_KEY does)."""
        self.runpod.add_pod(pod_id, account=account)

    def deleted_pods(self) -> list[tuple[str, str | None, int]]:
        """(path, account of the key used, status) of every DELETE RunPod received."""
        return [(r.path, r.account, r.status) for r in self.runpod.mutations]

    def _pod_action(self, request: Request, match: re.Match[str]) -> Response:
        """RunPod's `POST /v2/pods/{id}/action` (the emulator has no such route): a stop
        moves the pod to EXITED and answers the pod, as the spec describes."""
        account = {POD_KEY: "pod", SELF_KEY: "self"}.get(request.bearer or "")
        if account is None:
            return _problem(401, "invalid bearer token")
        pod_id = match[1]
        if pod_id not in self.runpod.entry_ids(account) or self.runpod.pod(pod_id) is None:
            return _problem(404, "pod not found or not accessible")
        if json.loads(request.body or "{}") != {"action": "stop"}:
            return _problem(400, "unsupported action")
        self.runpod.set_status(pod_id, "EXITED")
        return Response(200, json.dumps(self.runpod.pod(pod_id)), "application/json")

    def failing(self, method: str, path_regex: str, status: int = 503) -> None:
        """The heartbeat or the alert webhook answering `status`."""
        self.http.on(method, path_regex, lambda _r, _m: _problem(status, "unavailable"))


def _problem(status: int, detail: str) -> Response:
    body = json.dumps({"title": "error", "status": status, "detail": detail})
    return Response(status, body, "application/problem+json")


def install_fakes(bin_dir: Path) -> None:
    """The fake tools in `bin_dir`, each started by this machine's bash itself: through
    `#!/usr/bin/env bash` every call would first run env to search PATH, and the kit calls
    four of them at every check."""
    (bin_dir / "_section.sh").symlink_to(FAKE_BIN / "_section.sh")
    for tool in FAKE_TOOLS:
        script = (FAKE_BIN / tool).read_text()
        assert script.startswith(_ENV_BASH), f"{tool}: starts with {script[:30]!r}"
        (bin_dir / tool).write_text(f"#!{BASH}" + script.removeprefix(_ENV_BASH))
        (bin_dir / tool).chmod(0o755)


def stock_python(bin_dir: Path) -> None:
    """The instance's python3 in `bin_dir`: this interpreter (not a slow version-manager
    shim) with the standard library alone, as on a stock image. The pyvenv.cfg beside it
    makes it an environment of its own (PEP 405), so that no site-packages of this machine
    is read at its start: their .pth hooks import packages, which cost each results.py and
    Jupyter check more than the check itself."""
    interpreter = Path(sys.executable).resolve()
    (bin_dir / "python3").symlink_to(interpreter)
    (bin_dir / "pyvenv.cfg").write_text(
        f"home = {interpreter.parent}\ninclude-system-site-packages = false\n"
    )


def no_secret_in(text: str) -> bool:
    return not any(s in text for s in (PING_KEY, POD_KEY, SELF_KEY, VAST_KEY, DO_TOKEN))


def refuse_the_real_metadata_address(env: dict[str, str]) -> None:
    """A kit run whose DigitalOcean metadata URL is not on loopback would ask the real
    metadata service (169.254.169.254, which also answers for other clouds): refused."""
    url = env.get("DIGITALOCEAN_METADATA_URL", "")
    if urlsplit(url).hostname != "127.0.0.1":
        raise AssertionError(
            f"DIGITALOCEAN_METADATA_URL={url!r}: the kit would ask the real metadata address"
        )
