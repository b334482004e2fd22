"""What the reap pass and the watcher need from a provider, and nothing more.

One client per configured account. Every method is async so that all accounts of both providers
are listed concurrently; every failure surfaces as `ProviderError`, which the pass turns into an
error for that account (never a shorter fleet, never an exception that stops the others).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Literal, Protocol

from reaper.models import Balance, Instance, ProviderName, Volume

TerminateOutcome = Literal["deleted", "not_found"]

# The id a client gives an instance whose own id it could not read: such an instance is listed
# (as unknown, never reaped), and a re-list holding one proves nothing about what is gone.
UNREADABLE_ID_PREFIX = "unreadable-"


class ProviderError(Exception):
    """A provider call failed for good (after retries). The message never holds a key."""

    def __init__(self, provider: ProviderName, account: str, message: str) -> None:
        super().__init__(message)
        self.provider = provider
        self.account = account
        self.message = message


class StaleReading(ProviderError):
    """A delete was not sent: the reading it was decided on had grown older than allowed by the
    time it could go out (a queue, a rate-limit wait). Nothing was asked of the provider."""


def error_text(exc: BaseException) -> str:
    """One line for a failure, for reports, alerts and the audit: never a traceback, never a
    secret (log.redact scrubs every registered key), at most 300 characters."""
    from reaper import log

    text = exc.message if isinstance(exc, ProviderError) else f"{type(exc).__name__}: {exc}"
    return log.redact(" ".join(str(text).split()))[:300] or type(exc).__name__


class ProviderClient(Protocol):
    provider: ProviderName
    account: str

    async def list_instances(self, only_ids: Collection[str] | None = None) -> list[Instance]:
        """Every instance of the account, complete, or ProviderError (never a partial list).

        `only_ids` lets a provider that can filter server-side (Vast) list just those ids, for
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

    async def lookup(self, instance_id: str) -> Instance | None:
        """One instance read by its own endpoint: None when the provider says it does not
        exist. Only for corroborating a re-list that has nothing else to check it against."""
        ...

    async def balance(self) -> Balance: ...

    async def volumes(self, instances: Sequence[Instance] | None = None) -> list[Volume]:
        """The account's volumes. `instances`: this account's complete listing from the same
        pass, so a provider that tells attachment from its pods need not list them again;
        None → the client lists them itself."""
        ...

    async def aclose(self) -> None: ...
