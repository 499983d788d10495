"""YAML text -> a tree of plain nodes that remember where they are (safe, bounded, located).

Where it sits: schema/, first step of the YAML loader (`from_yaml.py` maps the tree onto the proto).
Built from PyYAML's event stream, not its composer, so that hostile documents stay cheap: anchors
and aliases are refused (no alias bombs), tags are refused (nothing is ever constructed from a tag),
nesting is capped (no RecursionError), duplicate keys are errors (YAML would silently keep the last),
and only one document is read. No jax.
"""

from __future__ import annotations

import dataclasses
from typing import Union

import yaml
from yaml import events as ev

from .diagnostics import Diagnostic, Span
from .source_map import LineIndex

MAX_DEPTH = 64  # nested mappings/lists deeper than this are refused; real scenes use < 10

# libyaml's parser when PyYAML was built with it (about 20 times faster; same events and marks),
# else the pure-Python one.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclasses.dataclass(slots=True, eq=False)
class YScalar:
    value: object        # str, int, float, bool or None, as YAML 1.1 resolves a plain scalar
    text: str            # the scalar's string value (before type resolution)
    style: str | None    # None plain, "'" or '"' quoted, "|" or ">" block, "*" a refused alias
    start: int           # character offsets of the node in the document, [start, end)
    end: int
    span: Span


@dataclasses.dataclass(slots=True, eq=False)
class YSeq:
    items: list
    start: int
    end: int
    span: Span


@dataclasses.dataclass(slots=True, eq=False)
class YMap:
    items: list          # [(key node, value node)], in document order, duplicates dropped
    start: int
    end: int
    span: Span


YNode = Union[YScalar, YSeq, YMap]


def kind_of(node) -> str:
    """What a node is, in words, for "expected X, got Y" messages."""
    if isinstance(node, YMap):
        return "a mapping"
    if isinstance(node, YSeq):
        return "a list"
    value = node.value
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"a boolean ({node.text})"
    if isinstance(value, (int, float)):
        return f"a number ({node.text})"
    return f"a string ({node.text!r})" if len(node.text) <= 40 else "a string"


class Document:
    """One YAML text and the positions inside it."""

    def __init__(self, text: str, file: str):
        self.text = text
        self.file = file
        self.lines = LineIndex(text)

    def span(self, start: int, end: int) -> Span:
        """Span of the characters [start, end) (end inclusive in the Span, as diagnostics want)."""
        line, col = self.lines.position(start)
        end_line, end_col = self.lines.position(max(start, end - 1))
        return Span(self.file, line, col, end_line, end_col)

    def inner_span(self, node: YScalar, start: int, end: int) -> Span:
        """Span of the characters [start, end) of a scalar's *value* (e.g. one token of an
        expression), mapped back through quotes, escapes and folding. Falls back to the whole
        scalar where the mapping is not possible."""
        offsets = _align(node, self.text)
        if offsets is None or not node.text:
            return node.span
        start = min(max(start, 0), len(offsets) - 1)
        last = min(max(end - 1, start), len(offsets) - 1)
        if end > len(offsets):  # past the end ("expression ends too early"): just after it
            pos = offsets[-1] + 1
            line, col = self.lines.position(pos)
            return Span(self.file, line, col)
        line, col = self.lines.position(offsets[start])
        end_line, end_col = self.lines.position(offsets[last])
        return Span(self.file, line, col, end_line, end_col)


_SIMPLE_ESCAPES = {"0": "\0", "a": "\a", "b": "\b", "t": "\t", "\t": "\t", "n": "\n", "v": "\v",
                   "f": "\f", "r": "\r", "e": "\x1b", " ": " ", '"': '"', "/": "/", "\\": "\\",
                   "N": "\x85", "_": "\xa0", "L": "\u2028", "P": "\u2029"}
_HEX_LENGTH = {"x": 2, "u": 4, "U": 8}


def _escape_at(text: str, j: int) -> tuple[str | None, int]:
    """Decode the double-quoted escape starting at text[j] == '\\': (character or None, length)."""
    code = text[j + 1:j + 2]
    if code in _HEX_LENGTH:
        n = _HEX_LENGTH[code]
        try:
            return chr(int(text[j + 2:j + 2 + n], 16)), 2 + n
        except ValueError:
            return None, 2
    return _SIMPLE_ESCAPES.get(code), 2


