"""`load(source)`: a scene file, YAML text or a Python-built message -> `Loaded`.

Where it sits: the entry of schema/. Everything downstream (compiler/validate.py, the compiler's
front end, `scenec check`) starts from a `Loaded`: the `Scene` message with every expression folded
to an SI constant, a `SourceMap` from field paths to spans, and the diagnostics found while reading.
User errors never raise: they are diagnostics, and `scene` may then be partial. No jax.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib

from . import expr, names, pbtxt, scene_pb2, units
from .diagnostics import Diagnostic, Span
from .from_yaml import Converter
from .source_map import LineIndex, SourceMap
from .yaml_tree import Document, YMap, YScalar, compose, kind_of

MAX_FILE_BYTES = 16 * 1024 * 1024  # scenes are kilobytes; refuse before reading anything bigger

YAML_SUFFIXES = (".yaml", ".yml")
PBTXT_SUFFIXES = (".pbtxt", ".textproto", ".txtpb")


@dataclasses.dataclass(frozen=True)
class Loaded:
    scene: scene_pb2.Scene                  # expressions folded to SI constants
    source_map: SourceMap
    diagnostics: tuple[Diagnostic, ...]
    sources: dict[str, str]                 # file name -> text, for rendering carets
    path: pathlib.Path | None               # the scene file, None for text/messages
    base_dir: pathlib.Path                  # where relative mesh paths resolve
    allow_outside: bool = False             # mesh files outside base_dir are allowed


def load(source, *, allow_outside: bool = False) -> Loaded:
    """Read a scene from a path, YAML text, or a `scene_pb2.Scene` message.

    A str is a path when it has no newline and ends in .yaml/.yml/.pbtxt; any other str is YAML
    text. A message is copied (the caller's is never changed); parameters given with an
    `expression` are evaluated in order.
    """
    if isinstance(source, scene_pb2.Scene):
        return _load_message(source, allow_outside)
    if isinstance(source, os.PathLike) or (
            isinstance(source, str) and "\n" not in source
            and source.lower().endswith(YAML_SUFFIXES + PBTXT_SUFFIXES)):
        return _load_file(source, allow_outside)
    if isinstance(source, str):
        return _load_text(source, "<string>", None, pathlib.Path.cwd(), "yaml", allow_outside)
    raise TypeError(f"load() takes a path, YAML text or a scene_pb2.Scene, not {type(source).__name__}")


def _failed(file: str, diagnostics, sources, path, base_dir, allow_outside) -> Loaded:
    return Loaded(scene_pb2.Scene(), SourceMap(file, {}, fatal=True), tuple(diagnostics),
                  sources, path, base_dir, allow_outside)


def _load_file(source, allow_outside: bool) -> Loaded:
    file = os.fspath(source)
    path = pathlib.Path(file)
    base_dir = path.parent.resolve()
    here = Span(file, 0, 0)
    suffix = path.suffix.lower()
    if suffix in YAML_SUFFIXES:
        fmt = "yaml"
    elif suffix in PBTXT_SUFFIXES:
        fmt = "pbtxt"
    else:
        return _failed(file, [Diagnostic(
            "E013", f"'{path.name}' is not a scene file scenec reads", here,
            "scenes are .yaml/.yml or .pbtxt files; MJCF, URDF and Brax configs go through "
            "`scenec import`")], {}, path, base_dir, allow_outside)
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            return _failed(file, [_too_large(here, size)], {}, path, base_dir, allow_outside)
        with open(path, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        return _failed(file, [_io_error(path, file, e)], {}, path, base_dir, allow_outside)
    if len(data) > MAX_FILE_BYTES:  # grew, or a special file that reports no size
        return _failed(file, [_too_large(here, len(data))], {}, path, base_dir, allow_outside)
    text, problem = _decode(data, file)
    if problem is not None:
        return _failed(file, [problem], {file: text}, path, base_dir, allow_outside)
    loaded = _load_text(text, file, path, base_dir, fmt, allow_outside)
    if not loaded.scene.name and not loaded.source_map.fatal:
        loaded.scene.name = path.stem
    return loaded


def _too_large(span: Span, size: int) -> Diagnostic:
    return Diagnostic("E002", f"the file is too large ({size} bytes; the limit is {MAX_FILE_BYTES})",
                      span, "a scene is a few kilobytes; is this the right file?")


def _io_error(path: pathlib.Path, file: str, error: OSError) -> Diagnostic:
    hint = ""
    if isinstance(error, FileNotFoundError):
        reason = "no such file"
        try:
            siblings = [p.name for p in path.parent.iterdir()] if path.parent.is_dir() else []
        except OSError:
            siblings = []
        hint = names.did_you_mean(path.name, siblings)
    elif isinstance(error, IsADirectoryError):
        reason = "it is a directory"
    elif isinstance(error, PermissionError):
        reason = "permission denied"
    else:
        reason = error.strerror or str(error)
    return Diagnostic("E001", f"cannot read '{file}': {reason}", Span(file, 0, 0), hint)


def _decode(data: bytes, file: str) -> tuple[str, Diagnostic | None]:
    """UTF-8 (a BOM is dropped); invalid bytes are reported at their line:col."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as e:
        text = data.decode("utf-8", errors="replace")
        good = data[:e.start].decode("utf-8", errors="replace")
        line, col = LineIndex(good).position(len(good))
        return text, Diagnostic("E003", f"the file is not UTF-8 text (byte 0x{data[e.start]:02x} at "
                                f"offset {e.start})", Span(file, line, col),
                                "is this a binary file? save scenes as UTF-8")


def _load_text(text: str, file: str, path, base_dir, fmt: str, allow_outside: bool) -> Loaded:
    sources = {file: text}
    if len(text) > MAX_FILE_BYTES:
        return _failed(file, [_too_large(Span(file, 0, 0), len(text))], sources, path, base_dir,
                       allow_outside)
    if fmt == "pbtxt":
        scene, spans, diagnostics = pbtxt.parse(text, file)
        if spans is None:
            return _failed(file, diagnostics, sources, path, base_dir, allow_outside)
        source_map = SourceMap(file, spans)
        failed: set = set()
        diagnostics += fold_parameters(scene, source_map, failed, text)
        return Loaded(scene, SourceMap(file, spans, failed), tuple(diagnostics), sources, path,
                      base_dir, allow_outside)

    root, diagnostics, fatal = compose(text, file)
    if fatal:
        return _failed(file, diagnostics, sources, path, base_dir, allow_outside)
    if root is None or (isinstance(root, YScalar) and root.value is None):
        diagnostics.append(Diagnostic("E009", "the scene is empty", Span(file, 1, 1),
                                      "a scene is a mapping, e.g. `bodies: [...]`"))
        return _failed(file, diagnostics, sources, path, base_dir, allow_outside)
    if not isinstance(root, YMap):
        diagnostics.append(Diagnostic("E010", f"a scene is a mapping of fields, but this document "
                                      f"is {kind_of(root)}", root.span,
                                      "start with keys such as `name:`, `bodies:`, `joints:`"))
        return _failed(file, diagnostics, sources, path, base_dir, allow_outside)
    converter = Converter(Document(text, file))
    scene = converter.scene(root)
    diagnostics += converter.diagnostics
    return Loaded(scene, SourceMap(file, converter.spans, converter.failed), tuple(diagnostics),
                  sources, path, base_dir, allow_outside)


def _load_message(message: scene_pb2.Scene, allow_outside: bool) -> Loaded:
    scene = scene_pb2.Scene()
    scene.CopyFrom(message)
    source_map = SourceMap.for_message()
    failed: set = set()
    diagnostics = fold_parameters(scene, source_map, failed, None)
    return Loaded(scene, SourceMap("<scene>", None, failed), tuple(diagnostics), {}, None,
                  pathlib.Path.cwd(), allow_outside)


def fold_parameters(scene: scene_pb2.Scene, source_map: SourceMap, failed: set,
                    text: str | None) -> list[Diagnostic]:
    """Evaluate `Parameter.expression` (when given) in order, for pbtxt files and messages.

    A parameter without an expression keeps its `value`, with the dimension of its `unit`.
    Expression errors point into the expression when the text is at hand (a one-line string).
    """
    diagnostics: list[Diagnostic] = []
    defined: dict[str, expr.Quantity] = {}
    bad: set[str] = set()
    declared = [p.name for p in scene.parameters]
    for index, param in enumerate(scene.parameters):
        here = ("parameters", index)
        name = param.name
        if not name or name in defined or name in bad:
            continue  # missing or duplicate names: compiler/validate.py reports them
        if not names.IDENTIFIER.fullmatch(name) or name in expr.RESERVED:
            diagnostics.append(Diagnostic("E113", f"parameter name '{name}' is not allowed (it is "
                                          "not a name, or names a unit, function or constant)",
                                          source_map.span(here + ("name",)), "choose another name"))
            bad.add(name)
            continue
        if not param.expression:
            try:
                dims = units.parse_unit(param.unit).dims
            except units.UnitError as e:
                diagnostics.append(Diagnostic("E109", f"parameter '{name}': {e}",
                                              source_map.span(here + ("unit",))))
                bad.add(name)
                failed.add(here + ("unit",))
                continue
            defined[name] = expr.Quantity(param.value, dims, not param.unit, None)
            continue
        later = frozenset(n for n in declared[index + 1:] if n not in defined)
        try:
            quantity = expr.evaluate(param.expression, expr.Names(defined, later, frozenset(bad)))
        except expr.ExprError as e:
            span = _inner(source_map.span(here + ("expression",)), param.expression, text,
                          e.start, e.end)
            diagnostics.append(Diagnostic(e.code, f"parameter '{name}': {e.message}", span, e.hint))
            bad.add(name)
            failed.add(here + ("value",))
            continue
        except expr.Unresolved:
            bad.add(name)
            failed.add(here + ("value",))
            continue
        defined[name] = quantity
        param.value = quantity.value
        param.unit = units.format_dims(quantity.dims)
    return diagnostics


def _inner(span: Span, expression: str, text: str | None, start: int, end: int) -> Span:
    """The span of characters [start, end) of an expression written as a one-line string in
    `text` (the whole string's span when it is written with escapes or split)."""
    if text is None or span.line <= 0:
        return span
    lines = text.splitlines()
    if span.line > len(lines):
        return span
    line = lines[span.line - 1]
    if line[span.col - 1:span.col - 1 + len(expression)] != expression:
        return span  # escapes or concatenation: keep the whole string
    last = max(len(expression) - 1, 0)
    col = span.col + min(start, last + 1)
    return Span(span.file, span.line, col, span.line, max(col, span.col + min(end - 1, last)))


