"""Where a substep's time goes, stage by stage, with XLA's CPU flags as the step runs with them: each
stage of the substep compiled on its own for one tile of environments on one XLA device (one core),
run many times in a loop, and timed beside the whole control step on the same tile.

    python tools/stage_times.py scenes/humanoid.yaml [--batch 1024] [--warmup 30] [--loops 50] [--top]
    python tools/stage_times.py scenes/humanoid.yaml --stage select --stage J·M       # those stages only

Why beside tools/profile_scopes.py: with runtime/__init__.py's small-loop threshold the step's inner
loops (the kinematic walk, the mass matrix's elimination, the contact choice, the solver) are single
kernels, which a thunk profile cannot look inside; with the threshold off (SCENEC_SMALL_LOOPS=0) the
profile sees them, but as loops of thunks whose dispatch it charges to them (Humanoid's iterations at
30% of the thunk time). Here every stage runs the code the step runs, compiled as the step compiles
it, so a stage's own loops are single kernels as in the step.

The stages, in the order a substep runs them (runtime/step.py `_advance`), each from the inputs the
previous ones give at a state reached by `--warmup` control steps of random actions in the control
range (so that contacts and limits are engaged as in a rollout):
- `kinematics`: kinematics.forward_kinematics (the walk, centres of mass, motion subspaces);
- `mass matrix and forces`: step.mass_and_forces (velocities, inertias, bias and applied forces, M);
- `elimination`: dynamics.inverse_by_tree (M⁻¹ and M⁻¹τ);
- `constraints`: constraints.solve_velocity, all of it; of it, on their own: `collide` (every pair
  group's kernel, constraints._candidates), within it each pair group's kernel on the colliders'
  poses (named by kernel, with its number of pairs), `select` (each environment's closest
  candidates, `_closest`, with a contact budget), `jacobians` (`_slot_jacobians` of the chosen
  slots) and `J·M⁻¹` (W = J·M⁻¹ and the diagonal of J·M⁻¹·Jᵀ). What the constraint stage spends
  beyond these is the solver's sweeps, the joint limits' rows and the contact forces.
`--top` times the four stages alone, not the constraint stage's parts: each stage is two programs to
compile, which on a TPU take minutes in all for Humanoid's thirteen (the full run did not finish in
420 s on a TPU v5e). `--stage TEXT` (repeatable) times only the stages whose names contain one of the
texts, to split the parts over several short calls there; each stage's two figures also go to stderr
as it is done, so a call cut short keeps them (Humanoid's J·M⁻¹ alone did not compile in 270 s on a
TPU v5e, where the whole step does in 10–17 s). The reference is `_advance` for one control step
(its substeps and the frames of the outputs), per substep.

Each stage is timed in a jitted loop whose arguments are the jitted function's own (not constants
of it, which XLA would fold: a stage given M⁻¹ and the frames as constants had its collision
kernels, Jacobians and J·M⁻¹ folded away at compile time, and read 291 µs for Humanoid's constraint
stage where it takes 470–580). Each turn adds a carried scalar, zero times the sum of the last
turn's outputs, to every floating argument: the turns depend on each other, so XLA cannot hoist the
stage out of the loop, and the loop carries a scalar, not the arguments. "loop alone" times the
same loop around a stage that returns its outputs' values given as arguments: the sum over the
outputs and the scalar's adds, which a stage with large outputs pays (a kernel's 52 × 2 contact
rows: 30 µs of its 100 µs). "net" and the share (of the substep) are the stage's time less it.

The stages' sum differs from the substep (in two runs, Humanoid 0.94–0.96 of it, Ant 0.96–1.06;
before these corrections 0.59–0.78 and 0.88–1.2): a stage compiled alone
writes its outputs out and reads its inputs in, where the step may fuse across the boundary, and
each stage is at least one thunk of XLA's CPU runtime, whose dispatch a small scene's stages are
made of. Read the shares as where the time goes, to several percent, not as what removing a stage
would save (tools/ablate.py). The constraint stage's parts are least reliable where the slots are
static (no contact budget): there XLA fuses the Jacobians into their readers in the step, and alone
they can take nearly as long as the whole constraint stage (hopper: 82 µs against 88 µs).

Not a test: the figures depend on the machine and its load (the median of --repeats timed loops).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time


def stage_functions(m, q, qd, ctrl, parts: bool = True):
    """{name: (function, arguments)} of the substep's stages for the tile (q, qd, ctrl), batch last,
    each stage's arguments computed by the stages before it; with `parts` the constraint stage's parts
    too."""
    import jax
    import numpy as np

    from scenec.runtime import constraints, dynamics, kinematics
    from scenec.runtime import step as rstep

    h = m.timestep / m.substeps
    f = jax.jit(lambda q: kinematics.forward_kinematics(m, q))(q)
    mass, tau = jax.jit(lambda f, q, qd, ctrl: rstep.mass_and_forces(m, f, q, qd, ctrl, h))(f, q, qd, ctrl)
    minv, qacc = jax.jit(lambda mass, tau: dynamics.inverse_by_tree(m, mass, tau))(mass, tau)
    stages = {
        "kinematics": (lambda q: kinematics.forward_kinematics(m, q), (q,)),
        "mass matrix and forces": (lambda f, q, qd, ctrl: rstep.mass_and_forces(m, f, q, qd, ctrl, h),
                                   (f, q, qd, ctrl)),
        "elimination": (lambda mass, tau: dynamics.inverse_by_tree(m, mass, tau), (mass, tau)),
    }
    if constraints.has_constraints(m) and m.nv:
        stages["constraints"] = (
            lambda qd_free, f, minv, q, qd: constraints.solve_velocity(m, f, minv, q, qd, qd_free, h),
            (qd + h * qacc, f, minv, q, qd))
    if m.pair_groups and parts:
        stages["  of it, collide"] = (lambda f: constraints._candidates(m, f), (f,))
        # each pair group's kernel on the colliders' poses (the poses themselves left out)
        poses = jax.jit(lambda f: constraints.collider_poses(m, f))(f)
        for grp in m.pair_groups:
            stages[f"    {grp.kernel} ({len(grp.geom1)})"] = (
                lambda *poses, grp=grp: constraints._run_kernel(m, grp, *poses), poses)
        slots = jax.jit(lambda f: constraints._candidates(m, f))(f)
        # each candidate's pair and bodies are numpy in the step (static slots); jit returned arrays
        slots = slots._replace(**{k: np.asarray(getattr(slots, k)) for k in ("pair", "body1", "body2")})
        if 0 < m.contact_budget < len(slots.pair):
            static = slots[4:]             # each candidate's pair and bodies: numpy, as in the step
            stages["  of it, select"] = (
                lambda *rows: constraints._closest(constraints._Slots(*rows, *static), m.contact_budget),
                tuple(slots[:4]))
            slots = jax.jit(lambda *rows: constraints._closest(constraints._Slots(*rows, *static),
                                                               m.contact_budget))(*slots[:4])
        # the slots' fields that are arrays go in as arguments; numpy ones (static slots) stay numpy
        traced = [i for i, x in enumerate(slots) if not isinstance(x, np.ndarray)]

        def with_slots(fields):
            full = list(slots)
            for i, x in zip(traced, fields):
                full[i] = x
            return constraints._Slots(*full)

        stages["  of it, jacobians"] = (
            lambda f, *fields: constraints._slot_jacobians(m, f, with_slots(fields)),
            (f,) + tuple(slots[i] for i in traced))
        jc = jax.jit(lambda f, *fields: constraints._slot_jacobians(m, f, with_slots(fields))[0])(
            f, *(slots[i] for i in traced))

        def rows_times_minv(jc, minv):
            """W = J·M⁻¹ and the diagonal of J·M⁻¹·Jᵀ, as the solver's setup computes them."""
            w = constraints._rows_times_minv(jc, minv)
            return w, constraints._row_dot(jc, w)

        stages["  of it, J·M⁻¹"] = (rows_times_minv, (jc, minv))
    return stages


