"""Which accounts did not answer, and why, in the few words a headline has room for.

A total that leaves an account out reads as the whole fleet; so the first line of `reaper reap`
and `reaper report` names each account that failed with its reason: an HTTP status, and for a
refused key the variable to check and its form (`<provider>/1: HTTP 401 — check <KEY_VARIABLE>
(name=key)`: a key written `name:key` is read as one unnamed key, account `1`). The full
message stays on its own line below, and in the log."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Protocol

from reaper.providers.plugins import plugin
from reaper.providers.registry import PROVIDERS

HTTP_STATUS = re.compile(r"\bHTTP (\d{3})\b")


class Failure(Protocol):
    @property
    def provider(self) -> str: ...
    @property
    def account(self) -> str: ...
    @property
    def message(self) -> str: ...


def _key_variable(provider: str) -> str | None:
    return plugin(provider).settings.key_variable if provider in PROVIDERS else None


def why(failure: Failure) -> str:
    """ "HTTP 401 — check <KEY_VARIABLE> (name=key)" for a refused key, "HTTP 503" for another
    refusal, the message itself when no answer came (a timeout, a refused connection)."""
    found = HTTP_STATUS.search(failure.message)
    if found is None:
        return failure.message
    status = int(found.group(1))
    variable = _key_variable(failure.provider)
    refused = status in (401, 403) or (
        variable is not None and f"check {variable}" in failure.message
    )
    if refused and variable is not None:
        return f"HTTP {status} — check {variable} (name=key)"
    return f"HTTP {status}"


def did_not_answer(failures: Iterable[Failure]) -> str:
    """ "<provider>/1: HTTP 401 — check <KEY_VARIABLE> (name=key); <provider>/lab: HTTP 503",
    each account once (a refused key fails its listing, its balance and its volumes alike)."""
    said: dict[tuple[str, str], str] = {}
    for failure in failures:
        said.setdefault((failure.provider, failure.account), why(failure))
    return "; ".join(f"{p}/{a}: {reason}" for (p, a), reason in said.items())
