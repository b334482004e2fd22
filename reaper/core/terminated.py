"""Whether an instance is already terminated, as the store knows it.

Only two facts make it so: a termination that a re-list confirmed (the audit record), or a
listing that shows the instance terminated. An instance merely missing from a listing is not:
one listing that misses it proves nothing (it may be back in the next one). A listing taken
after a confirmed termination that still shows the instance alive wins over the record: the
provider shows it, so a keep of it still spares something.

One place for this fact, read by the status page (which no longer shows such an instance) and
by every keep a person asks for (a keep of a gone instance spares nothing, and would show as a
keep).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from reaper.core.models import AuditRecord, Instance, Listing


@dataclass(frozen=True)
class Terminated:
    """`at`: when its confirmed termination was asked (`confirmed`), or when the listing that
    shows it terminated was taken (not `confirmed`)."""

    at: datetime
    confirmed: bool


def confirmed_terminations(audit: Iterable[AuditRecord]) -> dict[str, datetime]:
    """When each instance's latest confirmed termination was asked, by instance key."""
    gone: dict[str, datetime] = {}
    for record in audit:
        if record.confirmed and record.result in ("deleted", "not_found"):
            gone[record.key] = max(record.requested_at, gone.get(record.key, record.requested_at))
    return gone


def listed_gone(inst: Instance, listed_at: datetime, confirmed: Mapping[str, datetime]) -> bool:
    """Whether an instance of a listing taken at `listed_at` is gone by now: listed
    terminated, or its confirmed termination was asked at or after that listing (a listing is
    taken before the pass acts)."""
    asked = confirmed.get(inst.key)
    return inst.state == "terminated" or (asked is not None and asked >= listed_at)


def already_terminated(
    key: str, audit: Iterable[AuditRecord], listings: Iterable[Listing]
) -> Terminated | None:
    """How the store knows that the instance `key` is terminated, or None (see the module
    docstring)."""
    confirmed = confirmed_terminations(audit)
    shown = [(x.at, i) for x in listings for i in x.instances if i.key == key]
    if any(not listed_gone(inst, at, confirmed) for at, inst in shown):
        return None
    if key in confirmed:
        return Terminated(at=confirmed[key], confirmed=True)
    listed_terminated = [at for at, inst in shown if inst.state == "terminated"]
    return Terminated(at=min(listed_terminated), confirmed=False) if listed_terminated else None
