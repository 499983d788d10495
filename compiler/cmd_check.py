"""`scenec check FILE...`: every problem of every scene, as text, JSON or GitHub annotations.

Where it sits: compiler/, a subcommand of `scenec` (see cli.py). Runs `compiler.check.check` on each
file; imports no jax, so it suits pre-commit hooks and CI. Exit 0 when clean (warnings allowed), 1
when a scene has errors, 2 when a file cannot be read.
"""

from __future__ import annotations

import argparse
import sys

from scenec.schema.diagnostics import (Severity, render_github, render_json, render_text)

# Reading errors that are about the file, not its content: they make the exit code 2.
IO_CODES = frozenset({"E001"})


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE", help="scene files (.yaml, .yml, .pbtxt)")
    parser.add_argument("--format", choices=("text", "json", "github"), default="text",
                        help="output format (default: text, with source lines and carets)")
    parser.add_argument("--allow-outside", action="store_true",
                        help="allow mesh files outside the scene's folder")


def run(args: argparse.Namespace) -> int:
    from .check import check

    diagnostics, sources = [], {}
    io_error = False
    for file in args.files:
        result = check(file, allow_outside=args.allow_outside)
        diagnostics += result.diagnostics
        sources.update(result.sources)
        io_error |= any(d.code in IO_CODES for d in result.diagnostics)
    errors = sum(d.severity is Severity.ERROR for d in diagnostics)
    warnings = sum(d.severity is Severity.WARNING for d in diagnostics)
    if args.format == "json":
        print(render_json(diagnostics))
    elif args.format == "github":
        if diagnostics:
            print(render_github(diagnostics))
    else:
        if diagnostics:
            print(render_text(diagnostics, sources))
        files = len(args.files)
        print(f"checked {files} file{'s' if files != 1 else ''}: {errors} "
              f"error{'s' if errors != 1 else ''}, {warnings} warning{'s' if warnings != 1 else ''}",
              file=sys.stderr)
    if io_error:
        return 2
    return 1 if errors else 0
