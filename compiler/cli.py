"""The `scenec` command: a table of subcommands, each in its own module, imported on demand.

Where it sits: compiler/, the command-line face of the Python API. Each subcommand lives in
`compiler/cmd_<name>.py` and exposes `add_arguments(parser)` and `run(args) -> int`. Only the module
of the command being run is imported, so `scenec check` never pays for (or imports) jax.

Exit codes: 0 success, 1 problems in a scene, 2 usage or I/O errors, 3 an internal error (a bug:
one line on stderr; `SCENEC_DEBUG=1` shows the traceback).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback

# name -> (module, one-line help). Adding a command is adding a line here and a cmd_<name>.py.
COMMANDS: dict[str, tuple[str, str]] = {
    "check": ("scenec.compiler.cmd_check", "check scenes and report every problem (no jax)"),
    "schema": ("scenec.compiler.cmd_schema", "print the JSON Schema of the YAML scene format"),
    "import": ("scenec.compiler.cmd_import", "convert an MJCF, URDF or Brax v1 model to a scene"),
    "compile": ("scenec.compiler.cmd_compile", "compile a scene into a model, a step module and a report"),
    "run": ("scenec.compiler.cmd_run", "run many copies of a scene with random actions, and time it"),
    "explain-pairs": ("scenec.compiler.cmd_explain_pairs", "list every collider pair, kept or pruned, and why"),
    "dump-ir": ("scenec.compiler.cmd_dump_ir", "print the IR after a pass (deterministic)"),
    "dump-jaxpr": ("scenec.compiler.cmd_dump_jaxpr", "print the jaxpr of the compiled step"),
    "bench": ("scenec.compiler.cmd_bench", "measure compile time, steps/s and XLA's cost of scenes' steps"),
    "export": ("scenec.compiler.cmd_export", "write a compiled scene as MJCF (for MuJoCo, MJX and Brax)"),
    "train": ("scenec.compiler.cmd_train", "train a policy on a scene's task (PPO, ES or APG)"),
    "play": ("scenec.compiler.cmd_play", "roll out a trained policy; write its trajectory and return"),
    "optimize": ("scenec.compiler.cmd_optimize", "optimise an open-loop action sequence by gradients"),
    "view": ("scenec.compiler.cmd_view", "write an HTML page that shows a scene and plays a trajectory"),
    "render": ("scenec.compiler.cmd_render", "render a scene's frames to PNG, GIF or MP4 on the CPU"),
}

EXIT_INTERNAL = 3


def _parser(selected: str | None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="scenec", description="A compiler for physics scenes: YAML in, a jitted JAX step out.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in COMMANDS.items():
        command = sub.add_parser(name, help=help_text, description=help_text)
        if name == selected:
            importlib.import_module(module).add_arguments(command)
    return parser


def _selected(argv: list[str]) -> str | None:
    """The subcommand named in argv (the first word that is one), without importing anything."""
    for word in argv:
        if word in COMMANDS:
            return word
        if not word.startswith("-"):
            return None
    return None


# Commands whose compiled programs go to the on-disk cache (runtime/cache.py); compile and bench
# report cold compile times, so they do not read it.
CACHED = ("run", "train", "play", "optimize")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    selected = _selected(argv)
    try:
        parser = _parser(selected)
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help(sys.stderr)
            return 2
        if args.command in CACHED:
            from scenec.runtime import cache

            cache.enable()
        return importlib.import_module(COMMANDS[args.command][0]).run(args)
    except SystemExit as e:  # argparse: --help (0) and usage errors (2)
        return e.code if isinstance(e.code, int) else 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `scenec check ... | head`
        return 0
    except Exception as e:
        if os.environ.get("SCENEC_DEBUG"):
            traceback.print_exc()
        else:
            print(f"scenec: internal error ({type(e).__name__}: {e}); this is a bug, please report "
                  "it (SCENEC_DEBUG=1 shows the traceback)", file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
