"""`scenec dump-ir SCENE [--after PASS]`: the IR as deterministic, readable text.

Where it sits: compiler/, a subcommand (cli.py); runs the front end and the passes up to PASS (all by
default), no jax. Timings are left out so that the output depends on the scene alone.
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import json

from .cmd_common import add_scene_arguments, print_diagnostics
from .pipeline import PASS_NAMES


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_scene_arguments(parser)
    parser.add_argument("--after", choices=("frontend",) + PASS_NAMES, default=PASS_NAMES[-1],
                        help="stop after this pass (default: the last)")


def to_plain(obj):
    """IR → JSON-able data: dataclasses as {field: value}, enums by name, messages as text."""
    if dataclasses.is_dataclass(obj):
        return {f.name: to_plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)
                if f.name not in ("timings", "span")} | (
                   {"span": str(obj.span)} if hasattr(obj, "span") and obj.span.line else {})
    if isinstance(obj, enum.Enum):
        return obj.name.lower()
    if isinstance(obj, dict):
        return {str(k): to_plain(v) for k, v in sorted(obj.items())}
    if isinstance(obj, (list, tuple)):
        return [to_plain(x) for x in obj]
    if hasattr(obj, "DESCRIPTOR"):  # a protobuf message (the task)
        from google.protobuf import text_format
        return text_format.MessageToString(obj)
    return obj


def ir_text(scene) -> str:
    return json.dumps(to_plain(scene), indent=1, ensure_ascii=False)


def run(args: argparse.Namespace) -> int:
    from . import api

    stop = None if args.after == "frontend" else args.after
    analysis = api.analyse(args.scene, allow_outside=args.allow_outside, verify_each=True,
                           stop_after=stop)
    code = print_diagnostics(analysis.diagnostics, analysis.sources)
    if analysis.ir is None:
        return code or 1
    scene = analysis.ir
    if args.after == "frontend":
        scene = api.frontend_only(args.scene, allow_outside=args.allow_outside)
    print(ir_text(scene))
    return code