def loop_time(fn, args, loops: int, repeats: int) -> float:
    """Median seconds of one call of fn(*args), from `repeats` timed loops of `loops` calls each, in one
    jitted fori_loop. The arguments go in as the jitted function's arguments (so XLA cannot fold the
    stage's work on them into constants), and each turn adds a carried scalar, 0·(the sum of the last
    turn's floating outputs), to every floating argument: the turns depend on each other, so XLA
    cannot hoist fn out of the loop, and the loop carries one scalar, not the arguments."""
    import jax
    import jax.numpy as jnp

    def floating(x):
        return jnp.issubdtype(x.dtype, jnp.floating)

    def body(args, carry):
        eps, acc = carry
        moved = jax.tree_util.tree_map(lambda x: x + eps.astype(x.dtype) if floating(x) else x, args)
        total = sum((jnp.sum(x) for x in jax.tree_util.tree_leaves(fn(*moved)) if floating(x)),
                    jnp.zeros((), jnp.float32))
        return 0.0 * total, acc + total

    run = jax.jit(lambda *a: jax.lax.fori_loop(0, loops, lambda _, c: body(a, c),
                                               (jnp.zeros((), jnp.float32), jnp.zeros((), jnp.float32))))
    jax.block_until_ready(run(*args))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(run(*args))
        times.append(time.perf_counter() - start)
    return statistics.median(times) / loops


