"""`scenec compile SCENE -o DIR`: the scene's model, generated step module and report.

Where it sits: compiler/, a subcommand (cli.py). Runs `api.compile` then `emit.emit`; prints a short
summary (counts, pairs kept and pruned by reason, contacts per step, compile times). Nothing is
written when the scene has errors.
"""

from __future__ import annotations

import argparse

from .cmd_common import add_scene_arguments, print_diagnostics


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_scene_arguments(parser)
    parser.add_argument("-o", "--out", metavar="DIR", required=True, help="output folder")
    parser.add_argument("--verify-each", action="store_true", help="check IR invariants after every pass")
    parser.add_argument("--no-jit-timing", action="store_true",
                        help="skip measuring jax trace and XLA compile times (faster)")
    parser.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")


def run(args: argparse.Namespace) -> int:
    from . import api, emit

    analysis = api.analyse(args.scene, allow_outside=args.allow_outside, verify_each=args.verify_each)
    code = print_diagnostics(analysis.diagnostics, analysis.sources)
    if code:
        return code
    compiled = api.compile(args.scene, allow_outside=args.allow_outside, verify_each=args.verify_each,
                           measure_jit=not args.no_jit_timing)
    paths = emit.emit(compiled, args.out)
    if not args.quiet:
        print(summary(compiled.report, paths))
    return 0


def summary(report: dict, paths: dict) -> str:
    c = report["counts"]
    p = report["pairs"]
    pruned = {k: v for k, v in p["by_reason"].items() if k not in ("kept", "explicit")}
    lines = [
        f"{report['scene']}: {c['nbody'] - 1} bodies, {c['njnt']} joints (nq {c['nq']}, nv {c['nv']}), "
        f"{c['nu']} actuators, {c['ngeom']} colliders",
        f"  collider pairs: {p['candidates']} candidates, {p['kept']} kept"
        + (", pruned: " + ", ".join(f"{v} {k}" for k, v in sorted(pruned.items())) if pruned else ""),
        f"  contacts per step: {report['contacts_per_step']} in {len(report['groups'])} kernel group(s)"
        + (" (" + ", ".join(f"{g['kernel']}×{g['pairs']}" for g in report['groups']) + ")"
           if report["groups"] else "")
        + (f"; the solver visits the closest {report['contacts_solved']} (contact_budget)"
           if report["contacts_solved"] < report["contacts_per_step"] else ""),
    ]
    if "jit" in report:
        j = report["jit"]
        lines.append(f"  step compile: trace {j['trace_s']:.2f} s + XLA {j['xla_s']:.2f} s")
    lines.append("  wrote " + ", ".join(str(paths[k]) for k in ("module", "model", "report")))
    return "\n".join(lines)
