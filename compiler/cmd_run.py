"""`scenec run SCENE|MODULE --batch B --steps N`: run many copies of a scene with random actions.

Where it sits: compiler/, a subcommand (cli.py); the quickest way to see a compiled scene go. SCENE
is a scene file (compiled in memory) or a generated `<scene>_step.py` (loaded as users load it).
The whole rollout — N steps of the vmapped step with uniform random controls inside each actuator's
range — is one jitted `lax.scan`; a batch the step splits over the host's devices runs as replicas
of one device's share (runtime/replicas.py, `ReplicatedRollout`), which compile without XLA's
partitioner. It prints the compile time, environment steps per second, simulated
seconds per wall-clock second, and whether any state became non-finite.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scene", metavar="SCENE", help="a scene file or a generated <scene>_step.py")
    parser.add_argument("--batch", type=int, default=256, help="environments run at once (default 256)")
    parser.add_argument("--steps", type=int, default=1000, help="control steps (default 1000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--allow-outside", action="store_true")


def load_model(path: str, allow_outside: bool = False):
    """A model from a scene file or a generated module; (model, None) or (None, exit code)."""
    if path.endswith(".py"):
        from scenec.runtime.io import load_module

        if not pathlib.Path(path).is_file():
            print(f"scenec run: no such file: {path}", file=sys.stderr)
            return None, 2
        return load_module(path).model, 0
    from . import api
    from .cmd_common import print_diagnostics

    analysis = api.analyse(path, allow_outside=allow_outside)
    code = print_diagnostics(analysis.diagnostics, analysis.sources)
    if code:
        return None, code
    return api.compile(path, allow_outside=allow_outside, measure_jit=False).model, 0


def rollout_fn(model, batch: int, steps: int, rstep=None, from_states: bool = False):
    """A jitted function key → (final states, number of non-finite environments), or with
    `from_states` (key, states) → the same from the given batch of states instead of the initial
    state (`scenec bench --settle`). `rstep`: the step module to run (scenec.runtime.step unless
    given; tools/ab_revision.py passes an earlier one)."""
    import jax
    import jax.numpy as jnp

    if rstep is None:
        from scenec.runtime import step as rstep

    def run_from(key, start):
        states = _rollout(rstep, model, batch, steps, key, batch, 0, start)
        return states, jnp.sum(~jnp.all(jnp.isfinite(states.q), axis=-1))

    def run(key):
        return run_from(key, None)

    return jax.jit(run_from if from_states else run)


def control_bounds(model):
    """(lo, hi) (nu,) of `scenec run`'s uniform random controls: each actuator's control range, or
    [−1, 1] where it has none."""
    import jax.numpy as jnp

    lo = jnp.where(model.actuator_ctrl_limited.array, model.actuator_ctrl_range[:, 0], -1.0)
    hi = jnp.where(model.actuator_ctrl_limited.array, model.actuator_ctrl_range[:, 1], 1.0)
    return lo, hi


def restarted(done, init, states):
    """`states` with the environments that `done` ((batch,) bool) marks put back to `init` (both
    batches of states, the batch first)."""
    import jax
    import jax.numpy as jnp

    return jax.tree_util.tree_map(
        lambda i, n: jnp.where(done.reshape(done.shape + (1,) * (n.ndim - 1)), i, n), init, states)


def _rollout(rstep, model, batch: int, steps: int, key, rows: int, first, start=None, resets=None):
    """`steps` control steps of environments first … first + rows of a batch of `batch` from the
    initial state (or from the states `start`), each step's uniform random controls drawn for the
    whole batch and those rows taken (so that a device's share of the batch sees the controls the
    whole batch's rollout gives it). With `resets` ((steps, rows) bool), each environment is put
    back to the initial state after the control steps it marks (tools/bench_resets.py)."""
    import jax
    import jax.numpy as jnp

    lo, hi = control_bounds(model)
    init = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (rows,) + x.shape), rstep.init(model))
    states = init if start is None else start

    def body(states, xs):
        k, reset = xs
        u = jax.random.uniform(k, (batch, model.nu), states.q.dtype, lo, hi)
        if rows < batch:
            u = jax.lax.dynamic_slice_in_dim(u, first, rows)
        new = rstep.step(model, states, u)     # a batch directly: the fast path
        return (new if reset is None else restarted(reset, init, new)), None

    states, _ = jax.lax.scan(body, states, (jax.random.split(key, steps), resets))
    return states


class ReplicatedRollout:
    """The rollout of `rollout_fn` as XLA replicas (runtime/replicas.py): one device's share of the
    batch traced and compiled once, without XLA's partitioner, and run on every device the step
    would split the batch over; `lower(key).compile()` and calls as `rollout_fn`'s jitted function.
    The same controls per environment as `rollout_fn` (the whole batch's drawn on each device).
    `replicas.Unavailable` from `lower` or `compile` where this jax builds no replicas."""

    def __init__(self, model, batch: int, steps: int, devices):
        import jax

        from scenec.runtime import replicas
        from scenec.runtime import step as rstep

        share = batch // len(devices)

        def per_device(m, key, first):
            with rstep.on_one_device():
                states = _rollout(rstep, m, batch, steps, key, share, first[0])
            return states, ~jax.numpy.all(jax.numpy.isfinite(states.q), axis=-1)

        self._run = replicas.Replicas(per_device, devices)
        self._model = jax.device_put(model, self._run.whole)
        self._first = self._run.first_rows(batch)
        self._lowered = self._program = None

    def _args(self, key):
        import jax

        return self._model, jax.device_put(key, self._run.whole), self._first

    def lower(self, key):
        self._lowered = self._run.lower(*self._args(key))
        return self

    def compile(self):
        self._program = self._lowered.compile()
        return self

    def __call__(self, key):
        import jax
        import jax.numpy as jnp

        states, bad = self._program(jax.tree_util.tree_leaves(self._args(key)))
        return states, jnp.sum(bad)


def replicated_rollout(model, batch: int, steps: int):
    """`ReplicatedRollout` where the step splits this batch over the host's devices (a jitted loop's
    policy, runtime/step.py `split_devices`), else None (`rollout_fn` then)."""
    from scenec.runtime import replicas
    from scenec.runtime import step as rstep

    devices = rstep.split_devices(batch, model)
    return ReplicatedRollout(model, batch, steps, devices) if len(devices) > 1 and replicas.enabled() else None


def run(args: argparse.Namespace) -> int:
    if args.batch < 1 or args.steps < 1:
        print("scenec run: --batch and --steps must be at least 1", file=sys.stderr)
        return 2
    model, code = load_model(args.scene, args.allow_outside)
    if model is None:
        return code
    import jax

    from scenec.runtime import cache, replicas

    key = jax.random.PRNGKey(args.seed)
    t0 = time.perf_counter()
    with cache.counting() as reads:
        try:
            # a split batch as replicas of one device's share: no partitioner in its compile
            fn = replicated_rollout(model, args.batch, args.steps)
            compiled = fn.lower(key).compile() if fn is not None else None
        except replicas.Unavailable as e:
            replicas.say_unavailable("the rollout", e, stacklevel=2)
            compiled = None
        if compiled is None:
            compiled = rollout_fn(model, args.batch, args.steps).lower(key).compile()
    t1 = time.perf_counter()
    states, bad = jax.block_until_ready(compiled(key))
    t2 = time.perf_counter()
    wall = t2 - t1
    env_steps = args.batch * args.steps
    dt = float(model.timestep)
    print(f"{model.name}: {args.batch} environments × {args.steps} steps (dt {dt:g} s, "
          f"{model.substeps} substep{'s' if model.substeps > 1 else ''})")
    print(f"  compile {t1 - t0:.2f} s{' (read from the compile cache)' if reads.hits else ''}; "
          f"run {wall:.2f} s: {env_steps / wall:,.0f} env steps/s, "
          f"{env_steps * dt / wall:,.1f} simulated s per wall s")
    print(f"  non-finite environments: {int(bad)} of {args.batch}")
    if model.contact_budget:
        over, most = budget_overflow(model, states)
        print(f"  contact budget {model.contact_budget}: {over} of {args.batch} environments end with more "
              f"penetrating contact candidates than that (most: {most})")
    return 1 if int(bad) else 0


def budget_overflow(model, states) -> tuple[int, int]:
    """How many of the batch's final states have more penetrating contact candidates than the model's
    contact budget solves, and the largest count: the budget is exact only while that stays 0."""
    import jax
    import jax.numpy as jnp

    from scenec.runtime import constraints, kinematics

    count = jax.jit(lambda q: constraints.penetrating_candidates(model, kinematics.forward_kinematics(model, q.T)))
    n = count(states.q.reshape(-1, model.nq))
    return int(jnp.sum(n > model.contact_budget)), int(jnp.max(n))
