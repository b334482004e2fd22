"""What the passes need from a provider, and how a provider plugs in.

One client per configured account. Every method is async so that all accounts of every
provider are listed concurrently; every failure surfaces as `ProviderError`, which the pass
turns into an error for that account (never a shorter fleet, never an exception that stops the
others).

A provider is a package under `reaper/providers/` whose `PLUGIN` (a `ProviderPlugin`) says
everything the rest of reaper may know about it; the registry (`registry.PROVIDERS`) names the
packages, imported on first use.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

from reaper import log

if TYPE_CHECKING:
    from datetime import datetime

    from reaper.core.models import Balance, BilledDay, Instance, Volume
    from reaper.settings.parse import SettingsReader

TerminateOutcome = Literal["deleted", "not_found"]

# The id a client gives an instance whose own id it could not read: such an instance is listed
# (as unknown, never reaped), and a re-list holding one proves nothing about what is gone.
UNREADABLE_ID_PREFIX = "unreadable-"


class ProviderError(Exception):
    """A provider call failed for good (after retries). The message never holds a key.

    `status`: the HTTP status of an answer that refused the call outright (a 4xx the client
    did not expect); None when no such answer came (time-outs, 5xx after every retry, a
    dropped connection) — then whether the call took effect is unknown.
    """

    def __init__(
        self, provider: str, account: str, message: str, status: int | None = None
    ) -> None:
        super().__init__(message)
        self.provider = provider
        self.account = account
        self.message = message
        self.status = status


class StaleReading(ProviderError):
    """A delete was not sent: the reading it was decided on had grown older than allowed by the
    time it could go out (a queue, a rate-limit wait). Nothing was asked of the provider."""


def error_text(exc: BaseException) -> str:
    """One line for a failure, for reports, alerts and the audit: never a traceback, never a
    secret (log.redact scrubs every registered key), at most 300 characters."""
    text = exc.message if isinstance(exc, ProviderError) else f"{type(exc).__name__}: {exc}"
    return log.redact(" ".join(str(text).split()))[:300] or type(exc).__name__


# A real page of a thousand pods is a few hundred KB; anything over this is not an answer.
MAX_BODY = 8 * 1024 * 1024


@dataclass(frozen=True)
class HttpOptions:
    """Every knob of the request layer, so that tests can make backoff and timeouts tiny.

    `timeout` bounds each wait of an attempt (connect, each read, write and pool wait);
    `deadline` the whole attempt (connect, headers and the entire body); `max_body` the bytes
    an answer may hold. `max_attempts` counts the first try. The delay before retry n is drawn
    from [d/2, d] with d = min(backoff_cap, backoff_base * 2**(n-1)); a `Retry-After` replaces
    it when longer, capped at `retry_after_cap` so a provider cannot park a Lambda for its whole
    timeout — and so is a wait its rate-limit headers ask for before any 429.
    """

    timeout: float = 20.0
    deadline: float = 30.0
    max_body: int = MAX_BODY
    max_attempts: int = 4
    backoff_base: float = 0.5
    backoff_cap: float = 10.0
    retry_after_cap: float = 30.0
    max_concurrency: int = 8
    min_concurrency: int = 1

    def __post_init__(self) -> None:
        if self.timeout <= 0 or self.deadline <= 0:
            raise ValueError("HttpOptions.timeout and deadline must be above zero")
        if self.max_body < 1:
            raise ValueError("HttpOptions.max_body must be at least 1")
        if self.max_attempts < 1:
            raise ValueError("HttpOptions.max_attempts must be at least 1")
        if self.backoff_base < 0 or self.backoff_cap < 0 or self.retry_after_cap < 0:
            raise ValueError("HttpOptions backoff values must not be negative")
        if not 1 <= self.min_concurrency <= self.max_concurrency:
            raise ValueError("HttpOptions needs 1 <= min_concurrency <= max_concurrency")

    def backoff(self, retry: int) -> float:
        """The jittered delay before retry number `retry` (1 = the first retry)."""
        ceiling = min(self.backoff_cap, self.backoff_base * (2 ** (retry - 1)))
        return random.uniform(ceiling / 2, ceiling)


class ProviderClient(Protocol):
    provider: str
    account: str
    # How many ids one fresh read should carry (one filtered page, where a provider filters),
    # so the deletes of one batch go out while the next is read; None: all at once (one
    # listing, or one call per instance concurrently).
    read_batch: int | None

    async def list_instances(self, only_ids: Collection[str] | None = None) -> list[Instance]:
        """Every instance of the account, complete, or ProviderError (never a partial list).

        `only_ids` lets a provider that can filter server-side list just those ids, for
        confirmation re-lists; one that cannot lists everything. Callers must not trust a
        filtered answer blindly: the reap pass adds a witness id that must come back.
        """
        ...

    async def terminate(
        self,
        instance_id: str,
        *,
        not_after: float | None = None,
        before_send: Callable[[], None] | None = None,
    ) -> TerminateOutcome:
        """Ask for deletion. "not_found" only when the provider clearly says it is gone; an
        auth or session error that looks like a 404 raises ProviderError instead.

        `not_after` (a `time.monotonic()` instant): no attempt is sent after it — the reading
        the delete was decided on is too old by then — and `StaleReading` is raised instead.
        `before_send` runs once, right before the request first goes out.
        """
        ...

    async def read_instances(self, instance_ids: Collection[str]) -> dict[str, Instance | None]:
        """These instances as the provider shows them right now, for the reading a delete is
        decided on: each id read → its instance, or None where the provider says it does not
        exist; an id whose read failed is left out. Cheap where the provider allows (one call
        per instance, or a listing filtered to the ids, or the listing when that is fewer round
        trips). ProviderError when nothing could be read."""
        ...

    def server_time(self) -> datetime | None:
        """The provider's clock, from the `Date` of its latest answer (None before any)."""
        ...

    async def lookup(self, instance_id: str) -> Instance | None:
        """One instance read by its own endpoint: None when the provider says it does not
        exist. Only for corroborating a re-list that has nothing else to check it against."""
        ...

    async def balance(self) -> Balance: ...

    async def billing(self, days: int) -> list[BilledDay] | None:
        """The provider's own billing history: one total per UTC day, the last `days` days
        with today (in progress) last; a day it does not answer for is left out. None when
        the provider offers no billing history reaper can read."""
        ...

    async def instance_billing(self, days: int) -> dict[str, float] | None:
        """What the provider billed for each of its instances over the last `days` UTC days
        (today included), by instance id; None when it offers no such history."""
        ...

    async def volumes(self, instances: Sequence[Instance] | None = None) -> list[Volume]:
        """The account's volumes. `instances`: this account's complete listing from the same
        pass, so a provider that tells attachment from its pods need not list them again;
        None → the client lists them itself."""
        ...

    async def aclose(self) -> None: ...


