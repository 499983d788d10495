"""scenec.schema: scene text -> protobuf `Scene` message + source map, with located diagnostics.

The first layer of the pipeline (see DESIGN.md). `load()` reads YAML, protobuf text or a message
built in Python; `scene.proto` is the single source of truth of the format. Never imports jax.
"""

from . import scene_pb2
from .codes import CODES
from .diagnostics import (NO_SPAN, Diagnostic, SceneError, Severity, Span, has_errors, render_github,
                          render_json, render_text)
from .load import MAX_FILE_BYTES, Loaded, load
from .source_map import SourceMap

__all__ = [
    "CODES", "Diagnostic", "Loaded", "MAX_FILE_BYTES", "NO_SPAN", "SceneError", "Severity",
    "SourceMap", "Span", "has_errors", "load", "render_github", "render_json", "render_text",
    "scene_pb2",
]
