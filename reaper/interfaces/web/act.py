"""The action page, `/act/<token>`: a one-time link from an alert (the push channels).

`GET` says exactly what will happen, to which instance, until when, with a button; it changes
nothing (link previews and prefetches are harmless). `POST` does it, once (`reaper.passes.act`).
A used, expired or unknown token — or one that cannot be a token — is a 404 with one line, the
same for each, so a probe learns nothing. The page is small, server-rendered and readable on a
390 px phone; every value from outside (instance names from the providers, monitor hosts) is
HTML-escaped, and the page loads nothing, can be framed by nobody and sends its address (which
holds the token) as a referrer to no other site.

Cross-site POSTs are refused (`reaper.interfaces.web.origin.same_origin`: with
REAPER_PUBLIC_URL set, only from its origin). The token is itself the secret and is single use,
so a CSRF token would add nothing: a page of another site cannot know the token. But a token can
leak (a forwarded notification, a link shared in a chat), and then a foreign page could make a
visitor's browser POST it; a browser names the page's origin in `Origin` (and `Sec-Fetch-Site`)
on a POST, so one naming another site is refused with 403. A request without `Origin` is not
from a browser form of another site (a push app's action button, curl) and is allowed.

The referrer policy is `same-origin`, not `no-referrer`: under `no-referrer` the Fetch standard
has a browser send a form POST's `Origin` as `null`, and the page's own button was refused
(a real browser found it: tests/test_phone_act_browser.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from urllib.parse import parse_qs

from reaper.core import messages
from reaper.core.models import ActionGrant, PhoneAction
from reaper.core.terminated import Terminated
from reaper.core.units import utc
from reaper.interfaces.web.layout import esc
from reaper.interfaces.web.origin import same_origin
from reaper.passes import keeping
from reaper.passes.act import LINK, ActContext, Outcome, lookup, perform

# A POST from the page carries `choice=N`; anything much bigger is not from it.
BODY_LIMIT = 4096
HTML_HEADERS = {
    "content-type": "text/html; charset=utf-8",
    "referrer-policy": "same-origin",
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "content-security-policy": (
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
}
TEXT = {"content-type": "text/plain; charset=utf-8"}


@dataclass(frozen=True)
class Page:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


def _line(status: int, text: str) -> Page:
    return Page(status, (text + "\n").encode(), dict(TEXT))


def not_found() -> Page:
    return _line(404, "unknown, used or expired action link")


_STYLE = (
    "body{font:16px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:0 auto;"
    "padding:16px;max-width:34rem;color:#111;background:#fafafa;overflow-wrap:anywhere}"
    "h1{font-size:1.25rem;margin:.25rem 0 .75rem}p{margin:.5rem 0}form{margin:.9rem 0 .3rem}"
    "button{display:block;width:100%;min-height:48px;font-size:1.05rem;border-radius:10px;"
    "border:1px solid #999;background:#fff;color:#111;padding:10px 12px;cursor:pointer}"
    "button.main{background:#0a6e3a;border-color:#0a6e3a;color:#fff;font-weight:600}"
    "button.danger{background:#a40e0e;border-color:#a40e0e;color:#fff;font-weight:600}"
    ".what{color:#444;font-size:.92rem;margin:.2rem 0 1rem}.small{color:#666;font-size:.85rem}"
)


def _document(title: str, body: str) -> bytes:
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="referrer" content="same-origin">'
        f"<title>reaper: {esc(title)}</title><style>{_STYLE}</style></head>"
        f"<body>{body}</body></html>\n"
    ).encode()


def _button(index: int, action: PhoneAction, main: bool) -> str:
    css = "danger" if action.kind == "terminate" else ("main" if main else "")
    return (
        f'<form method="post"><input type="hidden" name="choice" value="{index}">'
        f'<button type="submit" class="{css}">{esc(action.label)}</button></form>'
    )


def render_page(
    grant: ActionGrant, now: datetime, gone: Mapping[str, Terminated] | None = None
) -> bytes:
    """What the link will do, with a button per choice (the first is the main one); `gone`:
    the instances it names that are already terminated."""
    first = grant.choices[0]
    parts = [f"<h1>{esc(first.label)}: {esc(first.subject)}?</h1>"]
    for index, action in enumerate(grant.choices):
        parts.append(_button(index, action, index == 0))
        parts.append(f'<p class="what">{esc(messages.action_describe(action, now, gone))}</p>')
    parts.append(
        '<p class="small">This link works once, until'
        f" {esc(utc(grant.expires_at))}. Nothing happens until you press"
        " a button.</p>"
    )
    return _document(f"{first.label}: {first.subject}", "".join(parts))


def render_outcome(outcome: Outcome) -> bytes:
    """What was done, and the way on: the status page, on this same server (a relative link:
    the page answers `/` wherever the action link does)."""
    title = "Done" if outcome.status == "done" else "Not done"
    back = '<p><a href="/">Open the status page</a></p>'
    return _document(title, f"<h1>{title}</h1><p>{esc(outcome.text)}</p>{back}")


def _choice(body: bytes) -> int | None:
    """`choice=N` of a form POST; an empty body (a push app's action button) is the first choice."""
    if not body.strip():
        return 0
    try:
        fields = parse_qs(body.decode("ascii"), strict_parsing=True, max_num_fields=4)
    except (UnicodeDecodeError, ValueError):
        return None
    values = fields.get("choice", ["0"])
    if len(values) != 1 or not values[0].isdigit() or len(values[0]) > 2:
        return None
    return int(values[0])


def _wants_html(headers: dict[str, str]) -> bool:
    return "text/html" in headers.get("accept", "")


async def answer_act(
    method: str, token: str, headers: dict[str, str], body: bytes, ctx: ActContext
) -> Page:
    """The answer to GET (HEAD) or POST `/act/<token>`."""
    if method in ("GET", "HEAD"):
        found = lookup(ctx.store, token, ctx.clock.now(), link=True)
        if isinstance(found, str):
            return not_found()
        to_keep = {t for c in found.choices if c.kind == "keep" for t in c.targets}
        gone = keeping.terminated_among(ctx.store, sorted(to_keep))
        return Page(200, render_page(found, ctx.clock.now(), gone), dict(HTML_HEADERS))
    if len(body) > BODY_LIMIT:
        return _line(413, f"request body too large (limit {BODY_LIMIT} bytes)")
    if not same_origin(headers, ctx.settings.public_url):
        return _line(403, "refused: a POST from another site")
    choice = _choice(body)
    if choice is None:
        return _line(400, "expected an empty body or choice=<number>")
    outcome = await perform(ctx, token, LINK, choice, link=True)
    if outcome.status == "refused":
        return not_found()
    status = 200 if outcome.status == "done" else 409
    if _wants_html(headers):
        return Page(status, render_outcome(outcome), dict(HTML_HEADERS))
    return _line(status, outcome.text)
