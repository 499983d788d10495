"""Where a step's wall time goes, by ablation: the same rollout with parts of the model switched off,
timed interleaved in one process, as a fraction of the unchanged model's time.

    python tools/ablate.py scenes/ant.yaml --batch 1024 solver_iterations=2 contact_budget=2
    python tools/ablate.py scenes/humanoid.yaml drop=capsule_capsule+sphere_capsule+sphere_sphere

Each VARIANT is comma-separated edits of the compiled model: `field=N` sets one of its integer options
(solver_iterations, contact_budget, limit_budget, substeps), `drop=K1+K2` removes the pair groups of
those collision kernels, `limits=off` removes every joint limit. The physics of a variant is not the
scene's any more: these figures say what a part costs, not how the scene behaves.

`solver_iterations=0` takes more than the sweeps away: nothing reads the contact rows then, so XLA drops
their setup too (the choice, J, W = J·M⁻¹; Humanoid 0.54 of base). Two iteration counts around the
scene's own say what the sweeps cost: Humanoid (8) 0.91 with 2, 0.93 and 1.00 with 4 (two runs), 1.06
with 16; Ant (4) 0.94 with 2, 1.07 with 8 (batch 1024, this 2-core CPU, with runtime/__init__.py's
small-loop threshold): about 1% of the step per sweep.

Ten edits change how the step is written, not the model (the physics stays the scene's, up to
rounding): `unroll=N` sweeps N contact blocks or limit rows per loop iteration at every batch size
(runtime/constraints.py `_UNROLL`, `UNROLL_FROM`; a large N unrolls the sweep fully), `tile=N` sets
the tile of environments (at most N: runtime/step.py `tile_cap`, in place of its sizing by the
scene's working sets; on a GPU too, which otherwise runs the batch whole), `limit_group=N` the rows
per fused chain of the limit sweep (`_LIMIT_GROUP`), `inverse_unroll=N` the elimination steps per
iteration of the mass matrix's inverse (runtime/dynamics.py `INVERSE_UNROLL`), `select_unroll=N` the rounds per loop iteration of the
grouped choice of each environment's closest rows (constraints.py `_GROUPED_UNROLL`),
`branches_from=N` the size of tree from which the mass matrix is inverted branch by branch
(dynamics.py `BRANCHES_FROM`), `unrolled_up_to=N` the most contact blocks a sweep visits in
straight-line code rather than a loop (constraints.py `_UNROLLED_UP_TO`), and `in_place=1` computes
the results `math.by_halves` splits in one piece again (which XLA may then write over an
operand), `iterations_unroll=N` runs N solver iterations per turn of the iterations' loop
(constraints.py `_ITERATIONS_UNROLL`; a large N: no loop), and two switches: `one_hot=0|1` takes
each environment's chosen rows by gathers or one-hot sums (constraints.py `ONE_HOT_PICKS`; by
default one-hot on a TPU only), `pairs=0|1` forms the mass matrix from its ancestor pairs' products
or as a masked product of all pairs (dynamics.py `PAIR_PRODUCTS`; by default the pairs on a CPU
only). They are set while the
variant is traced. On a GPU, where each loop iteration is a kernel launch, `unroll=` is the first
thing to try (on a TPU it was: Humanoid ×1.35 fully unrolled, now a TPU's default, which `unroll=2`
undoes; tools/results/bench_tpu_unroll.txt):

    python tools/ablate.py scenes/ant.yaml --batch 16384 unroll=4 unroll=64 (A per-thunk
profile charges loop control and dispatch to whatever runs next: it put Ant's joint-limit loop at 21%
of the step, where switching every limit off saves 13%.)

Two edits measure the per-environment choice of contact slots (`contact_budget`), and change the
physics (every environment solves the first candidate rows, not its closest): `choice=cheap` gives each
environment rows 0..k-1 as traced indices, so the choice's rounds cost nothing and the gathers and the
slot-dependent Jacobians stay as they are (what `_smallest` costs); `choice=first` takes rows 0..k-1 as
static indices (static gathers, static bodies and masks: what choosing per environment costs in all).
Humanoid at batch 1024: cheap 0.90–0.94 of base, first 0.82–0.84; Ant 0.95 and 0.85.

Two stand-ins say what the mass matrix's stages cost, and change the physics (the dynamics are not
the scene's any more): `diagonal=inverse` takes the inverse of M's diagonal for M⁻¹ (what the
Gauss–Jordan elimination costs: at batch 1024, Humanoid 0.82–0.83 of base in two runs, Ant 0.83),
`diagonal=mass` puts a diagonal matrix built from the motion subspaces in M's place (what forming M
costs, with the elimination still run on it: Humanoid 0.90–0.92, Ant 0.85); `diagonal=inverse+mass`
both.

Humanoid at batch 1024 on a 2-core AMD EPYC (2026-12-05, one run, median of 5): diagonal=inverse 0.80,
diagonal=mass 0.96, choice=first 0.87, choice=cheap 0.94, solver_iterations=4 0.90, and
drop=capsule_capsule+sphere_capsule+sphere_sphere (every self-collision kernel and its rows) 0.84:
the Gauss–Jordan elimination is the largest single part there, then the self-collisions.

Random actions in the control range, the batch as given (split over host devices as `step` does), the
median of --repeats.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

INT_FIELDS = ("solver_iterations", "contact_budget", "limit_budget", "substeps")


# edit -> the (module, constant) pairs it sets while the variant is traced
CODE_EDITS = {"unroll": (("constraints", "_UNROLL"), ("constraints", "UNROLL_FROM")),
              "tile": (("step", "tile_cap"),), "limit_group": (("constraints", "_LIMIT_GROUP"),),
              "inverse_unroll": (("dynamics", "INVERSE_UNROLL"),),
              "select_unroll": (("constraints", "_GROUPED_UNROLL"),),
              "branches_from": (("dynamics", "BRANCHES_FROM"),),
              "unrolled_up_to": (("constraints", "_UNROLLED_UP_TO"),),
              "in_place": (("math", "by_halves"),),
              "iterations_unroll": (("constraints", "_ITERATIONS_UNROLL"),)}
# edit=0|1 -> the (module, constant) it sets to False or True while the variant is traced
SWITCHES = {"one_hot": ("constraints", "ONE_HOT_PICKS"), "pairs": ("dynamics", "PAIR_PRODUCTS")}


def _first_rows_traced(key, k):
    """(k, B) int32 rows 0..k-1 for every environment, traced (a comparison of the key with itself
    chooses them, which XLA cannot fold; row 0 where an environment's first key is NaN) but with none
    of the choice's rounds."""
    import jax.numpy as jnp

    return jnp.where(key[:1] == key[:1], jnp.arange(k, dtype=jnp.int32)[:, None], 0)


def _first_rows_static(slots, k):
    """The first k candidate rows as static slots: what the step does without a budget's choice."""
    import numpy as np

    idx = np.arange(k)
    return type(slots)(*(x[idx] for x in slots))


# choice=… → (the runtime function it replaces while the variant is traced, the replacement)
CHOICES = {"cheap": (("constraints", "_smallest"), _first_rows_traced),
           "first": (("constraints", "_closest"), _first_rows_static)}


def _diagonal_inverse(a, b=None):
    """Stand-in for dynamics.inverse_spd: the inverse of a's diagonal, (n, n, B), and its product with
    b (n, B) or (n, k, B) when given."""
    import jax.numpy as jnp

    n = a.shape[0]
    d = 1.0 / jnp.stack([a[i, i] for i in range(n)])                     # (n, B)
    inv = jnp.eye(n, dtype=a.dtype)[:, :, None] * d[None]
    if b is None:
        return inv
    return inv, (b * d[:, None] if b.ndim == a.ndim else b * d)


def _diagonal_mass(m, f, cinert, diag_extra):
    """Stand-in for dynamics.mass_matrix: a positive diagonal (nv, nv, B) that depends on the frames
    (1 + |cdof_i|² + diag_extra_i), with no products of the tree's inertias."""
    import jax.numpy as jnp

    d = 1.0 + jnp.sum(f.cdof * f.cdof, axis=1) + diag_extra[:, None]      # (nv, B)
    return jnp.eye(m.nv, dtype=d.dtype)[:, :, None] * d[None]


# diagonal=… → (the runtime function it replaces while the variant is traced, the stand-in)
DIAGONAL = {"inverse": (("dynamics", "inverse_spd"), _diagonal_inverse),
            "mass": (("dynamics", "mass_matrix"), _diagonal_mass)}


def edited(m, spec: str):
    """(the edited model, {(module, constant): value} to set while tracing it)."""
    import numpy as np

    fields = {f: getattr(m, f) for f in m.static_fields + m.leaf_fields}
    code = {}
    for edit in spec.split(","):
        key, _, value = edit.partition("=")
        if key in INT_FIELDS:
            fields[key] = int(value)
        elif key in CODE_EDITS:
            if not value.isdigit() or int(value) < 1:
                raise SystemExit(f"ablate: {key}= takes a positive integer, not {value!r}")
            for target in CODE_EDITS[key]:
                # UNROLL_FROM = 1: the unroll applies at every batch size; tile_cap: N for every scene
                if target[1] == "tile_cap":
                    code[target] = lambda _m, _itemsize=4, n=int(value): n
                elif target[1] == "by_halves":    # in_place=1: one loop, which XLA may write in place
                    code[target] = lambda rows_of, n: rows_of(slice(0, n))
                else:
                    code[target] = 1 if target[1] == "UNROLL_FROM" else int(value)
        elif key in SWITCHES:
            if value not in ("0", "1"):
                raise SystemExit(f"ablate: {key}= takes 0 or 1, not {value!r}")
            code[SWITCHES[key]] = value == "1"
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
        elif key == "choice":
            if value not in CHOICES:
                raise SystemExit(f"ablate: choice= takes {' or '.join(CHOICES)}, not {value!r}")
            target, replacement = CHOICES[value]
            code[target] = replacement
        elif key == "diagonal":
            parts = set(value.split("+"))
            if not parts <= set(DIAGONAL):
                raise SystemExit(f"ablate: diagonal= takes {' or '.join(DIAGONAL)} (or both joined by +), "
                                 f"not {value!r}")
            code.update(DIAGONAL[k] for k in sorted(parts))
        elif edit == "limits=off":
            fields["jnt_limited"] = type(m.jnt_limited)(np.zeros_like(np.asarray(m.jnt_limited.array)))
        else:
            raise SystemExit(f"ablate: {edit!r} is not limits=off, choice=cheap|first, "
                             f"diagonal=inverse|mass, field=N (one of "
                             f"{', '.join(INT_FIELDS)}), drop=KERNEL, {'|'.join(SWITCHES)}=0|1 or a code "
                             f"edit ({', '.join(f'{k}=N' for k in CODE_EDITS)})")
    return m.__class__(**fields), code


def rollout(m, batch: int, steps: int, code: dict | None = None):
    """The compiled random-action rollout of `scenec run` (cmd_run.rollout_fn), warmed up: a call runs
    it. `code` ({(module, constant): value}, from `edited`) is set while it is traced and compiled."""
    import importlib

    import jax

    from scenec.compiler.cmd_run import rollout_fn

    key = jax.random.PRNGKey(0)
    saved = {}
    try:
        for (module, name), value in (code or {}).items():
            mod = importlib.import_module(f"scenec.runtime.{module}")
            saved[(mod, name)] = getattr(mod, name)
            setattr(mod, name, value)
        compiled = rollout_fn(m, batch, steps).lower(key).compile()
    finally:
        for (mod, name), value in saved.items():
            setattr(mod, name, value)
    jax.block_until_ready(compiled(key))
    return lambda: jax.block_until_ready(compiled(key))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scene")
    parser.add_argument("variants", nargs="*", metavar="VARIANT")
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=10, help="control steps per timed rollout")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_intermixed_args()   # variants may follow the options, as in the examples
    from scenec.compiler import api

    base = api.compile(args.scene, measure_jit=False).model
    variants = {"base": (base, {}), **{spec: edited(base, spec) for spec in args.variants}}
    models = {name: m for name, (m, _) in variants.items()}
    runs = {name: rollout(m, args.batch, args.steps, code) for name, (m, code) in variants.items()}
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