def _align(node: YScalar, text: str) -> list[int] | None:
    """For each character of the scalar's value, its offset in the document; None if unsure.

    Walks the source and the value together: whitespace in the value matches any whitespace in
    the source (folding), source whitespace and quote doubling may be skipped, and escapes decode.
    """
    value = node.text
    i, end = node.start, node.end
    if node.style in ("'", '"'):
        i += 1
    elif node.style in ("|", ">"):
        newline = text.find("\n", i, end)
        if newline < 0:
            return None
        i = newline + 1
    out: list[int] = []
    for ch in value:
        while True:
            if i >= end:
                return None
            c = text[i]
            if c == ch or (ch.isspace() and c.isspace()):
                out.append(i)
                i += 1
                break
            if node.style == '"' and c == "\\":
                decoded, length = _escape_at(text, i)
                if decoded == ch:
                    out.append(i)
                    i += length
                    break
                i += length
                continue
            if c.isspace() or (node.style == "'" and c == "'"):
                i += 1
                continue
            return None
    return out


_resolver = yaml.resolver.Resolver()
_constructor = yaml.constructor.SafeConstructor()
_CONSTRUCT = {
    "tag:yaml.org,2002:int": _constructor.construct_yaml_int,
    "tag:yaml.org,2002:float": _constructor.construct_yaml_float,
    "tag:yaml.org,2002:bool": _constructor.construct_yaml_bool,
    "tag:yaml.org,2002:null": _constructor.construct_yaml_null,
}


def _resolve(value: str, plain: bool) -> object:
    """The typed value of a scalar: YAML 1.1 resolution for plain scalars, str for quoted ones.
    Only int/float/bool/null are constructed; anything else (timestamps, ...) stays a string."""
    if not plain:
        return value
    tag = _resolver.resolve(yaml.ScalarNode, value, (True, False))
    construct = _CONSTRUCT.get(tag)
    if construct is None:
        return value
    try:
        return construct(yaml.ScalarNode(tag, value))
    except (ValueError, OverflowError):  # e.g. an int with more digits than Python converts
        return value


