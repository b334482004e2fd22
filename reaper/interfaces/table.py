"""Plain-text tables for the terminal: the readable side of every `--json` command."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Sequence

from reaper.text import shown

_GAP = 2
# A column is never cut narrower than this (or than its widest cell, if narrower).
_MIN_COLUMN = 6


def terminal_width() -> int | None:
    """The width of the terminal the table goes to: `COLUMNS` when set (as `shutil` reads it),
    else the terminal's own; None when the output is not a terminal (a pipe or a file keeps
    whole lines for whatever reads them)."""
    if os.environ.get("COLUMNS", "").strip().isdigit():
        return shutil.get_terminal_size().columns
    try:
        return os.get_terminal_size(sys.stdout.fileno()).columns
    except (OSError, ValueError, AttributeError):
        return None


def _cut(cell: str, width: int) -> str:
    return cell if len(cell) <= width else cell[: max(width - 1, 0)] + "…"


def _fit(widths: list[int], total: int, first: Sequence[int]) -> list[int]:
    """Narrow columns one character at a time, the widest first, until the row fits `total`:
    the columns in `first` (free text: names, reasons) give way before the others. No column
    goes below `_MIN_COLUMN` (a row that still cannot fit wraps, whole)."""
    widths = list(widths)
    floors = [min(w, _MIN_COLUMN) for w in widths]
    excess = sum(widths) + _GAP * (len(widths) - 1) - total
    for group in (list(first), list(range(len(widths)))):
        while excess > 0:
            candidates = [i for i in group if widths[i] > floors[i]]
            if not candidates:
                break
            widest = max(candidates, key=lambda i: (widths[i], i))
            widths[widest] -= 1
            excess -= 1
    return widths


def format_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    max_width: int = 60,
    width: int | None = None,
    shrink_first: Sequence[int] = (),
) -> str:
    """Left-aligned columns; cells longer than `max_width` are cut with an ellipsis so one long
    reason cannot wreck the layout (the JSON output keeps it whole). `width`: the whole line's
    budget (a terminal's width); the columns `shrink_first` give way first, then the widest."""
    # Cells show as text: a control or format character in a name or a message (U+202E mirrors
    # the rest of the line) would reorder the terminal's line.
    rows = [[shown(cell) for cell in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, min(len(c), max_width)) for w, c in zip(widths, row, strict=True)]
    if width is not None:
        widths = _fit(widths, width, shrink_first)
    lines = ["  ".join(_cut(h, w).ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines += [
        "  ".join(_cut(c, w).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    return "\n".join(lines)
