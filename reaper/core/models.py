"""The shapes every part of reaper agrees on.

Providers normalise their answers into `Instance`; the policy turns instances plus `History`
into `Decision`s; the store keeps `History`, `AuditRecord`s and `Monitor`s; every alert is an
`Alert`. Keeping them in one module is what lets the policy stay pure and testable: it sees
only these values, never a client or a database. `Monitor` and `PingEvent`, the records a ping
reads and writes, are plain dataclasses in `reaper.core.records` (a cold ping imports no
pydantic) and are named here too.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from reaper.core.records import Monitor as Monitor
from reaper.core.records import MonitorStatus as MonitorStatus
from reaper.core.records import PingEvent as PingEvent
from reaper.core.records import PingEventKind as PingEventKind

# A provider's registered name; which names exist is the providers' registry's
# business, not the core's.
ProviderName = str

# The five states of the public contract. Anything a provider says that is not clearly one of
# the first four is "unknown": never reaped, and it keeps (does not reset) the stopped clock.
State = Literal["running", "starting", "stopped", "terminated", "unknown"]

Action = Literal["terminate", "warn", "protect", "hold"]
AlertLevel = Literal["info", "warning", "critical"]


def instance_key(provider: str, instance_id: str) -> str:
    """The one spelling of an instance's identity in the store and in `reaper keep`.

    Instance ids are unique per provider, so the account is not part of the key: the same pod
    seen through two configured keys of one account is one pod.
    """
    return f"{provider}:{instance_id}"


class Instance(BaseModel):
    """One pod or instance as a provider listed it, normalised.

    Secrets that providers put in their answers (environments, tokens, start scripts, ssh keys)
    `jupyter_token`, `onstart`, ssh keys) are dropped by the clients before this is built and
    have no field here.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    provider: ProviderName
    account: str
    id: str
    name: str = ""
    state: State
    raw_status: str
    # Filled by the reap pass from the store's first-seen-stopped record; providers leave it None
    # because neither API reports when an instance stopped.
    stopped_since: datetime | None = None
    # What the instance bills now, in USD per hour (a stopped one: its storage); None = unknown.
    cost_per_hour: float | None = None
    # The provider's lock flag: its owner asked that it never be stopped or reset; never touched.
    locked: bool = False
    # The provider's tags, where it has them: like the name, a tag that carries the protect
    # marker protects the instance.
    tags: tuple[str, ...] = ()
    # The cluster of a cluster member: the provider cannot delete it on its own.
    cluster_id: str | None = None
    # GPU utilisation in percent (0-100), averaged over the instance's GPUs; None when unknown.
    gpu_util: float | None = None
    created_at: datetime | None = None
    started_at: datetime | None = None
    # Disk sizes, for the warning message (what will be lost) and storage costs.
    container_disk_gb: float | None = None
    volume_disk_gb: float | None = None
    network_volume_id: str | None = None
    # The provider's console page for this instance, for alerts (a tap-to-open link).
    console_url: str | None = None
    # Set by the provider when a field that protects an instance (its lock flag, or the name
    # that may carry the protect marker) is missing or unreadable: it then counts as protected,
    # and this says why.
    protection_unreadable: str | None = None
    # False when the provider's answer cannot show that the instance started since an earlier
    # reading (no start time in it): the warning then must not promise that starting saves it.
    restart_visible: bool = True
    # The provider's own words about this state, for warnings and alerts ("... still means to
    # run it: it resumes if your bid wins"); empty when there is nothing to add.
    state_note: str = ""
    # False where a stopped one bills its whole price, not its storage (a provider whose
    # powered-off machines bill in full): what it bills is then never called storage.
    stopped_bills_storage: bool = True
    # Set by the provider when the instance is in a state that bills and may never end by
    # itself (starting that never finishes, waiting for a GPU, in error, an abandoned start):
    # what it is, in a few words. Alerted once it lasts REAPER_STUCK_AFTER; never reaped for it.
    stalled: str | None = None
    # Paused with its memory kept and its GPU still billed: no state of the reaper's reaps it.
    frozen: bool = False
    # Words of the provider, set when it reads the instance: its display name, what the field
    # carrying the protect marker is called there, and what a termination destroys and leaves.
    provider_label: str = ""
    name_field: str = "name"
    termination_loses: str = ""

    @property
    def key(self) -> str:
        return instance_key(self.provider, self.id)


