"""docs/status-page.md's picture: `reaper demo`'s fleet on the status page, in a real browser at a
phone's width. Every run saves it under test-artifacts/; README_SCREENSHOT=1 also writes
docs/status-page.png (the one committed)."""

from __future__ import annotations

import asyncio
import os
import shutil
from datetime import timedelta
from pathlib import Path
from typing import Any

from reaper.app.settings import load_settings
from reaper.app.wiring import make_clients
from reaper.core.models import Monitor
from reaper.interfaces.demo import DEMO_START
from reaper.passes.reap import ConfirmOptions, reap_pass
from reaper.providers.base import HttpOptions
from reaper.store.sqlite import SQLiteStore
from tests.browser_support import ROOT, as_phone, screenshot, submit
from tests.heartbeat_support import ADMIN, KEY, served
from tests.settings_support import replaced


def test_the_demo_fleet_on_the_status_page(browser: Any, tmp_path: Path) -> None:
    from emulators import DigitalOceanEmulator, RunPodEmulator, VastEmulator
    from emulators.channels import RecordingNotifier
    from emulators.clock import FakeClock
    from emulators.demo import extras
    from emulators.fleet import EXAMPLE, load_fleet

    clock = FakeClock(DEMO_START)
    with (
        RunPodEmulator({"demo": "rp-demo-key"}, now=clock.now, delete_linger_reads=1) as runpod,
        VastEmulator({"demo": "vast-demo-key"}, now=clock.now, delete_linger_reads=1) as vast,
    ):
        # The demo's fleet: the example's (its RunPod and Vast parts), and what the demo stages
        # beyond it.
        every = {
            "runpod": RunPodEmulator,
            "vast": VastEmulator,
            "digitalocean": DigitalOceanEmulator,
        }
        fleet = load_fleet(EXAMPLE, every)
        runpod.populate(fleet.sections["runpod"])
        vast.populate(fleet.sections["vast"])
        extras({"runpod": runpod, "vast": vast})
        runpod.set_balance(client_balance=42.0)
        # RunPod's own billing history for the Spend section: a month of busy days.
        runpod.set_billing(
            {DEMO_START - timedelta(days=n): round(13.5 + (n % 5) * 1.7, 2) for n in range(30)}
        )
        settings = load_settings(
            {
                "RUNPOD_API_KEY": "demo=rp-demo-key",
                "RUNPOD_API_URL": runpod.rest_url,
                "RUNPOD_GRAPHQL_URL": runpod.graphql_url,
                "VAST_API_KEY": "demo=vast-demo-key",
                "VAST_API_URL": vast.url,
                "REAPER_STATE": f"sqlite:///{tmp_path / 'state.db'}",
                "REAPER_REQUIRE_CHANNEL": "false",
            },
            dotenv=None,
        )
        store = SQLiteStore(settings.state.location)
        options = HttpOptions(timeout=5.0, backoff_base=0.05, backoff_cap=0.2)
        confirm = ConfirmOptions(attempts=5, backoff=0.05, max_delay=0.2)

        async def one_pass() -> None:
            clients = make_clients(settings, options)
            try:
                await reap_pass(
                    settings, store, clients, RecordingNotifier(), clock, confirm=confirm
                )
            finally:
                await asyncio.gather(*(c.aclose() for c in clients))

        try:
            # The demo's first four passes: first sight, nothing due, warnings, terminations;
            # then hourly passes into Sunday, with one more pod stopped meanwhile.
            for advance in (0, 12, 11, 1):
                clock.advance(timedelta(hours=advance))
                asyncio.run(one_pass())
            runpod.set_status("llm-finetune-a1", "EXITED", cost=0.0)
            for _ in range(6):
                clock.advance(timedelta(hours=1))
                asyncio.run(one_pass())
            now = clock.now()
            store.put_monitor(
                Monitor(
                    host="vast-4242001",
                    status="up",
                    created_at=now - timedelta(days=1),
                    last_ping_at=now - timedelta(seconds=30),
                )
            )
            store.put_monitor(
                Monitor(
                    host="trainer-box",
                    status="down",
                    created_at=now - timedelta(hours=8),
                    last_ping_at=now - timedelta(minutes=47),
                    last_ping_kind="fail",
                    last_message="RuntimeError: CUDA out of memory at step 1200",
                    down_since=now - timedelta(minutes=42),
                )
            )
        finally:
            store.close()

        web = replaced(settings, admin_key=ADMIN, ping_key=KEY)
        with served(web, clock=clock) as app:
            as_phone(browser)
            browser.get(app.running.url + "/")
            from selenium.webdriver.common.by import By

            browser.find_element(By.NAME, "key").send_keys(ADMIN)
            submit(browser, browser.find_element(By.CSS_SELECTOR, "form[action='/login'] button"))
            text = browser.find_element(By.TAG_NAME, "main").text
            assert "eval-harness" in text and "bid-a100-sweep" in text
            assert "trainer-box" in text and "Terminations" in text
            assert "by its own billing history" in text
            shot = screenshot(browser, "demo-fleet-phone")
    if os.environ.get("README_SCREENSHOT") == "1":
        target = ROOT / "docs" / "status-page.png"
        target.parent.mkdir(exist_ok=True)
        shutil.copyfile(shot, target)
