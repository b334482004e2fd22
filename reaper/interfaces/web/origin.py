"""Whether a state-changing request may come from reaper's own page: `/act` POSTs, the status
page's forms, `/login`, `/login/<token>` and `/logout` all ask `same_origin`.

A browser names the page a POST comes from in `Origin` (and, where it supports fetch metadata,
`Sec-Fetch-Site`, which no page can set). A request without either is not a browser's form of
another site (a push app's action button, curl) and is allowed: the token, the session and its CSRF
token guard it.

With REAPER_PUBLIC_URL set, the page's origin is known, and only it counts: `Origin` must be
that origin. Comparing with the request's own `Host` is not enough: in a DNS-rebinding pair
(evil.example first resolves to the attacker, then to this server) the attacker's page is, to
the browser, same-origin with itself, and its POST names `evil.example` as both `Host` and
`Origin` — and `Sec-Fetch-Site: same-origin`. A browser that hides the origin (`Origin: null`,
as under `Referrer-Policy: no-referrer`) is allowed only when fetch metadata says same-origin
and the request's `Host` is the public URL's: a rebinding page's `Host` is its own name.

Without REAPER_PUBLIC_URL the page's origin is whatever `Host` the request came to, so `Origin`
is compared with that (http or https), and `Sec-Fetch-Site: same-origin` is believed; a
rebinding pair passes this check, which is why a deployment reached over a network sets
REAPER_PUBLIC_URL. `Sec-Fetch-Site: cross-site` and an opaque `Origin: null` on their own are
refused either way.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit

_DEFAULT_PORTS = {"http": 80, "https": 443}


def origin_of(url: str) -> str | None:
    """`scheme://host[:port]` of a URL, lower-case, without a default port; None when it has
    no http(s) scheme and host."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme.lower() not in _DEFAULT_PORTS or not parts.hostname:
        return None
    scheme = parts.scheme.lower()
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    shown = f":{port}" if port is not None and port != _DEFAULT_PORTS[scheme] else ""
    return f"{scheme}://{host.lower()}{shown}"


def same_origin(headers: Mapping[str, str], public_url: str | None) -> bool:
    """Whether a POST may be from this site's own page (see the module docstring)."""
    site = headers.get("sec-fetch-site", "").strip().lower()
    if site == "cross-site":
        return False
    origin = headers.get("origin")
    opaque = origin is not None and origin.strip().lower() == "null"
    host = headers.get("host", "").strip()
    if public_url:
        ours = origin_of(public_url)
        if origin is not None and not opaque:
            return origin_of(origin) == ours
        if site == "same-origin":
            scheme = urlsplit(public_url).scheme
            return origin_of(f"{scheme}://{host}") == ours
        return not opaque
    if site == "same-origin":
        return True  # set by the browser itself, whatever it says in `Origin`
    if origin is None:
        return True
    hosts = {origin_of(f"{scheme}://{host}") for scheme in ("http", "https")} - {None}
    return origin_of(origin) in hosts


__all__ = ["origin_of", "same_origin"]
