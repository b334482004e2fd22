"""Lambda: the daily digest (spend now, what was reaped in 24h, balances, monitors down, open
leaks), on a daily EventBridge schedule.

`reaper.passes.digest.digest_once` claims the digest in the store before sending, so a second
invocation the same day (a manual one, or a retry) sends nothing.
"""

from __future__ import annotations

import asyncio
from typing import Any

from handlers import runtime
from reaper.app import wiring
from reaper.settings.parse import ConfigError

FUNCTION = "digest"


def handler(event: object, context: object = None) -> dict[str, Any]:
    try:
        settings = runtime.load()
    except ConfigError as error:
        return runtime.config_error(FUNCTION, error)
    try:
        store = runtime.store(settings)
        code = asyncio.run(wiring.digest_once(wiring.Runtime(settings, store)))
    except Exception as error:
        return runtime.store_failed(FUNCTION, settings, error)
    runtime.health.recovered()
    return {"ok": code == 0, "exit_code": code}
