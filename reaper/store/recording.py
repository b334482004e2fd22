"""The dry run's store: reads go to the real store, writes are only recorded.

A dry run opens its store read-only and runs the same pass through `DryRunEffects`
(`reaper.passes.context`), whose store is this one over it. Each write answers as it would on
an empty slate (a lease is taken, an alert is claimed, an episode opens), so that the pass
follows the path it would follow for real; what it would have written is in `recorded`. Its
methods follow the ports (`reaper.store.ports`) one by one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from reaper.core.models import (
    ActionGrant,
    ActionRecord,
    AuditRecord,
    Episode,
    History,
    KeptInstance,
    Listing,
    Monitor,
    PingEvent,
    ReapRun,
    TerminationRequest,
    WarningRecord,
)
from reaper.core.monitors import SettingsChange, apply_change
from reaper.core.snapshot import Snapshot
from reaper.store.ports import Lease, Store


@dataclass
class RecordingStore:
    """A `Store` whose reads go to `inner` and whose writes are only recorded: what a dry run
    writes to. Each write answers as it would on an empty slate (a lease is taken, an alert is
    claimed, an episode opens), so the pass follows the path it would follow for real."""

    inner: Store
    recorded: list[str] = field(default_factory=list)
    read_only: bool = True

    def _write(self, what: str) -> None:
        self.recorded.append(f"store {what}")

    # --- reads ---------------------------------------------------------------------------
    def history(self) -> History:
        return self.inner.history()

    def history_of(self, key: str, now: datetime) -> History:
        return self.inner.history_of(key, now)

    def audit_log(self, since: datetime | None = None) -> list[AuditRecord]:
        return self.inner.audit_log(since)

    def last_reap(self) -> ReapRun | None:
        return self.inner.last_reap()

    def listings(self) -> list[Listing]:
        return self.inner.listings()

    def get_monitor(self, host: str) -> Monitor | None:
        return self.inner.get_monitor(host)

    def list_monitors(self) -> list[Monitor]:
        return self.inner.list_monitors()

    def open_episodes(self, prefix: str = "") -> list[Episode]:
        return self.inner.open_episodes(prefix)

    # --- writes, recorded ------------------------------------------------------------------
    def start_stopped_clock(
        self, key: str, at: datetime, *, started_at: datetime | None = None
    ) -> None:
        self._write(f"start_stopped_clock {key}")

    def reset_stopped_clock(self, key: str) -> None:
        self._write(f"reset_stopped_clock {key}")

    def mark_missing(self, key: str, at: datetime) -> None:
        self._write(f"mark_missing {key}")

    def clear_missing(self, key: str) -> None:
        self._write(f"clear_missing {key}")

    def record_warning(self, key: str, warning: WarningRecord) -> None:
        self._write(f"record_warning {key}")

    def mark_warning_held(self, key: str, warned_at: datetime, at: datetime) -> bool:
        self._write(f"mark_warning_held {key}")
        return key in self.inner.history().warnings

    def keep(self, kept: KeptInstance) -> None:
        self._write(f"keep {kept.key}")

    def unkeep(self, key: str) -> bool:
        self._write(f"unkeep {key}")
        return key in self.inner.history().kept

    def acquire_lease(self, name: str, owner: str, now: datetime, ttl: timedelta) -> bool:
        return True

    def renew_lease(self, name: str, owner: str, now: datetime, ttl: timedelta) -> bool:
        return True

    def release_lease(self, name: str, owner: str) -> None:
        return None

    def lease_holder(self, name: str) -> Lease | None:
        return self.inner.lease_holder(name)

    def record_termination(self, record: AuditRecord) -> None:
        self._write(f"record_termination {record.key} {record.result}")

    def record_reap(self, run: ReapRun) -> None:
        self._write("record_reap")

    def record_listing(self, listing: Listing) -> None:
        self._write(f"record_listing {listing.provider}:{listing.account}")

    def put_monitor(self, monitor: Monitor) -> None:
        self._write(f"put_monitor {monitor.host}")

    def create_monitor(self, monitor: Monitor, limit: int) -> bool:
        self._write(f"create_monitor {monitor.host}")
        return True

    def delete_monitor(self, host: str) -> None:
        self._write(f"delete_monitor {host}")

    def delete_retired(self, before: datetime, keep: int) -> int:
        return 0

    def claim_alert(self, key: str, now: datetime, window: timedelta) -> bool:
        return True

    def open_episode(self, key: str, at: datetime, detail: str = "") -> Episode:
        for episode in self.inner.open_episodes(key):
            if episode.key == key:
                return episode
        self._write(f"open_episode {key}")
        return Episode(key=key, opened_at=at, detail=detail)

    def mark_episode_alerted(self, key: str, at: datetime, detail: str | None = None) -> None:
        self._write(f"mark_episode_alerted {key}")

    def close_episode(self, key: str) -> Episode | None:
        found = [e for e in self.inner.open_episodes(key) if e.key == key]
        if found:
            self._write(f"close_episode {key}")
        return found[0] if found else None

    def close(self) -> None:
        self.inner.close()

    # --- the status page ----------------------------------------------------------------
    def snapshots(self, since: datetime) -> list[Snapshot]:
        return self.inner.snapshots(since)

    def record_snapshot(self, snapshot: Snapshot) -> None:
        self._write("record_snapshot")

    def record_login_token(self, token_hash: str, expires_at: datetime) -> None:
        self._write("record_login_token")

    def use_login_token(self, token_hash: str, now: datetime) -> bool:
        return False

    # --- actions from the phone ------------------------------------------------------------
    def get_grant(self, grant_id: str) -> ActionGrant | None:
        return self.inner.get_grant(grant_id)

    def action_log(self, since: datetime | None = None) -> list[ActionRecord]:
        return self.inner.action_log(since)

    def termination_requests(self, now: datetime) -> list[TerminationRequest]:
        return self.inner.termination_requests(now)

    def add_grant(self, grant: ActionGrant) -> None:
        self._write("add_grant")

    def use_grant(self, grant_id: str, now: datetime) -> bool:
        self._write("use_grant")
        return True

    def release_grant(self, grant_id: str, used_at: datetime) -> bool:
        self._write("release_grant")
        return True

    def record_action(self, record: ActionRecord) -> None:
        self._write(f"record_action {record.kind}")

    def request_termination(self, request: TerminationRequest) -> None:
        self._write(f"request_termination {request.key}")

    def end_termination_request(self, key: str) -> None:
        self._write(f"end_termination_request {key}")

    # --- monitor settings, pause, mute and the ping log -----------------------------------
    def monitor_log(self, host: str) -> list[PingEvent]:
        return self.inner.monitor_log(host)

    def set_monitor_settings(self, host: str, change: SettingsChange) -> Monitor | None:
        self._write(f"set_monitor_settings {host} {','.join(sorted(change.given))}")
        current = self.inner.get_monitor(host)
        return None if current is None else apply_change(current, change)

    def pause_monitor(self, host: str, paused: bool, at: datetime) -> bool:
        self._write(f"pause_monitor {host} {paused}")
        return self.inner.get_monitor(host) is not None

    def mute_monitor(self, host: str, until: datetime | None) -> bool:
        self._write(f"mute_monitor {host}")
        return self.inner.get_monitor(host) is not None

    def log_event(self, host: str, event: PingEvent) -> None:
        self._write(f"log_event {host} {event.seq}")

    def put_monitor_logged(self, monitor: Monitor, event: PingEvent) -> None:
        self._write(f"put_monitor {monitor.host}")
        self._write(f"log_event {monitor.host} {event.seq}")

    # --- sessions of the status page ------------------------------------------------------
    def start_session(self, session_id: str, started_at: datetime, expires_at: datetime) -> None:
        self._write("start_session")

    def session_active(self, session_id: str, now: datetime) -> bool:
        return self.inner.session_active(session_id, now)

    def end_session(self, session_id: str) -> None:
        self._write("end_session")
