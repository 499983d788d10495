"""The step: state, action → next state, as a short straight list of stages.

Where it sits: the end of the pipeline. A generated `<scene>_step.py` binds a `Model` to `step` and
`init`; users `jit`, `vmap` and `grad` through them. Each stage runs under `jax.named_scope` so that a
profile maps back to it. The model's static structure decides which stages exist and how they unroll;
nothing in here branches on a value of the state, the action or the model. (On a CPU the substep loop
takes one more turn that computes only the kinematics, for the output poses: a `lax.cond` on the
loop's counter, the same branch in every environment; see `OUTPUTS_IN_LOOP`.)

Per substep of length h = timestep / substeps (semi-implicit Euler, as MuJoCo's Euler integrator;
with `integrator: rk4`, stages 1–5 run four times as classical Runge–Kutta, then 6–7 correct):
  1. kinematics: body poses, centres of mass, motion subspaces from q
  2. velocities: body spatial velocities and the derivatives of the motion subspaces from qd
  3. inertia: each body's spatial inertia about its tree's reference point
  4. forces: actuators + joint springs and damping − bias (Coriolis, centrifugal, gravity)
  5. mass matrix (the tree's sparsity pattern) with armature and h·damping on its diagonal (damping is
     integrated implicitly, as MuJoCo does); one Gauss–Jordan elimination gives M⁻¹ and the smooth
     acceleration qacc = M⁻¹τ together
  6. constraints: contacts and joint limits correct the new velocity (constraints.py)
  7. integration: qd ← qd + h·qacc (+ constraint impulse); q ← q ⊕ h·qd (quaternions on the sphere)
"""

from __future__ import annotations

import contextlib
import functools
import gc
import math
import threading

import jax
import jax.numpy as jnp
import numpy as np

from . import constraints, dynamics, kinematics, replicas, small_loops_set
from . import math as sm
from .types import JointKind, Model, State


