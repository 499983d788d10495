"""`scenec import FILE -o OUT.yaml [--convert-cylinders]`: turn an MJCF, URDF or Brax v1 model
into a scenec scene file.

Where it sits: a subcommand of compiler/cli.py (`add_arguments`, `run`). It calls
`scenec.compiler.importers.import_file`, prints the diagnostics the way `scenec check` does
(`FILE:LINE:COL: error[E7xx]: ...`, the source line, a caret, the hint), and writes the YAML
with `scenec.schema.dump.dump_yaml` atomically: a temporary file in the output folder renamed over
the target, so a failure never leaves a half-written file. No jax.

Exit status: 0 written (warnings allowed), 1 the model uses something scenec cannot represent
(nothing written), 2 the input is malformed or a file cannot be read or written, 3 an internal error
(one line; the traceback with SCENEC_DEBUG=1).
"""

from __future__ import annotations

import os
import pathlib
import sys

from scenec.runtime.files import atomic_write_bytes

FORMAT_NAMES = {".xml": "MJCF", ".urdf": "URDF", ".pbtxt": "Brax v1 config"}


def add_arguments(parser) -> None:
    parser.add_argument("file", help="model to import: MJCF (.xml), URDF (.urdf) or Brax v1 (.pbtxt)")
    parser.add_argument("-o", "--output", metavar="OUT.yaml",
                        help="scene file to write (default: the model's name with .yaml, next to it)")
    parser.add_argument("--convert-cylinders", action="store_true",
                        help="replace cylinders by capsules of the same radius and length "
                             "(scenec has no cylinder collider)")


def run(args) -> int:
    try:
        return _run(args)
    except KeyboardInterrupt:
        print("scenec import: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # an importer bug must not show a user a traceback
        if os.environ.get("SCENEC_DEBUG") == "1":
            raise
        print(f"scenec import: internal error ({type(e).__name__}: {e}); please report this bug "
              "(set SCENEC_DEBUG=1 for the traceback)", file=sys.stderr)
        return 3


def _run(args) -> int:
    from scenec.compiler.importers import exit_code, import_file
    from scenec.schema.diagnostics import render_text
    from scenec.schema.dump import dump_yaml

    src = pathlib.Path(args.file)
    out = pathlib.Path(args.output) if args.output else src.with_suffix(".yaml")
    if out.resolve() == src.resolve():
        print(f"scenec import: the output '{out}' would overwrite the model", file=sys.stderr)
        return 2
    result = import_file(src, convert_cylinders=args.convert_cylinders, out_dir=out.parent)
    if result.diagnostics:
        print(render_text(result.diagnostics, result.sources), file=sys.stderr)
    code = exit_code(result.diagnostics)
    if code:
        print(f"scenec import: nothing written ({sum(d.is_error for d in result.diagnostics)} "
              "error(s))", file=sys.stderr)
        return code
    scene = result.scene
    kind = FORMAT_NAMES.get(src.suffix.lower(), "model")
    header = (f"Imported from {src.name} ({kind}) by `scenec import`"
              + (" --convert-cylinders" if args.convert_cylinders else "") + ".\n"
              "Comments mark every place where the conversion changed or dropped something.")
    text = dump_yaml(scene, result.notes, header)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(out, text.encode("utf-8"))
    except OSError as e:
        print(f"scenec import: cannot write '{out}': {e.strerror or e}", file=sys.stderr)
        return 2
    print(f"wrote {out}: {len(scene.bodies)} bodies, {len(scene.joints)} joints, "
          f"{len(scene.actuators)} actuators, {len(result.notes)} comments")
    return 0


def main(argv=None) -> int:
    """Run the subcommand on its own (`python -m scenec.compiler.cmd_import FILE -o OUT`)."""
    import argparse

    parser = argparse.ArgumentParser(prog="scenec import", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
