"""Do some XLA flags make a scene's step faster? The same rollout in fresh processes, flag sets taken
in turn, so that a drift of the machine's speed falls on every set alike.

    python tools/bench_flags.py scenes/ant.yaml scenes/humanoid.yaml --pairs 3 \\
        --flags= --flags=--xla_backend_extra_options=xla_cpu_small_while_loop_byte_threshold=3000000

(`--flags=VALUE` with the equals sign: a value that starts with `--` is not taken as an option then;
`--flags=` alone is XLA_FLAGS empty, runtime/__init__.py's defaults only.)

XLA reads its flags once, when its CPU backend starts, so each measurement is a process of its own
with XLA_FLAGS set to that flag set (runtime/__init__.py then adds its defaults for the flags the set
does not name). Each process compiles `scenec run`'s rollout (compiler/cmd_run.rollout_fn: `--steps`
control steps of `--batch` environments in one jitted scan) and times it `--repeats` times after a
warm-up. Per scene, the sets run one after the other, `--pairs` rounds; the figures are each set's
XLA compile time (lower + compile of the rollout, cold: the compile cache is off) and physics steps/s
(median over the process's repeats), and each later set's ratio to the first in the same round, whose
median over rounds is the figure to read: absolute numbers on this shared machine move by ±15%
between processes minutes apart, the ratio of neighbours much less. Not a test: figures depend on
the machine and its load.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def measure(scene: str, batch: int, steps: int, repeats: int) -> dict:
    """{"compile_s", "steps_per_s"} of the rollout in this process (with this process's XLA_FLAGS)."""
    import time

    import jax

    from scenec.compiler.cmd_run import load_model, rollout_fn

    model, code = load_model(scene)
    if model is None:
        raise SystemExit(code)
    key = jax.random.PRNGKey(0)
    t = time.perf_counter()
    run = rollout_fn(model, batch, steps).lower(key).compile()
    compile_s = time.perf_counter() - t
    jax.block_until_ready(run(key))                                   # warm up
    rates = []
    for i in range(repeats):
        t = time.perf_counter()
        jax.block_until_ready(run(jax.random.PRNGKey(i)))
        rates.append(batch * steps * model.substeps / (time.perf_counter() - t))
    return {"compile_s": compile_s, "steps_per_s": statistics.median(rates)}


def _child(scene: str, flags: str, args) -> dict:
    env = dict(os.environ, XLA_FLAGS=flags, SCENEC_CACHE_DIR="off")
    cmd = [sys.executable, __file__, "--child", scene, "--batch", str(args.batch), "--steps", str(args.steps),
           "--repeats", str(args.repeats)]
    out = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=args.timeout)
    if out.returncode != 0:
        raise SystemExit(f"bench_flags: {scene} with XLA_FLAGS={flags!r} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenes", nargs="+")
    parser.add_argument("--flags", action="append", default=None,
                        help="an XLA_FLAGS value (repeat the option for each set; the first is the reference)")
    parser.add_argument("--pairs", type=int, default=3, help="rounds of every set")
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=10, help="control steps per timed call")
    parser.add_argument("--repeats", type=int, default=7, help="timed calls per process")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per process")
    parser.add_argument("--json", help="write the figures here too")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(measure(args.scenes[0], args.batch, args.steps, args.repeats)))
        return 0
    sets = args.flags if args.flags and len(args.flags) >= 2 else None
    if sets is None:
        parser.error("give at least two --flags sets (the first is the reference; \"\" is XLA_FLAGS unset)")
    report = {}
    for scene in args.scenes:
        rounds = [[_child(scene, flags, args) for flags in sets] for _ in range(args.pairs)]
        name = pathlib.Path(scene).stem
        print(f"{name}: batch {args.batch}, {args.pairs} rounds")
        rows = []
        for i, flags in enumerate(sets):
            rates = [r[i]["steps_per_s"] for r in rounds]
            compiles = [r[i]["compile_s"] for r in rounds]
            ratios = [r[i]["steps_per_s"] / r[0]["steps_per_s"] for r in rounds]
            row = {"flags": flags, "steps_per_s": rates, "compile_s": compiles, "ratio": ratios,
                   "median_ratio": statistics.median(ratios)}
            rows.append(row)
            print(f"  {flags or '(no XLA_FLAGS)'}")
            print(f"    physics steps/s {', '.join(f'{x:,.0f}' for x in rates)}; XLA compile "
                  f"{', '.join(f'{x:.2f}' for x in compiles)} s"
                  + ("" if i == 0 else f"; ×{row['median_ratio']:.3f} of the first set "
                     f"(rounds {', '.join(f'{x:.3f}' for x in ratios)})"))
        report[name] = rows
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
