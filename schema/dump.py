"""The YAML writer: a `Scene` message → tidy, readable YAML that loads back to the same message.

Where it sits: the reverse of `scenec.schema.load`. `scenec import` writes imported models with it;
people who build scenes in Python save them with it. No jax, no yaml emitter: PyYAML's dumper
cannot put comments above entries or keep short vectors on one line, so the text is built here
field by field from the message's descriptor.

    dump_yaml(scene, notes=None, header="") -> str

Layout: fields in the proto's order; fields at their default are left out (a scalar with presence
is written whenever it is set, even to its default); enum values are lowercase words; a oneof is
its key (`capsule: {radius: 0.04, half_length: 0.1}`); vectors and small messages use flow style
on one line (`pos: [0, 0, 1]`), long vectors wrap; bodies, joints and any message too long for
one line use block style. Numbers are printed exactly: integral values as integers, the rest as Python's
shortest round-trip repr (0.30000000000000004 stays as it is), with ".0" added before an exponent
because YAML 1.1 resolvers read `1e-05` as a string but `1.0e-05` as a float.

`notes` maps a field path (`("bodies", 3, "colliders", 0)`, the source map's form) to a comment
written above that entry; a note whose entry is not written (the field is at its default) goes
into the header, so nothing is lost. `header` lines become comments at the top.
"""

from __future__ import annotations

import json
import math
import re

import yaml
from google.protobuf import descriptor as _descriptor

WIDTH = 100          # flow-style lines longer than this are wrapped or written in block style
INDENT = 2

# Enum fields written even at their zero value, because a reader expects to see them.
ALWAYS = {("scenec.Joint", "kind"), ("scenec.Actuator", "kind")}
# Lists whose items are always written in block style (one field per line), however short.
BLOCK_LISTS = {("scenec.Scene", "bodies"), ("scenec.Scene", "joints")}

_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-/]*(?: [A-Za-z0-9_.\-/]+)*")
_T = _descriptor.FieldDescriptor


def format_number(x: float) -> str:
    """Exact, short YAML form of a double (see the module docstring)."""
    x = float(x)
    if math.isnan(x):
        return ".nan"
    if math.isinf(x):
        return ".inf" if x > 0 else "-.inf"
    if x == 0.0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0"
    if x.is_integer() and abs(x) < 1e16:
        return str(int(x))
    r = repr(x)
    if "e" in r and "." not in r.split("e")[0]:
        mant, exp = r.split("e")
        r = f"{mant}.0e{exp}"
    return r


# Characters a YAML double-quoted scalar must escape: quotes, backslashes, everything outside
# YAML's printable set, and the characters YAML treats as line breaks (they would be folded).
_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff\ud800-\udfff]')
_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def format_string(s: str) -> str:
    """A plain scalar when YAML reads it back as the same string, else a double-quoted one."""
    if _PLAIN.fullmatch(s):
        try:
            if yaml.safe_load(s) == s:
                return s
        except yaml.YAMLError:
            pass
    body = _NEEDS_ESCAPE.sub(lambda m: _SHORT_ESCAPES.get(m.group(), f"\\u{ord(m.group()):04x}"), s)
    return f'"{body}"'


def _is_repeated(fd) -> bool:
    # protobuf >= 5 has `is_repeated`; `label` is deprecated there
    rep = getattr(fd, "is_repeated", None)
    return rep if isinstance(rep, bool) else fd.label == _T.LABEL_REPEATED


def _present(msg):
    """(field descriptor, value) of the fields to write, in declaration order."""
    out = []
    for fd in msg.DESCRIPTOR.fields:
        value = getattr(msg, fd.name)
        if _is_repeated(fd):
            if len(value):
                out.append((fd, value))
        elif fd.has_presence:
            if msg.HasField(fd.name):
                out.append((fd, value))
        elif value != fd.default_value or (msg.DESCRIPTOR.full_name, fd.name) in ALWAYS:
            out.append((fd, value))
    return out


def _scalar(fd, value) -> str:
    t = fd.type
    if t in (_T.TYPE_DOUBLE, _T.TYPE_FLOAT):
        return format_number(value)
    if t == _T.TYPE_BOOL:
        return "true" if value else "false"
    if t == _T.TYPE_STRING:
        return format_string(value)
    if t == _T.TYPE_ENUM:
        return fd.enum_type.values_by_number[value].name.lower()
    if t == _T.TYPE_BYTES:
        return json.dumps(value.decode("latin-1"))
    return str(int(value))