class KeptInstance(BaseModel):
    """An instance spared by `reaper keep`, optionally until a time."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    key: str
    since: datetime
    until: datetime | None = None
    # Who asked: "reaper keep", "status page", ... ("" when not recorded).
    by: str = ""

    def active(self, now: datetime) -> bool:
        return self.until is None or now < self.until


class WarningRecord(BaseModel):
    """A termination warning as it went out: the facts its license is checked against
    (`reaper.core.license`).

    `stretch` is the stopped stretch it was issued for (the instance's `stopped_since` as the
    policy computed it): a warning binds to that exact stretch. `at` is when it was
    *delivered* (the notice runs from then, not from the pass's start); `heard` is whether it
    reached a channel a person reads rather than only the log; `mode` is the mode of the pass
    that sent it: an observe warning said "would be terminated" and never licenses a
    termination in enforce mode. `terminate_at` is the deadline it announced, computed at
    `issued_at` (the clock right before it was sent) under `ttl` and `warn_before`: settings
    that would give another deadline now void it. `held_at`: the last pass in which the
    termination cap (or observe mode) held back the termination it licenses — while that
    goes on, the license does not go stale.

    Records written before these facts were kept have no `stretch` or `issued_at`: they license
    nothing (the next pass warns anew, the safe direction).
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    at: datetime
    heard: bool
    mode: Literal["enforce", "observe"]
    terminate_at: datetime | None = None
    stretch: datetime | None = None
    issued_at: datetime | None = None
    ttl: timedelta | None = None
    warn_before: timedelta | None = None
    held_at: datetime | None = None


class History(BaseModel):
    """What the store remembers about the fleet, as the policy needs it.

    `first_seen_stopped` is the start of the current stopped stretch (the providers have no
    "stopped at" field, so the reaper records when it first saw each instance stopped).
    `warnings` holds the termination warning of that stretch; a warning older than the
    stretch's start belongs to an earlier stretch and does not count.
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    first_seen_stopped: dict[str, datetime] = Field(default_factory=dict)
    # The provider's start time of the instance when its stretch was recorded: any change of it
    # later is a start the reaper never saw running, whatever the two clocks say.
    stretch_started: dict[str, datetime] = Field(default_factory=dict)
    warnings: dict[str, WarningRecord] = Field(default_factory=dict)
    kept: dict[str, KeptInstance] = Field(default_factory=dict)
    # "Terminate now" asked from the phone, by instance key (filled by the pass from the
    # store's open requests; a request counts only in the stretch and the mode it was made in).
    requests: dict[str, TerminationRequest] = Field(default_factory=dict)
    # When a complete, trustworthy listing first missed a recorded stretch's instance: one miss
    # is no proof that it is gone (see `reaper.passes.reap.run.absences`).
    missing_since: dict[str, datetime] = Field(default_factory=dict)


# Why a stopped instance past its deadline is not terminated, when a person may not intend it:
# its protection cannot be read, it is a cluster member the pod endpoints cannot delete, the
# termination cap holds it back, no channel reaches a person, or the read right before its
# delete does not show it (or shows a state reaper cannot read). Each is alerted and makes the
# pass exit 1 (docs/safety.md, "No silent exemption"); a deliberate choice (a keep, the marker, the
# lock, REAPER_MAX_TERMINATIONS=0, observe mode) is none of these.
Exemption = Literal["unreadable_protection", "cluster", "cap", "no_channel", "fresh_read"]


class Decision(BaseModel):
    """What the policy decided for one instance, and why, in words a human reads."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    instance: Instance
    action: Action
    reason: str
    # When the instance becomes (or became) due for termination; None when not stopped.
    due_at: datetime | None = None
    # Set when the instance is past its deadline and left alone for a reason a person may not
    # intend: the pass, the views and the status page read this one fact.
    exempt: Exemption | None = None
    # The delivery time of the warning whose license this decision rests on (a termination, or
    # a hold by the cap or observe mode): the pass marks that warning held.
    licensed_by: datetime | None = None


class ClockChange(BaseModel):
    """A change to the stopped clock that the reap pass must record.

    `start`: first seen stopped now; `reset`: running or starting again, which also voids the
    stretch's warnings; `restart`: stopped again after a start that no pass saw (the provider's
    start time is newer than the stretch), so the old stretch and its warnings end and a new
    one starts now.
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    key: str
    change: Literal["start", "reset", "restart"]
    at: datetime
    # For `start`/`restart`: the provider's start time of the instance, kept with the stretch.
    started_at: datetime | None = None


class Plan(BaseModel):
    """The policy's whole answer for one pass."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    decisions: list[Decision]
    clock_changes: list[ClockChange]
    # Instances whose stopped clock has started by now, with `stopped_since` filled in.
    instances: list[Instance]
    # True when more terminations were due than REAPER_MAX_TERMINATIONS allows: all are `hold`.
    cap_exceeded: bool = False
    due_count: int = 0
    # The keys of the instances the cap held back.
    capped: list[str] = Field(default_factory=list)


class AuditRecord(BaseModel):
    """One termination, kept for `reaper audit`: what, why, when, confirmed."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    provider: ProviderName
    account: str
    id: str
    name: str
    reason: str
    requested_at: datetime
    stopped_since: datetime | None = None
    cost_per_hour: float | None = None
    # "requested" (written before the call, so a crash mid-call still leaves a record),
    # "deleted" (2xx), "not_found" (already gone), "failed" (error, see detail), "not_sent"
    # (left `requested` by a pass that died, and the next pass still listed the instance in the
    # same stretch: the delete never took effect — no termination).
    result: Literal["requested", "deleted", "not_found", "failed", "not_sent"]
    detail: str = ""
    confirmed: bool = False
    confirmed_at: datetime | None = None
    # Whether the "Terminated …" alert of a confirmed termination went out. Written False with
    # the record and True once sent, so that a process that dies in between leaves it for the
    # next pass to send. Records from before this field were announced when they were written.
    announced: bool = True

    @property
    def key(self) -> str:
        return instance_key(self.provider, self.id)


class ReapRun(BaseModel):
    """The summary of a completed reap pass; the watcher alerts when these stop coming."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    at: datetime
    finished_at: datetime
    dry_run: bool
    mode: Literal["enforce", "observe"]
    instances: int
    terminated: int
    warned: int
    errors: int
    exit_code: int


# --- actions from the phone ---------------------------------------------------------------

PhoneActionKind = Literal["keep", "terminate", "mute", "open"]
# What a person can do to the fleet, from the phone, the status page or the command line.
ActionKind = Literal[
    "keep", "unkeep", "terminate", "mute", "unmute", "open", "set", "pause", "resume", "delete"
]


class PhoneAction(BaseModel):
    """One thing an alert lets its reader do from the phone.

    `keep`: spare `targets` (instance keys) for `duration`, the record `reaper keep` writes;
    `terminate`: ask for the termination of the one target now, which the reap pass's own
    checks carry out or refuse; `mute`: silence the monitor `targets[0]` for `duration`;
    `open`: a link to look at (`url`), which changes nothing. `label` is the button's text,
    `subject` what it acts on, as a person reads it. `callback` and `link` are set when the
    action is armed: the opaque data of an in-chat button and the URL of its action page.
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    kind: PhoneActionKind
    label: str
    targets: tuple[str, ...] = ()
    subject: str = ""
    duration: timedelta | None = None
    url: str | None = None
    callback: str | None = None
    link: str | None = None
    # `terminate`: the stopped stretch of the warning it came with. A press counts only while
    # the instance is stopped in that same stretch: after a restart it is refused.
    stretch: datetime | None = None

    def bare(self) -> PhoneAction:
        """The action without its handles: what a grant stores."""
        return self.model_copy(update={"callback": None, "link": None})


class ActionGrant(BaseModel):
    """A stored one-time handle on actions: what a button's data or an action link maps to.

    `id` is the SHA-256 of the random token (the token itself is never stored, so a copy of the
    store cannot act). `choices`: what it may do (one action; a page offering all of an alert's
    actions holds several: whichever is chosen uses it). Single use, until `expires_at`.
    `ask_first`: an in-chat button that asks for a second press before it acts; `parent`: the
    grant such a second press confirms, used up with it.
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    id: str
    choices: tuple[PhoneAction, ...]
    created_at: datetime
    expires_at: datetime
    used_at: datetime | None = None
    ask_first: bool = False
    parent: str | None = None


class ActionRecord(BaseModel):
    """An action a person took — from the phone, the status page or the command line — for
    `reaper audit` and `status`: what was asked, by whom, through what, when, and what
    happened."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    at: datetime
    kind: ActionKind
    label: str
    targets: tuple[str, ...]
    subject: str = ""
    # Who asked: a chat user ("@name (… user 42)"), "action link", "status page", or the
    # user who ran `reaper keep`.
    by: str
    # How it arrived: "chat button", "action link", "status page" or "command line".
    via: str
    done: bool
    # One line: what happened ("kept until …", "not terminated: it is running").
    result: str


class TerminationRequest(BaseModel):
    """A "terminate now" from the phone, waiting for a pass to carry it out with every check of
    a reap pass. It counts only in the stopped stretch its warning was issued for (`stretch`;
    None, from an older reaper, counts in none), in the mode it was asked in, and until
    `expires_at`."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    key: str
    requested_at: datetime
    by: str
    mode: Literal["enforce", "observe"]
    expires_at: datetime
    stretch: datetime | None = None


class Alert(BaseModel):
    """One message for the phone. `dedup_key` groups repeats of the same condition (a channel
    that can replace a notification replaces it by this)."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    title: str
    body: str = ""
    level: AlertLevel = "warning"
    dedup_key: str = ""
    url: str | None = None
    # The event name for logs and grouping, e.g. "termination_warning".
    event: str = "alert"
    # What the reader can do about it from the phone (keep, mute, terminate now, open the status
    # page), in the order offered; each channel renders them its own way (buttons, action links,
    # a tap-to-open link) and up to its own limit. The pass that sends the alert arms them first
    # (gives each a stored one-time handle); an unarmed action is offered by no channel.
    actions: tuple[PhoneAction, ...] = ()
    # Armed: the link of one page offering every action of the alert, for a channel that has
    # only one tap (None: no such page, e.g. without REAPER_PUBLIC_URL).
    menu: str | None = None


class Delivery(BaseModel):
    """The result of sending one alert through one channel."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    channel: str
    ok: bool
    detail: str = ""
    # Whether this channel reaches a person (a phone's channel); the log does not. Only a
    # warning delivered where a person can read it licenses a termination.
    heard: bool = False


class Episode(BaseModel):
    """A condition that is open until it clears (balance low, a leak, an idle GPU, a silent
    reaper). Alerting per episode, not per pass, is what keeps a condition from becoming an
    alert storm."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    key: str
    opened_at: datetime
    detail: str = ""
    alerted_at: datetime | None = None


class Balance(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    provider: ProviderName
    account: str
    balance: float | None = None
    spend_per_hour: float | None = None
    spend_limit: float | None = None


class BilledDay(BaseModel):
    """What the provider's own billing history says one UTC day cost an account (`day`: its
    midnight); the day in progress is the last, and still growing."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    day: datetime
    amount: float


class Volume(BaseModel):
    """A provider's storage volume, for the leak guards."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    provider: ProviderName
    account: str
    id: str
    name: str = ""
    size_gb: float | None = None
    # True when some pod/instance/endpoint references it; None when that cannot be told.
    attached: bool | None = None
    cost_per_month: float | None = None
    created_at: datetime | None = None


class Listing(BaseModel):
    """One account's last complete listing, as a reap pass saw it: what `reaper keep`, `status`
    and the status page show between passes (they never list the providers themselves)."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    provider: ProviderName
    account: str
    at: datetime
    instances: list[Instance] = Field(default_factory=list)


class AccountError(BaseModel):
    """An account whose listing (or another read) failed: one line, never a secret."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    provider: ProviderName
    account: str
    message: str
