"""Diagnostics: located, coded messages about a scene, and their renderings.

Where it sits: every layer that reads a scene (schema loaders, the compiler's front end and passes,
importers) reports problems as `Diagnostic`s; the CLI renders them as text (with the source line and
a caret), JSON or GitHub workflow annotations. No jax here.

A `Span` is a 1-based (line, col) range in one file; `end_line`/`end_col` are inclusive of the last
character's start, so a one-character span has end == start.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import unicodedata
from typing import Iterable, Sequence


@dataclasses.dataclass(frozen=True, slots=True)
class Span:
    file: str          # path as the user named it, or "<string>" for text without a file
    line: int          # 1-based
    col: int           # 1-based, in characters
    end_line: int = 0  # 0 means "same as line"
    end_col: int = 0   # 0 means "same as col"

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


NO_SPAN = Span("<unknown>", 0, 0)


class Severity(enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"


@dataclasses.dataclass(frozen=True, slots=True)
class Diagnostic:
    code: str                       # catalogue code, e.g. "E204"
    message: str                    # one sentence, names the offending thing in quotes
    span: Span = NO_SPAN
    hint: str = ""                  # how to fix it, when there is something useful to say
    severity: Severity = Severity.ERROR

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR


class SceneError(Exception):
    """Raised by API functions when a scene has errors; carries every diagnostic found."""

    def __init__(self, diagnostics: Sequence[Diagnostic], sources: dict[str, str] | None = None):
        self.diagnostics = tuple(diagnostics)
        self.sources = dict(sources or {})
        super().__init__(render_text(self.diagnostics, self.sources) or "scene has errors")


def has_errors(diagnostics: Iterable[Diagnostic]) -> bool:
    return any(d.is_error for d in diagnostics)


def sort_key(d: Diagnostic):
    return (d.span.file, d.span.line, d.span.col, d.code)


def render_one(d: Diagnostic, sources: dict[str, str] | None = None) -> str:
    """`FILE:LINE:COL: error[CODE]: message`, the source line, a caret, and the hint."""
    head = f"{d.severity.value}[{d.code}]: {d.message}"
    if d.span.line > 0:
        head = f"{d.span}: {head}"
    elif d.span.file not in ("", NO_SPAN.file):
        head = f"{d.span.file}: {head}"
    lines = [head]
    text = (sources or {}).get(d.span.file)
    if text is not None and d.span.line > 0:
        src_lines = text.splitlines()
        if d.span.line <= len(src_lines):
            src = src_lines[d.span.line - 1].replace("\t", " ")
            if len(src) > 200:  # keep giant one-line documents readable
                start = max(0, d.span.col - 80)
                src = src[start:start + 160]
                col = d.span.col - start
            else:
                col = d.span.col
            width = 1
            if d.span.end_line in (0, d.span.line) and d.span.end_col >= d.span.col:
                width = d.span.end_col - d.span.col + 1
            width = max(1, min(width, len(src) - col + 1))
            gutter = f"{d.span.line:>4} | "
            lines.append(gutter + src)
            # Columns count characters; the caret goes by terminal cells (CJK is two wide).
            pad = _cells(src[:col - 1])
            under = max(1, _cells(src[col - 1:col - 1 + width]))
            lines.append(" " * (len(gutter) - 2) + "| " + " " * pad + "^" * under)
    if d.hint:
        lines.append(f"  = hint: {d.hint}")
    return "\n".join(lines)


def _cells(text: str) -> int:
    """Terminal cells `text` takes: wide East Asian characters 2, combining marks 0, others 1."""
    return sum(0 if unicodedata.combining(ch) else
               2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1 for ch in text)


def render_text(diagnostics: Iterable[Diagnostic], sources: dict[str, str] | None = None) -> str:
    return "\n".join(render_one(d, sources) for d in sorted(diagnostics, key=sort_key))


def to_json(d: Diagnostic) -> dict:
    return {
        "file": d.span.file, "line": d.span.line, "col": d.span.col,
        "end_line": d.span.end_line or d.span.line, "end_col": d.span.end_col or d.span.col,
        "severity": d.severity.value, "code": d.code, "message": d.message, "hint": d.hint,
    }


def render_json(diagnostics: Iterable[Diagnostic]) -> str:
    return json.dumps([to_json(d) for d in sorted(diagnostics, key=sort_key)], indent=2)


def _escape_github(text: str, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return text


def render_github(diagnostics: Iterable[Diagnostic]) -> str:
    """GitHub Actions workflow commands: `::error file=F,line=L,col=C,title=CODE::message`."""
    out = []
    for d in sorted(diagnostics, key=sort_key):
        kind = {"error": "error", "warning": "warning", "note": "notice"}[d.severity.value]
        props = [f"file={_escape_github(d.span.file, True)}"]
        if d.span.line > 0:
            props += [f"line={d.span.line}", f"col={d.span.col}"]
        props.append(f"title={_escape_github(d.code, True)}")
        msg = d.message + (f" (hint: {d.hint})" if d.hint else "")
        out.append(f"::{kind} {','.join(props)}::{_escape_github(msg)}")
    return "\n".join(out)
