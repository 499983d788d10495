"""Importers: models people already have (MJCF, URDF, Brax v1 configs) → scenec `Scene` messages.

Where it sits: `scenec import FILE -o OUT.yaml` (compiler/cmd_import.py) calls `import_file`, then
writes the message with `scenec.schema.dump.dump_yaml`, putting each conversion note as a comment
above the entry it concerns. The importers never import jax; they produce a message the loader,
validator and compiler treat like any hand-written scene.

    import_file(path, *, convert_cylinders=False, out_dir=None) -> ImportResult

`ImportResult.notes` maps a field path of the scene, as in the source map
(`("bodies", 3, "colliders", 0)`), to a comment for the YAML writer. Diagnostics use the codes
E7xx/W7xx of schema/codes.py; `exit_code` turns them into the CLI's exit status.
"""

from __future__ import annotations

import dataclasses
import pathlib

from scenec.compiler import frames  # noqa: F401  (re-exported: the importers' rotation helpers)
from scenec.schema import scene_pb2
from scenec.schema.diagnostics import Diagnostic, Severity, Span

# Codes that mean "the input is not a valid model" (exit 2) rather than "valid, but it uses
# something scenec cannot represent" (exit 1).
MALFORMED = frozenset({
    "E700", "E701", "E702", "E703", "E704", "E705", "E706", "E712", "E713", "E714", "E715", "E716",
})
# Informational codes: something was converted or dropped on purpose, and the YAML says so.
NOTE_CODES = frozenset({"W701", "W705", "W708"})


@dataclasses.dataclass
class ImportResult:
    scene: scene_pb2.Scene
    diagnostics: list[Diagnostic]
    notes: dict[tuple, str]
    sources: dict[str, str] = dataclasses.field(default_factory=dict)  # file -> text, for carets


class Reporter:
    """Collects the diagnostics of one import; the severity follows from the code."""

    def __init__(self):
        self.diagnostics: list[Diagnostic] = []

    def add(self, code: str, message: str, span: Span, hint: str = "") -> None:
        if code.startswith("E"):
            severity = Severity.ERROR
        elif code in NOTE_CODES:
            severity = Severity.NOTE
        else:
            severity = Severity.WARNING
        self.diagnostics.append(Diagnostic(code, message, span, hint, severity))

    @property
    def has_errors(self) -> bool:
        return any(d.is_error for d in self.diagnostics)


def exit_code(diagnostics) -> int:
    """0 when nothing is wrong, 2 for malformed input or I/O trouble, 1 for unsupported content."""
    errors = [d for d in diagnostics if d.is_error]
    if not errors:
        return 0
    return 2 if any(d.code in MALFORMED for d in errors) else 1


XML_SUFFIXES = {".xml", ".mjcf"}
URDF_SUFFIXES = {".urdf"}
PBTXT_SUFFIXES = {".pbtxt", ".textproto", ".txtpb", ".prototxt"}


def _sniff(data: bytes) -> str:
    """'mjcf', 'urdf', 'pbtxt' or '' from the first bytes of a file whose suffix says nothing."""
    head = data[:4096].lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.startswith(b"<"):
        if b"<robot" in head:
            return "urdf"
        return "mjcf"
    if head[:1].isalpha() or head.startswith(b"#"):
        return "pbtxt"
    return ""


def import_file(path, *, convert_cylinders: bool = False, out_dir=None) -> ImportResult:
    """Import one model file. Never raises for user errors: they are in `diagnostics`.

    out_dir: the folder the YAML will be written to (mesh paths are made relative to it);
    default: the model's own folder.
    """
    path = pathlib.Path(path)
    file = str(path)
    out = pathlib.Path(out_dir) if out_dir is not None else path.parent
    try:
        data = path.read_bytes()
    except OSError as e:
        rep = Reporter()
        rep.add("E701", f"cannot read '{file}': {e.strerror or e}", Span(file, 0, 0))
        return ImportResult(scene_pb2.Scene(), rep.diagnostics, {})
    suffix = path.suffix.lower()
    kind = ("mjcf" if suffix in XML_SUFFIXES else "urdf" if suffix in URDF_SUFFIXES
            else "pbtxt" if suffix in PBTXT_SUFFIXES else _sniff(data))
    if kind in ("mjcf", "urdf"):
        # the root element decides between the two XML formats (a URDF saved as .xml is common)
        head = data[:4096]
        if kind == "mjcf" and b"<robot" in head and b"<mujoco" not in head:
            kind = "urdf"
        elif kind == "urdf" and b"<mujoco" in head and b"<robot" not in head:
            kind = "mjcf"
    if kind == "mjcf":
        from scenec.compiler.importers import mjcf
        return mjcf.import_mjcf(data, file=file, base_dir=path.parent, out_dir=out,
                                convert_cylinders=convert_cylinders)
    if kind == "urdf":
        from scenec.compiler.importers import urdf
        return urdf.import_urdf(data, file=file, base_dir=path.parent, out_dir=out,
                                convert_cylinders=convert_cylinders)
    if kind == "pbtxt":
        from scenec.compiler.importers import brax_v1
        return brax_v1.import_brax(data, file=file, base_dir=path.parent, out_dir=out,
                                   convert_cylinders=convert_cylinders)
    rep = Reporter()
    rep.add("E701", f"'{file}' is not a model scenec can import", Span(file, 0, 0),
            "scenec imports MJCF (.xml), URDF (.urdf) and Brax v1 configs (.pbtxt)")
    return ImportResult(scene_pb2.Scene(), rep.diagnostics, {})
