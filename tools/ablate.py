"""Where a step's wall time goes, by ablation: the same rollout with parts of the model switched off,
timed interleaved in one process, as a fraction of the unchanged model's time.

    python tools/ablate.py scenes/ant.yaml --batch 1024 solver_iterations=0 contact_budget=2
    python tools/ablate.py scenes/humanoid.yaml drop=capsule_capsule+sphere_capsule+sphere_sphere

Each VARIANT is comma-separated edits of the compiled model: `field=N` sets one of its integer options
(solver_iterations, contact_budget, limit_budget, substeps), `drop=K1+K2` removes the pair groups of
those collision kernels, `limits=off` removes every joint limit. The physics of a variant is not the
scene's any more: these figures say what a part costs, not how the scene behaves. (A per-thunk
profile charges loop control and dispatch to whatever runs next: it put Ant's joint-limit loop at 21%
of the step, where switching every limit off saves 13%.) Random actions in the control range, the
batch as given (split over host devices as `step` does), the median of --repeats.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

INT_FIELDS = ("solver_iterations", "contact_budget", "limit_budget", "substeps")


def edited(m, spec: str):
    import numpy as np

    fields = {f: getattr(m, f) for f in m.static_fields + m.leaf_fields}
    for edit in spec.split(","):
        key, _, value = edit.partition("=")
        if key in INT_FIELDS:
            fields[key] = int(value)
        elif key == "drop":
            gone = set(value.split("+"))
            unknown = gone - {g.kernel for g in m.pair_groups}
            if unknown:
                raise SystemExit(f"ablate: no pair group uses kernel(s) {sorted(unknown)}")
            keep = np.concatenate([np.full(len(g.geom1), g.kernel not in gone) for g in m.pair_groups])
            fields["pair_groups"] = tuple(g for g in m.pair_groups if g.kernel not in gone)
            for f in ("pair_friction", "pair_restitution", "pair_solref"):
                fields[f] = getattr(m, f)[keep]
            fields["pair_bounce"] = type(m.pair_bounce)(np.asarray(m.pair_bounce.array)[keep])
        elif edit == "limits=off":
            fields["jnt_limited"] = type(m.jnt_limited)(np.zeros_like(np.asarray(m.jnt_limited.array)))
        else:
            raise SystemExit(f"ablate: {edit!r} is not limits=off, field=N (one of {', '.join(INT_FIELDS)}) "
                             "or drop=KERNEL")
    return m.__class__(**fields)


def rollout(m, batch: int, steps: int):
    """The compiled random-action rollout of `scenec run` (cmd_run.rollout_fn), warmed up: a call runs it."""
    import jax

    from scenec.compiler.cmd_run import rollout_fn

    key = jax.random.PRNGKey(0)
    compiled = rollout_fn(m, batch, steps).lower(key).compile()
    jax.block_until_ready(compiled(key))
    return lambda: jax.block_until_ready(compiled(key))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scene")
    parser.add_argument("variants", nargs="*", metavar="VARIANT")
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=10, help="control steps per timed rollout")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    from scenec.compiler import api

    base = api.compile(args.scene, measure_jit=False).model
    models = {"base": base, **{spec: edited(base, spec) for spec in args.variants}}
    runs = {name: rollout(m, args.batch, args.steps) for name, m in models.items()}
    times = {name: [] for name in runs}
    for _ in range(args.repeats):
        for name, go in runs.items():
            t0 = time.perf_counter()
            go()
            times[name].append(time.perf_counter() - t0)
    ref = statistics.median(times["base"])
    print(f"{base.name}, batch {args.batch}, {args.steps} control steps × {base.substeps} substeps, "
          f"median of {args.repeats}")
    for name, ts in times.items():
        t = statistics.median(ts)
        print(f"  {name:48s} {args.batch * args.steps * models[name].substeps / t:11,.0f} physics steps/s   "
              f"{t / ref:5.2f} of base")
    return 0


if __name__ == "__main__":
    sys.exit(main())
