"""What every message shares: how an instance is named, what it bills, how long it has been
stopped; and the messages of no subject (a test message, a forwarded `/alert`)."""

from __future__ import annotations

import hashlib
from datetime import datetime

from reaper.core.models import Alert, AlertLevel, Instance
from reaper.core.units import HOURS_PER_MONTH, humanize, money, utc

_NAME_MAX = 60
_MESSAGE_MAX = 300
_WEBHOOK_TITLE_MAX = 200


def _provider(inst: Instance) -> str:
    return inst.provider_label or inst.provider


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def label(inst: Instance) -> str:
    """`name (<provider>:<id>)`: the name people recognise, the id `reaper keep` takes."""
    name = _short(inst.name, _NAME_MAX)
    return f"{name} ({inst.key})" if name else inst.key


def _bills(inst: Instance) -> str:
    if inst.cost_per_hour is None:
        return "cost unknown"
    per_hour = inst.cost_per_hour
    return f"{money(per_hour)}/h ({money(per_hour * HOURS_PER_MONTH)}/month)"


def _stopped_for(inst: Instance, now: datetime | None) -> str:
    if inst.stopped_since is None:
        return "Stopped"
    if now is None:
        return f"Stopped since {utc(inst.stopped_since)}"
    return f"Stopped for {humanize(now - inst.stopped_since)}"


def _note(inst: Instance) -> str:
    return f" {inst.state_note.rstrip('.')}." if inst.state_note else ""


def test_message() -> Alert:
    return Alert(
        title="reaper test alert",
        body="Alerts from reaper reach this channel. Nothing to do.",
        level="info",
        event="test",
    )


def webhook(
    text: str | None = None,
    *,
    title: str | None = None,
    body: str = "",
    level: AlertLevel = "warning",
) -> Alert:
    """A message an instance sent to `NOTIFY_URL`, forwarded as it came.

    `{"text": ...}`: the first line becomes the title and the rest the body, so the chat shows
    the text exactly as sent (a first line too long for a title leaves the whole text in the
    body). `{"title", "body", "level"}` is taken as given.
    """
    if text is not None:
        text = text.replace("\r\n", "\n").strip()
        first, _, rest = text.partition("\n")
        if len(first) <= _WEBHOOK_TITLE_MAX:
            title, body = first, rest
        else:
            title, body = "Message from an instance", text
    title = (title or "").strip()
    body = body.strip()
    if not title and not body:
        raise ValueError("expected a non-empty text, or a title/body")
    if not title:
        title = "Message from an instance"
    content = f"{level}\n{title}\n{body}".encode("utf-8", "surrogatepass")
    digest = hashlib.sha256(content).hexdigest()[:16]
    return Alert(
        title=title, body=body, level=level, event="webhook", dedup_key=f"webhook:{digest}"
    )
