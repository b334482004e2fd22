"""Sessions of the status page: the signed cookie, its CSRF token, one-time sign-in links.

The session cookie is `v1.<issued, epoch s>.<nonce>.<signature>`, signed with HMAC-SHA256 under
a key derived from REAPER_ADMIN_KEY. Rotating the admin key therefore signs everyone out, a
forged or altered cookie fails the signature (before any store is asked: a flood of made-up
cookies costs no read), and one older than SESSION_LIFETIME is refused whatever its signature.
A signed cookie is not enough: the session must also be in the store (by the SHA-256 of its
nonce, never the cookie), where signing in puts it and signing out removes it — so a cookie
copied before a sign-out opens nothing after it, on any server of the deployment. The CSRF token
of every form is the HMAC of the session's nonce (under the same derived key, another label):
bound to the session, useless without it.

The cookie is HttpOnly and SameSite=Strict always, and Secure except on loopback: with
REAPER_PUBLIC_URL set, Secure unless it is http (which the settings allow only on a loopback
host); without it, Secure unless the request's Host is a loopback name or address and no proxy
said `X-Forwarded-Proto: https`. A local `reaper serve` at http://127.0.0.1:8080 thus works in
a browser, and anything reached over a network gets a cookie that only travels over https.

A sign-in link (`reaper login-link`) carries a random token of 256 bits; the store keeps only
its SHA-256, for LOGIN_LINK_LIFETIME, and spends it at the first use (an atomic delete in both
backends, so two uses racing get one session).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

from reaper.settings.model import Settings
from reaper.settings.parse import ConfigError, is_loopback_host
from reaper.store.ports import Store

SESSION_COOKIE = "reaper_session"
SESSION_LIFETIME = timedelta(days=7)
LOGIN_LINK_LIFETIME = timedelta(minutes=15)
# A cookie issued this far in the future (a clock stepped back) is still accepted.
_CLOCK_SKEW = timedelta(minutes=5)
# What a sign-in link's token looks like: 32 random bytes, URL-safe base64 without padding.
TOKEN_PATTERN = re.compile(r"[A-Za-z0-9_-]{43}")
_VERSION = "v1"


def _derived(admin_key: str, label: bytes) -> bytes:
    return hmac.new(admin_key.encode("utf-8"), label, hashlib.sha256).digest()


def _sign(admin_key: str, label: bytes, payload: str) -> str:
    mac = hmac.new(_derived(admin_key, label), payload.encode("utf-8"), hashlib.sha256)
    return base64.urlsafe_b64encode(mac.digest()).rstrip(b"=").decode("ascii")


def _same(given: str, expected: str) -> bool:
    return hmac.compare_digest(
        given.encode("utf-8", "surrogatepass"), expected.encode("utf-8", "surrogatepass")
    )


_SESSION_LABEL = b"reaper status page: session cookie v1"
_CSRF_LABEL = b"reaper status page: csrf token v1"


@dataclass(frozen=True)
class Session:
    nonce: str
    issued_at: datetime

    def csrf(self, admin_key: str) -> str:
        """The CSRF token of this session's forms."""
        return _sign(admin_key, _CSRF_LABEL, self.nonce)

    def csrf_ok(self, admin_key: str, given: str | None) -> bool:
        return given is not None and _same(given, self.csrf(admin_key))


def new_session(admin_key: str, now: datetime) -> tuple[Session, str]:
    """A fresh session and its cookie value (not yet in any store: see `start_session`)."""
    session = Session(nonce=secrets.token_urlsafe(18), issued_at=now)
    payload = f"{_VERSION}.{int(now.timestamp())}.{session.nonce}"
    return session, f"{payload}.{_sign(admin_key, _SESSION_LABEL, payload)}"


def session_id(session: Session) -> str:
    """What the store keeps a session by: the SHA-256 of its nonce."""
    return token_hash(session.nonce)


def start_session(store: Store, admin_key: str, now: datetime) -> str:
    """Sign a browser in: a new session, kept in the store; its cookie value."""
    session, value = new_session(admin_key, now)
    store.start_session(session_id(session), now, session.issued_at + SESSION_LIFETIME)
    return value


def end_session(store: Store, session: Session) -> None:
    """Sign out: the session's cookie opens nothing from now on, wherever it was copied."""
    store.end_session(session_id(session))


