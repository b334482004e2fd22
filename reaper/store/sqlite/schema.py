"""The SQLite store's tables, and the steps that take an older file to this version."""

from __future__ import annotations

SCHEMA_VERSION = 4
# The tables version 2 added: created alike in a new database and by the upgrade from 1.
_TABLES_OF_2 = """
CREATE TABLE listings (
    provider TEXT NOT NULL, account TEXT NOT NULL, at TEXT NOT NULL, listing TEXT NOT NULL,
    PRIMARY KEY (provider, account)
) WITHOUT ROWID;
-- The status page: the reap passes' snapshots, the hashes of one-time sign-in links.
CREATE TABLE snapshots (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, at TEXT NOT NULL, snapshot TEXT NOT NULL
);
CREATE INDEX snapshots_by_time ON snapshots (at);
CREATE TABLE login_tokens (hash TEXT PRIMARY KEY, expires_at TEXT NOT NULL) WITHOUT ROWID;
-- Actions from the phone: one-time handles, what people did, "terminate now" requests.
CREATE TABLE action_grants (
    id TEXT PRIMARY KEY, expires_at TEXT NOT NULL, used_at TEXT, body TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX action_grants_by_expiry ON action_grants (expires_at);
CREATE TABLE phone_actions (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, at TEXT NOT NULL, record TEXT NOT NULL
);
CREATE INDEX phone_actions_by_time ON phone_actions (at);
CREATE TABLE termination_requests (
    key TEXT PRIMARY KEY, expires_at TEXT NOT NULL, request TEXT NOT NULL
) WITHOUT ROWID;
-- Each monitor's ping log: a ring of slots.
CREATE TABLE ping_log (
    host TEXT NOT NULL, slot INTEGER NOT NULL, seq INTEGER NOT NULL, event TEXT NOT NULL,
    PRIMARY KEY (host, slot)
) WITHOUT ROWID;
"""
# The table version 4 added: the status page's sessions, so that signing out ends one.
_TABLES_OF_4 = """
CREATE TABLE sessions (id TEXT PRIMARY KEY, expires_at TEXT NOT NULL) WITHOUT ROWID;
"""
_SCHEMA = (
    """
CREATE TABLE stopped_clock (
    key TEXT PRIMARY KEY, since TEXT NOT NULL, started TEXT, missing_since TEXT
) WITHOUT ROWID;
CREATE TABLE warnings (
    key TEXT PRIMARY KEY, at TEXT NOT NULL,
    heard INTEGER NOT NULL DEFAULT 0, mode TEXT NOT NULL DEFAULT 'observe', terminate_at TEXT,
    stretch TEXT, issued_at TEXT, ttl REAL, warn_before REAL, held_at TEXT
) WITHOUT ROWID;
CREATE TABLE kept (
    key TEXT PRIMARY KEY, since TEXT NOT NULL, until TEXT, kept_by TEXT
) WITHOUT ROWID;
CREATE TABLE leases (
    name TEXT PRIMARY KEY, owner TEXT NOT NULL, expires_at TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE audit (
    provider TEXT NOT NULL,
    id TEXT NOT NULL,
    requested_at TEXT NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (provider, id, requested_at)
) WITHOUT ROWID;
CREATE INDEX audit_by_time ON audit (requested_at);
CREATE TABLE reap_runs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, finished_at TEXT NOT NULL, run TEXT NOT NULL
);
CREATE INDEX reap_runs_by_finish ON reap_runs (finished_at);
CREATE TABLE monitors (host TEXT PRIMARY KEY, status TEXT NOT NULL, monitor TEXT NOT NULL);
CREATE INDEX monitors_by_status ON monitors (status);
CREATE TABLE alert_claims (key TEXT PRIMARY KEY, claimed_at TEXT NOT NULL) WITHOUT ROWID;
CREATE INDEX alert_claims_by_time ON alert_claims (claimed_at);
CREATE TABLE episodes (
    key TEXT PRIMARY KEY, opened_at TEXT NOT NULL, detail TEXT NOT NULL, alerted_at TEXT
) WITHOUT ROWID;
"""
    + _TABLES_OF_2
    + _TABLES_OF_4
)
# The columns version 3 added: a warning's license facts (its stretch, when and under which
# settings its deadline was computed, the last pass the cap held it) and the first miss of a
# recorded stretch.
_COLUMNS_OF_3 = """
ALTER TABLE stopped_clock ADD COLUMN missing_since TEXT;
ALTER TABLE warnings ADD COLUMN stretch TEXT;
ALTER TABLE warnings ADD COLUMN issued_at TEXT;
ALTER TABLE warnings ADD COLUMN ttl REAL;
ALTER TABLE warnings ADD COLUMN warn_before REAL;
ALTER TABLE warnings ADD COLUMN held_at TEXT;
"""
# Each step takes a database of the version before it to the version after it. A warning
# written before version 2 knew neither whether a person heard it nor its mode; one written
# before version 3 does not say which stretch it was for: either licenses nothing, so the
# first pass after the upgrade warns anew with the full notice.
_MIGRATIONS: dict[int, str] = {
    2: """
ALTER TABLE stopped_clock ADD COLUMN started TEXT;
ALTER TABLE warnings ADD COLUMN heard INTEGER NOT NULL DEFAULT 0;
ALTER TABLE warnings ADD COLUMN mode TEXT NOT NULL DEFAULT 'observe';
ALTER TABLE warnings ADD COLUMN terminate_at TEXT;
ALTER TABLE kept ADD COLUMN kept_by TEXT;
"""
    + _TABLES_OF_2,
    3: _COLUMNS_OF_3,
    4: _TABLES_OF_4,
}
