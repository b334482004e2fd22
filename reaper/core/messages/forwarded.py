"""A message an instance sent through `/alert`, as the phone shows it: marked as coming from
that instance, so that nobody mistakes it for reaper's own words.

Whoever holds the ping key (any instance host: some providers' hosts are third parties) can
send any text.
Forwarded as it came, "⚠️ gpu-abc will be TERMINATED — tap to keep" with a link would read
exactly like reaper's termination warning. So every forwarded title starts with 📟 and the host
it came from (the path's `<host>` on `/alert/<key>/<host>`; on `/alert/<key>` the `<host>: `
its title starts with, else "instance"), a forwarded message never carries reaper's actions
of its own making except the Keep buttons reaper itself adds to an `idle_soon` warning (which
keep only the host it came from), and a link in its text to an action page (`/act/…`) is
removed: only reaper's own alerts carry those.
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime, timedelta

from reaper.core.models import Alert, PhoneAction
from reaper.core.units import utc

# The mark every forwarded title starts with, before the host.
FORWARDED = "📟"
# A keep's target that names a monitor host rather than an instance (`reaper keep host:<host>`).
HOST_TARGET = "host:"
IDLE_KEEPS = (("Keep 1 hour", timedelta(hours=1)), ("Keep 1 day", timedelta(days=1)))

_HOST_PREFIX = re.compile(r"([A-Za-z0-9._-]{1,100}): ")
_ACTION_LINK = re.compile(r"\S*/act/\S*", re.IGNORECASE)
_LINK_REMOVED = "[link removed: only reaper's own alerts carry action links]"


def _defused(text: str) -> str:
    return _ACTION_LINK.sub(_LINK_REMOVED, text)


def _from(title: str, host: str | None) -> tuple[str, str]:
    """The host the message names as its sender, and its title without that prefix."""
    found = _HOST_PREFIX.match(title)
    if host is None:
        return (found.group(1), title[found.end() :]) if found else ("instance", title)
    if found is not None and found.group(1) == host:
        return host, title[found.end() :]
    return host, title


def forwarded(alert: Alert, host: str | None) -> Alert:
    """The alert marked as the instance's: `📟 <host>: <title>`, links to action pages removed,
    no actions, keyed by what it says and who sent it."""
    sender, title = _from(alert.title, host)
    marked = f"{FORWARDED} {sender}: {_defused(title)}"
    body = _defused(alert.body)
    content = f"{alert.level}\n{marked}\n{body}".encode("utf-8", "surrogatepass")
    digest = hashlib.sha256(content).hexdigest()[:16]
    return alert.model_copy(
        update={
            "title": marked,
            "body": body,
            "actions": (),
            "menu": None,
            "url": None,
            "dedup_key": f"webhook:{digest}",
        }
    )


def idle_soon(alert: Alert, host: str, destroy_at: datetime) -> Alert:
    """The instance's warning before it destroys itself for idleness, with Keep 1 hour / Keep 1
    day: a press keeps `host`, which the instance reads back on its next ping."""
    marked = forwarded(alert, host)
    actions = tuple(
        PhoneAction(
            kind="keep",
            label=label,
            targets=(HOST_TARGET + host,),
            subject=host,
            duration=duration,
        )
        for label, duration in IDLE_KEEPS
    )
    said = f"It destroys itself at {utc(destroy_at)} unless kept (its next ping reads the keep)."
    body = f"{marked.body}\n{said}" if marked.body else said
    return marked.model_copy(
        update={"body": body, "actions": actions, "event": "idle_soon", "level": "warning"}
    )
