"""The reap pass, one room per job: `state` (the pass's state, its lease, alerts once per
episode, how far the listing and the clocks are trusted), `run` (one pass: observe, decide,
apply), `warn`, `gate` (the one path of every DELETE), `terminate` (fresh read, delete,
confirm, reconcile), `records` (the listing and snapshot read models), `request` (one
"terminate now"), `report` (options and results)."""

from reaper.passes.reap.report import (
    ActionResult,
    ActOptions,
    ConfirmOptions,
    ReapReport,
    RequestOutcome,
)
from reaper.passes.reap.request import request_pass
from reaper.passes.reap.run import reap_pass

__all__ = [
    "ActOptions",
    "ActionResult",
    "ConfirmOptions",
    "ReapReport",
    "RequestOutcome",
    "reap_pass",
    "request_pass",
]
