"""Plain-text tables for the terminal: the readable side of every `--json` command."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Sequence

from reaper.text import shown

_GAP = 2
# A column is never cut narrower than this (or than its widest cell, if narrower).
_MIN_COLUMN = 6


def terminal_width() -> int | None:
    """The width of the terminal the table goes to: `COLUMNS` when set, else the terminal's own
    (as `shutil` reads them); None when the output is not a terminal, whatever `COLUMNS` says:
    a pipe or a file keeps whole cells for whatever reads them (grep, a log, a person later)."""
    try:
        if not sys.stdout.isatty():
            return None
    except (OSError, ValueError, AttributeError):
        return None
    return shutil.get_terminal_size().columns


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
    width: int | None = None,
    shrink_first: Sequence[int] = (),
) -> str:
    """Left-aligned columns. `width`: the whole line's budget (a terminal's width): cells are
    cut with an ellipsis to fit it, the columns `shrink_first` first, then the widest. Without
    a width (a pipe, a file) every cell is whole: the part cut is often the one that matters."""
    # Cells show as text: a control or format character in a name or a message (U+202E mirrors
    # the rest of the line) would reorder the terminal's line.
    rows = [[shown(cell) for cell in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    if width is not None:
        widths = _fit(widths, width, shrink_first)
    lines = ["  ".join(_cut(h, w).ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines += [
        "  ".join(_cut(c, w).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    return "\n".join(lines)
