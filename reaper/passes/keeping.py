"""Keep and unkeep as a person asks them, from the command line or the status page: the keep
record the policy reads, and an action record saying who asked, through what and when — the
same audit trail the phone's buttons leave (`reaper audit`, `status`). And what every keep
from a press checks first: whether the instance is already terminated."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from reaper.core.models import ActionRecord, KeptInstance
from reaper.core.terminated import Terminated, already_terminated
from reaper.core.units import utc
from reaper.store.ports import Store


def keep(
    store: Store, key: str, *, now: datetime, until: datetime | None, by: str, via: str
) -> ActionRecord:
    """Spare `key` until `until` (None: until unkept), replacing any keep in place."""
    store.keep(KeptInstance(key=key, since=now, until=until, by=by))
    record = ActionRecord(
        at=now,
        kind="keep",
        label="Keep" if until is None else f"Keep until {utc(until)}",
        targets=(key,),
        subject=key,
        by=by,
        via=via,
        done=True,
        result=f"kept until {utc(until)}" if until else "kept until further notice",
    )
    store.record_action(record)
    return record


def terminated_among(store: Store, keys: Sequence[str]) -> dict[str, Terminated]:
    """Those of `keys` the store knows to be terminated (`reaper.core.terminated`): a keep of
    them is refused. Missing from a listing is not terminated."""
    if not keys:
        return {}
    audit, listings = store.audit_log(), store.listings()
    found = {key: already_terminated(key, audit, listings) for key in keys}
    return {key: gone for key, gone in found.items() if gone is not None}


def unkeep(store: Store, key: str, *, now: datetime, by: str, via: str) -> ActionRecord:
    """End the keep of `key`; recorded either way, `done` saying whether there was one."""
    ended = store.unkeep(key)
    record = ActionRecord(
        at=now,
        kind="unkeep",
        label="Unkeep",
        targets=(key,),
        subject=key,
        by=by,
        via=via,
        done=ended,
        result="no longer kept" if ended else "was not kept; nothing changed",
    )
    store.record_action(record)
    return record


def command_line_user() -> str:
    """Who ran the command, as the operating system names them ("reaper keep" when it
    cannot say: a container without a passwd entry)."""
    import getpass

    try:
        return f"{getpass.getuser()} (command line)"
    except Exception:  # no user name to be had: the record still says how it came
        return "command line"
