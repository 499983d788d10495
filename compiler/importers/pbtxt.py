"""Protobuf text format with positions, checked against a small schema given as data.

Where it sits: the Brax v1 importer reads configs through `parse(text, file, schema, root)`. The
standard `google.protobuf.text_format` needs generated message classes and forgets where each field
was written; this reader keeps a line:col for every field and value, so a semantic problem found
later (an unknown body name in a joint) points at the text that caused it.

Grammar accepted (the text format as protoc writes and people edit it):
    message := field*
    field   := NAME ( ':' value | ':'? ('{' message '}' | '<' message '>') ) (',' | ';')?
    value   := number | string+ | NAME | '[' (value (',' value)*)? ']'
with `#` comments. Numbers may be written like `.45`, `-3`, `1e-3`, `inf`; strings in single or
double quotes with C escapes; adjacent strings concatenate.

A schema is `{message: {field: (type, repeated)}}` where type is "double", "int", "bool",
"string", or another message's name.
"""

from __future__ import annotations

import dataclasses
import re

from scenec.schema.diagnostics import Span

MAX_DEPTH = 64

_TOKEN = re.compile(r"""
    (?P<ws>[ \t\r\n]+|\#[^\n]*)
  | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<number>[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)[fF]?(?![\w.]))
  | (?P<name>[-]?[A-Za-z_][A-Za-z0-9_]*)
  | (?P<punct>[{}\[\]<>:,;])
""", re.VERBOSE)

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "a": "\a",
            "b": "\b", "f": "\f", "v": "\v", "?": "?"}


class PbtxtError(Exception):
    def __init__(self, code: str, message: str, span: Span, hint: str = ""):
        super().__init__(message)
        self.code, self.message, self.span, self.hint = code, message, span, hint


@dataclasses.dataclass
class Field:
    name: str
    value: object            # float | int | bool | str | Message | list of those (repeated)
    span: Span               # of the field name


@dataclasses.dataclass
class Message:
    type: str
    fields: dict[str, Field] = dataclasses.field(default_factory=dict)
    span: Span | None = None

    def get(self, name: str, default=None):
        f = self.fields.get(name)
        return default if f is None else f.value

    def has(self, name: str) -> bool:
        return name in self.fields

    def span_of(self, name: str) -> Span | None:
        f = self.fields.get(name)
        return f.span if f is not None else self.span


@dataclasses.dataclass
class _Tok:
    kind: str
    text: str
    line: int
    col: int


def _unquote(text: str) -> str:
    body = text[1:-1]
    out = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in _ESCAPES:
                out.append(_ESCAPES[nxt])
                i += 2
                continue
            m = re.match(r"[0-7]{1,3}", body[i + 1:])
            if m:
                out.append(chr(int(m.group(), 8)))
                i += 1 + len(m.group())
                continue
            m = re.match(r"x([0-9A-Fa-f]{1,2})", body[i + 1:])
            if m:
                out.append(chr(int(m.group(1), 16)))
                i += 1 + len(m.group())
                continue
            out.append(nxt)
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def tokenize(text: str, file: str) -> list[_Tok]:
    toks = []
    pos, line, line_start = 0, 1, 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise PbtxtError("E713", f"unexpected character {text[pos]!r}",
                             Span(file, line, pos - line_start + 1))
        kind = m.lastgroup
        if kind != "ws":
            toks.append(_Tok(kind, m.group(), line, pos - line_start + 1))
        nl = m.group().count("\n")
        if nl:
            line += nl
            line_start = m.start() + m.group().rfind("\n") + 1
        pos = m.end()
    toks.append(_Tok("eof", "", line, pos - line_start + 1))
    return toks


