"""Plain-text tables for the terminal: the readable side of every `--json` command."""

from __future__ import annotations

from collections.abc import Sequence


def format_table(
    headers: Sequence[str], rows: Sequence[Sequence[str]], *, max_width: int = 60
) -> str:
    """Left-aligned columns; cells longer than `max_width` are cut with an ellipsis so one long
    reason cannot wreck the layout (the JSON output keeps it whole)."""
    cut = [[c if len(c) <= max_width else c[: max_width - 1] + "…" for c in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cut:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines += [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cut
    ]
    return "\n".join(lines)
