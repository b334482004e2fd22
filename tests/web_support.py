"""A fleet for the status page's tests, made the way production makes it: real reap passes over
real HTTP against the emulators, monitors written as pings leave them, then the app served on
loopback. What the page shows must come from those records alone.

The story (a FakeClock; the default 24h TTL, 1h warning):
- START: `llm-finetune` runs ($1.64/h, its watchdog pings), `old-run` is stopped (first sight),
  `sweep-<script>` runs;
- START+23h: `old-run` is warned; `sweep-<script>` was stopped meanwhile (first sight);
- START+24h: `old-run` is terminated and confirmed.
So at START+24h the page shows one running pod, one stopped pod due at START+47h, one
termination, the watchdog of the running pod up and `trainer-box` down.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx

from reaper.core.models import Monitor
from tests.heartbeat_support import ADMIN, KEY, Served, served
from tests.reap_support import World, world
from tests.settings_support import replaced

EVIL_NAME = "sweep-<script>alert(1)</script>"
TTL = timedelta(hours=24)


@dataclass
class Fleet:
    world: World
    app: Served
    running_id: str
    stopped_id: str
    terminated_id: str
    vast_id: str

    @property
    def http(self) -> httpx.Client:
        return self.app.http

    def sign_in(self, key: str = ADMIN) -> httpx.Response:
        return self.http.post("/login", data={"key": key})


def _passes(w: World) -> tuple[str, str, str, str]:
    running = w.runpod.add_pod(
        "llm-finetune-a1", name="llm-finetune", status="RUNNING", cost=1.64, gpu_utils=[97]
    )
    old = w.runpod.add_pod("old-run-b2", name="old-run", status="EXITED", volume_gb=100)
    sweep = w.runpod.add_pod("sweep-c3", name=EVIL_NAME, status="RUNNING", cost=0.69, volume_gb=200)
    vast = str(w.vast.add_instance(4242001, label="eval-harness", dph_total=0.41))
    w.run()
    w.advance(23)
    w.runpod.set_status(sweep, "EXITED", cost=0.0)
    w.run()
    w.advance(1)
    report = w.run()
    assert any(a.id == old and a.action == "terminate" and a.confirmed for a in report.actions)
    return running, sweep, old, vast


def _monitors(app: Served, running_id: str) -> None:
    now = app.clock.now()
    app.store.put_monitor(
        Monitor(
            host=f"runpod-{running_id}",
            status="up",
            created_at=now - timedelta(hours=20),
            last_ping_at=now - timedelta(seconds=40),
            last_ping_kind="ping",
        )
    )
    app.store.put_monitor(
        Monitor(
            host="trainer-box",
            status="down",
            created_at=now - timedelta(hours=5),
            last_ping_at=now - timedelta(minutes=42),
            last_ping_kind="fail",
            last_message="CUDA out of memory <b>at step 1200</b>",
            down_since=now - timedelta(minutes=37),
        )
    )


@contextmanager
def fleet(tmp_path: Path, **overrides: Any) -> Iterator[Fleet]:
    with world(tmp_path) as w:
        running, sweep, old, vast = _passes(w)
        # The recording notifier reaches a person, and so does the channel the settings name:
        # what the page promises holds (with none, every deadline is a hold).
        person = {"ntfy_url": "http://127.0.0.1:9/phone", **overrides}
        settings = replaced(w.settings, admin_key=ADMIN, ping_key=KEY, **person)
        with served(settings, clock=w.clock) as app:
            _monitors(app, running)
            yield Fleet(w, app, running, sweep, old, vast)


def page_of(f: Fleet) -> str:
    """The status page, signing in first when the client holds no session."""
    if not f.http.cookies:
        assert f.sign_in().status_code == 303
    response = f.http.get("/")
    assert response.status_code == 200
    return response.text


def csrf_of(page: str) -> str:
    """The one CSRF token every form of the page carries."""
    [token] = set(re.findall(r'name="csrf" value="([^"]+)"', page))
    return token
