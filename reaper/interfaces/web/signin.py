"""The sign-in pages: the admin key form, and the button behind a one-time sign-in link.

Both reveal nothing of the fleet — not a count, not a name — only that this is a reaper. A
sign-in link opens a page with a button rather than signing in on GET: chat apps and mail
scanners fetch links to preview them, and a GET that spent the token would leave the person
who tapped it with a dead link.
"""

from __future__ import annotations

from reaper.interfaces.web.layout import document, esc


def signin_page(problem: str = "") -> bytes:
    """The admin key form; `problem` is the one line shown above it (a wrong key...)."""
    line = f'<p class="error" role="alert">{esc(problem)}</p>' if problem else ""
    body = (
        '<div class="card signin"><h1>reaper</h1>'
        '<p class="dim">Sign in with the admin key (REAPER_ADMIN_KEY) to see the status page, '
        "or open a link from <code>reaper login-link</code>.</p>"
        f"{line}"
        '<form method="post" action="/login">'
        '<label for="key">Admin key</label>'
        '<input id="key" name="key" type="password" autocomplete="current-password" required>'
        '<button class="primary" type="submit">Sign in</button>'
        "</form></div>"
    )
    return document("Sign in · reaper", body)


def link_page(token: str, problem: str = "") -> bytes:
    """The page of a sign-in link: one button that spends it."""
    if problem:
        body = (
            '<div class="card signin"><h1>reaper</h1>'
            f'<p class="error" role="alert">{esc(problem)}</p>'
            '<p><a href="/">Sign in with the admin key</a>, or run '
            "<code>reaper login-link</code> again for a new link.</p></div>"
        )
        return document("Sign in · reaper", body)
    body = (
        '<div class="card signin"><h1>reaper</h1>'
        "<p>This one-time link signs this browser in to the status page for 7 days.</p>"
        f'<form method="post" action="/login/{esc(token)}">'
        '<button class="primary" type="submit">Sign in</button></form></div>'
    )
    return document("Sign in · reaper", body)


__all__ = ["link_page", "signin_page"]