def compose(text: str, file: str) -> tuple[YNode | None, list[Diagnostic], bool]:
    """Parse `text` into a node tree: (root or None, diagnostics, fatal).

    `fatal` is True when the document could not be read as a whole (syntax error, too deep, ...);
    the root is then None. Anchors, aliases and tags are reported once each and read as null /
    untagged, so the rest of the document still gets checked.
    """
    doc = Document(text, file)
    diags: list[Diagnostic] = []
    reported: set[str] = set()

    def once(code: str, message: str, span: Span, hint: str = ""):
        if code not in reported:
            reported.add(code)
            diags.append(Diagnostic(code, message, span, hint))

    def mark_span(start_mark, end_mark) -> Span:
        return doc.span(start_mark.index, max(end_mark.index, start_mark.index + 1))

    stack: list[list] = []   # [mapping, pending key, {key text: key node}] or [list, None, None]
    root: YNode | None = None
    documents = 0

    def attach(node):
        nonlocal root
        if not stack:
            root = node
            return
        parent = stack[-1]
        container = parent[0]
        if isinstance(container, YSeq):
            container.items.append(node)
        elif parent[1] is None:
            parent[1] = node
        else:
            key = parent[1]
            parent[1] = None
            if isinstance(key, YScalar):
                seen = parent[2]
                other = seen.get(key.text)
                if other is not None:
                    diags.append(Diagnostic(
                        "E012", f"duplicate key '{key.text}'", key.span,
                        f"'{key.text}' is already given on line {other.span.line}; "
                        "YAML would silently keep only the last one"))
                    return
                seen[key.text] = key
            container.items.append((key, node))

    try:
        for event in yaml.parse(text, Loader=_LOADER):
            if isinstance(event, ev.DocumentStartEvent):
                documents += 1
                if documents > 1:
                    diags.append(Diagnostic("E011", "a scene file holds one YAML document; this is "
                                            "a second one", mark_span(event.start_mark, event.end_mark),
                                            "remove the `---` line, or split the file"))
                    return root, diags, False
                continue
            if isinstance(event, (ev.StreamStartEvent, ev.StreamEndEvent, ev.DocumentEndEvent)):
                continue
            if isinstance(event, (ev.SequenceEndEvent, ev.MappingEndEvent)):
                node = stack.pop()[0]
                node.end = event.end_mark.index
                node.span = doc.span(node.start, node.end)
                continue
            span = mark_span(event.start_mark, event.end_mark)
            if isinstance(event, ev.AliasEvent):
                once("E006", "YAML aliases (*name) are not allowed in a scene", span,
                     "repeat the value, or define a parameter and use its name")
                attach(YScalar(None, "", "*", event.start_mark.index, event.end_mark.index, span))
                continue
            if event.anchor is not None:
                once("E006", "YAML anchors (&name) are not allowed in a scene", span,
                     "repeat the value, or define a parameter and use its name")
            if event.tag is not None and event.tag != "!":
                once("E007", f"YAML tags ({event.tag.replace('tag:yaml.org,2002:', '!!')}) are not "
                     "allowed in a scene", span, "remove the tag; scenec reads plain YAML only")
            start = event.start_mark.index
            if isinstance(event, ev.ScalarEvent):
                style = event.style or None  # libyaml says "" for plain scalars
                plain = style is None and event.implicit[0]
                node = YScalar(_resolve(event.value, plain), event.value, style,
                               start, event.end_mark.index, span)
                if style in ("'", '"') and "\n" not in text[start:event.end_mark.index]:
                    # Point at the content, not the opening quote (expressions count from there).
                    node.span = doc.span(start + 1, max(start + 2, event.end_mark.index - 1))
                attach(node)
                continue
            if len(stack) >= MAX_DEPTH:
                diags.append(Diagnostic("E008", f"the document nests deeper than {MAX_DEPTH} levels",
                                        span, "a scene is a few levels deep; is this the right file?"))
                return None, diags, True
            node = YSeq([], start, start, span) if isinstance(event, ev.SequenceStartEvent) \
                else YMap([], start, start, span)
            attach(node)
            stack.append([node, None, {}])
    except yaml.reader.ReaderError as e:
        line, col = doc.lines.position(min(e.position, len(text)))
        char = e.character if isinstance(e.character, str) else chr(e.character) \
            if isinstance(e.character, int) else "?"
        diags.append(Diagnostic("E003", f"the file contains a character that is not allowed in "
                                f"a text file ({char!r})", Span(file, line, col),
                                "is this a binary file?"))
        return None, diags, True
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        message = e.problem or e.context or "invalid YAML"
        if e.problem and e.context:
            where = e.context_mark
            elsewhere = where is not None and (where.line, where.column) != (mark.line, mark.column)
            message += f" ({e.context}" + (f" that started at {where.line + 1}:{where.column + 1}"
                                            if elsewhere else "") + ")"
        span = Span(file, mark.line + 1, mark.column + 1) if mark else Span(file, 1, 1)
        if "maximum nesting depth" in message:  # libyaml's own cap (1000), met while scanning
            diags.append(Diagnostic("E008", f"the document nests deeper than {MAX_DEPTH} levels",
                                    span, "a scene is a few levels deep; is this the right file?"))
        else:
            at = text[mark.index] if mark is not None and 0 <= mark.index < len(text) else ""
            diags.append(Diagnostic("E004", f"YAML syntax error: {message}", span, _yaml_hint(e, at)))
        return None, diags, True
    except yaml.YAMLError as e:  # pragma: no cover - every PyYAML error above is marked
        diags.append(Diagnostic("E004", f"YAML syntax error: {e}", Span(file, 1, 1)))
        return None, diags, True
    return root, diags, False


def _yaml_hint(error: yaml.MarkedYAMLError, at: str) -> str:
    problem = error.problem or ""
    if at == "\t" or "'\\t'" in problem:
        return "YAML indents with spaces, not tabs"
    if "mapping values are not allowed" in problem:
        return "a value containing ': ' must be quoted"
    return ""
