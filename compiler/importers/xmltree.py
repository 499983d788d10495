"""A small XML tree that remembers where every element and attribute was written.

Where it sits: the MJCF and URDF importers read their files through `parse()`; every element
carries its file:line:col so that each diagnostic about a model points at the element or
attribute that caused it. Built on the standard library's expat (`xml.parsers.expat`), which
reports positions; lxml is not a dependency.

Hostile documents: DOCTYPE entity declarations are refused (no entity expansion at all, so no
"billion laughs"), external entities are never fetched, files are capped in size and depth.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Iterator
from xml.parsers import expat

from scenec.schema.diagnostics import Span

MAX_BYTES = 64 * 1024 * 1024   # an MJCF with inline meshes can be large; beyond this it is an error
MAX_DEPTH = 200                # deeper nesting than any real model; stops runaway recursion


@dataclasses.dataclass(eq=False)
class Element:
    tag: str
    attrib: dict[str, str]
    file: str
    line: int                   # 1-based
    col: int                    # 1-based, characters
    offset: int                 # character offset of '<' in `doc.text`
    doc: "Document"
    parent: "Element | None" = None
    children: list["Element"] = dataclasses.field(default_factory=list)
    text: str = ""

    @property
    def span(self) -> Span:
        return Span(self.doc.file, self.line, self.col, self.line, self.col + len(self.tag))

    def get(self, name: str, default: str | None = None) -> str | None:
        return self.attrib.get(name, default)

    def attr_span(self, name: str) -> Span:
        """The span of `name="value"` inside this element's start tag (the element if not found)."""
        return self.doc.attr_span(self, name)

    def iter(self) -> Iterator["Element"]:
        yield self
        for c in self.children:
            yield from c.iter()


class XmlError(Exception):
    def __init__(self, message: str, span: Span):
        super().__init__(message)
        self.message = message
        self.span = span


class Document:
    """The text of one XML file and the mapping from character offsets to line:col."""

    def __init__(self, file: str, text: str):
        self.file = file
        self.text = text
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def position(self, offset: int) -> tuple[int, int]:
        lo, hi = 0, len(self._line_starts) - 1
        while lo < hi:  # last line start <= offset
            mid = (lo + hi + 1) // 2
            if self._line_starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1, offset - self._line_starts[lo] + 1

    def start_tag_end(self, offset: int) -> int:
        """Offset just past the '>' closing the start tag that begins at `offset`."""
        quote = ""
        i = offset
        text = self.text
        while i < len(text):
            ch = text[i]
            if quote:
                if ch == quote:
                    quote = ""
            elif ch in "\"'":
                quote = ch
            elif ch == ">":
                return i + 1
            i += 1
        return len(text)

    def attr_span(self, element: Element, name: str) -> Span:
        end = self.start_tag_end(element.offset)
        tag = self.text[element.offset:end]
        m = re.search(r"(?<![\w:.\-])" + re.escape(name) + r"\s*=\s*(\"[^\"]*\"|'[^']*')", tag)
        if not m:
            return element.span
        line, col = self.position(element.offset + m.start())
        end_line, end_col = self.position(element.offset + m.end() - 1)
        if end_line != line:
            end_line, end_col = line, col + len(name) - 1
        return Span(self.file, line, col, end_line, end_col)


def _char_offsets(data: bytes):
    """A function byte offset -> character offset of UTF-8 `data` (identity for ASCII)."""
    if data.isascii():
        return lambda b: b
    starts = [i for i, byte in enumerate(data) if (byte & 0xC0) != 0x80]
    import bisect

    return lambda b: bisect.bisect_left(starts, b)


def parse(data: bytes | str, file: str) -> Element:
    """Parse one XML document into an Element tree. Raises XmlError (with a span) when the text is
    not well-formed, too large or too deep, or declares entities."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    if len(data) > MAX_BYTES:
        raise XmlError(f"file is larger than {MAX_BYTES // (1024 * 1024)} MB", Span(file, 1, 1))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        head = data[:e.start].decode("utf-8", errors="replace")
        line = head.count("\n") + 1
        col = len(head) - (head.rfind("\n") + 1) + 1
        raise XmlError("the file is not UTF-8 text (is it a binary file?)", Span(file, line, col)) from None
    if text.startswith("\ufeff"):
        text = text[1:]
        data = text.encode("utf-8")
    doc = Document(file, text)
    to_char = _char_offsets(data)
    parser = expat.ParserCreate()
    root: list[Element] = []
    stack: list[Element] = []

    def here() -> tuple[int, int, int]:
        off = to_char(parser.CurrentByteIndex)
        line, col = doc.position(off)
        return off, line, col

    def start(tag, attrs):
        off, line, col = here()
        if len(stack) >= MAX_DEPTH:
            raise XmlError(f"elements are nested more than {MAX_DEPTH} deep", Span(file, line, col))
        el = Element(tag, dict(attrs), file, line, col, off, doc, stack[-1] if stack else None)
        if stack:
            stack[-1].children.append(el)
        else:
            root.append(el)
        stack.append(el)

    def end(tag):
        stack.pop()

    def chars(s):
        if stack:
            stack[-1].text += s

    def entity_decl(*args):
        off, line, col = here()
        raise XmlError("entity declarations are not allowed in model files", Span(file, line, col))

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = chars
    parser.EntityDeclHandler = entity_decl
    parser.ordered_attributes = False
    try:
        parser.Parse(data, True)
    except expat.ExpatError as e:
        line = e.lineno
        line_text = text.splitlines()[line - 1] if 0 < line <= len(text.splitlines()) else ""
        # expat's offset counts bytes; turn it into a character column
        col = len(line_text.encode("utf-8")[:e.offset].decode("utf-8", errors="ignore")) + 1
        raise XmlError(f"malformed XML: {expat.ErrorString(e.code)}", Span(file, line, col)) from None
    if not root:
        raise XmlError("malformed XML: no element found", Span(file, 1, 1))
    return root[0]
