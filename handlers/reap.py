"""Lambda: one reap pass, on the EventBridge schedule or invoked by hand.

    serverless invoke -f reap --data '{"dry_run": true}'

The event is the scheduled event of EventBridge (a real pass) or a small JSON object:
`{}` (a real pass, like `reaper reap`), `{"dry_run": true}`, `{"max_terminations": N}`. Any
other key is refused rather than ignored: a typo such as `{"dryrun": true}` must not turn a
test into a pass that terminates. The answer is the `reaper reap --json` object; provider
failures are in its `errors` and its `exit_code`, never raised, and so is a store that fails
(`runtime.store_failed`). A pass never outlives the invocation: it is stopped
`BACKSTOP_GRACE` after its deadline (REAPER_PASS_DEADLINE, or the invocation's remaining time
less a margin, whichever comes first), before Lambda would kill it mid-step.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass
from typing import Any

from handlers import runtime
from reaper import log
from reaper.app import wiring
from reaper.interfaces import views
from reaper.passes.deadline import BACKSTOP_GRACE, PassDeadline, pass_seconds
from reaper.passes.reap import ReapReport
from reaper.settings.parse import ConfigError

FUNCTION = "reap"
MANUAL_KEYS = frozenset({"dry_run", "max_terminations"})


@dataclass(frozen=True)
class ReapRequest:
    dry_run: bool = False
    max_terminations: int | None = None


def parse_event(event: object) -> ReapRequest:
    """ValueError with the reason for anything that is neither a schedule nor a manual run."""
    if not isinstance(event, Mapping):
        raise ValueError('expected a JSON object such as {"dry_run": true}')
    if event.get("source") == "aws.events" and "detail-type" in event:
        return ReapRequest()
    unknown = sorted(str(key) for key in event if key not in MANUAL_KEYS)
    if unknown:
        raise ValueError(
            f"unknown event keys: {', '.join(unknown)} (expected dry_run, max_terminations)"
        )
    dry_run = event.get("dry_run", False)
    if not isinstance(dry_run, bool):
        raise ValueError("dry_run: expected true or false")
    cap = event.get("max_terminations")
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 0):
        raise ValueError("max_terminations: expected a whole number >= 0")
    return ReapRequest(dry_run=dry_run, max_terminations=cap)


def remaining_seconds(context: object) -> float | None:
    """What the invocation has left (the Lambda context's clock); None without one."""
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    if not callable(remaining):
        return None
    try:
        return float(remaining()) / 1000
    except (TypeError, ValueError):
        return None


class PassStopped(Exception):
    """The pass ran past its backstop and was cancelled."""


async def _bounded(run: Coroutine[Any, Any, ReapReport], seconds: float) -> ReapReport:
    backstop = asyncio.timeout(seconds)
    try:
        async with backstop:
            return await run
    except TimeoutError:
        if backstop.expired():
            raise PassStopped from None
        raise


def handler(event: object, context: object = None) -> dict[str, Any]:
    try:
        request = parse_event(event)
    except ValueError as error:
        return runtime.bad_event(FUNCTION, str(error))
    try:
        settings = runtime.load(provider_keys=True)
    except ConfigError as error:
        return runtime.config_error(FUNCTION, error)
    limit = pass_seconds(settings.pass_deadline, remaining_seconds(context)) + BACKSTOP_GRACE
    try:
        store = runtime.store(settings, read_only=request.dry_run)
        pass_ = wiring.run_pass(
            wiring.Runtime(settings, store),
            dry_run=request.dry_run,
            max_terminations=request.max_terminations,
            deadline=PassDeadline.start(
                pass_seconds(settings.pass_deadline, remaining_seconds(context))
            ),
        )
        report = asyncio.run(_bounded(pass_, limit))
    except PassStopped:
        message = (
            f"the pass was stopped after {limit:g} s (REAPER_PASS_DEADLINE or the function's"
            " timeout): the next pass settles what it left"
        )
        log.event("lambda", function=FUNCTION, result="error", error=message)
        return {"ok": False, "error": message, "exit_code": runtime.EXIT_ATTENTION}
    except Exception as error:
        return runtime.store_failed(FUNCTION, settings, error)
    runtime.health.recovered()
    return {"ok": report.exit_code == 0, **views.reap_json(report)}
