"""How an unknown problem id, status or tag is answered: the close matches, and what exists."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

SHOWN = 20  # known values listed before "and N more"


def guesses(words: Iterable[str], known: Iterable[str]) -> str:
    """Each of ``words`` quoted, with its close matches among ``known``."""
    choices = sorted(known)
    return ", ".join(f"{word!r}" + (f" (did you mean {' or '.join(close)}?)" if (
        close := difflib.get_close_matches(word, choices, n=3, cutoff=0.6)) else "")
                     for word in words)


def known_values(known: Iterable[str]) -> str:
    """``known``, sorted, the first ``SHOWN`` of them."""
    names = sorted(known)
    if not names:
        return "none"
    more = f" and {len(names) - SHOWN} more" if len(names) > SHOWN else ""
    return ", ".join(names[:SHOWN]) + more
