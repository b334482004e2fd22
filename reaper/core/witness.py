"""When a listing may be believed about what is *not* in it.

A provider that lost its way can answer an empty or partial listing that looks complete.
Absence proves something only against instances that must still be there (witnesses):

- right after a delete, every witness of the fresh reading must come back (`proves_gone`): a
  re-list that misses one of them may be missing the deleted instance too;
- between passes, where instances come and go by the hour, an account's listing is believed
  about absences when it still shows at least one of the instances its last listing showed
  (`trustworthy_absence`): an empty answer from an account that had instances proves nothing.
"""

from __future__ import annotations

from collections.abc import Collection


def proves_gone(listed: Collection[str], witnesses: Collection[str]) -> bool:
    """A re-list can prove an instance gone only if it shows every witness."""
    return all(w in listed for w in witnesses)


def trustworthy_absence(listed: Collection[str], known: Collection[str]) -> bool:
    """A listing can say what went away only if it still shows something it showed before
    (or nothing was there before)."""
    return not known or any(k in listed for k in known)
