"""Lambda: one heartbeat check, every minute on the EventBridge schedule.

Silent monitors go down (once), reminders repeat, provider hosts are cross-checked with one
listing per account, and the reaper itself is watched (no completed reap for twice
REAPER_REAP_EVERY). The answer is the `reaper watch --json` object. Alert de-duplication lives
in the store (conditional writes), so two overlapping invocations never alert twice.
"""

from __future__ import annotations

import asyncio
from typing import Any

from handlers import runtime
from reaper.app import wiring
from reaper.interfaces import views
from reaper.passes.watch import WatchReport
from reaper.settings.model import Settings
from reaper.settings.parse import ConfigError
from reaper.store.ports import Store

FUNCTION = "watch"


async def run(settings: Settings, store: Store) -> WatchReport:
    return await wiring.watch_once(wiring.Runtime(settings, store))


def handler(event: object, context: object = None) -> dict[str, Any]:
    """Every event runs one pass: the schedule's, or a manual `serverless invoke -f watch`."""
    try:
        settings = runtime.load()
    except ConfigError as error:
        return runtime.config_error(FUNCTION, error)
    try:
        report = asyncio.run(run(settings, runtime.store(settings)))
    except Exception as error:
        return runtime.store_failed(FUNCTION, settings, error)
    runtime.health.recovered()
    return {"ok": report.exit_code == 0, **views.watch_json(report)}
