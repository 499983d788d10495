"""`scenec explain-pairs SCENE`: every candidate collider pair, kept or pruned, and why.

Where it sits: compiler/, a subcommand (cli.py); runs the analysis passes only (no jax).
"""

from __future__ import annotations

import argparse
import json

from .cmd_common import add_scene_arguments, print_diagnostics
from .passes.pruning import REASONS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_scene_arguments(parser)
    parser.add_argument("--json", action="store_true", help="one JSON object per pair")
    parser.add_argument("--kept", action="store_true", help="only the kept pairs")


def run(args: argparse.Namespace) -> int:
    from . import api

    analysis = api.analyse(args.scene, allow_outside=args.allow_outside, stop_after="pruning")
    code = print_diagnostics(analysis.diagnostics, analysis.sources)
    if analysis.ir is None or analysis.ir.pairs is None:
        return code or 1
    pairs = [v for v in analysis.ir.pairs if v.kept or not args.kept]
    if args.json:
        print(json.dumps([{"collider1": v.collider1, "collider2": v.collider2, "body1": v.body1,
                           "body2": v.body2, "kept": v.kept, "reason": v.reason} for v in pairs], indent=2))
        return code
    w1 = max([len(v.collider1) for v in pairs] + [9])
    w2 = max([len(v.collider2) for v in pairs] + [9])
    print(f"{'collider1':<{w1}}  {'collider2':<{w2}}  verdict  reason")
    for v in pairs:
        print(f"{v.collider1:<{w1}}  {v.collider2:<{w2}}  {'keep ' if v.kept else 'prune'}    "
              f"{v.reason}: {REASONS[v.reason]}")
    kept = sum(v.kept for v in analysis.ir.pairs)
    print(f"{len(analysis.ir.pairs)} candidate pairs, {kept} kept")
    return code
