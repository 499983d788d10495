"""Small helpers about names: did-you-mean suggestions and what a valid identifier is.

Where it sits: schema/; used by the loaders and by compiler/validate.py. No jax.
"""

from __future__ import annotations

import difflib
import re
from typing import Iterable

IDENTIFIER = re.compile(r"(?!\d)\w+")


def closest(name: str, candidates: Iterable[str]) -> str | None:
    """The candidate most similar to `name` (difflib ratio >= 0.6), or None."""
    found = difflib.get_close_matches(name, [c for c in candidates if c], n=1, cutoff=0.6)
    return found[0] if found else None


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """`"did you mean 'torso'?"`, or "" when nothing is close."""
    best = closest(name, candidates)
    return f"did you mean '{best}'?" if best else ""


def choices(values: Iterable[str], limit: int = 12) -> str:
    """`"one of: a, b, c"` (shortened when long)."""
    values = list(values)
    shown = ", ".join(values[:limit]) + (", ..." if len(values) > limit else "")
    return f"one of: {shown}" if values else "none are declared"
