"""Lambda: the daily digest (spend now, what was reaped in 24h, balances, monitors down, open
leaks), on a daily EventBridge schedule.

`reaper.guards.digest_once` claims the digest in the store before sending, so a second
invocation the same day (a manual one, or a retry) sends nothing.
"""

from __future__ import annotations

import asyncio
from typing import Any

from handlers import runtime
from reaper.clock import SystemClock
from reaper.config import ConfigError

FUNCTION = "digest"


def handler(event: object, context: object = None) -> dict[str, Any]:
    from reaper.channels.fanout import make_notifier
    from reaper.passes.digest import digest_once

    try:
        settings = runtime.load()
    except ConfigError as error:
        return runtime.config_error(FUNCTION, error)
    try:
        store = runtime.store(settings)
        code = asyncio.run(digest_once(settings, store, make_notifier(settings), SystemClock()))
    except Exception as error:
        return runtime.store_failed(FUNCTION, settings, error)
    runtime.health.recovered()
    return {"ok": code == 0, "exit_code": code}
