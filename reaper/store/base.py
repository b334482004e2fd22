"""The store interface: one contract, two backends (SQLite locally, DynamoDB on AWS).

Everything the reaper must remember between passes lives behind this protocol, and the shared
contract tests in `tests/store_contract.py` run against every backend. Methods are small and
each is one short transaction, so that two processes (a `serve` and a manual `reaper reap`) can
share one store safely.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Protocol, TypeVar

from reaper.core.monitors import PING_LOG_KEPT, SettingsChange
from reaper.core.records import Monitor, PingEvent, Record
from reaper.core.units import as_utc

if TYPE_CHECKING:  # pydantic models: a cold ping imports none of them (reaper.core.records)
    from reaper.core.models import (
        ActionGrant,
        ActionRecord,
        AuditRecord,
        Episode,
        History,
        KeptInstance,
        Listing,
        ReapRun,
        TerminationRequest,
        WarningRecord,
    )
    from reaper.core.snapshot import Snapshot

# Snapshots are kept at least this long (SQLite prunes older ones when it records one; DynamoDB
# lets its TTL collect them); the status page reads 30 days.
SNAPSHOT_RETENTION = timedelta(days=90)


_Record = TypeVar("_Record", bound=Record)


def time_text(moment: datetime) -> str:
    """How both backends store a time: fixed width, so text order is time order."""
    return as_utc(moment).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def text_time(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def utc_record(record: _Record) -> _Record:
    """The record with every time field in UTC (naive ones taken as UTC), before a backend
    stores it, so that what comes back out is always timezone-aware UTC."""
    update = {
        name: as_utc(value)
        for name, value in record.__dict__.items()
        # Any zone but UTC's own, even one at offset 0 today (Europe/London in winter): the
        # SQLite store hands back the record it wrote, which must be the one it would read.
        if isinstance(value, datetime) and value.tzinfo is not UTC
    }
    return record.model_copy(update=update) if update else record


@dataclass(frozen=True)
class Lease:
    """Who holds a lease (the reap pass's owner reads `<host>:<pid>:<token>`) and until when."""

    owner: str
    expires_at: datetime


class ReadOnlyStoreError(RuntimeError):
    """A write was attempted on a store opened read-only (a dry run)."""


def last_heard(monitor: Monitor) -> datetime:
    """When a monitor was last heard from: its last ping (a bye is one), else its creation."""
    return monitor.last_ping_at or monitor.created_at


def retired_to_delete(heard: dict[str, datetime], before: datetime, keep: int) -> list[str]:
    """Of retired monitors (host -> last heard), the hosts `delete_retired` deletes: those
    heard from before `before`, and all but the `keep` most recently heard. One rule for every
    backend."""
    newest_first = sorted(heard, key=lambda host: (heard[host], host), reverse=True)
    return [
        host
        for rank, host in enumerate(newest_first)
        if rank >= max(0, keep) or heard[host] < before
    ]


class Store(Protocol):
    read_only: bool

    # --- the reap history -------------------------------------------------------------
    def history(self) -> History:
        """First-seen-stopped times, warnings and kept instances, as the policy needs them."""
        ...

    def start_stopped_clock(
        self, key: str, at: datetime, *, started_at: datetime | None = None
    ) -> None:
        """Record the start of a stopped stretch, with the provider's start time of the
        instance then (None: it reported none); a no-op if one is already recorded."""
        ...

    def reset_stopped_clock(self, key: str) -> None:
        """The instance runs again (or is gone): forget its stretch and the stretch's
        warnings."""
        ...

    def mark_missing(self, key: str, at: datetime) -> None:
        """A complete listing at `at` missed the instance of this recorded stretch: keep the
        first such time (a no-op when one is kept, or when no stretch is recorded)."""
        ...

    def clear_missing(self, key: str) -> None:
        """The instance was listed again: forget that a listing missed it."""
        ...

    def record_warning(self, key: str, warning: WarningRecord) -> None:
        """Record the termination warning of the current stretch, replacing any earlier one.

        Replacing is always safe: the policy asks for a warning only when none licenses a
        termination. One pass at a time (the fenced lease) is what keeps two passes from
        warning side by side.
        """
        ...

    def mark_warning_held(self, key: str, warned_at: datetime, at: datetime) -> bool:
        """The termination the key's warning licenses was held back at `at` (the cap, observe
        mode): set its `held_at`, only if the recorded warning is still the one delivered at
        `warned_at` (one conditional write: a warning dropped meanwhile is never brought
        back). False when it is not."""
        ...

    def keep(self, kept: KeptInstance) -> None:
        """Record the keep and drop the key's warning and "terminate now" request: a warning
        (or a press) answered with a keep leads to no termination once the keep ends (the
        next pass warns anew). They go first: a crash between leaves no license behind."""
        ...

    def unkeep(self, key: str) -> bool:
        """End the key's keep and drop its warning and request, as `keep` does; True if a keep
        was recorded."""
        ...

    # --- the reap lease -----------------------------------------------------------------
    def acquire_lease(self, name: str, owner: str, now: datetime, ttl: timedelta) -> bool:
        """Take the named lease if free or expired. True if `owner` now holds it."""
        ...

    def renew_lease(self, name: str, owner: str, now: datetime, ttl: timedelta) -> bool:
        """Extend the lease to now+ttl only if `owner` holds it and it has not expired at `now`.
        False means the lease was lost: the caller must stop acting at once."""
        ...

    def release_lease(self, name: str, owner: str) -> None:
        """Release the lease if `owner` holds it; otherwise change nothing."""
        ...

    def lease_holder(self, name: str) -> Lease | None:
        """Who holds the named lease and until when, expired or not; None when nobody."""
        ...

    # --- audit and runs -----------------------------------------------------------------
    def record_termination(self, record: AuditRecord) -> None:
        """Insert or replace the audit record identified by (provider, id, requested_at)."""
        ...

    def audit_log(self, since: datetime | None = None) -> list[AuditRecord]:
        """Termination records, oldest first; only those requested at or after `since`."""
        ...

    def record_reap(self, run: ReapRun) -> None: ...

    def last_reap(self) -> ReapRun | None:
        """The most recent completed pass (by `finished_at`), dry runs included."""
        ...

    # --- last listings ----------------------------------------------------------------
    def record_listing(self, listing: Listing) -> None:
        """Keep this account's complete listing, replacing the one before."""
        ...

    def listings(self) -> list[Listing]:
        """The last complete listing of every account, ordered by provider and account."""
        ...

    # --- heartbeat monitors -------------------------------------------------------------
    def get_monitor(self, host: str) -> Monitor | None: ...

    def put_monitor(self, monitor: Monitor) -> None:
        """Insert or replace a monitor by host."""
        ...

    def create_monitor(self, monitor: Monitor, limit: int) -> bool:
        """Insert a new monitor unless `limit` non-retired monitors exist already or the host
        exists. True if inserted."""
        ...

    def list_monitors(self) -> list[Monitor]:
        """All monitors, ordered by host."""
        ...

    def delete_monitor(self, host: str) -> None:
        """Delete the monitor and its ping log."""
        ...

    def delete_retired(self, before: datetime, keep: int) -> int:
        """Delete retired monitors last heard from before `before`, and those beyond the `keep`
        most recently heard from (see `retired_to_delete`), with their ping logs; how many
        were deleted. A monitor revived meanwhile is never deleted."""
        ...

    # --- alert de-duplication and episodes ----------------------------------------------
    def claim_alert(self, key: str, now: datetime, window: timedelta) -> bool:
        """True the first time `key` is claimed within `window`; False for a duplicate."""
        ...

    def open_episode(self, key: str, at: datetime, detail: str = "") -> Episode:
        """Open the episode if it is not open; return it as stored (the older one if open)."""
        ...

    def mark_episode_alerted(self, key: str, at: datetime, detail: str | None = None) -> None: ...

    def close_episode(self, key: str) -> Episode | None:
        """Close the episode; return what was open, or None."""
        ...

    def open_episodes(self, prefix: str = "") -> list[Episode]: ...

    def close(self) -> None: ...

    # --- the status page: snapshots and sign-in links --------------------------------------
    def record_snapshot(self, snapshot: Snapshot) -> None:
        """Keep one reap pass's snapshot (at least SNAPSHOT_RETENTION long)."""
        ...

    def snapshots(self, since: datetime) -> list[Snapshot]:
        """The snapshots taken at or after `since`, oldest first."""
        ...

    def record_login_token(self, token_hash: str, expires_at: datetime) -> None:
        """Keep a one-time sign-in link's token, by its hash (never the token itself)."""
        ...

    def use_login_token(self, token_hash: str, now: datetime) -> bool:
        """Spend a sign-in token: True once for a token recorded and not expired at `now`
        (then it is gone), False for any other; of two concurrent uses only one is True."""
        ...

    # --- actions from the phone ---------------------------------------------------------
    def add_grant(self, grant: ActionGrant) -> None:
        """Store a one-time action handle under its id (the hash of its token). Grants past
        their expiry may be dropped by the store at any time after a day."""
        ...

    def get_grant(self, grant_id: str) -> ActionGrant | None:
        """The grant with this id, used or not, expired or not; None if unknown."""
        ...

    def use_grant(self, grant_id: str, now: datetime) -> bool:
        """Mark the grant used at `now` if it exists, is unused and has not expired at `now`:
        one conditional write, so that of concurrent callers exactly one gets True."""
        ...

    def record_action(self, record: ActionRecord) -> None:
        """Append an action taken from the phone to the audit log."""
        ...

    def action_log(self, since: datetime | None = None) -> list[ActionRecord]:
        """Actions taken from the phone, oldest first; only those at or after `since`."""
        ...

    def request_termination(self, request: TerminationRequest) -> None:
        """Record a "terminate now" for a pass to carry out, replacing an earlier one for the
        same instance."""
        ...

    def termination_requests(self, now: datetime) -> list[TerminationRequest]:
        """The requests not expired at `now`, ordered by instance key."""
        ...

    def end_termination_request(self, key: str) -> None:
        """Forget the request for this instance (carried out, or refused for good)."""
        ...

    # --- monitor settings, pause, mute and the ping log -----------------------------------
    def set_monitor_settings(self, host: str, change: SettingsChange) -> Monitor | None:
        """Apply `change` (`apply_change`) to the monitor's own settings in one atomic step,
        its state left as the store holds it (a ping meanwhile is never lost); the monitor as
        written, or None when there is no such monitor."""
        ...

    def pause_monitor(self, host: str, paused: bool, at: datetime) -> bool:
        """Pause, or resume (silence then counts from `at`); False when no such monitor."""
        ...

    def mute_monitor(self, host: str, until: datetime | None) -> bool:
        """No alert about the monitor until `until` (None: unmute); its state is still
        tracked. False when no such monitor."""
        ...

    def log_event(self, host: str, event: PingEvent) -> None:
        """Keep `event` in the host's ping log, in slot `event.seq % PING_LOG_KEPT` (replacing
        what the slot held): the log holds the last PING_LOG_KEPT events without ever being
        trimmed, and costs one plain write."""
        ...

    def monitor_log(self, host: str) -> list[PingEvent]:
        """The host's ping log, oldest first (at most PING_LOG_KEPT events)."""
        ...

    def put_monitor_logged(self, monitor: Monitor, event: PingEvent) -> None:
        """`put_monitor` and `log_event` of one ping, in one transaction where the backend has
        them (SQLite); on DynamoDB the monitor's conditional put, then the log's plain put."""
        ...

    # --- sessions of the status page ------------------------------------------------------
    def start_session(self, session_id: str, started_at: datetime, expires_at: datetime) -> None:
        """Keep a signed-in session of the status page by its id (the SHA-256 of its nonce,
        never the cookie), until `expires_at`. Sessions expired before `started_at` may go."""
        ...

    def session_active(self, session_id: str, now: datetime) -> bool:
        """True for a session started, not ended, and not expired at `now`; False for any
        other (one the store never saw, one signed out)."""
        ...

    def end_session(self, session_id: str) -> None:
        """Sign a session out: from now on `session_active` is False for it. An unknown id is
        no error."""
        ...


def log_slot(event: PingEvent) -> int:
    """Where an event lives in its monitor's ring of PING_LOG_KEPT slots."""
    return event.seq % PING_LOG_KEPT
