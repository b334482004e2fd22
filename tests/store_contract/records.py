"""What the store contract tests build their records from: fixed times (never the wall clock,
so the suite needs no sleeping and runs the same against DynamoDB as against SQLite), records
of every kind, and one call of every write (`WRITES`, for the read-only checks)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone

from reaper.core.models import (
    ActionGrant,
    ActionRecord,
    AuditRecord,
    KeptInstance,
    Listing,
    Monitor,
    PhoneAction,
    PingEvent,
    ReapRun,
    TerminationRequest,
    WarningRecord,
)
from reaper.core.monitors import SettingsChange
from reaper.core.snapshot import Snapshot
from reaper.store.ports import Store

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
# The same instant as T0 + 1h, spelled in another zone: stores must answer in UTC.
PLUS_TWO = timezone(timedelta(hours=2))
HOUR = timedelta(hours=1)
MINUTE = timedelta(minutes=1)
SECOND = timedelta(seconds=1)


def assert_utc(moment: datetime | None) -> None:
    assert moment is not None
    assert moment.tzinfo is not None, f"naive datetime {moment!r}"
    assert moment.utcoffset() == timedelta(0), f"not UTC: {moment!r}"


def audit_record(
    instance_id: str = "pod-1",
    requested_at: datetime = T0,
    *,
    provider: str = "runpod",
    result: str = "deleted",
    confirmed: bool = False,
) -> AuditRecord:
    return AuditRecord.model_validate(
        {
            "provider": provider,
            "account": "main",
            "id": instance_id,
            "name": f"name of {instance_id}",
            "reason": "stopped for 25h (limit 24h)",
            "requested_at": requested_at,
            "stopped_since": requested_at - timedelta(hours=25),
            "cost_per_hour": 0.012,
            "result": result,
            "detail": "" if result == "deleted" else "HTTP 500",
            "confirmed": confirmed,
            "confirmed_at": requested_at + MINUTE if confirmed else None,
        }
    )


def warning(at: datetime, *, heard: bool = True, mode: str = "enforce") -> WarningRecord:
    """A warning with every fact its license is checked against (`reaper.core.license`)."""
    return WarningRecord.model_validate(
        {
            "at": at,
            "heard": heard,
            "mode": mode,
            "terminate_at": at + HOUR,
            "stretch": at - 23 * HOUR,
            "issued_at": at - SECOND,
            "ttl": 24 * HOUR,
            "warn_before": HOUR,
        }
    )


def reap_run(at: datetime, finished_at: datetime, *, dry_run: bool = False) -> ReapRun:
    return ReapRun(
        at=at,
        finished_at=finished_at,
        dry_run=dry_run,
        mode="enforce",
        instances=3,
        terminated=1,
        warned=1,
        errors=0,
        exit_code=0,
    )


def full_monitor(host: str = "trainer-1") -> Monitor:
    """A monitor with every field set to a non-default value, for round trips."""
    return Monitor(
        host=host,
        status="down",
        created_at=T0,
        last_ping_at=T0 + MINUTE,
        last_ping_kind="fail",
        last_exit_status=3,
        last_message="Traceback: CUDA out of memory ✗ \n\t 'quotes' \"double\"",
        job_started_at=T0 + SECOND,
        down_since=T0 + 2 * MINUTE,
        last_alert_at=T0 + 3 * MINUTE,
        bye_at=T0 + 4 * MINUTE,
        stopped_noted=True,
        absent_since=T0 + 5 * MINUTE,
        # Its own settings, pause, mute and the ping log.
        timeout=timedelta(hours=2),
        grace=timedelta(minutes=10),
        paused=True,
        resumed_at=T0 + 6 * MINUTE,
        muted_until=T0 + 24 * HOUR,
        alert_held=True,
        events=42,
        notified_at=T0 + 7 * MINUTE,
    )


KEEP_A_DAY = PhoneAction(
    kind="keep",
    label="Keep 1 day",
    targets=("runpod:pod-1",),
    subject="trainer ✗ <b>&amp; (runpod:pod-1)",
    duration=timedelta(days=1),
)


def grant(
    grant_id: str = "g", *, expires_at: datetime = T0 + HOUR, **fields: object
) -> ActionGrant:
    return ActionGrant.model_validate(
        {
            "id": grant_id,
            "choices": (KEEP_A_DAY,),
            "created_at": T0,
            "expires_at": expires_at,
            **fields,
        }
    )


def action_record(at: datetime, *, label: str = "Keep 1 day") -> ActionRecord:
    return ActionRecord(
        at=at,
        kind="keep",
        label=label,
        targets=("runpod:pod-1",),
        subject="trainer (runpod:pod-1)",
        by="@alice (Telegram user 42)",
        via="chat button",
        done=True,
        result="Kept trainer (runpod:pod-1) until Tue 03 Mar 12:00 UTC by @alice.",
    )


def termination_request(
    key: str = "runpod:pod-1", *, at: datetime = T0, expires_at: datetime = T0 + HOUR
) -> TerminationRequest:
    return TerminationRequest(
        key=key,
        requested_at=at,
        by="action link",
        mode="enforce",
        expires_at=expires_at,
        stretch=at - 23 * HOUR,
    )


# Every write of the Store protocol, with harmless arguments: a read-only store refuses each.
WRITES: dict[str, Callable[[Store], object]] = {
    "start_stopped_clock": lambda s: s.start_stopped_clock("k", T0),
    "reset_stopped_clock": lambda s: s.reset_stopped_clock("k"),
    "record_warning": lambda s: s.record_warning("k", warning(T0)),
    "mark_warning_held": lambda s: s.mark_warning_held("k", T0, T0),
    "mark_missing": lambda s: s.mark_missing("k", T0),
    "clear_missing": lambda s: s.clear_missing("k"),
    "keep": lambda s: s.keep(KeptInstance(key="k", since=T0)),
    "unkeep": lambda s: s.unkeep("k"),
    "acquire_lease": lambda s: s.acquire_lease("reap", "me", T0, HOUR),
    "renew_lease": lambda s: s.renew_lease("reap", "me", T0, HOUR),
    "record_listing": lambda s: s.record_listing(Listing(provider="vast", account="a", at=T0)),
    "release_lease": lambda s: s.release_lease("reap", "me"),
    "record_termination": lambda s: s.record_termination(audit_record()),
    "record_reap": lambda s: s.record_reap(reap_run(T0, T0)),
    "put_monitor": lambda s: s.put_monitor(Monitor(host="h", created_at=T0)),
    "create_monitor": lambda s: s.create_monitor(Monitor(host="h", created_at=T0), 10),
    "delete_monitor": lambda s: s.delete_monitor("h"),
    "claim_alert": lambda s: s.claim_alert("k", T0, HOUR),
    "open_episode": lambda s: s.open_episode("k", T0),
    "mark_episode_alerted": lambda s: s.mark_episode_alerted("k", T0),
    "close_episode": lambda s: s.close_episode("k"),
    # --- the status page ---
    "record_snapshot": lambda s: s.record_snapshot(Snapshot(at=T0)),
    "record_login_token": lambda s: s.record_login_token("h", T0 + HOUR),
    "use_login_token": lambda s: s.use_login_token("h", T0),
    # --- actions from the phone
    "add_grant": lambda s: s.add_grant(grant()),
    "use_grant": lambda s: s.use_grant("g", T0),
    "release_grant": lambda s: s.release_grant("g", T0),
    "record_action": lambda s: s.record_action(action_record(T0)),
    "request_termination": lambda s: s.request_termination(termination_request()),
    "end_termination_request": lambda s: s.end_termination_request("runpod:pod-1"),
    # Monitor settings, pause, mute and the ping log.
    "set_monitor_settings": lambda s: s.set_monitor_settings(
        "h", SettingsChange(at=T0, given=frozenset({"paused"}), paused=True)
    ),
    "pause_monitor": lambda s: s.pause_monitor("h", True, T0),
    "mute_monitor": lambda s: s.mute_monitor("h", T0 + HOUR),
    "log_event": lambda s: s.log_event("h", PingEvent(seq=1, at=T0, kind="ping")),
    "put_monitor_logged": lambda s: s.put_monitor_logged(
        Monitor(host="h", created_at=T0), PingEvent(seq=1, at=T0, kind="ping")
    ),
    # Sessions of the status page.
    "start_session": lambda s: s.start_session("s", T0, T0 + HOUR),
    "end_session": lambda s: s.end_session("s"),
}
