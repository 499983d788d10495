"""Protobuf text (.pbtxt) -> `Scene` message + source map.

Where it sits: schema/, the loader for scenes written in protobuf text format. Parsing is
`google.protobuf.text_format`'s; its errors carry `line:col` and become diagnostics (unknown fields
get a did-you-mean like in YAML). On success a small tokenizer walks the same text once more to
record where each field path was written, so semantic errors found later also get a line:col.
No jax.
"""

from __future__ import annotations

import re

from google.protobuf import text_format
from google.protobuf.descriptor import FieldDescriptor as FD

from . import names, scene_pb2
from .diagnostics import Diagnostic, Span
from .source_map import LineIndex

_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<comment>\#[^\n]*)
  | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<word>-?\s*[\w.+-]+)
  | (?P<punct>[{}<>\[\]:,;/])
""", re.VERBOSE)


def parse(text: str, file: str) -> tuple[scene_pb2.Scene, dict | None, list[Diagnostic]]:
    """(scene, spans or None when the text did not parse, diagnostics)."""
    scene = scene_pb2.Scene()
    try:
        text_format.Parse(text, scene)
    except text_format.ParseError as e:
        return scene_pb2.Scene(), None, [_parse_error(e, file)]
    except RecursionError:
        return scene_pb2.Scene(), None, [Diagnostic("E008", "the document nests too deeply",
                                                    Span(file, 1, 1))]
    return scene, _Walker(text, file).spans(), []


_NO_FIELD = re.compile(r'Message type "scenec\.(\w+)" has no field named "([^"]+)"')
_ONEOF = re.compile(r'Field "(\w+)" is specified along with field "(\w+)", another member of oneof')
_REPEATED_SINGULAR = re.compile(r'should not have multiple "(\w+)" fields')
_ENUM = re.compile(r'Enum type "scenec\.(\w+)" has no value named ([^.\s]+)')


def _parse_error(e: text_format.ParseError, file: str) -> Diagnostic:
    line, col = e.GetLine() or 1, e.GetColumn() or 1
    span = Span(file, line, col)
    text = str(e)
    message = text.split(" : ", 1)[-1] if " : " in text else text
    if (m := _NO_FIELD.search(text)):
        owner, field = m.groups()
        desc = getattr(scene_pb2, owner).DESCRIPTOR
        return Diagnostic("E101", f"unknown field '{field}' in {owner}", span,
                          names.did_you_mean(field, desc.fields_by_name)
                          or names.choices(desc.fields_by_name))
    if (m := _ONEOF.search(text)):
        return Diagnostic("E103", f"'{m.group(1)}' and '{m.group(2)}' are both given, but only one "
                          "of them may be", span)
    if (m := _REPEATED_SINGULAR.search(text)):
        return Diagnostic("E012", f"duplicate field '{m.group(1)}'", span)
    if (m := _ENUM.search(text)):
        enum = getattr(scene_pb2, m.group(1)).DESCRIPTOR
        options = [v.name for v in enum.values]
        hint = names.did_you_mean(m.group(2).upper(), options) or names.choices(options)
        return Diagnostic("E104", f"unknown {m.group(1)} value '{m.group(2)}'", span,
                          hint + " (protobuf text spells enum values in capitals)")
    return Diagnostic("E005", f"protobuf text syntax error: {message}", span)


class _Walker:
    """Records the span of every field path in a text that text_format accepted.

    The text is known to be well formed for `Scene`, so the walk only needs to follow the shape:
    `name [:] { ... }`, `name: value`, `name: [v, v, ...]`, and count the entries of repeated
    fields. Strings and comments are skipped as whole tokens.
    """

    def __init__(self, text: str, file: str):
        self.file = file
        self.lines = LineIndex(text)
        self.tokens = [(m.lastgroup, m.group(), m.start(), m.end())
                       for m in _TOKEN.finditer(text) if m.lastgroup not in ("space", "comment")]
        self.pos = 0
        self.out: dict[tuple, Span] = {}

    def span(self, token) -> Span:
        kind, value, start, end = token
        if kind == "string" and end - start >= 2:
            start, end = start + 1, end - 1
        line, col = self.lines.position(start)
        end_line, end_col = self.lines.position(max(start, end - 1))
        return Span(self.file, line, col, end_line, end_col)

    def peek(self):
        return self.tokens[self.pos] if self.pos < len(self.tokens) else ("end", "", 0, 0)

    def take(self):
        token = self.peek()
        self.pos += 1
        return token

    def spans(self) -> dict:
        self.out[()] = Span(self.file, 1, 1)
        self.body(scene_pb2.Scene.DESCRIPTOR, (), closer=None)
        return self.out

    def body(self, desc, path: tuple, closer: str | None):
        counts: dict[str, int] = {}
        while True:
            token = self.peek()
            if token[0] == "end" or (token[0] == "punct" and token[1] == closer):
                self.take()
                return
            if token[0] == "punct":  # separators between fields
                self.take()
                continue
            name_token = self.take()
            field = desc.fields_by_name.get(name_token[1])
            if field is None:  # cannot happen once text_format accepted the text; stop quietly
                self.pos = len(self.tokens)
                return
            if self.peek()[1] == ":":
                self.take()
            self.value(field, path, counts, name_token)

    def next_index(self, field, path: tuple, counts: dict) -> tuple:
        if not field.is_repeated:
            return path + (field.name,)
        index = counts.get(field.name, 0)
        counts[field.name] = index + 1
        return path + (field.name, index)

    def value(self, field, path: tuple, counts: dict, name_token):
        token = self.peek()
        if token[1] == "[":
            self.take()
            if field.is_repeated:
                self.out.setdefault(path + (field.name,), self.span(name_token))
            while self.peek()[1] not in ("]", ""):
                if self.peek()[1] == ",":
                    self.take()
                    continue
                self.single(field, self.next_index(field, path, counts))
            self.take()
            return
        if field.is_repeated:
            self.out.setdefault(path + (field.name,), self.span(name_token))
        here = self.next_index(field, path, counts)
        if field.type == FD.TYPE_MESSAGE:
            self.out[here] = self.span(name_token)
        self.single(field, here)

    def single(self, field, here: tuple):
        token = self.take()
        if field.type == FD.TYPE_MESSAGE:
            self.out.setdefault(here, self.span(token))
            self.body(field.message_type, here, "}" if token[1] == "{" else ">")
            return
        self.out[here] = self.span(token)
        while token[0] == "string" and self.peek()[0] == "string":  # "a" "b" concatenates
            token = self.take()
