"""Source maps: where each value of a loaded `Scene` came from.

Where it sits: schema/. The loaders fill a `SourceMap` while they build the message; the validator,
the compiler's front end and every pass ask it for the `Span` of a field path such as
`("bodies", 2, "colliders", 0, "sphere", "radius")` so that their diagnostics point into the file.
"""

from __future__ import annotations

import bisect
import re
from typing import Iterable

from .diagnostics import Span

Path = tuple  # tuple[str | int, ...]: field names and list indices

# The line breaks PyYAML counts (and str.splitlines, which renders the caret, agrees on these).
_LINE_BREAK = re.compile(r"\r\n|[\n\r\x85\u2028\u2029]")


class LineIndex:
    """Character offset <-> 1-based (line, column) in one text."""

    def __init__(self, text: str):
        self.starts = [0] + [m.end() for m in _LINE_BREAK.finditer(text)]

    def position(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(self.starts, offset) - 1
        return line + 1, offset - self.starts[line] + 1


def dotted(path: Iterable) -> str:
    """`("bodies", 2, "colliders", 0)` -> `.bodies[2].colliders[0]`."""
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)


class SourceMap:
    """Field path -> Span for one loaded scene.

    `spans` is None for a message built in Python: then `span(path)` names the path itself,
    `Span("<scene>.bodies[2].colliders[0]", 0, 0)`, so diagnostics still say where.
    `failed` holds the paths whose value could not be read (already reported by the loader);
    checks skip them instead of reporting a second, derived problem. `fatal` means the document
    could not be read into a scene at all (syntax error, not a mapping, ...).
    """

    def __init__(self, file: str, spans: dict[Path, Span] | None = None,
                 failed: Iterable[Path] = (), fatal: bool = False):
        self.file = file
        self._spans = spans
        self._failed = frozenset(tuple(p) for p in failed)
        self.fatal = fatal

    @classmethod
    def for_message(cls) -> "SourceMap":
        return cls("<scene>", None)

    def span(self, path: Path) -> Span:
        """The span of the value at `path`, or of its nearest ancestor that has one."""
        path = tuple(path)
        if self._spans is None:
            return Span(self.file + dotted(path), 0, 0)
        while True:
            found = self._spans.get(path)
            if found is not None:
                return found
            if not path:
                return Span(self.file, 0, 0)
            path = path[:-1]

    def has(self, path: Path) -> bool:
        """Whether this exact path was written in the source."""
        return self._spans is not None and tuple(path) in self._spans

    def failed(self, path: Path) -> bool:
        """Whether the value at `path`, anything inside it, or the mapping holding it could not
        be read (a misspelt key counts as its intended field failing)."""
        path = tuple(path)
        n = len(path)
        return any(p[:n] == path or path[:len(p)] == p for p in self._failed)
