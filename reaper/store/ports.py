"""The store's ports: small interfaces, one per kind of thing reaper remembers, and `Store`,
their union, which every backend (SQLite locally, DynamoDB on AWS) implements whole.

A caller names the port it uses (the reap pass its ledger and lease, a ping its monitor), and
the shared contract tests (`tests/store_contract/`) run each port against every backend.
Methods are small and each is one short transaction, so that two processes (a `serve` and a
manual `reaper reap`) can share one store safely.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Protocol

from reaper.core.monitors import SettingsChange
from reaper.core.records import Monitor, PingEvent

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


@dataclass(frozen=True)
class Lease:
    """Who holds a lease (the reap pass's owner reads `<host>:<pid>:<token>`) and until when."""

    owner: str
    expires_at: datetime


class ReadOnlyStoreError(RuntimeError):
    """A write was attempted on a store opened read-only (a dry run)."""


class ReapLedger(Protocol):
    """What the reap pass remembers between passes: the stopped clocks, warnings and keeps (its
    `history`), "terminate now" requests, the audit record of every termination and the passes
    that ran."""

    def history(self) -> History:
        """First-seen-stopped times, warnings and kept instances, as the policy needs them."""
        ...

    def history_of(self, key: str, now: datetime) -> History:
        """One instance's history: its stretch, warning, keep and the "terminate now" request
        not expired at `now` — point reads, cheap enough to run right before its DELETE
        leaves (the gate's last look: nothing changed since the decision)."""
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


class Leases(Protocol):
    """One holder at a time per name (the reap pass's), fenced: a lease that expired or changed
    hands is never taken back."""

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


class Episodes(Protocol):
    """Alert de-duplication: claims within a window, and episodes alerted once until they
    close."""

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


class Monitors(Protocol):
    """Heartbeat monitors, their own settings and their ping logs."""

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


class PhoneAuth(Protocol):
    """Who may act from the phone and the status page: one-time sign-in links, sessions,
    one-time action grants, and the record of every action taken."""

    def record_login_token(self, token_hash: str, expires_at: datetime) -> None:
        """Keep a one-time sign-in link's token, by its hash (never the token itself)."""
        ...

    def use_login_token(self, token_hash: str, now: datetime) -> bool:
        """Spend a sign-in token: True once for a token recorded and not expired at `now`
        (then it is gone), False for any other; of two concurrent uses only one is True."""
        ...

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

    def release_grant(self, grant_id: str, used_at: datetime) -> bool:
        """Make a grant used at `used_at` unused again: its use was refused and did nothing,
        so a later press may use it while it lasts. One conditional write: only if it is still
        marked used at exactly `used_at` (True when it was released)."""
        ...

    def record_action(self, record: ActionRecord) -> None:
        """Append an action taken from the phone to the audit log."""
        ...

    def action_log(self, since: datetime | None = None) -> list[ActionRecord]:
        """Actions taken from the phone, oldest first; only those at or after `since`."""
        ...


class ReadModels(Protocol):
    """What people read: each account's last complete listing and one snapshot per pass."""

    def record_listing(self, listing: Listing) -> None:
        """Keep this account's complete listing, replacing the one before."""
        ...

    def listings(self) -> list[Listing]:
        """The last complete listing of every account, ordered by provider and account."""
        ...

    def record_snapshot(self, snapshot: Snapshot) -> None:
        """Keep one reap pass's snapshot (at least SNAPSHOT_RETENTION long)."""
        ...

    def snapshots(self, since: datetime) -> list[Snapshot]:
        """The snapshots taken at or after `since`, oldest first."""
        ...


class Store(ReapLedger, Leases, Episodes, Monitors, PhoneAuth, ReadModels, Protocol):
    """Everything reaper remembers: what a backend implements, and what an entry point opens."""

    read_only: bool

    def close(self) -> None: ...