def measure(scene: str, batch: int, warmup: int, loops: int, repeats: int, parts: bool = True,
            only: tuple = ()) -> dict:
    """{"tile", "substeps", "substep_s", "stages": {name: seconds per tile}, "floors": {name: seconds of
    the loop alone with that stage's arguments}} for `scene`: every stage, or those whose names contain
    one of the texts in `only`."""
    import jax
    import numpy as np

    from scenec.compiler import api
    from scenec.compiler.cmd_run import rollout_fn
    from scenec.runtime import step as rstep

    m = api.compile(scene, measure_jit=False).model
    tile = rstep._tile(batch, rstep.tile_cap(m))
    states, bad = rollout_fn(m, tile, warmup)(jax.random.PRNGKey(0))
    if int(bad):
        raise SystemExit(f"stage_times: {int(bad)} of {tile} environments of {scene} ended non-finite "
                         f"after {warmup} control steps")
    one = jax.devices()[0]                     # the rollout's arrays are split over the host devices
    put = lambda x: jax.device_put(np.ascontiguousarray(np.asarray(x).T), one)   # noqa: E731  batch last
    q, qd = put(states.q), put(states.qd)
    ctrl = jax.device_put(np.zeros((m.nu, tile), np.asarray(states.q).dtype), one)
    stages, floors = {}, {}
    for name, (fn, args) in stage_functions(m, q, qd, ctrl, parts).items():
        if only and not any(text in name for text in only):
            continue
        stages[name] = loop_time(fn, args, loops, repeats)
        # the loop's own cost for this stage: the same loop around a stage that returns arrays of
        # the stage's outputs' shapes and values, given as its arguments (their sum is the loop's)
        outputs = tuple(jax.tree_util.tree_leaves(jax.jit(fn)(*args)))
        floors[name] = loop_time(lambda *o: o, outputs, loops, repeats)
        # as each stage is done (a call cut short by a time limit keeps what it measured)
        print(f"  ({name}: {stages[name] * 1e6:.1f} µs, loop alone {floors[name] * 1e6:.1f} µs)",
              file=sys.stderr, flush=True)
    step = loop_time(lambda q, qd, ctrl: rstep._advance(m, q, qd, ctrl)[:2], (q, qd, ctrl),
                     max(1, loops // m.substeps), repeats)
    return {"tile": tile, "substeps": m.substeps, "substep_s": step / m.substeps, "stages": stages,
            "floors": floors}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenes", nargs="+")
    parser.add_argument("--batch", type=int, default=1024, help="the batch whose tile is timed")
    parser.add_argument("--warmup", type=int, default=30, help="control steps to the timed state")
    parser.add_argument("--loops", type=int, default=50, help="calls per timed loop")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--top", action="store_true", help="the four stages only, not the constraint "
                        "stage's parts (fewer programs to compile: for a TPU)")
    parser.add_argument("--stage", action="append", default=[], metavar="TEXT",
                        help="time only the stages whose names contain TEXT (repeatable)")
    args = parser.parse_args(argv)
    import scenec.runtime  # noqa: F401  (XLA's CPU flags, before jax starts)

    for scene in args.scenes:
        r = measure(scene, args.batch, args.warmup, args.loops, args.repeats, parts=not args.top,
                    only=tuple(args.stage))
        tile, sub = r["tile"], r["substep_s"]
        print(f"{scene}: a tile of {tile} environments on one device (a CPU core); the whole substep "
              f"(`_advance`, {r['substeps']} substeps and the outputs' frames, per substep) {sub * 1e6:,.1f} µs, "
              f"{sub / tile * 1e9:,.0f} ns per environment")
        print(f"  {'stage':26s} {'timed':>9s}    {'loop alone':>10s}    {'net':>9s}    share")
        for name, t in r["stages"].items():
            floor = r["floors"][name]
            print(f"  {name:26s} {t * 1e6:9.1f} µs {floor * 1e6:10.1f} µs {(t - floor) * 1e6:9.1f} µs "
                  f"{(t - floor) / sub:7.1%}")
        if args.stage:
            continue                 # a sum of some stages is no figure
        top = sum(t - r["floors"][name] for name, t in r["stages"].items() if not name.startswith(" "))
        print(f"  {'(stages above, net, summed)':26s} {'':27s} {top * 1e6:9.1f} µs {top / sub:7.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
