"""`scenec export SCENE -o model.xml`: write a compiled scene as MJCF, for MuJoCo, MJX and Brax.

Where it sits: compiler/, a subcommand (cli.py) over `export_mjcf.to_mjcf`. SCENE is a scene file
(compiled in memory, no files written besides the XML) or a generated `<scene>_step.py`. The XML is
written atomically (runtime.io); without `-o` it goes to stdout. What the export keeps and what
cannot be exactly equal in another engine is in export_mjcf.py's docstring.

Exit status: 0 written, 1 problems in the scene, 2 a file cannot be read or written or the scene
uses something the export cannot write (the message says what).
"""

from __future__ import annotations

import argparse
import pathlib
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scene", metavar="SCENE", help="a scene file or a generated <scene>_step.py")
    parser.add_argument("-o", "--output", metavar="MODEL.xml", help="MJCF file to write (default: stdout)")
    parser.add_argument("--no-joint-refs", action="store_true",
                        help="write no joint `ref`: every body at the zero configuration instead, with "
                             "the same pose for every q (Brax refuses `ref`)")
    parser.add_argument("--allow-outside", action="store_true",
                        help="allow mesh files outside the scene's folder")


def run(args: argparse.Namespace) -> int:
    if args.output and pathlib.Path(args.output).resolve() == pathlib.Path(args.scene).resolve():
        print(f"scenec export: the output '{args.output}' would overwrite the scene", file=sys.stderr)
        return 2
    from .cmd_run import load_model
    from .export_mjcf import ExportError, to_mjcf

    model, code = load_model(args.scene, args.allow_outside)
    if model is None:
        return code
    try:
        text = to_mjcf(model, joint_refs=not args.no_joint_refs)
    except ExportError as e:
        print(f"scenec export: {e}", file=sys.stderr)
        return 2
    if not args.output:
        sys.stdout.write(text)
        return 0
    from scenec.runtime.io import atomic_write_bytes

    try:
        atomic_write_bytes(args.output, text.encode("utf-8"))
    except OSError as e:
        print(f"scenec export: cannot write '{args.output}': {e.strerror or e}", file=sys.stderr)
        return 2
    print(f"wrote {args.output}: {model.nbody - 1} bodies, {model.njnt} joints, {model.nu} actuators, "
          f"{sum(len(g.geom1) for g in model.pair_groups)} contact pairs")
    return 0