def read_session(value: str | None, admin_key: str | None, now: datetime) -> Session | None:
    """The session a cookie value proves, or None: unsigned, altered, signed under another
    admin key, expired, or not a session cookie at all."""
    if not value or not admin_key or len(value) > 200:
        return None
    parts = value.split(".")
    if len(parts) != 4 or parts[0] != _VERSION:
        return None
    _version, issued_text, nonce, signature = parts
    if not (issued_text.isascii() and issued_text.isdigit() and len(issued_text) <= 12):
        return None
    payload = f"{_VERSION}.{issued_text}.{nonce}"
    if not _same(signature, _sign(admin_key, _SESSION_LABEL, payload)):
        return None
    issued = datetime.fromtimestamp(int(issued_text), UTC)
    if not (now - SESSION_LIFETIME < issued <= now + _CLOCK_SKEW):
        return None
    return Session(nonce=nonce, issued_at=issued)


def cookies(header: str | None) -> dict[str, str]:
    """The cookies of a `Cookie` header (the first of each name)."""
    found: dict[str, str] = {}
    for part in (header or "").split(";"):
        name, sep, value = part.strip().partition("=")
        if sep and name and name not in found:
            found[name] = value.strip().strip('"')
    return found


def session_of(
    headers: Mapping[str, str], admin_key: str | None, store: Store, now: datetime
) -> Session | None:
    """The session of a request's cookie: signed, not expired, and still in the store."""
    session = read_session(cookies(headers.get("cookie")).get(SESSION_COOKIE), admin_key, now)
    if session is None or not store.session_active(session_id(session), now):
        return None
    return session


def cookie_secure(settings: Settings, headers: Mapping[str, str]) -> bool:
    """Secure except on loopback (see the module's docstring)."""
    if settings.public_url:
        return urlsplit(settings.public_url).scheme != "http"
    if headers.get("x-forwarded-proto", "").strip().lower() == "https":
        return True
    try:
        host = urlsplit("//" + headers.get("host", "")).hostname
    except ValueError:
        return True
    return not is_loopback_host(host)


def set_cookie(value: str, *, secure: bool) -> str:
    """The `Set-Cookie` header of a new session."""
    flags = f"Path=/; Max-Age={int(SESSION_LIFETIME.total_seconds())}; HttpOnly; SameSite=Strict"
    return f"{SESSION_COOKIE}={value}; {flags}" + ("; Secure" if secure else "")


def clear_cookie(*, secure: bool) -> str:
    flags = "Path=/; Max-Age=0; HttpOnly; SameSite=Strict"
    return f"{SESSION_COOKIE}=; {flags}" + ("; Secure" if secure else "")


def admin_key_matches(given: str, admin_key: str | None) -> bool:
    """Constant-time; an unset admin key matches nothing."""
    return bool(admin_key) and _same(given, admin_key or "")


# --- one-time sign-in links -----------------------------------------------------------------


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def login_link_base(settings: Settings) -> str:
    """The base URL of sign-in links; ConfigError without REAPER_ADMIN_KEY (no status page) or
    REAPER_PUBLIC_URL (no address to link to)."""
    if not settings.admin_key:
        raise ConfigError("REAPER_ADMIN_KEY", "set it: the status page signs in with it")
    if not settings.public_url:
        raise ConfigError(
            "REAPER_PUBLIC_URL",
            "set it to the address the status page is reached at "
            "(https://..., or http://127.0.0.1:8080 for a local reaper serve)",
        )
    return settings.public_url


def create_login_link(settings: Settings, store: Store, now: datetime) -> str:
    """Record a new sign-in token (its hash) and return the link."""
    base = login_link_base(settings)
    token = secrets.token_urlsafe(32)
    store.record_login_token(token_hash(token), now + LOGIN_LINK_LIFETIME)
    return f"{base}/login/{token}"


def spend_login_token(store: Store, token: str, now: datetime) -> bool:
    """True once for a valid, unexpired token; never for anything else."""
    if not TOKEN_PATTERN.fullmatch(token):
        return False
    return store.use_login_token(token_hash(token), now)


__all__ = [
    "LOGIN_LINK_LIFETIME",
    "SESSION_COOKIE",
    "SESSION_LIFETIME",
    "Session",
    "admin_key_matches",
    "clear_cookie",
    "cookie_secure",
    "cookies",
    "create_login_link",
    "end_session",
    "login_link_base",
    "new_session",
    "read_session",
    "session_id",
    "session_of",
    "set_cookie",
    "spend_login_token",
    "start_session",
]