@dataclass(frozen=True)
class Kit:
    """What the on-instance kit (`infra/instance/common.sh`) holds of a provider, beside the
    heartbeat host prefix: the variable of its API's base URL and that URL's default, the
    variables the kit reads inside one of its instances (names reaper knows, no settings), and
    where the kit's lines go in an instance template, in the provider's words (`template`,
    "on-start script"; `reaper init` says it)."""

    url_variable: str
    default_url: str
    variables: tuple[str, ...] = ()
    template: str = ""


@dataclass(frozen=True)
class ProviderPlugin:
    """Everything the provider-agnostic code may know about one provider; every list of the
    providers' facts elsewhere (the secrets read from SSM, the known variables and prefixes,
    the emulators, the kit's hosts and URLs) is derived from these.

    `host_prefix`: a heartbeat host `<prefix><id>` is that provider's instance. `client`: the
    import path (`module:function`) of `make(account, settings, options) -> ProviderClient`,
    loaded only when a client is made (`reaper.app.wiring`). `settings`: how its variables are
    read (its key variable and its secrets among them), all of them starting with
    `env_prefix`. `emulator`: the import path (`module:Class`) of its emulator in the separate
    `emulators` distribution, for `reaper demo` and `reaper emulate`. `id_noun`: what its
    instance ids are called in a help line ("podId"). `fetch_note(account, what)`: the
    provider's own words when its balance or volumes cannot be read (None: the generic words),
    and `fetch_episode(account, what)` the episode key that failure is kept under.
    """

    name: str
    label: str
    host_prefix: str
    canonical_id: Callable[[str], str | None]
    client: str
    settings: SettingsReader
    env_prefix: str
    kit: Kit
    emulator: str = ""
    id_noun: str = "id"
    fetch_note: Callable[[str, str], tuple[str, str] | None] = lambda _account, _what: None
    fetch_episode: Callable[[str, str], str | None] = lambda _account, _what: None


# --- what every listing means ------------------------------------------------------------


def _decision_facts(inst: Instance) -> tuple[object, ...]:
    """What the policy decides on: copies that differ in any of it contradict each other (one
    copy locked or carrying the protect marker, another not, is no less a contradiction than
    one stopped and one running)."""
    return (
        inst.state,
        inst.raw_status,
        inst.locked,
        inst.name,
        inst.tags,
        inst.cluster_id,
        inst.protection_unreadable,
        inst.started_at,
        inst.created_at,
    )


def merge_duplicates(instances: list[Instance]) -> list[Instance]:
    """One instance per id, in first-seen order. Copies that agree collapse into one; copies
    that contradict each other (EXITED on one page and RUNNING on the next, or through two keys
    of one account) make the instance unknown: a listing that contradicts itself cannot be
    read, and what cannot be read is never reaped."""
    merged: dict[str, Instance] = {}
    for inst in instances:
        first = merged.get(inst.key)
        if first is None:
            merged[inst.key] = inst
        elif _decision_facts(first) != _decision_facts(inst):
            statuses = sorted({first.raw_status, inst.raw_status} - {""}) or ["?"]
            if len(statuses) == 1:
                statuses = [f"{statuses[0]} with other facts"]
            merged[inst.key] = first.model_copy(
                update={
                    "state": "unknown",
                    "raw_status": "conflicting: " + " / ".join(statuses),
                    "cost_per_hour": None,
                }
            )
            log.event(
                "provider_conflicting_instance",
                provider=inst.provider,
                account=inst.account,
                id=inst.id,
                statuses=",".join(statuses),
                state="unknown",
            )
    return list(merged.values())
