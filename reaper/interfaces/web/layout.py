"""The shell every page shares: one HTML document, its inline CSS, the escaping helper and the
security headers. No JavaScript anywhere: forms and links do everything, so the pages work the
same in any browser, and a strict Content-Security-Policy forbids scripts outright — a name
from a provider that smuggles markup in stays text (`esc`), and would not run if it did not.

The layout is one column of cards, readable at 390 px wide (a phone) and centred on a desktop;
rows wrap instead of scrolling sideways, long names break anywhere.
"""

from __future__ import annotations

import html
from datetime import datetime

from reaper.core.units import humanize, iso, utc
from reaper.text import shown

# Pages answer with these, on top of the adapters' `cache-control: no-store`.
HTML_HEADERS = {
    "content-type": "text/html; charset=utf-8",
    "content-security-policy": (
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    # A sign-in link's token is in its path: never hand it on to another site as a referrer.
    # (`same-origin`, not `no-referrer`: under `no-referrer` a browser names a form POST's
    # origin `null`, which the action page's cross-site check would refuse.)
    "referrer-policy": "same-origin",
}


def esc(value: object) -> str:
    """Text as HTML text or attribute value, quotes included, shown as text
    (`reaper.text.shown`: no bidi override from a name or a message reorders the page)."""
    return html.escape(shown(str(value), lines=True), quote=True)


def stamp(moment: datetime) -> str:
    """A time for people, to the minute with its zone; the exact instant stays in the
    `<time>` element's `datetime` for machines."""
    return f'<time datetime="{esc(iso(moment))}">{esc(utc(moment))}</time>'


def when(moment: datetime | None, now: datetime) -> str:
    """A time for people: "2026-11-28 17:00 UTC (3h ago)" / "(in 5h)", in a <time>."""
    if moment is None:
        return "—"
    delta = moment - now
    relative = (
        "now"
        if abs(delta.total_seconds()) < 60
        else (f"in {humanize(delta)}" if delta.total_seconds() > 0 else f"{humanize(delta)} ago")
    )
    return f'{stamp(moment)} <span class="dim">({esc(relative)})</span>'


CSS = """
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;
color:#1d2125;background:#f3f4f6}
main{max-width:960px;margin:0 auto;padding:12px}
header.top{display:flex;flex-wrap:wrap;gap:8px;align-items:center;justify-content:space-between;
margin:4px 0 12px}
h1{font-size:20px;margin:0}
h2{font-size:16px;margin:0 0 8px}
.card{background:#fff;border:1px solid #dde1e6;border-radius:10px;padding:12px;margin:0 0 12px}
.tiles{display:grid;grid-template-columns:repeat(auto-fit,minmax(150px,1fr));gap:8px}
.tile{background:#fff;border:1px solid #dde1e6;border-radius:10px;padding:10px}
.tile b{display:block;font-size:20px}
.dim{color:#5f6b76}
.small{font-size:13px}
ul.rows{list-style:none;margin:0;padding:0}
ul.rows>li{border-top:1px solid #eceff2;padding:8px 0;display:flex;flex-wrap:wrap;
gap:4px 12px;align-items:baseline}
ul.rows>li:first-child{border-top:0}
.name{font-weight:600;overflow-wrap:anywhere;word-break:break-word;min-width:0;flex:1 1 12em}
.money{font-variant-numeric:tabular-nums;white-space:nowrap}
.line{flex:1 1 100%;overflow-wrap:anywhere;min-width:0}
.badge{display:inline-block;border-radius:999px;padding:0 8px;font-size:12px;font-weight:600;
white-space:nowrap;background:#e8ebef}
.up{background:#dcf5e3;color:#11632c}.down,.late{background:#fde2e1;color:#9b1c17}
.new{background:#e6effd;color:#1d4f9c}.paused{background:#ececec;color:#555}
.warn{color:#9b1c17}.ok{color:#11632c}
form.inline{display:inline}
.actions{display:flex;flex-wrap:wrap;gap:6px;flex:1 1 100%}
button{font:inherit;font-size:14px;padding:5px 10px;border-radius:7px;border:1px solid #b9c0c8;
background:#fff;color:#1d2125;cursor:pointer}
button.primary{background:#1d4f9c;border-color:#1d4f9c;color:#fff}
input[type=password]{font:inherit;width:100%;padding:8px;border:1px solid #b9c0c8;
border-radius:7px;margin:6px 0 10px}
input[type=text]{font:inherit;width:7em;padding:5px;border:1px solid #b9c0c8;border-radius:7px}
label{margin-right:10px;white-space:nowrap}
table.log{border-collapse:collapse;width:100%;font-size:13px;table-layout:fixed}
table.log td,table.log th{border-top:1px solid #e3e6ea;padding:4px;text-align:left;
vertical-align:top;overflow-wrap:anywhere}
table.log pre{white-space:pre-wrap;overflow-wrap:anywhere;margin:0;font-size:12px}
@media (max-width:600px){table.log colgroup,table.log tr:first-child{display:none}
table.log,table.log tbody,table.log tr{display:block}
table.log tr{border-top:1px solid #e3e6ea;padding:4px 0}
table.log td{display:inline-block;border:0;padding:0 8px 0 0}
table.log td:nth-child(4){display:block;padding:2px 0}
table.log td:empty{display:none}}
#delete label{white-space:normal;overflow-wrap:anywhere}
@media (max-width:600px){svg.chart text{font-size:21px}}
pre.msg{white-space:pre-wrap;overflow-wrap:anywhere;margin:2px 0 0;font-size:12px;
background:#f6f7f9;border-radius:6px;padding:4px 6px;max-height:6em;overflow:hidden;flex:1 1 100%}
svg{display:block;width:100%;height:auto}
.legend{display:flex;gap:12px;flex-wrap:wrap;font-size:13px}
.sw{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:4px}
.error{background:#fde2e1;color:#9b1c17;border-radius:7px;padding:6px 8px;margin:0 0 8px}
.notice{background:#dcf5e3;color:#11632c;border-radius:7px;padding:6px 8px;margin:0 0 12px;
overflow-wrap:anywhere}
.signin{max-width:380px;margin:12vh auto 0}
"""


def document(title: str, body: str) -> bytes:
    """The whole page: `body` is HTML already escaped where it holds data."""
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="robots" content="noindex, nofollow">'
        '<meta name="referrer" content="same-origin">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head>"
        f"<body><main>{body}</main></body></html>\n"
    ).encode()


def hidden(name: str, value: str) -> str:
    return f'<input type="hidden" name="{esc(name)}" value="{esc(value)}">'


def post_button(action: str, label: str, fields: dict[str, str], *, primary: bool = False) -> str:
    """A one-button form (every state change is a POST carrying its CSRF token in `fields`)."""
    inputs = "".join(hidden(k, v) for k, v in fields.items())
    css = ' class="primary"' if primary else ""
    return (
        f'<form class="inline" method="post" action="{esc(action)}">{inputs}'
        f'<button{css} type="submit">{esc(label)}</button></form>'
    )


__all__ = ["CSS", "HTML_HEADERS", "document", "esc", "hidden", "post_button", "when"]
