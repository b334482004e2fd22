"""What every Lambda handler shares: settings from the environment and SSM, one store per warm
container, and the one-line answer for an invocation that cannot start.

A handler never raises for an expected outcome: EventBridge (and the asynchronous invoke behind
it) retries a failed invocation, and a reap pass run twice could act twice. A configuration
problem therefore comes back as `{"ok": false, "error": ..., "exit_code": 2}` and one JSON log
line, the way the CLI answers with exit status 2; a store that fails (DynamoDB throttling the
table, a role without access) as `{"ok": false, "error": ..., "store": <cause>, "exit_code": 1}`,
logged at ERROR and alerted once per episode of this container (`store_failed`). serverless.yml
also sets the retries of the scheduled functions to zero, so that even a bug that does raise
runs once.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from reaper import log
from reaper.app import wiring
from reaper.app.ssm import lambda_settings
from reaper.settings.model import Settings
from reaper.settings.parse import ConfigError
from reaper.store.failure import StoreHealth, failure_alert, store_failure
from reaper.store.ports import Store

EXIT_CONFIG = 2
EXIT_ATTENTION = 1

# The store's failure episode as this warm container saw it.
health = StoreHealth()

# Stores survive across warm invocations: building a boto3 client costs more than a whole ping.
_stores: dict[tuple[str, str, bool], Store] = {}


def load(
    *,
    required: Sequence[str] = (),
    provider_keys: bool = False,
    environ: Mapping[str, str] | None = None,
) -> Settings:
    """The invocation's settings (secrets from SSM, cached for minutes). A state other than
    DynamoDB is refused: SQLite in a Lambda's /tmp would forget everything between containers."""
    settings = lambda_settings(
        os.environ if environ is None else environ,
        required=required,
        provider_keys=provider_keys,
    )
    if settings.state.kind != "dynamodb":
        raise ConfigError("REAPER_STATE", "on Lambda expected dynamodb://<table>")
    log.apply_settings(settings.log_level, settings.log_format)
    return settings


def store(settings: Settings, *, read_only: bool = False) -> Store:
    key = (settings.state.kind, settings.state.location, read_only)
    if key not in _stores:
        _stores[key] = wiring.open_state(settings, read_only=read_only)
    return _stores[key]


def reset() -> None:
    """Forget the cached stores and the store's episode (tests switch tables and mocked
    accounts)."""
    _stores.clear()
    health.failure = None


def store_failed(function: str, settings: Settings, error: Exception) -> dict[str, Any]:
    """The answer of an invocation its store failed: `error` re-raised when it is no store
    failure (a bug), else one line, and the episode's ERROR line and alert when it opens it.
    The alert goes through the channels alone, bounded like a request's."""
    failure = store_failure(error)
    if failure is None:
        raise error
    if health.failed(failure):
        import asyncio

        from reaper.interfaces.api import REQUEST_CHANNEL_OPTIONS

        notifier = wiring.make_notifier(settings, options=REQUEST_CHANNEL_OPTIONS)
        asyncio.run(notifier.send(failure_alert(failure)))
    message = f"the state store is failing ({failure.cause}): {failure.advice}"
    log.event("lambda", function=function, result="error", error=message)
    return {"ok": False, "error": message, "store": failure.cause, "exit_code": EXIT_ATTENTION}


def config_error(function: str, error: ConfigError) -> dict[str, Any]:
    """The answer of an invocation that could not start, logged once. The text passes through
    the log's redaction: a malformed secret may be quoted in a ConfigError."""
    message = log.redact(str(error))
    log.event("lambda", function=function, result="config_error", error=message)
    return {"ok": False, "error": message, "exit_code": EXIT_CONFIG}


def bad_event(function: str, reason: str) -> dict[str, Any]:
    log.event("lambda", function=function, result="bad_event", error=reason)
    return {"ok": False, "error": reason, "exit_code": EXIT_CONFIG}


__all__ = [
    "EXIT_ATTENTION",
    "EXIT_CONFIG",
    "bad_event",
    "config_error",
    "health",
    "load",
    "reset",
    "store",
    "store_failed",
]
