"""What a reap pass reports: its options, each action's result, the whole report (the
`reaper reap --json` object's source) and what a "terminate now" pass did."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from reaper.core.models import AccountError, Action, Decision, Exemption, Instance
from reaper.core.units import HOURS_PER_MONTH
from reaper.passes.guards import GuardReport


@dataclass(frozen=True)
class ConfirmOptions:
    """How long to wait for terminations to show in a re-listing: bounded, with backoff.

    The first re-listing goes out at once (the delete was acknowledged), and usually settles
    everything: an instance a provider still lists as destroyed (its hardware unloaded) or
    TERMINATED counts as gone. Only what still reads stopped waits, re-read alone: 0.5, 1, 2,
    4, 8, 8, 8, 8 s — about 40 s in all, as long as before but with the early reads denser.
    """

    attempts: int = 9
    first_delay: float = 0.0
    backoff: float = 0.5
    max_delay: float = 8.0


@dataclass(frozen=True)
class ActOptions:
    """How fresh a reading must be for a delete to go out on it.

    `fresh_for`: seconds from the fresh read (taken right before the deletes) after which no
    delete goes out on it; one held up longer (a queue, a rate-limit wait) is read again.
    `rounds`: how many fresh reads one account gets in one pass before the rest waits for the
    next pass.
    """

    fresh_for: float = 5.0
    rounds: int = 3


class ActionResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    provider: str
    account: str
    id: str
    name: str
    action: Action
    reason: str
    done: bool = False
    confirmed: bool = False
    # Past its deadline and left alone for a reason a person may not intend (see
    # `Decision.exempt`): named in an alert, and the pass exits 1 while it lasts.
    exempt: Exemption | None = None


@dataclass
class ReapReport:
    dry_run: bool
    mode: Literal["enforce", "observe"]
    at: datetime
    instances: list[Instance] = field(default_factory=list)
    actions: list[ActionResult] = field(default_factory=list)
    errors: list[AccountError] = field(default_factory=list)
    cap_exceeded: bool = False
    lease_taken: bool = False
    # Who holds the lease that was taken, and until when, in a line (for `lease_taken`).
    lease_note: str = ""
    # The pass ran past its lease and another took it: it stopped acting (needs attention).
    lease_lost: bool = False
    # The pass's clock read earlier than the last completed pass, or far from the providers':
    # it decided nothing. `clock_problem` says which, in a line.
    clock_behind: bool = False
    clock_problem: str = ""
    # No channel reaches a person: warnings went only to the log; `no_channel_note` says so
    # in a line, and whether anything can be terminated meanwhile ("" when one does).
    no_channel: bool = False
    no_channel_note: str = ""
    # Audit records left unconfirmed by an earlier pass, confirmed by this pass's listing.
    reconciled: list[str] = field(default_factory=list)
    # The money guards' findings (leaks, balances) of this pass; None when they did not run.
    guards: GuardReport | None = None
    # The termination cap of this pass and what set it (the setting or `--max-terminations`).
    cap: int | None = None
    cap_source: str = "REAPER_MAX_TERMINATIONS"

    @property
    def exit_code(self) -> int:
        """1 when something needs a human: a provider failed, a termination is unconfirmed or
        was not done, a warning reached nobody, an instance past its deadline is left alone for
        a reason a person may not intend (the cap, a cluster member, an unreadable protection,
        no channel), the lease was lost, the clock is wrong. A cap of 0 and observe mode are a
        person's choice: 0."""
        if self.lease_lost or self.clock_behind:
            return 1
        if self.lease_taken:
            return 0
        unconfirmed = any(
            a.action == "terminate" and a.done and not a.confirmed for a in self.actions
        )
        not_done = not self.dry_run and any(
            a.action in ("terminate", "warn") and not a.done for a in self.actions
        )
        exempt = any(a.exempt is not None for a in self.actions)
        return 1 if self.errors or unconfirmed or not_done or exempt else 0


def result_of(
    decision: Decision,
    *,
    done: bool = False,
    confirmed: bool = False,
    reason: str = "",
    action: Action | None = None,
) -> ActionResult:
    inst = decision.instance
    return ActionResult(
        provider=inst.provider,
        account=inst.account,
        id=inst.id,
        name=inst.name,
        action=action or decision.action,
        reason=reason or decision.reason,
        done=done,
        confirmed=confirmed,
        exempt=decision.exempt if action is None else None,
    )


def storage_per_month(inst: Instance) -> float | None:
    """A stopped instance bills only its storage, so its $/h times a month is what reaping stops."""
    if inst.cost_per_hour is None:
        return None
    return round(inst.cost_per_hour * HOURS_PER_MONTH, 2)


@dataclass(frozen=True)
class RequestOutcome:
    """What a pass for one requested termination did: `terminated` (confirmed by a re-list),
    `unconfirmed` (the delete went out, a re-list still shows it), `refused` (a check said no:
    the request is ended), `later` (it could not decide now: the request stays for the next
    pass). `why`: one line, for the answer to whoever asked."""

    result: Literal["terminated", "unconfirmed", "refused", "later"]
    why: str = ""
