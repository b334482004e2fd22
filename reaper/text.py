"""Text from outside, made safe to show: names, labels and forwarded messages.

A provider name, an instance's label, a chat user's first name or a message an instance forwards
is shown to a person (an alert, the status page, a table) and written to the log. Unicode's
control and format characters do not show themselves but change what is around them: U+202E
(RIGHT-TO-LEFT OVERRIDE) in a pod's name mirrors the rest of the warning's title, so "will be
terminated in 1h" reads backwards; U+200B hides a difference between two names; a lone UTF-16
surrogate from JSON fails every UTF-8 encode later. Each such character is replaced by U+FFFD,
which shows that something was there.

Kept: ZWJ and ZWNJ (U+200D, U+200C), which emoji sequences and several scripts need to be
written at all, and — in a forwarded message, which has lines — line feed and tab (a carriage
return becomes a line feed).
"""

from __future__ import annotations

import unicodedata

REPLACEMENT = "\ufffd"
# Joiners that emoji sequences (👩‍💻) and scripts (Persian, Indic) need: format characters that
# change no order and hide nothing.
_JOINERS = frozenset({"\u200c", "\u200d"})
_LINE_CHARACTERS = frozenset({"\n", "\t"})
# Controls, formats (bidi overrides and isolates, zero-width spaces, invisible operators) and
# lone surrogates; and the line and paragraph separators, which end a line where a reader does
# not expect one. Unassigned code points are kept: an emoji newer than this Python's Unicode
# tables is one, and none of them can reorder or hide anything.
_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def shown(text: str, *, lines: bool = False) -> str:
    """`text` with every character that would not show as itself replaced by U+FFFD (see the
    module docstring). `lines`: a forwarded message, whose line feeds and tabs are kept; a
    name or a label keeps none. Costs one C-level check for ordinary printable text."""
    if text.isprintable():
        return text
    # A surrogate pair that arrived as two code points (JSON's "\\ud83d\\ude00") is joined
    # into its character first; a lone one becomes U+FFFD here.
    text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    kept = _LINE_CHARACTERS if lines else frozenset()
    if lines:
        # A script's CRLF (or a lone CR) is a line break, not a character to replace.
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return "".join(
        c if c in kept or c in _JOINERS or unicodedata.category(c) not in _HIDDEN else REPLACEMENT
        for c in text
    )
