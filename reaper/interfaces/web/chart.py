"""The spend chart: inline SVG bars, one per UTC day, compute below storage. It scales with its
card (a viewBox, width 100%), needs no script and no image file, and each bar carries its
figures as a <title> (a tooltip on a desktop) and the chart a text summary for everyone else.
"""

from __future__ import annotations

from collections.abc import Sequence

from reaper.core.snapshot import SpendDay
from reaper.core.units import money
from reaper.interfaces.web.layout import esc

RUNNING_COLOUR = "#1d4f9c"
STORAGE_COLOUR = "#e08a1e"
_W, _H = 600, 180
_BOTTOM, _TOP = 34, 14
# The labels' size in the chart's own units: 13 on a wide card, and on a phone (the layout's
# `svg.chart` rule) 21, which the chart scaled to a 390 px screen draws at about 12 CSS px.
PHONE_FONT = 21
_CHAR = 0.62  # a label character's width, in font sizes (digits and `$` of system-ui)


def _left(labels: Sequence[str]) -> float:
    """Room for the longest amount on the axis at the phone's size, right-aligned to it."""
    return max(len(text) for text in labels) * PHONE_FONT * _CHAR + 8


def _nice(top: float) -> float:
    """A round axis maximum at or above `top`."""
    if top <= 0:
        return 1.0
    step = 10 ** len(str(int(top))) / 10 if top >= 1 else 0.1
    while step * 10 < top:
        step *= 10
    for factor in (1, 2, 2.5, 5, 10):
        if step * factor >= top:
            return step * factor
    return step * 10


def spend_chart(days: Sequence[SpendDay], title: str) -> str:
    """One chart; days oldest first."""
    if not days:
        return ""
    top = _nice(max(d.total for d in days))
    amounts = {fraction: money(top * fraction) for fraction in (0, 0.5, 1)}
    left = _left(list(amounts.values()))
    plot_w, plot_h = _W - left - 4, _H - _BOTTOM - _TOP
    slot = plot_w / len(days)
    bar = max(1.0, slot * 0.7)
    parts = [
        f'<svg class="chart" viewBox="0 0 {_W} {_H}" role="img" aria-label="{esc(title)}" '
        'xmlns="http://www.w3.org/2000/svg" font-size="13" font-family="system-ui,sans-serif">',
        f"<title>{esc(title)}</title>",
    ]
    for fraction, amount in amounts.items():
        y = _TOP + plot_h * (1 - fraction)
        parts.append(
            f'<line x1="{left:.1f}" x2="{_W - 4}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e3e6ea"/>'
            f'<text x="{left - 4:.1f}" y="{y:.1f}" text-anchor="end" dominant-baseline="central"'
            ' fill="#5f6b76">'
            f"{esc(amount)}</text>"
        )
    # A day's label ("02 Dec") is about 80 units wide at the phone's size: at most five.
    label_every = -(-len(days) // 4)
    for index, day in enumerate(days):
        x = left + slot * index + (slot - bar) / 2
        run_h = plot_h * day.running / top
        sto_h = plot_h * day.storage / top
        base = _TOP + plot_h
        known = "" if day.covered_hours >= 23.5 else f" (snapshots cover {day.covered_hours:g}h)"
        tip = (
            f"{day.day:%a %d %b}: {money(day.total)} — running {money(day.running)}, "
            f"storage {money(day.storage)}{known}"
        )
        parts.append(f"<g><title>{esc(tip)}</title>")
        parts.append(
            f'<rect x="{x:.1f}" y="{base - run_h:.1f}" width="{bar:.1f}" height="{run_h:.1f}" '
            f'fill="{RUNNING_COLOUR}"/>'
        )
        parts.append(
            f'<rect x="{x:.1f}" y="{base - run_h - sto_h:.1f}" width="{bar:.1f}" '
            f'height="{sto_h:.1f}" fill="{STORAGE_COLOUR}"/>'
        )
        parts.append("</g>")
        last = index == len(days) - 1
        if last or (index % label_every == 0 and index < len(days) - label_every):
            # The first starts at its bar and the last ends at its own: neither runs past the
            # plot, into the amounts or off the chart.
            anchor, at = (
                ("end", x + bar)
                if last
                else ("start", x)
                if index == 0
                else ("middle", x + bar / 2)
            )
            parts.append(
                f'<text x="{at:.1f}" y="{_H - 6}" text-anchor="{anchor}" fill="#5f6b76">'
                f"{esc(f'{day.day:%d %b}')}</text>"
            )
    parts.append("</svg>")
    return "".join(parts)


def chart_summary(days: Sequence[SpendDay]) -> str:
    total = sum(d.total for d in days)
    running = sum(d.running for d in days)
    storage = sum(d.storage for d in days)
    return (
        f"{money(total)} in all: running {money(running)}, storage {money(storage)} "
        "(from the reap passes' snapshots)"
    )


__all__ = ["RUNNING_COLOUR", "STORAGE_COLOUR", "chart_summary", "spend_chart"]
