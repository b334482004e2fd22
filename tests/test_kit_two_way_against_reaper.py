"""The two-way heartbeat end to end over loopback: the real `idle-watch.sh` (fake
`nvidia-smi` at 0 %, DRY_RUN=1) against reaper's own HTTP API under uvicorn — no fake of
reaper in between. A keep from the command line, from the status page and from a Telegram
press on the instance's idle warning each stops the idle destroy at the next ping; `reaper
idle --never` and `--default` change what the kit does; an answer the kit cannot read
changes nothing.

IDLE_LIMIT=7 minutes, a check counts 60 s: left alone the kit warns (idle_soon) at check 3
and would destroy at check 8 of 9."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from reaper.channels.base import ActionSlots
from reaper.channels.telegram import TelegramSettings
from reaper.channels.telegram.bot import TelegramBot
from reaper.channels.telegram.inbound import Poller
from reaper.core.models import Alert, Delivery
from tests.cli_process import run_reaper
from tests.heartbeat_support import KEY, Served, served
from tests.kit_fakes.harness import Kit
from tests.phone_support import Phone, phone
from tests.reap_support import World, world
from tests.web_support import csrf_of, fleet, page_of

POD = "abc123xyz"
HOST = f"runpod-{POD}"
LOOPS = 9


@contextmanager
def kit_on(tmp_path: Path, app: Served, pod: str = POD, key: str = KEY) -> Iterator[Kit]:
    (tmp_path / "kit").mkdir()
    with Kit.on_pod(
        tmp_path / "kit",
        RUNPOD_POD_ID=pod,
        HEARTBEAT_URL=f"{app.running.url}/ping/{key}",
        NOTIFY_URL=f"{app.running.url}/alert/{key}",
        IDLE_LIMIT="7",
        DRY_RUN="1",
    ) as kit:
        yield kit


def would_destroy(kit: Kit) -> bool:
    done = kit.watch(loops=LOOPS)
    assert done.returncode == 0, done.stderr
    # the destroy itself, not the warning ("would destroy in 5 min (dry run)")
    return "would destroy (dry run)" in done.stdout + done.stderr


def cli(w: World, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(w.state_path.parent), **w.env()}
    return run_reaper(args, env=env, cwd=w.state_path.parent.parent)


def test_left_alone_the_kit_destroys(tmp_path: Path) -> None:
    with (
        world(tmp_path, ping_key=KEY) as w,
        served(w.settings, clock=w.clock) as app,
        kit_on(tmp_path, app) as kit,
    ):
        assert would_destroy(kit)
        assert app.store.get_monitor(HOST) is not None


def test_a_keep_from_the_command_line_stops_the_idle_destroy(tmp_path: Path) -> None:
    with world(tmp_path, ping_key=KEY, start=datetime.now(UTC)) as w:
        kept = cli(w, "keep", f"runpod:{POD}", "--for", "1h", "--force")
        assert kept.returncode == 0, kept.stderr
        with served(w.settings, clock=w.clock) as app, kit_on(tmp_path, app) as kit:
            assert not would_destroy(kit)


def test_a_keep_of_a_custom_host_from_the_command_line(tmp_path: Path) -> None:
    with world(tmp_path, ping_key=KEY, start=datetime.now(UTC)) as w:
        assert cli(w, "keep", "host:my-box", "--for", "2h").returncode == 0
        with served(w.settings, clock=w.clock) as app, kit_on(tmp_path, app) as kit:
            kit.env["HEARTBEAT_HOST"] = "my-box"
            assert not would_destroy(kit)


def test_a_keep_from_the_status_page_stops_the_idle_destroy(tmp_path: Path) -> None:
    with fleet(tmp_path) as f:
        page = page_of(f)
        key = f"runpod:{f.running_id}"
        kept = f.http.post("/keep", data={"instance": key, "for": "1d", "csrf": csrf_of(page)})
        assert kept.status_code == 303
        with kit_on(tmp_path, f.app, pod=f.running_id) as kit:
            assert not would_destroy(kit)


class PressingOnArrival:
    """The phone: the idle warning arrives in Telegram and Keep 1 hour is pressed at once, the
    press handled by `reaper serve`'s long poll before the instance's next check."""

    def __init__(self, p: Phone) -> None:
        self.p = p
        self.inner = p.notifier()
        self.pressed = 0

    @property
    def body_budget(self) -> int:
        return self.inner.body_budget

    @property
    def actions(self) -> ActionSlots:
        return self.inner.actions

    async def send(self, alert: Alert) -> list[Delivery]:
        deliveries = await self.inner.send(alert)
        if alert.event == "idle_soon" and self.p.telegram is not None:
            self.p.telegram.press(self.p.telegram.last_message(), "Keep 1 hour")
            telegram = self.p.settings.channel("telegram")
            assert isinstance(telegram, TelegramSettings)
            store = self.p.w.store()
            try:
                poller = Poller(self.p.context(store), TelegramBot(telegram), poll_seconds=0)
                await poller.poll_once()
                self.pressed += poller.handled
            finally:
                store.close()
        return deliveries


def test_a_telegram_press_on_the_idle_warning_stops_the_idle_destroy(tmp_path: Path) -> None:
    with phone(tmp_path, ping_key=KEY) as p:
        pressing = PressingOnArrival(p)
        with (
            served(p.settings, notifier=pressing, clock=p.w.clock) as app,
            kit_on(tmp_path, app) as kit,
        ):
            assert not would_destroy(kit)
        assert pressing.pressed == 1
        assert p.telegram is not None
        assert any("Keep 1 hour" in m.labels for m in p.telegram.messages)


def test_reaper_idle_never_and_default_change_what_the_kit_does(tmp_path: Path) -> None:
    with world(tmp_path, ping_key=KEY, start=datetime.now(UTC)) as w:
        assert cli(w, "idle", HOST, "--never").returncode == 0
        with served(w.settings, clock=w.clock) as app, kit_on(tmp_path, app) as kit:
            assert not would_destroy(kit)
            assert cli(w, "idle", HOST, "--default").returncode == 0
            assert would_destroy(kit)
            assert cli(w, "idle", HOST, "--after", "30m").returncode == 0
            assert not would_destroy(kit)


def test_an_answer_the_kit_cannot_read_changes_nothing(tmp_path: Path) -> None:
    with world(tmp_path, ping_key=KEY, start=datetime.now(UTC)) as w:
        assert cli(w, "idle", HOST, "--never").returncode == 0
        # A wrong key: 404, as from a reaper that does not know this instance.
        with (
            served(w.settings, clock=w.clock) as app,
            kit_on(tmp_path, app, key="not-the-key-0123456789") as kit,
        ):
            assert would_destroy(kit)
