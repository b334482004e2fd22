"""The names nearest to one a person typed, for the line that refuses it: a typo answered with
the name meant is fixed at once, where "not found" alone sends them looking."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def nearest(typed: str, known: Iterable[str], count: int = 3) -> list[str]:
    """Up to `count` of `known`, the most alike first, alike ones in alphabetical order
    (however little alike: a list of the names there are beats none)."""

    def likeness(name: str) -> float:
        return difflib.SequenceMatcher(None, typed, name).ratio()

    return sorted(set(known), key=lambda name: (-likeness(name), name))[:count]
