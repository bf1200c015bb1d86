"""How a scenario problem names what the file could have meant: ``unknown camera 'cam-1'; known:
cam-01, cam-02; did you mean 'cam-01'?`` (:mod:`difflib`'s close matches)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

MAX_LISTED = 12
"""Past this many known names, a problem lists only the closest ones."""


def did_you_mean(value: str, known: Iterable[str], cutoff: float = 0.6) -> str:
    """``"; did you mean 'a' or 'b'?"``, or ``""`` when nothing known is close to ``value``."""
    close = difflib.get_close_matches(value, list(known), n=3, cutoff=cutoff)
    return f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""


def unknown(what: str, value: str, known: Iterable[str], listed: int = MAX_LISTED) -> str:
    """``unknown camera 'cam-03'; known: cam-01, cam-02; did you mean 'cam-01'?``; past ``listed``
    names only the closest ones are named (or the first few, when none is close)."""
    names = list(known)
    hint = did_you_mean(value, names)
    if len(names) <= listed:
        return f"unknown {what} {value!r}; known: {', '.join(names) or 'none in this fleet'}{hint}"
    if hint:
        return f"unknown {what} {value!r}{hint}"
    return f"unknown {what} {value!r}; known: {', '.join(names[:listed])}, ... ({len(names)} in all)"