class _Parser:
    def __init__(self, toks, file, schema):
        self.toks, self.i, self.file, self.schema = toks, 0, file, schema

    def span(self, t: _Tok) -> Span:
        return Span(self.file, t.line, t.col, t.line, t.col + max(len(t.text), 1) - 1)

    def peek(self) -> _Tok:
        return self.toks[self.i]

    def take(self) -> _Tok:
        t = self.toks[self.i]
        self.i += 1
        return t

    def expect(self, text: str) -> _Tok:
        t = self.take()
        if t.text != text or t.kind not in ("punct",):
            what = "end of file" if t.kind == "eof" else repr(t.text)
            raise PbtxtError("E713", f"expected '{text}', found {what}", self.span(t))
        return t

    def message(self, mtype: str, close: str | None, depth: int, start: _Tok | None) -> Message:
        if depth > MAX_DEPTH:
            raise PbtxtError("E713", f"messages nested more than {MAX_DEPTH} deep", self.span(start))
        msg = Message(mtype, span=self.span(start) if start else Span(self.file, 1, 1))
        fields = self.schema[mtype]
        while True:
            t = self.peek()
            if close is not None and t.text == close and t.kind == "punct":
                self.take()
                return msg
            if t.kind == "eof":
                if close is None:
                    return msg
                raise PbtxtError("E713", f"unexpected end of file: '{close}' missing", self.span(t))
            if t.kind != "name":
                raise PbtxtError("E713", f"expected a field name, found {t.text!r}", self.span(t))
            self.take()
            name = t.text
            if name not in fields:
                import difflib

                close_names = difflib.get_close_matches(name, sorted(fields), n=1)
                raise PbtxtError("E714", f"{mtype} has no field '{name}'", self.span(t),
                                 f"did you mean '{close_names[0]}'?" if close_names else "")
            ftype, repeated = fields[name]
            values = self.field_value(ftype, t, depth)
            if repeated:
                if name in msg.fields:
                    msg.fields[name].value.extend(values)
                else:
                    msg.fields[name] = Field(name, list(values), self.span(t))
            else:
                if len(values) != 1:
                    raise PbtxtError("E714", f"field '{name}' of {mtype} takes one value",
                                     self.span(t))
                msg.fields[name] = Field(name, values[0], self.span(t))
            nxt = self.peek()
            if nxt.kind == "punct" and nxt.text in ",;":
                self.take()

    def field_value(self, ftype: str, name_tok: _Tok, depth: int) -> list:
        is_msg = ftype in self.schema
        t = self.peek()
        if t.kind == "punct" and t.text == ":":
            self.take()
            t = self.peek()
        elif not is_msg:
            raise PbtxtError("E713", f"expected ':' after '{name_tok.text}'", self.span(t))
        if t.kind == "punct" and t.text == "[":
            self.take()
            out = []
            while not (self.peek().kind == "punct" and self.peek().text == "]"):
                out.append(self.single(ftype, name_tok, depth))
                if self.peek().kind == "punct" and self.peek().text == ",":
                    self.take()
                elif not (self.peek().kind == "punct" and self.peek().text == "]"):
                    raise PbtxtError("E713", "expected ',' or ']' in a list", self.span(self.peek()))
            self.take()
            return out
        return [self.single(ftype, name_tok, depth)]

    def single(self, ftype: str, name_tok: _Tok, depth: int):
        t = self.take()
        if ftype in self.schema:
            if t.kind == "punct" and t.text in "{<":
                return self.message(ftype, "}" if t.text == "{" else ">", depth + 1, name_tok)
            raise PbtxtError("E714", f"field '{name_tok.text}' is a {ftype} message: expected "
                             f"'{{', found {t.text!r}", self.span(t))
        if ftype == "string":
            if t.kind != "string":
                raise PbtxtError("E714", f"field '{name_tok.text}' takes a quoted string, not "
                                 f"{t.text!r}", self.span(t))
            s = _unquote(t.text)
            while self.peek().kind == "string":
                s += _unquote(self.take().text)
            return s
        if ftype == "bool":
            if t.text in ("true", "True", "t", "1"):
                return True
            if t.text in ("false", "False", "f", "0"):
                return False
            raise PbtxtError("E714", f"field '{name_tok.text}' takes true or false, not {t.text!r}",
                             self.span(t))
        # numbers
        text = t.text.rstrip("fF") if t.kind == "number" else t.text
        if t.kind == "name" and text.lstrip("-").lower() in ("inf", "infinity", "nan"):
            val = float(text)
        elif t.kind == "number":
            val = float(text)
        else:
            raise PbtxtError("E714", f"field '{name_tok.text}' takes a number, not {t.text!r}",
                             self.span(t))
        if ftype == "int":
            if not val.is_integer():
                raise PbtxtError("E714", f"field '{name_tok.text}' takes an integer, not {t.text}",
                                 self.span(t))
            return int(val)
        return val


def parse(text: str, file: str, schema: dict, root: str) -> Message:
    """Parse protobuf text into a Message tree of type `root`; raises PbtxtError (E713 syntax,
    E714 unknown field or wrong value type) at the first problem, located."""
    toks = tokenize(text, file)
    return _Parser(toks, file, schema).message(root, None, 0, None)
