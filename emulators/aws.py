"""AWS on loopback: moto's server mode (`moto_server`, from requirements-dev.txt), started as a
child process on a free port, for the tests and benchmarks that need a real AWS protocol
server — S3 for the kit's results, DynamoDB and SSM for the Lambda side — rather than moto's
in-process mocks (which a child process cannot see)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

MOTO_SERVER = Path(sys.executable).parent / "moto_server"


@dataclass
class MotoServer:
    process: subprocess.Popen[bytes]
    url: str

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_moto_server(*, within: float = 30.0) -> MotoServer:
    """A fresh server, listening when this returns; RuntimeError when there is no
    `moto_server` or it did not start in `within` seconds. The caller stops it."""
    if not MOTO_SERVER.exists():
        raise RuntimeError("moto_server missing: pip install -r requirements-dev.txt")
    port = free_port()
    # Nothing of the caller's AWS setup: the server must not pick up real credentials.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "MOTO_"))}
    process = subprocess.Popen(  # noqa: S603 (our own fixed argument list)
        [str(MOTO_SERVER), "-H", "127.0.0.1", "-p", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + within
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return MotoServer(process, f"http://127.0.0.1:{port}")
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError("moto_server did not start") from None
            time.sleep(0.05)