@contextlib.contextmanager
def gc_paused():
    """Python's cyclic garbage collector off for the block (restored after, as it was).

    Tracing the step allocates tens of thousands of short-lived Python objects (tracers, equations,
    shapes). Each time the allocations pass gc's thresholds a collection runs, and the full ones walk
    every tracked object of the process (jax's and numpy's among them), mostly in vain: reference
    counting frees what the trace drops. Paused while `step` is traced, in a fresh process at batch
    1024, trace + lowering: Ant 0.51 → 0.40 s, Humanoid 0.67 → 0.56 s, grasp 0.87 → 0.79 s,
    half_cheetah 0.31 → 0.33 s (no gain: little to collect); the same peak memory
    (`python tools/bench_trace.py SCENE...`)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _gc_paused(fn):
    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        with gc_paused():
            return fn(*args, **kwargs)
    return wrapped


def _inner(x, lead):
    """Public layout (*lead, *item) → internal (*item, B) with B = prod(lead) (1 without batch)."""
    item = x.shape[len(lead):]
    x = x.reshape((math.prod(lead),) + item)
    return jnp.moveaxis(x, 0, -1)


def _outer(x, lead):
    """Internal (*item, B) → public (*lead, *item)."""
    x = jnp.moveaxis(x, -1, 0)
    return x.reshape(tuple(lead) + x.shape[1:])


@_gc_paused
def init(m: Model, q=None, qd=None) -> State:
    """The initial state (the model's q0/qd0 unless given; leading batch axes allowed), with body
    poses filled in."""
    dtype = m.q0.dtype
    q = m.q0 if q is None else jnp.asarray(q, dtype)
    lead = q.shape[:-1]
    qd = jnp.broadcast_to(m.qd0 if qd is None else jnp.asarray(qd, dtype), lead + (m.nv,))
    f = kinematics.forward_kinematics(m, _inner(q, lead))
    return State(q=q, qd=qd, time=jnp.zeros(lead, dtype), xpos=_outer(f.xpos, lead),
                 xquat=_outer(f.xquat, lead), contact_force=jnp.zeros(lead + (m.nbody, 3), dtype))


@_gc_paused
def step(m: Model, state: State, action) -> State:
    """Advance one control step (`m.substeps` physics substeps) with `action` (…, nu) held constant.

    `state` may carry leading batch axes (then `action` has the same, or none and is shared); inside,
    the batch is moved to the last axis (math.py), so calling `step` on a batch directly is the fast
    path, and `jax.vmap(step)` works too. A large batch is split over the host's CPU devices (see
    `split_devices` and runtime/__init__.py), and on each device advanced in tiles of at most
    `tile_cap` environments (`lax.map`): the same arithmetic per environment either way."""
    dtype = state.q.dtype
    lead = state.q.shape[:-1]
    action = jnp.broadcast_to(jnp.asarray(action, dtype), lead + (m.nu,))
    batch = math.prod(lead)
    flat = lambda x: x.reshape((batch,) + x.shape[len(lead):])         # noqa: E731
    args = (flat(state.q), flat(state.qd), flat(action))
    devices = split_devices(batch, m)
    if len(devices) > 1:
        # One program per device on its share of the batch (shard_map); the model's values go in as
        # replicated arguments, so gradients with respect to them are summed over the devices.
        leaves, tree = jax.tree_util.tree_flatten(m)
        spec = jax.sharding.PartitionSpec("envs")
        rep = jax.sharding.PartitionSpec()
        run = jax.shard_map(lambda lv, *a: _advance_batch(jax.tree_util.tree_unflatten(tree, lv), *a),
                            mesh=jax.sharding.Mesh(np.asarray(devices), ("envs",)),
                            in_specs=([rep] * len(leaves), spec, spec, spec), out_specs=spec,
                            check_vma=False)
        outs = run(leaves, *args)
    else:
        outs = _advance_batch(m, *args)
    q, qd, cforce, xpos, xquat = (x.reshape(tuple(lead) + x.shape[1:]) for x in outs)
    return State(q=q, qd=qd, time=state.time + m.timestep, xpos=xpos, xquat=xquat, contact_force=cforce)


def keep_out_of_small_loops(x):
    """x unchanged, with a marker that keeps every loop around it a loop of thunks on XLA's CPU backend
    (where the small-loop threshold is raised: runtime/__init__.py, `small_loops_set`; elsewhere x).

    XLA's SmallWhileLoopHoistingPass compiles a while loop whose body touches under the threshold into
    one kernel, which pays for the solver's loops at a CPU tile but not around them: a single
    environment's substep loop, or a caller's scan over its control steps, fits under the threshold
    too, and compiles slowly as one kernel. The pass skips any loop that contains a sort, so this
    sorts two integers taken from x and multiplies x by 1 + (their difference, 0), which XLA cannot
    fold. Each turn of the substep loop is marked, so that loop and every loop around it (the tiles, a
    caller's scans) stay thunks and the loops inside a substep do not; so is the whole step's q, once:
    a gradient through a caller's 500-step scan of one environment compiled ×1.4 slower than without
    the threshold with the substep mark alone, ×1.16 with both (tests/contact_scenes/bounce.yaml,
    one process each, in turn). Under `jax.checkpoint` the backward pass recomputes the factor, so a
    gradient's transposed scans hold the sort too."""
    if not (small_loops_set() and jax.default_backend() == "cpu") or x.size == 0:   # nq 0: nothing to mark
        return x
    return _marked(x)


@jax.checkpoint
def _marked(x):
    bit = (x.reshape(-1)[:1] > 0).astype(jnp.int32)
    pair = jax.lax.sort(jnp.concatenate([bit, bit]))
    return x * (1 + pair[0] - pair[1]).astype(x.dtype)


def _advance_batch(m: Model, q, qd, ctrl):
    """(B, nq), (B, nv), (B, nu) → the new q, qd, contact forces, body positions and orientations, each
    with the batch first: all at once up to `tile_cap` environments, else in tiles one after the other,
    so that each tile's working set stays in the core's cache (Ant: 84k → 97k physics steps/s at batch
    1024, 66k → 93k at 4096)."""
    q = keep_out_of_small_loops(q)
    batch = q.shape[0]
    tile = _tile(batch, tile_cap(m, q.dtype.itemsize))
    if tile == batch:
        return tuple(jnp.moveaxis(x, -1, 0) for x in _advance(m, q.T, qd.T, ctrl.T))
    n = batch // tile
    split = lambda x: jnp.moveaxis(x.reshape((n, tile) + x.shape[1:]), 1, -1)   # noqa: E731
    outs = jax.lax.map(lambda a: _advance(m, *a), (split(q), split(qd), split(ctrl)))
    return tuple(jnp.moveaxis(x, -1, 1).reshape((batch,) + x.shape[1:-1]) for x in outs)


def mass_and_forces(m: Model, f, q, qd, ctrl, implicit_h):
    """The mass matrix M (nv, nv, B) at the frames f and the joint forces τ (nv, B) at (q, qd): actuators
    and passive forces less the bias forces. Joint damping enters M as implicit_h·damping."""
    with jax.named_scope("velocities"):
        cvel, cdof_dot = dynamics.com_velocities(m, f, qd)
    with jax.named_scope("inertia"):
        cinert = dynamics.body_inertias(m, f)
    with jax.named_scope("forces"):
        tau = (dynamics.actuator_forces(m, q, qd, ctrl) + dynamics.passive_forces(m, q, qd)
               - dynamics.bias_forces(m, f, cvel, cdof_dot, cinert, m.gravity, qd))
    with jax.named_scope("mass_matrix"):
        mass = dynamics.mass_matrix(m, f, cinert, m.dof_armature + implicit_h * m.dof_damping)
    return mass, tau


def _advance(m: Model, q0, qd0, ctrl):
    """The substeps for one tile of environments: (nq, b), (nv, b), (nu, b) → the new q and qd, the
    contact forces and the body poses, all with the batch last."""
    batch = q0.shape[-1]
    h = m.timestep / m.substeps
    if m.nv == 0:   # every body fixed to the world: nothing moves and no force acts
        xpos, xquat = kinematics.body_poses(m, q0)
        return q0, qd0, sm.zeros_like_batch((m.nbody, 3, batch), q0), xpos, xquat

    def frames(q):
        with jax.named_scope("kinematics"):
            return kinematics.forward_kinematics(m, q)

    def smooth(q, qd, implicit_h, f=None):
        """Frames, M⁻¹ and the unconstrained acceleration at (q, qd) (the frames `f` at q if given);
        joint damping enters M as implicit_h·damping (semi-implicit Euler) or not at all (Runge–Kutta
        stages)."""
        f = frames(q) if f is None else f
        mass, tau = mass_and_forces(m, f, q, qd, ctrl, implicit_h)
        with jax.named_scope("mass_matrix"):
            # One elimination gives M⁻¹ (the constraints need it) and M⁻¹τ together: a separate
            # product M⁻¹·τ let XLA fuse the elimination's last step into it (Ant: 10% of the step).
            minv, qacc = dynamics.inverse_by_tree(m, mass, tau)
        return f, minv, qacc

    def substep(q, qd, f):
        """One substep from (q, qd) with the frames f at q: the new q, qd and contact forces."""
        if m.integrator == "rk4":
            f, minv, a1 = smooth(q, qd, 0.0, f)
            qd2 = qd + 0.5 * h * a1
            a2 = smooth(integrate_positions(m, q, qd, 0.5 * h), qd2, 0.0)[2]
            qd3 = qd + 0.5 * h * a2
            a3 = smooth(integrate_positions(m, q, qd2, 0.5 * h), qd3, 0.0)[2]
            qd4 = qd + h * a3
            a4 = smooth(integrate_positions(m, q, qd3, h), qd4, 0.0)[2]
            qd_free = qd + (h / 6.0) * (a1 + 2.0 * a2 + 2.0 * a3 + a4)
            q_free = integrate_positions(m, q, (qd + 2.0 * qd2 + 2.0 * qd3 + qd4) / 6.0, h)
        else:
            f, minv, qacc = smooth(q, qd, h, f)
            qd_free = qd + h * qacc
        with jax.named_scope("constraints"):
            qd_new, contact = constraints.solve_velocity(m, f, minv, q, qd, qd_free, h)
        with jax.named_scope("integration"):
            if m.integrator == "rk4":  # the constraint's velocity change moves q to first order
                q_new = integrate_positions(m, q_free, qd_new - qd_free, h)
            else:
                q_new = integrate_positions(m, q, qd_new, h)
        return q_new, qd_new, contact

    # The loop carries each contact slot's force (constraints.ContactForces) and sums them onto the
    # bodies once, after its last turn, not in every substep.
    contact0 = constraints.no_impulses(m, q0)
    if outputs_in_loop():
        # substeps + 1 turns of one loop: each computes the frames at its q, and all but the last go
        # on to the rest of the substep; the last turn's frames are the outputs.
        def turn(carry, i):
            q, qd, contact, _, _ = carry
            q = keep_out_of_small_loops(q)
            f = frames(q)
            q, qd, contact = jax.lax.cond(i < m.substeps, lambda c: substep(*c[:2], f), lambda c: c,
                                          (q, qd, contact))
            return (q, qd, contact, f.xpos, f.xquat), None

        poses0 = (sm.zeros_like_batch((m.nbody, 3, batch), q0), sm.zeros_like_batch((m.nbody, 4, batch), q0))
        (q, qd, contact, xpos, xquat), _ = jax.lax.scan(turn, (q0, qd0, contact0) + poses0,
                                                        jnp.arange(m.substeps + 1))
        with jax.named_scope("outputs"):
            return q, qd, constraints.body_forces(m, contact), xpos, xquat

    def turn(carry, _):
        q, qd, _ = carry
        q = keep_out_of_small_loops(q)
        return substep(q, qd, frames(q)), None

    (q, qd, contact), _ = jax.lax.scan(turn, (q0, qd0, contact0), None, length=m.substeps)
    with jax.named_scope("outputs"):
        xpos, xquat = kinematics.body_poses(m, q)
        return q, qd, constraints.body_forces(m, contact), xpos, xquat


# On a CPU the step's output poses (the body frames at the last q) come from one more turn of the
# substep loop, which computes the frames at its q and skips the rest of the substep (a `lax.cond` on
# the loop's counter: the same branch for every environment, never a value's). The loop's walk is
# then the only copy of the kinematic walk XLA compiles, not one in the loop and one after it.
# Measured against the walk after the loop, fresh processes at batch 1024, alternating (XLA compile,
# mean of three pairs, two sessions): Ant 2.24 → 1.97 s and 2.69 → 2.25 s, Humanoid 3.73 → 3.38 s
# (two pairs) and 4.24 → 3.94 s; trace time unchanged. Run speed, the two in one process,
# interleaved: Ant ×1.00–1.04, Humanoid ×1.01–1.05 at batch 1024; at batch 1 within the ±5% spread
# of repeated runs (Ant ×0.96, hopper ×1.08). Elsewhere (a GPU) the frames are a second walk after
# the loop, as before: XLA's GPU conditional may wait on the host for its predicate (unmeasured).
OUTPUTS_IN_LOOP = True


# How many blocks of each tracing policy this thread is in (`calls_from_python`, `on_one_device`,
# `for_gradients`): a trace runs in the thread that calls the jitted function.
_POLICY = threading.local()


@contextlib.contextmanager
def _policy_block(name: str):
    setattr(_POLICY, name, _in_policy(name) + 1)
    try:
        yield
    finally:
        setattr(_POLICY, name, _in_policy(name) - 1)


def _in_policy(name: str) -> int:
    return getattr(_POLICY, name, 0)


def outputs_in_loop() -> bool:
    return OUTPUTS_IN_LOOP and jax.default_backend() == "cpu" and not _in_policy("gradients")


@contextlib.contextmanager
def for_gradients():
    """Within the block, a step traced is in the form that differentiates fastest: the output poses
    from a walk after the substep loop, not from one more turn of it (`OUTPUTS_IN_LOOP`), whose
    `lax.cond` jax is slow to linearize and whose linearization is large to compile. The same
    arithmetic, fused otherwise by XLA (one step's gradient: 1.5e-7 of its largest entry apart).
    Trace `jax.grad` of code that steps the physics inside it (the differentiable environments of
    `envs.differentiable`, the trajectory optimiser and the default environment's derivative rule
    do). Ant, the APG iteration of `scenec train --algo apg` (the gradient of 32 steps of 32
    environments), fresh processes: trace 5.66 → 3.63–3.65 s, lowering 1.56 → 1.36 s, XLA 25.6 →
    20.7–21.0 s, an iteration's run 711 → 588 ms; one step's gradient at 32 environments: trace
    2.7–2.9 → 2.1 s, XLA 11.0 → 10.2 s. (Per thread, as `calls_from_python`.) Tried first: a
    jax.custom_jvp choosing the form for derivatives by itself, which traced the loop's form too,
    each time the scan around it was linearized (APG's trace 7.6 s)."""
    with _policy_block("gradients"):
        yield


TILE = 128   # environments per tile of a large batch (see `_tile`)
# Bytes per tile that each of two streamed working sets may take; a scene with a larger one gets a
# smaller tile (`tile_cap`). Both stages read their array once per pass, many passes per substep, so
# it has to stay in a core's L2 beside everything else:
# - the mass matrix's elimination (dynamics.elimination_floats: an (n, n + 1) matrix per environment
#   for a tree of n dofs eliminated whole), read once per dof: grasp (a 39-dof tree, 0.8 MB at 128
#   environments) ran 1.42× as fast with tiles of 64, Humanoid (nv 23, 0.28 MB at 128) 0.96× and
#   fetch (nv 16) 0.92× as fast with 64, on a machine with 2 MiB of L2 per core;
# - the solver's rows (constraints.solver_row_floats: J and W of the contact slots), read once per
#   iteration: on a machine with 1 MiB of L2 per core, Humanoid (9.6 kB per environment: 1.2 MB at
#   128) ran 1.28× as fast with tiles of 64, grasp (10.8 kB: 0.69 MB at 64) 1.07× slower with 32, and
#   Ant (3.1 kB) and fetch (3.7 kB) 1.12× and 1.07× slower with 64 than with 128.
# (`python tools/ablate.py SCENE --batch 1024 tile=32 tile=64`.) With 2 MiB of L2 per core (a 2-core
# Intel Xeon, 2026-12-06, `--steps 200 --repeats 7`) the same sizes stay best: Humanoid took 1.14 of
# its time with tiles of 128 and 1.02 with 32; Ant 1.19 with 256 and 1.06 with 64.
_INVERSE_BYTES = 640 << 10
_SOLVER_BYTES = 768 << 10


# On a TPU the batch runs in tiles too, when one environment's working set times the batch would pass
# TPU_TILE_BYTES: counted as the solver's rows (solver_row_floats) and the one-hot table of the
# contact choice (candidate rows × slots, `constraints.one_hot_floats`), the two per-environment
# arrays that grow with the scene. Fitted to two scenes on a TPU v5e at 16,384 environments
# (`python3 tools/ablate.py SCENE --batch 16384 tile=N` there, 2026-12-06, run as an edit that
# forced the tile on a TPU, as `tile=N` does now): Humanoid (22 kB per environment by this count;
# 403.9 MB of XLA temporaries whole) ran 1.50M physics steps/s in tiles of 2048 against 1.09M whole,
# 1.33M in tiles of 4096 and 1.27M in tiles of 1024; Ant (3.9 kB; 62 MiB whole) 8.03M whole against
# 7.66M in tiles of 4096. Other scenes, other TPUs and GPUs: unmeasured (a GPU runs the batch whole).
TPU_TILE_BYTES = 64 << 20

# A scene of small environments that touch nothing (no collider pairs, and an estimated control step
# under SMALL_SCENE_US per environment: `env_cost_us`) takes CPU tiles of up to SMALL_TILE: a tile of
# 128 of them is so little work that each turn of the tile loop pays as much again in its own
# overhead. Tiles of 512 against 128 (`python tools/ablate.py SCENE --batch B --steps 400 tile=512`,
# 2-core Intel Xeon, 2026-12-06, at 1024 the whole of each device's half): batch 1024, pendulum ×1.25,
# double pendulum ×1.15, cartpole ×1.16, reacher ×1.10; batch 4096 (200 steps) ×1.16, ×1.08, ×1.10
# and ×1.02, where tiles of 1024 and 2048 ran no better or slower (cartpole and reacher ×0.88 at
# 2048). Not for scenes with contacts or more work per environment: box_on_plane (est. 0.59 µs, one
# pair group) ran ×0.90 with 512, ball (0.38 µs) ×1.06, ur5e (7.6 µs, no pairs) ×0.84 with 1024 and
# ×0.92 with 256, hopper ×0.79 and ×0.88.
SMALL_SCENE_US = 1.0
SMALL_TILE = 4 * TILE


def tile_cap(m: Model, itemsize: int = 4) -> int | None:
    """The most environments per tile for `m`, or None to run any batch whole. On a CPU (see
    _INVERSE_BYTES, _SOLVER_BYTES): TILE, or fewer where a working set would outgrow its budget, never
    under TILE/4; SMALL_TILE for a small scene without collider pairs. On a TPU: TPU_TILE_BYTES over
    the working set's bytes. Elsewhere (a GPU): None."""
    backend = jax.default_backend()
    if backend == "tpu":
        floats = constraints.solver_row_floats(m) + constraints.one_hot_floats(m)
        return TPU_TILE_BYTES // (itemsize * floats) if floats else None
    if backend != "cpu":
        return None
    if not m.pair_groups and _env_cost(m) < SMALL_SCENE_US:
        return SMALL_TILE
    cap = TILE
    for floats, budget in ((dynamics.elimination_floats(m), _INVERSE_BYTES),
                           (constraints.solver_row_floats(m), _SOLVER_BYTES)):
        if floats:
            cap = min(cap, max(TILE // 4, budget // (itemsize * floats)))
    return cap


def _tile(batch: int, cap: int | None = TILE) -> int:
    """How many environments `step` advances at a time: all of them up to `cap` (`tile_cap`; None: no
    limit); above, the largest divisor of the batch not above it, unless that is under TILE/4 (under
    cap/4 for a cap above TILE; a batch with no good divisor runs whole). Tiles are for a CPU core's
    cache (and a TPU's memory, above); on a GPU the batch runs whole, since a loop over tiles would
    leave most of it idle and launch every kernel once per tile."""
    if cap is None or batch <= cap:
        return batch
    best = max(d for d in range(1, cap + 1) if batch % d == 0)
    return best if best >= max(cap, TILE) // 4 else batch


# A split costs something a call however small the batch: the program runs on two devices and waits
# for both, and each array goes in and comes out in two pieces. Measured on 2 cores (one device vs
# split, /tmp A/B of every shipped scene at batches 16, 64 and 256): ~0.1-0.35 ms more per call from
# Python, ~10 µs more per turn of a jitted scan. So the step splits a batch only when one device's
# work on it is larger than that by enough (`split_devices`), estimated from the scene's structure
# (`env_cost_us`) in microseconds of one device's time for the whole batch and one control step:
# - "scan" (a jitted loop: training, evaluation, `scenec run`, `scenec bench`): from 12 µs. The step
#   alone in a scan: ball and box_on_plane at 16 environments (est. 6–9 µs) ran ×0.55–0.65 split,
#   reacher and cartpole at 16 (12 µs) even, the pendulum at 64 (15 µs) ×0.66; in `scenec run`'s
#   rollout, whose random actions split too, the pendulum at 64 ran ×1.6 faster split. Cartpole,
#   ball, box_on_plane and reacher at 64 (est. 24–46 µs) ran ×1.3–1.4 faster split, Ant, hopper and
#   half_cheetah at 16 ×1.35–1.5, Ant at 8 ×1.7 and Humanoid at 8 ×2.1;
# - "call" (`jit_step` and `GymVectorEnv`: one call from Python per control step): from 1000 µs.
#   The six light scenes at 256 environments ran 0.15–0.27 ms a call on one device and 0.25–0.51
#   ms split; hopper, walker2d, ur5e and half_cheetah at 64 (est. 0.4–1.0 ms) about even; Ant and
#   fetch at 16 (0.3 ms) ×0.65–0.8 split, Humanoid at 16 (1.3 ms) ×1.1, grasp at 16 (1.0 ms) ×0.85;
#   at 64 and up those four ran ×1.3–2.2 faster split.
SPLIT_FROM_US = {"scan": 12.0, "call": 1000.0}
@contextlib.contextmanager
def calls_from_python():
    """Within the block, a step traced for a batch splits it as a program called once per control
    step from Python should (`SPLIT_FROM_US["call"]`), not as a jitted loop's body. `jit_step` and
    `GymVectorEnv` trace under it; so should `carry_sharding` for their placements. (Per thread: a
    trace runs in the thread that calls the jitted function.)"""
    with _policy_block("calls"):
        yield


# Units of `env_cost_us`'s count per microsecond of one core's time, fitted (geometric mean) to the
# shipped scenes' one-device scan at 256 environments on this project's 2-core machine. Estimate
# against measured: 0.71–1.42 over all fourteen scenes, which run 0.25 µs (pendulum) to 59 µs
# (Humanoid) per environment and control step.
_UNITS_PER_US = 12_800


def env_cost_us(m: Model) -> float:
    """An estimate of one environment's control step on one core, in µs, from the scene's structure:
    per substep the mass matrix's elimination (dynamics.elimination_floats, read once per dof) and
    the frames (per body), run once per Runge–Kutta stage, the solver's sweeps over its rows
    (constraints.solver_row_floats), W = J·M⁻¹ of the contact slots, and the collision kernels."""
    nv = m.nv
    candidates = constraints.candidate_rows(m)
    slots = min(m.contact_budget, candidates) if m.contact_budget > 0 else candidates
    stages = 4 if m.integrator == "rk4" else 1
    units = (stages * (4 * nv * dynamics.elimination_floats(m) + 1500 * m.nbody)
             + 4 * m.solver_iterations * constraints.solver_row_floats(m)
             + 6 * slots * nv * nv + 100 * candidates)
    return m.substeps * units / _UNITS_PER_US


def _per_model(table: dict, size: int, m: Model, key, make):
    """table[(id(m), key)], made by make() the first time, for the last `size` (model, key) pairs. The
    model is kept beside its value, so that its id stays its own while the entry lives."""
    full = (id(m), key)
    if full not in table:
        if len(table) >= size:
            del table[next(iter(table))]
        table[full] = (m, make())
    return table[full][1]


_COSTS: dict = {}          # env_cost_us of the last models: jit_step asks on every call


def _env_cost(m: Model) -> float:
    return _per_model(_COSTS, 32, m, None, lambda: env_cost_us(m))


# Tried and not kept: one device, the batch in two halves each with its own tile loop (no partitioner:
# the Shardy pass is 0.25 s of Ant's XLA compile, 0.4 s of Humanoid's), hoping XLA's thunk executor
# runs the two independent loops on two threads. It runs them one after the other: Ant at batch 1024
# 319k physics steps/s against 794k split over two devices and 348k on one, and XLA compile 3.6 s
# against 2.2 s (the two loops are compiled twice).
def split_devices(batch: int, m: Model) -> list:
    """The devices `step` splits a batch of `m`'s environments over: the most of the host's CPU
    devices (runtime/__init__.py makes one per core) that divide the batch and leave each at least
    half of `SPLIT_FROM_US` (for the policy in force: `calls_from_python`) of work, estimated by
    `env_cost_us`; a single device for a batch too light to pay for the split, a single host
    device, another backend (a GPU runs the whole batch), or inside the caller's own mesh (`pmap`,
    `shard_map`, `jax.set_mesh`: the caller places the batch)."""
    devices = jax.devices()
    mine = jax.sharding.get_abstract_mesh().empty and not _in_policy("replica")
    if mine and batch > 1 and len(devices) > 1 and devices[0].platform == "cpu":
        work = batch * _env_cost(m)
        least = SPLIT_FROM_US["call" if _in_policy("calls") else "scan"] / 2
        for n in range(len(devices), 1, -1):
            if batch % n == 0 and work / n >= least:
                return devices[:n]
    return devices[:1]


def carry_sharding(m: Model, batch: int, split: bool = False):
    """Where a jitted function should keep a state it carries from call to call when `step` runs
    `batch` environments of `m` at once: on the devices `step` splits them over (`split_devices`,
    under the same policy as the function's trace), replicated, or with `split` divided along the
    first axis as `step` returns a batch; None when `step` keeps the batch on one device.

    jax.jit specialises a program on where its inputs lie, and everything a function that splits the
    batch returns lies on that mesh, while a fresh state lies on one device: a loop that feeds each
    call's output to the next compiled the function twice (the generated Ant step at batch 1024:
    2.2 s and 2.0 s; Ant's PPO iteration: 4.4 s and 4.7 s of XLA). Putting the first input here and
    passing this as the jit's `out_shardings` gives every call the same input placement."""
    devices = split_devices(batch, m)
    return None if len(devices) == 1 else _sharding_over(tuple(devices), split)


@functools.cache   # one object per placement: a loop's calls hash and compare the same sharding
def _sharding_over(devices: tuple, split: bool):
    mesh = jax.sharding.Mesh(np.asarray(devices), ("envs",))
    return jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("envs") if split
                                      else jax.sharding.PartitionSpec())


def _step_called_from_python(m: Model, state: State, action) -> State:
    with calls_from_python():
        return step(m, state, action)


@functools.cache
def _jitted_step(sharding, from_python: bool = False):
    """jax.jit of the step, one per placement of its output and policy: jax caches a function's trace
    by the function, so the policy is a function of its own, not only a context around one."""
    fn = _step_called_from_python if from_python else step
    return jax.jit(fn) if sharding is None else jax.jit(fn, out_shardings=sharding)


def _placed(tree, sharding):
    """jax.device_put(tree, sharding), skipping the arrays already there (the loop's own outputs). An
    array on one CPU device goes through host memory (the same memory on a CPU): jax moves it from
    device to devices with a small jitted program compiled per shape, which was 0.2 s of the first
    call from a fresh Ant state at batch 1024 (its leaves and the action, six compiles)."""
    def put(x):
        if isinstance(x, jax.Array):
            if x.sharding == sharding:
                return x
            devices = x.sharding.device_set
            if len(devices) == 1 and next(iter(devices)).platform == "cpu" and not jax.typeof(x).weak_type:
                x = np.asarray(x)
        return jax.device_put(x, sharding)
    return jax.tree_util.tree_map(put, tree)


_PLACED_MODELS: dict = {}      # the last few models' copies, by placement (`_per_model`)


def _model_on(m: Model, sharding):
    """The model's arrays replicated on `sharding`'s devices, copied once per model and placement.
    Left on one device, the split step's program copies every model array to both devices on each
    call: per call from Python, pendulum batch 64 0.85 ms instead of 0.28 ms, Ant 1024 9.3 ms
    instead of 8.4 ms."""
    return _per_model(_PLACED_MODELS, 8, m, sharding, lambda: jax.device_put(m, sharding))


@contextlib.contextmanager
def on_one_device():
    """Within the block, a step traced for a batch keeps it on one device: for a function traced for
    one device's share of a batch and run on every device as replicas (replicas.py), whose share must
    not be split again. (Per thread, as `calls_from_python`.)"""
    with _policy_block("replica"):
        yield


def _step_per_device(m: Model, state: State, action) -> State:
    """`step` for one device's share of a batch that `jit_step` runs as replicas."""
    with on_one_device():
        return step(m, state, action)


_REPLICAS: dict = {}   # devices → replicas.Replicas of `_step_per_device`, or the reason there is none
_STEP_PROGRAMS: dict = {}   # the last models' replicated programs and placed leaves, by signature


def _replicas(devices: tuple):
    """The replicated step over `devices` (replicas.py), or None where this jax cannot build one
    (said once, with the reason)."""
    if not replicas.enabled():
        return None
    r = _REPLICAS.get(devices)
    if r is None:
        r = _REPLICAS[devices] = replicas.Replicas(_step_per_device, devices)
    return r if isinstance(r, replicas.Replicas) else None


def put_split(x: np.ndarray, split: jax.sharding.NamedSharding):
    """A host array onto `split` (`_sharding_over(devices, True)`: divided along its first axis),
    cut into the devices' parts here and each part copied to its device by jax's batched put:
    `jax.device_put` onto the split placement took 62 µs for 64 × 8 floats against 11 µs, and five
    times that while the previous call's programs held both cores (a Gym vector env's actions, Ant
    at 256: 0.37–0.41 ms a step)."""
    parts = np.split(x, len(split.device_set))
    try:
        from jax._src.interpreters import pxla

        return pxla.batched_device_put(jax.core.ShapedArray(x.shape, x.dtype), split, parts,
                                       list(split.mesh.devices.flat))
    except (ImportError, AttributeError, TypeError):
        return jax.device_put(x, split)


def _action_on(action, lead: tuple, dtype, split, whole):
    """The action placed for the replicated step: split with the batch when it has the batch's axes,
    else replicated (`put_split` for a host array)."""
    batched = np.shape(action)[:len(lead)] == lead
    if isinstance(action, jax.Array):
        return _placed(action, split if batched else whole)
    action = np.asarray(action, dtype)
    return put_split(action, split) if batched else jax.device_put(action, whole)


def _route(m: Model, state: State, action):
    """Where `jit_step` runs these arguments: (run, jitted, m, state, action), `run` the replicated
    step (None where the batch stays on one device, does not divide along its first axis, or this
    jax builds no replicas), `jitted` the jax.jit of the step otherwise, and the arguments placed
    for whichever runs."""
    lead = np.shape(state.q)[:-1]
    with calls_from_python():
        devices = tuple(split_devices(math.prod(lead), m)) if lead else ()
    if len(devices) < 2:
        return None, _jitted_step(None, True), m, state, action
    whole, split = _sharding_over(devices, False), _sharding_over(devices, True)
    # split along the first axis when it divides ((3, 64) over 2 devices: replicated)
    sharding = split if lead[0] % len(devices) == 0 else whole
    state, m = _placed(state, sharding), _model_on(m, whole)
    run = _replicas(devices) if sharding is split else None
    if run is not None:
        action = _action_on(action, lead, state.q.dtype, split, whole)
    return run, _jitted_step(sharding, True), m, state, action


def _without_replicas(run, e: replicas.Unavailable) -> None:
    _REPLICAS[run.devices] = str(e)
    replicas.say_unavailable("the step", e, stacklevel=4)


def lower_jit_step(m: Model, state: State, action):
    """`jit_step`'s program for these arguments, traced and lowered, not yet compiled: `.compile()`
    gives what its first call compiles (`scenec bench` times the two stages; `as_text()` and
    `memory_analysis()` on the result as on jax's). The arguments are placed as `jit_step` places
    them."""
    run, jitted, m, state, action = _route(m, state, action)
    if run is not None:
        try:
            return run.lower(m, state, action)
        except replicas.Unavailable as e:
            _without_replicas(run, e)
    return jitted.lower(m, state, action)


def jit_step(m: Model, state: State, action) -> State:
    """`jax.jit(step)` for a Python loop that feeds each call's state to the next (the generated
    `<scene>_step.step`): a batch that `step` splits over the host's devices goes in split the way it
    comes out, so the loop compiles the step once, not twice (`carry_sharding`), and the model's
    arrays go there once, not on every call (`_model_on`). Putting state and action through
    `jax.device_put` on every call cost +0.27 ms a call over the plain jit (pendulum, batch 64) and
    +0.64 ms (Ant, 1024); skipping what is placed, the two are within noise. It splits a batch only
    where a call's work pays for the split (`calls_from_python`). A batch split along its first axis
    runs as replicas (replicas.py: one device's share compiled once, without XLA's partitioner; Ant's
    first call at batch 1024 2.78–2.89 s → 2.34–2.50 s) with the action split alike (or replicated,
    one action for all); otherwise the jitted step, the action left where it is (a fresh array each
    call, placed alike every time). Called under a caller's own trace (jit, vmap, grad), it is plain
    `jax.jit(step)`, split as the caller's trace decides."""
    if isinstance(state.q, jax.core.Tracer):
        return _jitted_step(None)(m, state, action)               # the caller's trace and policy
    run, jitted, m, state, action = _route(m, state, action)
    if run is not None:
        try:
            program, model_leaves = _per_model(
                _STEP_PROGRAMS, 8, m, (run.devices, state.q.shape, state.q.dtype, action.shape,
                                       action.dtype, action.sharding == run.split),
                lambda: (run.program(m, state, action), jax.tree_util.tree_leaves(m)))
            return program(model_leaves + jax.tree_util.tree_leaves(state) + [action])
        except replicas.Unavailable as e:
            _without_replicas(run, e)
    return jitted(m, state, action)


def integrate_positions(m: Model, q, qd, h):
    """q ⊕ h·qd joint by joint (q (nq, B), qd (nv, B)): quaternions of ball and free joints turn by the
    body-frame angular velocity (exact rotation for a constant velocity over h)."""
    if m.njnt == 0:
        return q
    kinds = np.asarray(m.jnt_kind.array)
    qadr = np.asarray(m.jnt_qpos_adr.array)
    dadr = np.asarray(m.jnt_dof_adr.array)
    # The new q is assembled in qpos order from slices (no scatter: XLA's CPU backend runs one as a
    # loop of its own): coordinates that move linearly (hinge, slide, free positions) in runs where
    # q and qd addresses both advance by one, and each quaternion by its exact rotation.
    segments = []                        # [kind, q start, qd start, length], kind "linear" or "quat"
    for j in np.argsort(qadr, kind="stable"):
        a, d, kind = int(qadr[j]), int(dadr[j]), int(kinds[j])
        if kind == JointKind.BALL:
            segments.append(["quat", a, d, 4])
            continue
        n = 1 if kind in (JointKind.HINGE, JointKind.SLIDE) else 3
        last = segments[-1] if segments else None
        if last and last[0] == "linear" and last[1] + last[3] == a and last[2] + last[3] == d:
            last[3] += n
        else:
            segments.append(["linear", a, d, n])
        if kind == JointKind.FREE:
            segments.append(["quat", a + 3, d + 3, 4])
    return jnp.concatenate([q[a:a + n] + h * qd[d:d + n] if kind == "linear"
                            else sm.quat_integrate(q[a:a + 4], qd[d:d + 3], h) for kind, a, d, n in segments])
