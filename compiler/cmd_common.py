"""Helpers shared by the subcommands that compile: diagnostics on stderr, exit codes.

Where it sits: compiler/, used by cmd_compile, cmd_explain_pairs, cmd_dump_ir, cmd_dump_jaxpr,
cmd_run. Exit codes as in cli.py: 1 for problems in the scene, 2 when a file cannot be read.
"""

from __future__ import annotations

import sys

from scenec.schema.diagnostics import Severity, render_text, sort_key

from .cmd_check import IO_CODES



def print_diagnostics(diagnostics, sources) -> int:
    """Print diagnostics to stderr; return the exit code they call for (0, 1 or 2)."""
    diagnostics = sorted(diagnostics, key=sort_key)
    if diagnostics:
        print(render_text(diagnostics, sources), file=sys.stderr)
    if any(d.code in IO_CODES for d in diagnostics):
        return 2
    return 1 if any(d.severity is Severity.ERROR for d in diagnostics) else 0


def add_scene_arguments(parser) -> None:
    parser.add_argument("scene", metavar="SCENE", help="scene file (.yaml, .yml, .pbtxt)")
    parser.add_argument("--allow-outside", action="store_true",
                        help="allow mesh files outside the scene's folder")