class _Writer:
    def __init__(self, notes: dict | None):
        self.notes = {tuple(k): v for k, v in (notes or {}).items()}
        self.used: set[tuple] = set()
        self.lines: list[str] = []

    # -- comments

    def comment(self, path: tuple, indent: int) -> None:
        text = self.notes.get(path)
        if text is None:
            return
        self.used.add(path)
        for line in str(text).splitlines() or [""]:
            self.lines.append(" " * indent + ("# " + line).rstrip())

    def has_notes_below(self, path: tuple) -> bool:
        n = len(path)
        return any(len(k) > n and k[:n] == path for k in self.notes)

    # -- flow style

    def flow_value(self, fd, value, path) -> str | None:
        """One-line text of a field's value, or None when it must be written in block style."""
        if _is_repeated(fd):
            if fd.type == _T.TYPE_MESSAGE:
                return None
            return "[" + ", ".join(_scalar(fd, v) for v in value) + "]"
        if fd.type == _T.TYPE_MESSAGE:
            return self.flow_message(value, path)
        return _scalar(fd, value)

    def flow_message(self, msg, path) -> str | None:
        if self.has_notes_below(path):
            return None
        parts = []
        for fd, value in _present(msg):
            if _is_repeated(fd) and fd.type != _T.TYPE_MESSAGE and len(value) > 8:
                return None  # long vectors read better on their own line
            text = self.flow_value(fd, value, path + (fd.name,))
            if text is None:
                return None
            parts.append(f"{fd.name}: {text}")
        return "{" + ", ".join(parts) + "}"

    # -- block style

    def mapping(self, msg, path: tuple, indent: int, top: bool = False) -> None:
        pad = " " * indent
        for fd, value in _present(msg):
            fpath = path + (fd.name,)
            self.comment(fpath, indent)
            if top and fd.name == "parameters":
                self.lines.extend(_parameters(value))
                continue
            if _is_repeated(fd) and fd.type == _T.TYPE_MESSAGE:
                self.lines.append(f"{pad}{fd.name}:")
                block = (msg.DESCRIPTOR.full_name, fd.name) in BLOCK_LISTS
                for i, item in enumerate(value):
                    self.list_item(item, fpath + (i,), indent + INDENT, block)
                continue
            if _is_repeated(fd):
                self.vector(fd, value, pad)
                continue
            if fd.type == _T.TYPE_MESSAGE:
                text = None if top else self.flow_message(value, fpath)
                if text is not None and len(pad) + len(fd.name) + 2 + len(text) <= WIDTH:
                    self.lines.append(f"{pad}{fd.name}: {text}")
                elif not _present(value):
                    self.lines.append(f"{pad}{fd.name}: {{}}")
                else:
                    self.lines.append(f"{pad}{fd.name}:")
                    self.mapping(value, fpath, indent + INDENT)
                continue
            self.lines.append(f"{pad}{fd.name}: {_scalar(fd, value)}")

    def vector(self, fd, value, pad: str) -> None:
        items = [_scalar(fd, v) for v in value]
        head = f"{pad}{fd.name}: ["
        one = head + ", ".join(items) + "]"
        if len(one) <= WIDTH:
            self.lines.append(one)
            return
        # wrap: continuation lines indented past the key so the flow sequence stays inside it
        cont = pad + " " * INDENT
        line = head
        first = True
        for i, item in enumerate(items):
            piece = item + ("," if i < len(items) - 1 else "]")
            if not first and len(line) + 1 + len(piece) > WIDTH:
                self.lines.append(line)
                line = cont + piece
            else:
                line = line + ("" if first else " ") + piece
            first = False
        self.lines.append(line)

    def list_item(self, msg, path: tuple, indent: int, block: bool = False) -> None:
        self.comment(path, indent)
        text = None if block else self.flow_message(msg, path)
        if text is not None and indent + 2 + len(text) <= WIDTH:
            self.lines.append(" " * indent + "- " + text)
            return
        if not _present(msg):
            self.lines.append(" " * indent + "- {}")
            return
        start = len(self.lines)
        self.mapping(msg, path, indent + INDENT)
        # the first line that is not a comment carries the dash
        for k in range(start, len(self.lines)):
            if not self.lines[k].lstrip().startswith("#"):
                self.lines[k] = " " * indent + "- " + self.lines[k][indent + INDENT:]
                break


def _parameters(params) -> list[str]:
    """`parameters:` in the loader's mapping form (name: value or expression), or its list form
    when a parameter carries a doc string."""
    if any(p.doc for p in params):
        out = ["parameters:"]
        for p in params:
            fields = [f"name: {format_string(p.name)}",
                      "value: " + (format_string(p.expression) if p.expression
                                   else format_number(p.value))]
            if p.doc:
                fields.append(f"doc: {format_string(p.doc)}")
            out.append(" " * INDENT + "- {" + ", ".join(fields) + "}")
        return out
    out = ["parameters:"]
    for p in params:
        v = format_string(p.expression) if p.expression else format_number(p.value)
        out.append(" " * INDENT + f"{format_string(p.name)}: {v}")
    return out


def dump_yaml(scene, notes: dict | None = None, header: str = "") -> str:
    """YAML text of `scene` (any scene_pb2.Scene); see the module docstring."""
    w = _Writer(notes)
    w.mapping(scene, (), 0, top=True)
    head = [("# " + line).rstrip() for line in header.splitlines()] if header else []
    unplaced = [(k, v) for k, v in w.notes.items() if k not in w.used]
    if unplaced:
        head.append("# notes on entries left at their defaults:")
        for k, v in sorted(unplaced, key=lambda kv: [str(p) for p in kv[0]]):
            where = ".".join(str(p) for p in k)
            for line in str(v).splitlines():
                head.append(f"#   {where}: {line}".rstrip())
    return "\n".join(head + w.lines) + "\n"
