"""What every notifier double carries besides `send`: what the log carries (every channel's
largest budget, no actions), as `emulators.channels.RecordingNotifier` does."""

from __future__ import annotations

from emulators.channels import unconfigured_budget
from reaper.channels.base import ActionSlots


class StandIn:
    """The base of a notifier double that only overrides `send`."""

    body_budget = unconfigured_budget()
    actions = ActionSlots()
