"""Arming an alert's actions: each gets a stored one-time handle before the alert goes out.

An alert's actions (`Alert.actions`, chosen by `core.messages`) are only words until armed:
arming mints a random token per handle, stores its grant under the token's SHA-256 (so the
store never holds a token that could act) and puts the token where the channels look for it —
`callback` for an in-chat button, `link` for a per-action link to `/act/<token>`, `Alert.menu`
for one page offering them all. Only what some configured channel can show is minted (its
plugin's `ActionSlots`, as the notifier reports them together), and links only with
REAPER_PUBLIC_URL: without it, the channels that need a link offer no action at all. Arming
never holds an alert back: if the store fails, the alert goes out without its actions.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from datetime import datetime, timedelta

from reaper import log
from reaper.channels.base import ActionSlots
from reaper.core.models import ActionGrant, Alert, PhoneAction
from reaper.settings.model import Settings
from reaper.store.ports import Store

# How long a button or an action link can be used.
GRANT_TTL = timedelta(hours=24)
# 24 random bytes: 192 bits, 32 characters of URL-safe base64.
TOKEN_BYTES = 24
TOKEN_LENGTH = 32
_TOKEN = re.compile(r"[A-Za-z0-9_-]{32}")
# An in-chat button's data: this prefix and a token (34 bytes, under the 64 a button carries).
CALLBACK_PREFIX = "a:"


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def valid_token(text: str) -> bool:
    return _TOKEN.fullmatch(text) is not None


def grant_id(token: str) -> str:
    """What the store keys a grant by: the token's SHA-256, never the token."""
    return hashlib.sha256(token.encode("ascii", "replace")).hexdigest()


def token_of_callback(data: str) -> str | None:
    """The token in an in-chat button's data, or None when it is not ours."""
    token = data.removeprefix(CALLBACK_PREFIX)
    return token if data.startswith(CALLBACK_PREFIX) and valid_token(token) else None


def mint(
    store: Store,
    choices: tuple[PhoneAction, ...],
    now: datetime,
    *,
    ask_first: bool = False,
    parent: str | None = None,
    ttl: timedelta = GRANT_TTL,
    not_after: datetime | None = None,
) -> str:
    """Store a grant for `choices`; the token that uses it (returned, never stored)."""
    token = new_token()
    expires = now + ttl if not_after is None else min(now + ttl, not_after)
    store.add_grant(
        ActionGrant(
            id=grant_id(token),
            choices=tuple(c.bare() for c in choices),
            created_at=now,
            expires_at=expires,
            ask_first=ask_first,
            parent=parent,
        )
    )
    return token


def action_link(settings: Settings, token: str) -> str:
    assert settings.public_url is not None
    return f"{settings.public_url}/act/{token}"


def arm(alert: Alert, store: Store, settings: Settings, now: datetime, room: ActionSlots) -> Alert:
    """The alert with handles on its actions (see the module docstring); `room`: what the
    configured channels can show of them, together (the notifier's `actions`)."""
    if not alert.actions:
        return alert
    public = settings.public_url
    armed: list[PhoneAction] = []
    choices: list[PhoneAction] = []
    for action in alert.actions:
        if action.kind == "open":
            if public:
                armed.append(action.model_copy(update={"url": f"{public}/"}))
            continue
        choices.append(action)
        update: dict[str, str] = {}
        if len(choices) <= room.buttons:
            token = mint(store, (action,), now, ask_first=action.kind == "terminate")
            update["callback"] = CALLBACK_PREFIX + token
        if public and len(choices) <= room.links:
            update["link"] = action_link(settings, mint(store, (action,), now))
        armed.append(action.model_copy(update=update))
    menu = None
    if public and room.menu and choices:
        menu = action_link(settings, mint(store, tuple(choices), now))
    return alert.model_copy(update={"actions": tuple(armed), "menu": menu})


def arm_safely(
    alert: Alert, store: Store, settings: Settings, now: datetime, room: ActionSlots
) -> Alert:
    """`arm`, or the alert without actions when the store fails: the notice matters more."""
    try:
        return arm(alert, store, settings, now, room)
    except Exception as exc:
        log.event("arm", alert_event=alert.event, result="error", error=type(exc).__name__)
        return alert.model_copy(update={"actions": (), "menu": None})
