"""Contacts and joint limits: soft velocity constraints solved by projected Gauss–Seidel.

Where it sits: stage 6 of a substep (see step.py), after the smooth acceleration gives the velocity
qd_free = qd + h·M⁻¹τ. It returns the constrained velocity and each body's contact force. Arrays have
the batch last (math.py).

Constraints are rows of J in joint space:
- a contact: the normal row (separation velocity of geom2 from geom1 along the kernel's normal) and two
  tangent rows; Coulomb friction keeps |λ_t| ≤ μ·λ_n (a disc for the elliptic cone, a square for the
  pyramidal one);
- a joint limit is a single row along which the distance to the nearer end of the range grows.

Softness (per pair or joint: time constant τ, damping ratio ζ) makes the error obey
C̈ + 2ζω·Ċ + ω²·C = 0 with ω = 1/(τζ), integrated implicitly ("soft step", E. Catto, Solver2D, 2024):
with a₁ = 2ζ + hω, a₂ = hω·a₁, a₃ = 1/(1 + a₂), each normal-row update is
    Δλ = −m_eff·a₂a₃·(v + ω/a₁·C) − a₃·λ,
mass-independent (m_eff = 1/(J M⁻¹ Jᵀ) is the row's effective mass) and stable for any h; at rest a
row carrying a load F sinks F/(m_eff·ω²): g·(τζ)² = 0.25 mm for a sphere at the default τ = 0.005 s,
4× that at each end of a free capsule lying on its two ends (m_eff = m/4 there). A row whose
surfaces are still apart (C > 0) is a speculative contact: it only stops the approach that would close
the gap within this substep (bias C/h, rigid). Restitution e: after the iterations, one more sweep
asks the normal velocity of rows that arrived faster than `RESTITUTION_THRESHOLD` to reach −e·v_before.

Budgets (`options.contact_budget`, `limit_budget`): the solver visits, per environment and substep,
only the closest contact candidates and the limits nearest their ends, chosen by `_smallest` (a
fixed number of slots, gathered per environment, deepest first): the solver's work follows the
contacts a scene has at once, not the candidate pairs it might have (Humanoid: 12 slots of 189).

The solver is a `lax.scan` over iterations of a `lax.scan` over contact blocks (fixed lengths:
branch-free and reverse-differentiable). Contact velocities are updated in joint space, qd += W_bᵀ·Δλ
with W = J·M⁻¹, which is cheaper than forming J·M⁻¹·Jᵀ. Hinge and slide limits are swept in row space,
where J·M⁻¹·Jᵀ costs nothing to form (a gather from M⁻¹; `_limit_system`).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from . import math as sm
from .kinematics import Frames, geom_positions_quats
from .plan import plan_of
from .types import JointKind, Model

RESTITUTION_THRESHOLD = 0.2   # m/s: slower impacts do not bounce (keeps resting contacts quiet)
# Two blocks (rows) per iteration of the block loop from a batch of UNROLL_FROM environments up: fewer
# loop-control thunks per block, which is where the time goes at tile sizes (Ant +6%, Humanoid +15%,
# one device); four or more blocks lose again (XLA's fusion recomputes the chain of velocity updates
# in each consumer). Batches under UNROLL_FROM run one block per iteration, faster there (one block
# against two, same process: Hopper ×1.33 at batch 1, ×1.17 at 8; Ant ×1.17 at 1, ×1.10 at 8; at 16
# two blocks win again, by 6–8%).
# On a TPU a sweep of up to TPU_UNROLL blocks (rows) unrolls fully: no loop, so XLA reads each
# block's J and W by static slices and passes λ block to block instead of through a loop's stacked
# carry. TPU v5e, batch 16,384, `python tools/ablate.py SCENE --batch 16384 --steps 100 unroll=64`
# against two per iteration: Humanoid (16 blocks) 0.74 of base (1.51M → 2.04M physics steps/s; its
# XLA compile 10.4 → 16.5 s), Ant (8) 0.89 (8.13M → 9.15M). It is the loop's absence, not fewer
# turns: Humanoid's sweep in two turns of 8 blocks (`unroll=8`) ran 0.99 of base; and its blocks as
# straight-line code with a barrier after each (`unrolled_up_to=32`, the small sweeps' form on every
# backend) 1.04. Longer sweeps keep two per iteration: each unrolled block is code to compile. Not on a
# CPU: Humanoid fully unrolled ran 1.45 of base there (batch 1024, `unroll=64`, 2-core Intel Xeon,
# 2026-12-06), the fusion recomputing the chain of velocity updates as above.
# _UNROLL None: by backend; a number (tools/ablate.py `unroll=N`) applies on every backend.
_UNROLL = None
UNROLL_FROM = 16
TPU_UNROLL = 64


def _sweep_unroll(batch: int, n: int) -> int:
    """Blocks (rows) per iteration of a sweep's loop over `n` of them for a tile of `batch`
    environments."""
    if _UNROLL is None and jax.default_backend() == "tpu" and n <= TPU_UNROLL:
        return max(n, 1)
    return (2 if _UNROLL is None else _UNROLL) if batch >= UNROLL_FROM else 1


# Up to this many contact blocks, each sweep visits them in straight-line code instead of a loop: no
# loop control, no per-block write of λ into a stacked array (λ is carried block by block), three
# kernels per block. Each block's new velocity is written as two halves joined (`math.by_halves`),
# and held apart from the next block's kernels by an optimization barrier. Against the loop, batch
# 1024 (`python tools/ablate.py SCENE unrolled_up_to=16`, or `=1` for the loop): grasp (4 blocks)
# 1.2× as fast, compile +0.3 s; Ant and fetch (8) 1.04–1.09×, hopper and walker2d (14) 1.10×,
# half_cheetah (16) 1.07×, Humanoid (16) 1.02–1.05×, but each block adds three kernels to compile
# (+0.3 s for Ant, +0.55 s for half_cheetah and Humanoid). Ant's and Humanoid's compile time have
# targets of their own (issue 7), so only the smallest sweeps take it.
_UNROLLED_UP_TO = 4
# Solver iterations per turn of the iterations' loop (tools/ablate.py `iterations_unroll=N`; a count
# of at least `solver_iterations` leaves no loop). One everywhere: `python tools/ablate.py SCENE
# --batch 1024 --steps 200 --repeats 7 iterations_unroll=2 ...` on a 2-core Intel Xeon ran Humanoid
# 1.04 (2) and 1.18 (8, no loop) of base's time, Ant 1.01 (2) and 1.09 (4); on a TPU v5e at 16,384
# (`--steps 100 --repeats 3`) Humanoid 1.06 (8) and Ant 0.97 (4) (2026-12-06;
# tools/results/bench_tpu_peers_unroll.txt).
_ITERATIONS_UNROLL = 1
# Limit rows per fused chain of the row-space sweep (`_limit_system`): a chain fused into one loop is
# re-evaluated in each of its consumers, so longer chains repeat more work; Ant and Humanoid ran as
# fast with 4 as with 8, and 2% slower with 2.
_LIMIT_GROUP = 4
# From this many full groups of rows up (12 rows), the row-space sweep is a loop over the groups
# (`_grouped_sweep`) instead of straight-line code over every row: the same updates in the same order, a ninth fewer HLO
# instructions for Humanoid's 17 rows (8,199 → 7,470; `python tools/compile_phases.py`, two runs each:
# XLA compile 3.22–3.90 → 3.06–3.09 s, codegen summed 3.82–4.69 → 3.59–3.72 s), grasp's 36 rows from
# nine groups to one (its rollout's XLA compile 5.97 → 5.12 s and 6.43 → 5.43 s in
# `tools/ab_revision.py`). Run speed (`python tools/ab_revision.py`, 7 rounds, three runs): Humanoid
# ×0.997, ×0.989 and ×0.983, grasp ×0.974 and ×0.969 (rounds 0.77–1.27): a percent or two of run
# speed for a tenth of Humanoid's compile, whose target (4 s) it was at the edge of. Ant's 8 rows (two
# groups) ran ×0.977 and compiled no faster, so two groups stay straight-line. (Without the barrier after each group's steps, XLA recomputed the group's chain
# in the updates that read it: Humanoid ×0.85.)
_LIMIT_SCAN_FROM = 3
# From this many rows up, `_smallest` keeps groups of about √n rows (Humanoid's 189 contact candidates:
# 2.1× faster than one pass over all rows per round; at 64 rows about the same).
_GROUPED_FROM = 100
# Rounds of the grouped choice per loop iteration: two ran Humanoid's step 2–3% faster in two runs of
# `python tools/ablate.py scenes/humanoid.yaml select_unroll=2` (its 16 of 189 rows alone: 36 → 25 µs
# per 64 environments); sixteen ran it 2% slower. Below _GROUPED_FROM a round per iteration stays
# (Ant's 8 of 25 rows: ×0.99 with two, ×0.98 fully unrolled).
_GROUPED_UNROLL = 2
# Tried and not kept: each round's group picked by a masked sum over the groups instead of a per-lane
# gather (take_along_axis): `python tools/bench_kernels.py --select`, two runs each on a 2-core AMD
# EPYC (2026-12-06), ns per environment for 16 of 189 rows 244 and 230 against 229 and 238 with the
# gather, and 573–591 against 439–442 for 16 of 400. The gather is not what a round costs.
_TINY = 1e-12                 # guards 1/A for empty rows (the limits' tangent rows)


def has_constraints(m: Model) -> bool:
    return bool(len(m.pair_groups)) or bool(np.any(np.asarray(m.jnt_limited.array)))


def candidate_rows(m: Model) -> int:
    """How many contact candidate rows the pair groups' kernels return per environment."""
    return sum(len(g.geom1) * g.ncon for g in m.pair_groups)


def solver_row_floats(m: Model) -> int:
    """Floats per environment that each of the solver's sweeps reads: J and W = J·M⁻¹ of the contact
    slots (3 rows of nv each) and W of the limit rows (a hinge or slide row's J is a unit row; beside a
    limited ball joint every limit row is dense, J and W)."""
    slots, _ = solved_contacts(m)
    limited = np.asarray(m.jnt_limited.array)
    limits = int(np.count_nonzero(limited))
    limits = min(m.limit_budget, limits) if m.limit_budget > 0 else limits
    dense = np.any(limited & (np.asarray(m.jnt_kind.array) == JointKind.BALL))
    return (2 * 3 * slots + (2 if dense else 1) * limits) * m.nv


def one_hot_floats(m: Model) -> int:
    """Floats per environment in the one-hot table of the contact choice (`_one_hot_rows`: candidate
    rows × slots) where picks are one-hot (`one_hot_picks`) and a budget chooses; else 0."""
    candidates = candidate_rows(m)
    if not one_hot_picks() or not 0 < m.contact_budget < candidates:
        return 0
    return candidates * m.contact_budget


def _soft(tc, dr, h):
    omega = 1.0 / (tc * dr)
    a1 = 2.0 * dr + h * omega
    a2 = h * omega * a1
    a3 = 1.0 / (1.0 + a2)
    return omega / a1, a2 * a3, a3          # bias rate, mass scale, impulse scale


def _tangents(n):
    """An orthonormal pair spanning the plane normal to unit n (…, 3, B), smooth almost everywhere."""
    dtype = n.dtype
    pick_x = (jnp.abs(n[..., 0, :]) < 0.9)[..., None, :]
    a = sm.where(pick_x, jnp.asarray([1.0, 0.0, 0.0], dtype)[:, None], jnp.asarray([0.0, 1.0, 0.0], dtype)[:, None])
    t1 = sm.normalize(a - sm.dot(a, n)[..., None, :] * n)
    return t1, sm.cross(n, t1)


def _run_kernel(m: Model, grp, gpos, gmat, gz):
    """The group's kernel vmapped over its pairs and the batch: Contact fields with the batch last.
    gpos (ngeom, 3, B), the colliders' rotations gmat (ngeom, 3, 3, B) or None when every group's
    kernel is in collision.Z_AXIS_ONLY, and their third columns gz (ngeom, 3, B)."""
    from . import collision

    def geoms(ids):
        stack = lambda xs: None if xs[0] is None else jax.tree_util.tree_map(  # noqa: E731
            lambda *a: jnp.stack(a), *xs)
        return collision.Geom(pos=jnp.moveaxis(sm.take(gpos, ids), -1, 1), mat=jnp.moveaxis(sm.take(gmat, ids), -1, 1),
                              size=sm.take(m.geom_size, ids), mesh=stack([m.geom_mesh[g] for g in ids]),
                              hfield=stack([m.geom_hfield[g] for g in ids]))

    ids1, ids2 = np.asarray(grp.geom1.array), np.asarray(grp.geom2.array)
    if grp.kernel in collision.BATCHED:
        # x, y, z first and the pairs and the batch after them, in one call (see collision.BATCHED).
        def batched(ids):
            if grp.kernel in collision.Z_AXIS_ONLY:
                # Only the rotations' third column, gathered (a third of the rotations' bytes). The
                # other two are NaN, which no result of these kernels reads: XLA folds the slice of
                # column 2 back to the gathered column, and a kernel that did read one would give NaN.
                z = jnp.moveaxis(sm.take(gz, ids), 1, 0)                      # (3, npair, B)
                nan = jnp.full_like(z, jnp.nan)
                mat = jnp.stack([nan, nan, z], axis=1)
            else:
                mat = jnp.moveaxis(sm.take(gmat, ids), 0, 2)
            return collision.Geom(pos=jnp.moveaxis(sm.take(gpos, ids), 1, 0), mat=mat,
                                  size=sm.take(m.geom_size, ids).T[:, :, None])

        con = collision.KERNELS[grp.kernel](batched(ids1), batched(ids2))   # (ncon, npair, ...)
        return type(con)(*(jnp.moveaxis(x, -2, 0) for x in con))          # (npair, ncon, ..., B)

    g1, g2 = geoms(ids1), geoms(ids2)

    # Inner vmap over the batch: only poses vary; sizes, meshes and height fields are shared.
    batch_axes = collision.Geom(pos=0, mat=0, size=None, mesh=None, hfield=None)
    kernel = jax.vmap(collision.KERNELS[grp.kernel], in_axes=(batch_axes, batch_axes))
    con = jax.vmap(kernel)(g1, g2)                                   # fields (npair, B, ncon, ...)
    return type(con)(*(jnp.moveaxis(x, 1, -1) for x in con))         # (npair, ncon, ..., B)


class _Slots(NamedTuple):
    """The contact rows the solver visits (s slots, batch last): every candidate of every pair group,
    or with a contact budget the `m.contact_budget` closest candidates of each environment.

    Per slot: dist (s, B), pos and normal (s, 3, B), active (s, B) as the kernels return them; the
    slot's pair (index into m.pair_*), first and second body: numpy (s,) arrays when every candidate
    has its own slot, (s, B) integer arrays when a budget chooses them per environment."""

    dist: jax.Array
    pos: jax.Array
    normal: jax.Array
    active: jax.Array
    pair: Any
    body1: Any
    body2: Any


def collider_poses(m: Model, f: Frames):
    """What the pair groups' kernels read of the colliders' poses: world positions gpos (ngeom, 3, B),
    rotations gmat (ngeom, 3, 3, B) or None when every group's kernel is in collision.Z_AXIS_ONLY, and
    the rotations' third columns gz (ngeom, 3, B), computed from the quaternions without the rest.

    XLA fuses these into each pair group's gather of them, so a collider's pose is computed again
    for every pair it is in. Tried and not kept (2026-12-07): gpos and gz as one reduction
    Σ_j xmat[b]_ij·c_j over the body rotation's columns (a reduction is what XLA's CPU fusion keeps
    apart), computed once per collider: Humanoid's optimised step 7,261 → 6,719 HLO instructions
    (collide 1,554 → 1,066), Ant's 5,150 → 4,957, but LLVM codegen summed over its tasks alike
    (Humanoid 3.43–3.47 s against 3.50–3.57 s, Ant 1.98–2.06 s against 2.05–2.06 s; `python
    tools/compile_phases.py`, two runs each) and run speed alike (Humanoid ×1.002, Ant ×1.003, an
    in-process A/B of 7 rounds at batch 1024)."""
    from . import collision

    gpos, gquat = geom_positions_quats(m, f)
    full = any(g.kernel not in collision.Z_AXIS_ONLY for g in m.pair_groups)
    return gpos, sm.quat_to_mat(gquat) if full else None, sm.quat_z_axis(gquat)


def _candidates(m: Model, f: Frames) -> _Slots:
    """Run every pair group's kernel: one slot per candidate row, groups in model order.

    Tried and not kept (`python tools/ab_revision.py scenes/humanoid.yaml scenes/ant.yaml --base HEAD`,
    2-core Intel Xeon, 2026-12-06): the colliders' positions and axes moved to x, y, z first once and
    gathered along their second axis (no transpose per group): the collide stage alone 234 → 202 µs
    per tile of 64 (`python tools/stage_times.py scenes/humanoid.yaml --stage collide`), the step
    Humanoid ×0.968, Ant ×0.995; this function as the body of a loop that turns once (so that XLA
    compiles it as one kernel under the raised small-loop threshold, fewer thunks): Humanoid ×0.961.
    A broadphase once per control step (2026-12-07): per environment, the K sphere/capsule pairs of
    each such group with the smallest gap between their segments at the step's start (a walk of the
    body poses, 108 gaps, `_smallest`), and in the substeps each group's kernel on those K pairs only,
    their colliders gathered per environment. Humanoid without any body–body pair (its floor pairs
    only) ran ×1.25 as fast (`scenec bench`, 255k → 320k physics steps/s), the bound of what this
    could gain; with K = 8 of 52, 46 and 10 pairs ×0.99–1.00 (`tools/ablate.py`, an in-process A/B),
    K = 12 ×0.97; with a fixed choice instead of the per-step one ×1.07, so the choice cost 8% of the
    step (119 µs per tile of 64 and control step alone: poses 44, gaps 36, choice 15) and the gathered
    kernels most of the rest; the gathers as one-hot sums over the colliders: ×0.91. K = 4: ×1.04 (a
    gathered pair cost about 2.4× a static one: 12 more pairs, 8 against 4 per group, −6%), with the
    choice of 16 slots from its 45 rows by groups as from 189: ×1.04. XLA's count (`python
    tools/flops_by_scope.py SCENE --xla`, K = 8): collide 210k → 87k operations per environment and
    control step, the choice of slots 59k → 77k (61 rows scanned whole in each round), the pairs'
    choice 32k: 1,755k → 1,682k in all."""
    gpos, gmat, gz = collider_poses(m, f)
    fields = {k: [] for k in ("dist", "pos", "normal", "active", "pair")}
    pair = 0
    for grp in m.pair_groups:
        con = _run_kernel(m, grp, gpos, gmat, gz)
        npair, ncon = len(grp.geom1), grp.ncon
        flat = lambda x: x.reshape((npair * ncon,) + x.shape[2:])        # noqa: E731
        for name in ("dist", "pos", "normal", "active"):
            fields[name].append(flat(getattr(con, name)))
        fields["pair"].append(np.repeat(np.arange(pair, pair + npair), ncon))
        pair += npair
    slot_pair = np.concatenate(fields["pair"])
    return _Slots(*(jnp.concatenate(fields[k]) for k in ("dist", "pos", "normal", "active")),
                  slot_pair, *(b[slot_pair] for b in _pair_bodies(m)))


def _pair_bodies(m: Model):
    """Each candidate pair's first and second body ((npair,) numpy arrays), pairs in group order."""
    body_id = np.asarray(m.geom_body_id.array)
    return tuple(np.concatenate([body_id[np.asarray(getattr(g, geom).array)] for g in m.pair_groups])
                 for geom in ("geom1", "geom2"))


def penetrating_candidates(m: Model, f: Frames):
    """(B,) how many contact candidates penetrate (distance < 0) in each environment: with a contact
    budget below that count, the shallowest of them get no impulse."""
    slots = _candidates(m, f)
    return jnp.sum(slots.active & (slots.dist < 0.0), axis=0)


def _closest(slots: _Slots, k: int) -> _Slots:
    """Each environment's k candidates of smallest distance (real candidates before padding rows), in
    that order: the deepest contacts are solved first. Branch-free (`_smallest`), and differentiable
    in the chosen rows' values (the choice itself is a step function, as the kernels' own).

    Tried and not kept: the four row fields packed into one (n, 8, B) array and the three table
    columns into one (n, 3) table, so that each is one gather instead of four and three: Humanoid
    ×1.029 (11 rounds, 0.906–1.134) and ×0.993 (21 rounds, 0.806–1.089), Ant ×0.998 (`python
    tools/ab_revision.py scenes/humanoid.yaml scenes/ant.yaml --base HEAD`, 2-core Intel Xeon,
    2026-12-06): the gathers cost per element taken, not per operation."""
    idx = _smallest(sm.where(slots.active, slots.dist, jnp.inf), k)    # (k, B)
    return _Slots(*(_take_rows(x, idx) for x in (slots.dist, slots.pos, slots.normal, slots.active)),
                  *(_table_rows(x, idx) for x in (slots.pair, slots.body1, slots.body2)))


# How the step takes each environment's own rows (the chosen contacts, their bodies, limit rows): by
# gathers with an index per environment (take_along_axis), or on a TPU by comparison and sum, one-hot
# over the n rows (`_one_hot_rows`). On a TPU v5e with the gathers (tools/results/bench_tpu.txt,
# 2026-12-06), the contact choice, whose rounds are only compares and minima, took 45% of Ant's
# substep; one-hot, `python tools/ablate.py SCENE --batch 4096 one_hot=0` there: Ant 7.87M physics
# steps/s against 1.25M with gathers (×6.3), Humanoid 1.68M against 0.41M (×4.1). On a CPU the
# gathers stay: one-hot ran Ant ×0.79 and Humanoid ×0.40 as fast (batch 1024, 2-core Intel Xeon,
# `one_hot=1`); on a GPU they stay too (one-hot unmeasured there). None: by backend (`one_hot_picks`);
# True/False force one way.
ONE_HOT_PICKS = None


def one_hot_picks() -> bool:
    """Whether per-environment rows are taken one-hot (ONE_HOT_PICKS; by default on a TPU only)."""
    return jax.default_backend() == "tpu" if ONE_HOT_PICKS is None else bool(ONE_HOT_PICKS)


def _take_rows(values, idx):
    """values (n, ..., B) batch last, idx (k, B): each environment's rows idx[:, b], (k, ..., B)."""
    if one_hot_picks():
        return _one_hot_rows(values, idx, batched=True)
    return jnp.take_along_axis(values, idx.reshape(idx.shape[:1] + (1,) * (values.ndim - 2) + idx.shape[1:]), axis=0)


def _table_rows(table, idx):
    """A table without a batch axis, (n, ...), at each environment's rows idx (k, B): (k, ..., B)."""
    if one_hot_picks():
        return _one_hot_rows(table, idx, batched=False)
    table = jnp.asarray(table)
    if table.ndim == 1:
        return table[idx]
    # Gathered along a leading axis moved last, so the batch stays the minor axis of the result: a
    # (k, B, ...) gather moved to (k, ..., B) is a transpose that XLA fuses into every reader. One
    # lax.gather writing (k, ..., B) directly (the row's values as offset dimensions between slot and
    # environment) ran Humanoid ×1.003 and Ant ×0.993 (`python tools/ab_revision.py`, 11 rounds).
    return jnp.moveaxis(jnp.moveaxis(table, 0, -1)[..., idx], -2, 0)


def _one_hot_rows(values, idx, batched: bool):
    """The rows idx (k, B) of values ((n, ..., B) when `batched`, else a table (n, ...)) with no gather:
    each row is the sum over the n rows of where(row == idx, value, 0), the one kept row's value
    exactly (a −0.0 becomes +0.0; an infinite or NaN value in a row not taken does not leak). Booleans
    are any(row == idx and value)."""
    values = jnp.asarray(values)
    n, k, batch = values.shape[0], idx.shape[0], idx.shape[-1]
    item = values.shape[1:-1] if batched else values.shape[1:]
    ones = (1,) * len(item)
    hot = (jnp.arange(n, dtype=idx.dtype).reshape((n, 1) + ones + (1,))
           == idx.reshape((1, k) + ones + (batch,)))                    # (n, k, 1…, B)
    v = values[:, None] if batched else values.reshape((n, 1) + item + (1,))
    if values.dtype == jnp.bool_:
        return jnp.any(hot & v, axis=0)
    return jnp.sum(jnp.where(hot, v, jnp.zeros((), values.dtype)), axis=0)


def _per_slot(values, index):
    """values (n, ...) indexed by the slots' static (s,) or per-environment (s, B) indices: (s, ..., B)
    for the latter, (s, ...) for the former."""
    if isinstance(index, np.ndarray):
        return sm.take(values, index)
    return _table_rows(values, index)


def _body_rows(values, index):
    """Rows of a per-body array with the batch last, values (nbody, ..., B), for each slot: (s, ..., B)."""
    return sm.take(values, index) if isinstance(index, np.ndarray) else _take_rows(values, index)


def _pair_values(values, pair, batch):
    """A per-pair value (npair,) for each slot, (s, B)."""
    v = _per_slot(values, pair)
    return jnp.broadcast_to(v if v.ndim == 2 else v[:, None], (v.shape[0], batch))


def _slot_jacobians(m: Model, f: Frames, slots: _Slots):
    """J (s, 3, nv, B) of each slot's normal and two tangent rows, and the frames (s, 3, 3, B).

    A row is row·(v₂(p) − v₁(p)), the velocity of body 2's point at p relative to body 1's. Each dof's
    motion subspace is taken at its tree's centre of mass (kinematics.py), so a dof's column is
    row·(lin_d + ang_d × r) with r = p − that centre, masked to the dofs that move the body. Where the
    two bodies share their tree's centre (the same tree), or one of them moves with no dof (the world,
    a body welded to it: its mask is zero), one r serves both (`_one_reference`): J is that column
    times moves₂ − moves₁, the same numbers for half the arithmetic of two (`python
    tools/flops_by_scope.py`, per environment and control step: Humanoid 190k → 94k, Ant 60k → 30k).
    A scene with a pair between two moving trees (grasp's hand and its object) takes each body's rows
    on their own.

    Tried and not kept: each slot's mask moves₂ − moves₁ (s, nv, B) computed from its two bodies'
    ranks in a depth-first order of the bodies (every dof moves one contiguous range of them: two
    compares per dof and body) instead of gathered from the per-pair table (nv values per slot):
    `python tools/ab_revision.py scenes/humanoid.yaml scenes/ant.yaml --base HEAD --rounds 11`,
    Humanoid ×0.990, Ant ×0.993 (2-core Intel Xeon, 2026-12-06). Where the choice's 10% beyond its
    rounds goes (`tools/ablate.py` choice=cheap 0.94, choice=first 0.84 of base) is not that gather."""
    p = plan_of(m)
    dtype = slots.pos.dtype
    c_ang, c_lin = f.cdof[:, :3], f.cdof[:, 3:]                         # (nv, 3, B)
    n = slots.normal
    t1, t2 = _tangents(n)
    frame = jnp.stack([n, t1, t2], axis=1)                               # (s, row, 3, B)

    def rows(ref, mask, reduce):
        # row·(lin_d + ang_d × r) = row·lin_d + ang_d·(r × row) for every dof d, times mask (s, nv) or
        # (s, nv, B). Summed over x, y, z as a reduction (`reduce`), or as an elementwise chain, which
        # XLA fuses into W = J·M⁻¹ and evaluates again for each of W's nv columns: one chain ran Ant's
        # step ×1.2 slower than the reduction, while two chains (J₂ − J₁) stay apart from W and ran
        # grasp 2% faster than two reductions. The mask applied to the sum instead of to its three
        # terms (a third of the mask's products; results alike to float32 rounding) ran Humanoid
        # ×1.004 and Ant ×0.926 (`python tools/ab_revision.py scenes/humanoid.yaml scenes/ant.yaml
        # --base HEAD --rounds 11`, 2-core Intel Xeon, 2026-12-06); perhaps the product after the
        # sum joins W's fusion (not checked). The chain kept apart from W by an optimization barrier:
        # the Jacobians alone 146 → 30 µs per tile of 64 (`python tools/stage_times.py
        # scenes/humanoid.yaml --stage jacobians`), but the step Humanoid ×0.998 and Ant ×0.742
        # (same A/B). Why (2026-12-07): XLA's CPU pipeline expands optimization barriers before its
        # fusion pass (cpu_compiler.cc runs OptimizationBarrierExpander ahead of layout assignment),
        # so a barrier cannot keep a cheap chain out of its consumers' fusions; in the optimised
        # module W's fusion read the chain's inputs (frames, r × row, mask), not J, and evaluated J
        # again for each of W's columns: Ant ×0.734 again (an in-process A/B, 7 rounds, 0.730–0.747),
        # Humanoid ×0.996. The chain's three terms as a reduction over a leading axis instead: Ant
        # ×0.947, Humanoid ×0.996; stacked and summed (which XLA turns back into a chain): ×0.732.
        # A reduction is what XLA's CPU fusion does not duplicate into a consumer. J's own fusion
        # computes r × row again for every dof; r × row as a reduction of its own ([r]× times the
        # row, computed once per slot and row, J's fusion reading it): Ant ×1.020, Humanoid ×0.981
        # (same A/B, rounds 0.98–1.05 and 0.97–0.99): not kept.
        r = slots.pos - _body_rows(f.root_com, ref)                      # (s, 3, B)
        rxf = sm.cross(r[:, None], frame)                                # (s, row, 3, B)
        mask = mask[:, None, :, None] if mask.ndim == 2 else mask[:, None]   # (s, 1, nv, 1 or B)
        if reduce:
            terms = frame[:, :, None] * c_lin[None, None] + rxf[:, :, None] * c_ang[None, None]
            return jnp.sum(terms * mask[:, :, :, None], axis=3)          # (s, row, nv, B)
        return mask * sm.total(frame[:, :, x:x + 1, :] * c_lin[:, x, :] + rxf[:, :, x:x + 1, :] * c_ang[:, x, :]
                          for x in range(3))

    one_ref = _one_reference(m)
    if one_ref is None:
        moves = lambda body: _per_slot(p.moves.astype(dtype), body)       # noqa: E731
        return (rows(slots.body2, moves(slots.body2), False)
                - rows(slots.body1, moves(slots.body1), False)), frame
    ref, sign = one_ref                                                  # per pair: (npair,), (npair, nv)
    if one_hot_picks() and not isinstance(slots.pair, np.ndarray):
        # The same per slot from its two bodies, as _one_reference makes them per pair: one-hot over
        # the bodies (Humanoid 14 rows) instead of the pairs (189): a seventh of the selects. Not the
        # CPU's way too: gathered, the per-body form ran Humanoid ×0.93 as fast as the per-pair one
        # (`python tools/ab_revision.py scenes/humanoid.yaml --base HEAD`, 2-core Intel Xeon).
        fixed = ~p.moves.any(axis=1)
        ref = sm.where(_table_rows(fixed, slots.body2), slots.body1, slots.body2)
        moves = p.moves.astype(dtype)
        return rows(ref, _table_rows(moves, slots.body2) - _table_rows(moves, slots.body1), True), frame
    return rows(_per_slot(ref, slots.pair), _per_slot(sign.astype(dtype), slots.pair), True), frame


def _one_reference(m: Model):
    """Per candidate pair, the body whose tree's centre of mass serves both bodies' rows and the mask
    moves₂ − moves₁ ((npair,) and (npair, nv) numpy arrays), or None where a pair joins two moving
    bodies of different trees."""
    p = plan_of(m)
    b1, b2 = _pair_bodies(m)
    fixed = ~p.moves.any(axis=1)                                         # (nbody,) no dof moves it
    if not np.all(fixed[b1] | fixed[b2] | (p.same_tree[b1, b2] > 0)):
        return None
    return np.where(fixed[b2], b1, b2), p.moves[b2] - p.moves[b1]


def _limit_rows(m: Model, q):
    """The rows of the limited joints, each pushing away from the nearer end of its joint's range.

    A hinge or slide row is a unit row of J with a sign, J = s·e_d, and is returned as its dof d and
    sign s; its distance C is the smaller of the two ends'. A ball row is the cone angle's distance to
    its maximum, a dense row over the ball's three dofs. Returns `axis`, (d (k,) numpy, s, C, tc, dr)
    with s, C, tc, dr (k, B), or None without hinge or slide limits; and `balls`, a list of
    (J (1, nv, B), C, tc, dr (1, B)), one per limited ball joint."""
    dtype = q.dtype
    batch = q.shape[-1]
    kinds = np.asarray(m.jnt_kind.array)
    limited = np.asarray(m.jnt_limited.array)
    axis, balls = None, []
    one = np.flatnonzero(limited & ((kinds == JointKind.HINGE) | (kinds == JointKind.SLIDE)))
    if len(one):
        a = np.asarray(m.jnt_qpos_adr.array)[one]
        q_a = sm.take(q, a)
        below = q_a - m.jnt_range[one, 0:1]
        above = m.jnt_range[one, 1:2] - q_a
        lower_nearer = below < above
        axis = (np.asarray(m.jnt_dof_adr.array)[one], sm.where(lower_nearer, 1.0, -1.0).astype(dtype),
                sm.where(lower_nearer, below, above),
                jnp.broadcast_to(m.jnt_limit_solref[one, 0:1], (len(one), batch)),
                jnp.broadcast_to(m.jnt_limit_solref[one, 1:2], (len(one), batch)))
    for j in np.flatnonzero(limited & (kinds == JointKind.BALL)):
        a, d = m.jnt_qpos_adr[j], m.jnt_dof_adr[j]
        quat = sm.normalize(q[a:a + 4])
        quat = quat * sm.where(quat[0] < 0, -1.0, 1.0)                  # the short way round
        vec = quat[1:]
        sin_half = sm.safe_norm(vec)
        angle = 2.0 * jnp.arctan2(sin_half, quat[0])
        unit = vec / sm.where(sin_half > 0, sin_half, 1.0)
        balls.append((jnp.zeros((1, m.nv, batch), dtype).at[0, d:d + 3].set(-unit),   # angle grows along it
                      (m.jnt_range[j, 1] - angle)[None],
                      jnp.broadcast_to(m.jnt_limit_solref[j, 0], (1, batch)),
                      jnp.broadcast_to(m.jnt_limit_solref[j, 1], (1, batch))))
    return axis, balls


def _limit_system(m: Model, q, minv, bias_of):
    """The limit rows the solver visits and one Gauss–Seidel sweep over them, (nrows, sweep) with
    sweep(qd (nv, B), λ (k, B)) → (qd, λ); None without limits. With `m.limit_budget`, each
    environment's rows nearest their limits (smallest C), nearest first.

    Hinge and slide rows (J = s·e_d) are swept in row space: their J·M⁻¹·Jᵀ is a gather from M⁻¹,
    A_ij = s_i·s_j·M⁻¹[d_i, d_j], no products. The sweep reads the rows' velocities v = s·qd[d] once,
    updates the rows one after the other with v_i = v_i⁰ + Σ_{j<i} A_ij·Δλ_j (the velocity row i sees
    after rows j < i moved qd), and then applies qd += Σ_i W_iᵀ·Δλ_i once, W = J·M⁻¹ = s·M⁻¹[d]. In
    exact arithmetic that is the row-by-row sweep (same order, same velocities); it runs as three
    fused loops per sweep instead of two or three per row. A scene with a limited ball joint keeps
    dense rows for all its limits, swept row by row (the cone's row is not a unit row)."""
    dtype, batch, budget = q.dtype, q.shape[-1], m.limit_budget
    axis, balls = _limit_rows(m, q)
    if axis is None and not balls:
        return None
    if balls:
        parts = list(balls)
        if axis is not None:
            d, s = axis[:2]
            unit = np.zeros((len(d), m.nv))
            unit[np.arange(len(d)), d] = 1.0
            parts.insert(0, (jnp.asarray(unit, dtype)[..., None] * s[:, None, :],) + axis[2:])
        J, C, tc, dr = (jnp.concatenate(x) for x in zip(*parts))         # (k, nv, B), (k, B) ...
        if 0 < budget < J.shape[0]:
            idx = _smallest(C, budget)
            J, C, tc, dr = (_take_rows(x, idx) for x in (J, C, tc, dr))
        W = _rows_times_minv(J, minv)
        mr = _inverse_or_zero(_row_dot(J, W))                            # (k, B)
        rows = (J, W, mr) + bias_of(tc, dr, C)

        def update(qd_vec, row):
            Jr, Wr, mr_r, bias_r, ms_r, is_r, lam = row                 # Jr, Wr (nv, B), lam (B,)
            v = jnp.sum(Jr * qd_vec, axis=0)
            new = jnp.maximum(lam - mr_r * ms_r * (v + bias_r) - is_r * lam, 0.0)
            return qd_vec + Wr * (new - lam), new

        def sweep(qd_vec, lam):
            return jax.lax.scan(update, qd_vec, rows + (lam,), unroll=_sweep_unroll(batch, J.shape[0]))

        return J.shape[0], sweep

    d, s, C, tc, dr = axis
    k = len(d)
    if 0 < budget < k:
        idx = _smallest(C, budget)
        s, C, tc, dr = (_take_rows(x, idx) for x in (s, C, tc, dr))
        dof = _table_rows(np.asarray(d, np.int32), idx)                  # (budget, B): per environment
        k = budget
        pick = (dof[:, None, :] == np.arange(m.nv)[None, :, None]).astype(dtype)   # (k, nv, B) one-hot
        W = _take_rows(minv, dof) * s[:, None, :]                        # s·M⁻¹[d] (k, nv, B)
        A = _row_dot(W[:, None], pick[None]) * s[None]                   # (k, k, B): W_i[d_j]·s_j

        def velocity(qd_vec):
            return s * _row_dot(pick, qd_vec[None])                     # (k, B)
    else:
        W = sm.take(minv, d) * s[:, None, :]
        A = minv[d[:, None], d[None, :]] * s[:, None, :] * s[None, :]    # static gathers (k, k, B)

        def velocity(qd_vec):
            return s * sm.take(qd_vec, d)
    mr = _inverse_or_zero(A[np.arange(k), np.arange(k)])
    bias, ms, impulse_scale = bias_of(tc, dr, C)
    gain = mr * ms                                                       # (k, B)
    if k >= _LIMIT_SCAN_FROM * _LIMIT_GROUP:
        return k, _grouped_sweep(m.nv, k, velocity, A, W, gain, bias, impulse_scale)
    # Rows are taken as (1, B) slices, A's and W's from their rows flattened: one operation each
    # (an index A[i, j] is a slice and a reshape), and the sweep is most of a scene's operations from
    # limits (Ant: 376 of 2,961 in its step's jaxpr before).
    a_rows = A.reshape((k * k,) + A.shape[2:])
    w_rows = W.reshape((k * m.nv,) + W.shape[2:])

    def sweep(qd_vec, lam):
        v = velocity(qd_vec)
        step, groups = [], []
        for start in range(0, k, _LIMIT_GROUP):
            new = []
            for i in range(start, min(start + _LIMIT_GROUP, k)):
                v_i = sm.total([_row(v, i)] + [_row(a_rows, i * k + j) * step[j] for j in range(i)])
                lam_i = _row(lam, i)
                new.append(jnp.maximum(lam_i - _row(gain, i) * (v_i + _row(bias, i))
                                       - _row(impulse_scale, i) * lam_i, 0.0))
                step.append(new[-1] - lam_i)
            # The barrier ends a fused chain of row updates: XLA would otherwise re-evaluate the chain
            # in each of its consumers (each later row, each dof's velocity update).
            new = jax.lax.optimization_barrier(jnp.concatenate(new))
            moved = new - jax.lax.slice_in_dim(lam, start, start + new.shape[0])
            step[start:] = [_row(moved, r) for r in range(new.shape[0])]
            groups.append(new)
        # In halves (math.by_halves): written over qd_vec, the loop would run scalar.
        nv = m.nv
        return (sm.by_halves(lambda rows: sm.total(
            [jax.lax.slice_in_dim(qd_vec, rows.start, rows.stop)]
            + [jax.lax.slice_in_dim(w_rows, i * nv + rows.start, i * nv + rows.stop) * step[i] for i in range(k)]),
            nv), jnp.concatenate(groups))

    return k, sweep


def _grouped_sweep(nv, k, velocity, A, W, gain, bias, impulse_scale):
    """The row-space sweep over k rows as a `lax.scan` over groups of `_LIMIT_GROUP` rows (the last
    padded with empty rows): one group's code instead of every row's. Carried: the rows' velocities
    v (k, B), each group's steps added to all of them (v += A[:, group]·Δλ_group), and the velocity
    change Σ W_iᵀΔλ_i, applied once after the last group. The same updates in the same order as
    `_limit_system`'s unrolled sweep (rows of earlier groups get velocity updates nothing reads)."""
    G = _LIMIT_GROUP
    ng = -(-k // G)
    kp = ng * G

    def pad(x, axes=1):                                                  # zeros after the first `axes` axes' k
        return jax.lax.pad(x, jnp.zeros((), x.dtype), [(0, kp - k, 0)] * axes + [(0, 0, 0)] * (x.ndim - axes))

    batch = A.shape[2:]
    a_cols = jnp.moveaxis(pad(A, 2).reshape((kp, ng, G) + batch), 1, 0)  # (ng, kp, G, B): A[:, group]
    w_g = pad(W).reshape((ng, G, nv) + batch)
    g_g, b_g, i_g = (pad(x).reshape((ng, G) + batch) for x in (gain, bias, impulse_scale))
    starts = jnp.arange(ng, dtype=jnp.int32) * G

    def sweep(qd_vec, lam):
        v = pad(velocity(qd_vec))                                        # (kp, B)

        def group(carry, x):
            v, dqd = carry
            a_col, w, gn, bs, isc, lam_g, start = x
            v_g = jax.lax.dynamic_slice_in_dim(v, start, G)              # (G, B)
            a_gg = jax.lax.dynamic_slice_in_dim(a_col, start, G)         # (G, G, B)
            step = []
            for i in range(G):
                v_i = sm.total([v_g[i]] + [a_gg[i, j] * step[j] for j in range(i)])
                new_i = jnp.maximum(lam_g[i] - gn[i] * (v_i + bs[i]) - isc[i] * lam_g[i], 0.0)
                step.append(new_i - lam_g[i])
            step = jax.lax.optimization_barrier(jnp.stack(step))
            v = v + sm.total(a_col[:, j] * step[j] for j in range(G))
            dqd = dqd + sm.total(w[j] * step[j] for j in range(G))
            return (v, dqd), lam_g + step

        (v, dqd), new = jax.lax.scan(group, (v, jnp.zeros_like(qd_vec)),
                                     (a_cols, w_g, g_g, b_g, i_g, pad(lam).reshape((ng, G) + batch), starts))
        return qd_vec + dqd, new.reshape((kp,) + batch)[:k]

    return sweep


def _padded(n, unroll):
    """n rounded up to a multiple of `unroll`, or n where the scan unrolls fully (unroll ≥ n).

    A `lax.scan` whose length `unroll` does not divide splits its inputs in two, a loop over the
    first part and the rest in straight-line code, and does so inside the loop around it (each
    sweep sliced the contact blocks' J and W anew). Humanoid at batch 1024 ran 1.38× as long with a
    contact budget of 15 as with 16, 1.27× with 13 (`python tools/ablate.py scenes/humanoid.yaml
    contact_budget=15 contact_budget=13`, unroll 2). So an odd number of contact slots gets one
    empty slot more (`_pad_slots`), before the Jacobians: `python tools/ab_revision.py` with budget
    15, ×1.37 against the unpadded slots (rounds 1.36–1.46), as fast as 16. Padding the blocks
    after the Jacobians instead (J, W and the rest with a zero block) gained ×1.17 only: 15 slots'
    Jacobians and J·M⁻¹ ran slower than 16 slots', for reasons not found. Seven balls on a floor
    (7 static slots, nv 42): ×1.00, within the rounds' spread (0.97–1.24). Not for the dense limit
    rows beside a ball joint: three cones' rows padded to four ran ×0.87 (a row is cheap there)."""
    return n if unroll >= n else -(-n // unroll) * unroll


def _pad_slots(slots: _Slots, n: int) -> _Slots:
    """slots with empty ones after its own up to n: inactive (no impulse), apart, normal +z, the
    pair and bodies of the first slot."""
    k = len(slots.pair)
    if k == n:
        return slots

    def pad(x, fill):
        if isinstance(x, np.ndarray):
            return np.concatenate([x, np.repeat(x[:1], n - k, axis=0)])
        if fill is None:
            return jnp.concatenate([x, jnp.repeat(x[:1], n - k, axis=0)])
        return jnp.concatenate([x, jnp.broadcast_to(jnp.asarray(fill, x.dtype)[..., None], (n - k,) + x.shape[1:])])

    return _Slots(pad(slots.dist, 1.0), pad(slots.pos, [0.0, 0.0, 0.0]), pad(slots.normal, [0.0, 0.0, 1.0]),
                  pad(slots.active, False), pad(slots.pair, None), pad(slots.body1, None), pad(slots.body2, None))


def _row(x, i):
    """Row i of x, kept as (1, ...)."""
    return jax.lax.slice_in_dim(x, i, i + 1)


def _inverse_or_zero(a):
    """1/a where a > _TINY, else 0 (empty rows)."""
    return sm.where(a > _TINY, 1.0 / sm.where(a > _TINY, a, 1.0), 0.0)


def _smallest(key, k):
    """(k, B) int32: each environment's k rows of smallest key (n, B), in ascending order of (key, row):
    ties go to the lower row, as `lax.top_k` orders them; +inf and NaN rank as the largest float.

    k rounds, each choosing the smallest (key, row) after the last one chosen, with the batch in the
    vector lanes. From `_GROUPED_FROM` rows up the rows are cut into about √n groups that keep their
    own next-smallest entry, so a round reads the group minima and one group, not all n rows. Faster
    than `lax.top_k` (a sort per environment) at every size measured (`python tools/bench_kernels.py
    --select`: 5.0× at n = 25, k = 8; at n = 189, k = 16, 1.5× without groups and 2.5× with them)."""
    n = key.shape[0]
    big = jnp.finfo(key.dtype).max        # +inf is kept for a group whose rows are all taken
    key = jax.lax.stop_gradient(sm.where(key < big, key, big))
    if n < _GROUPED_FROM:
        def next_row(last, _):
            new = _next_smallest(key, *last)
            return new, new[1]

        start = (jnp.full(key.shape[1:], -jnp.inf, key.dtype), jnp.full(key.shape[1:], -1, jnp.int32))
        return jax.lax.scan(next_row, start, None, length=k)[1]

    # Groups of g consecutive rows, padded after the last with rows of the largest key (never chosen:
    # k < n, and the padding comes after every real row).
    g = math.isqrt(n - 1) + 1
    ngroup = -(-n // g)
    batch = key.shape[1:]
    grouped = jnp.concatenate([key, jnp.full((ngroup * g - n,) + batch, big, key.dtype)])
    grouped = grouped.reshape((ngroup, g) + batch)                               # (G, g, B)
    no_row = jnp.full((ngroup,) + batch, -1, jnp.int32)
    heads = jax.vmap(_next_smallest)(grouped, jnp.full(no_row.shape, -jnp.inf, key.dtype), no_row)
    groups = jnp.arange(ngroup, dtype=jnp.int32)[:, None]

    def next_row(heads, _):
        head_key, head_row = heads                                               # (G, B): each group's next
        best = jnp.min(head_key, axis=0)
        # The first group holding the minimum holds the lowest row with it (groups are row ranges);
        # a group whose rows are all taken has head_key = +inf (above every key) and head_row = g.
        sel = jnp.min(sm.where(head_key == best, groups, ngroup), axis=0)       # (B,)
        row = _take_rows(head_row, sel[None])[0]
        mine = _take_rows(grouped, sel[None])[0]                                 # (g, B)
        nxt_key, nxt_row = _next_smallest(mine, best, row)
        here = groups == sel
        heads = (sm.where(here, nxt_key, head_key), sm.where(here, nxt_row, head_row))
        return heads, jnp.minimum(sel * g + row, n - 1)

    return jax.lax.scan(next_row, heads, None, length=k, unroll=_GROUPED_UNROLL)[1]


def _next_smallest(key, last_key, last_row):
    """The smallest (key, row) of key (n, B) after (last_key, last_row) (B,): ((B,) key, (B,) int32 row);
    (+inf, n) where no row is left."""
    n = key.shape[0]
    rows = jnp.arange(n, dtype=jnp.int32)[:, None]
    later = (key > last_key) | ((key == last_key) & (rows > last_row))
    new_key = jnp.min(sm.where(later, key, jnp.inf), axis=0)
    return new_key, jnp.min(sm.where(later & (key == new_key), rows, n), axis=0)


def _rows_times_minv(J, minv):
    """W = J·M⁻¹ for rows J (…, nv, B) and M⁻¹ (nv, nv, B), one elementwise chain over the dofs.

    Tried and not kept: W from per-body products. A row is w·(Φ₂ − Φ₁)ᵀ (w its 6-vector, Φ_b the
    motion subspaces of the dofs that move body b), so W = w·(Ψ₂ − Ψ₁) with Ψ_b = Φ_bᵀ·M⁻¹ (6, nv),
    each body's Ψ its parent's plus one outer product cdof_d ⊗ M⁻¹[d] per own dof: a third of the
    multiply-adds (Humanoid: 3.2k for the Ψ and 6.6k for 16 slots, against 25k). But the outer
    products (nv, 6, nv) and Ψ (nbody, 6, nv) are 0.8 and 0.5 MB per tile of 64 environments, and
    each slot gathers two Ψ per environment: one step against the other in one process (`python
    tools/ab_revision.py`, batch 1024, 2-core AMD EPYC), Humanoid ×0.80 and Ant ×0.70.

    Not built, after a prototype: W from the tree's factor M = LᵀDL (Wᵀ = L⁻¹D⁻¹L⁻ᵀJᵀ, 162 entries of
    L for Humanoid's 23 dofs, about 16.7k multiply-adds for 48 rows against this product's 25.4k).
    Its cheaper half alone, L·x = z for 48 right-hand sides in dependency order (each dof less its
    ancestors' terms: 7.8k multiply-adds), ran 181–220 µs per tile of 64 environments, as one
    operation per dof or one per level, against 179–184 µs for this whole product (one process,
    2026-12-06): a third of the arithmetic in as much time, before the other half (Lᵀ, sums over
    descendants) and the factor."""
    return sm.total(jax.lax.slice_in_dim(J, k, k + 1, axis=J.ndim - 2) * _row(minv, k) for k in range(minv.shape[0]))


def _row_dot(a, b):
    """Σ_k a[..., k, :]·b[..., k, :] over the dof axis (second to last), as one elementwise chain."""
    return sm.total(sm.part(a, k) * sm.part(b, k) for k in range(a.shape[-2]))[..., 0, :]


# Tried and not kept (Humanoid, batch 1024, 2-core AMD EPYC, 2026-12-06):
# - Slots of one normal row for frictionless pairs (Humanoid's body-body pairs have friction 0, so
#   their tangent rows never carry an impulse), chosen per environment with a budget of their own
#   and swept in row space like the limits: 10 slots of three rows and 6 of one ran ×1.04 against
#   the 16 slots of three (`python tools/ablate.py`, the variant's budgets as model edits), while 10
#   slots of three alone ran ×1.22: a one-row slot cost half a three-row slot (its own choice, its
#   Jacobian's gathers, the row-space sweep's kernels). Not worth a second budget in the schema.
# - The Jacobians' dof mask moves₂ − moves₁ from comparisons of the bodies' depth-first ranks
#   (each dof moves one contiguous run of bodies) instead of a per-environment gather of the pair's
#   mask: ×1.00 (`python tools/ab_revision.py`, 7 rounds), the same numbers.
# - Warm starting: each substep's sweeps starting from the impulses its contact slots (matched by
#   candidate row) and limit rows had at the end of the previous substep. Velocity error after one
#   control step against 64 cold sweeps, 1,152 states along random rollouts (p90 of |Δqd|/|qd|):
#   4 sweeps 0.133 cold, 0.134 warm; 8 sweeps 0.025 cold, 0.020 warm. The slow tail does not come
#   from the starting point, so fewer sweeps would not do.
# - Contacts chosen once per control step (2026-12-07, 2-core Intel Xeon, batch 1024, one process,
#   7 interleaved rounds of `scenec run`'s rollout, the step and a scratch variant): the candidates and the
#   choice of slots at the control step's frames, then in every substep each slot's two witness
#   points carried with its bodies (the point and the normal in the bodies' frames, the distance
#   moved by their separation along the normal), the Jacobians and sweeps as now. Humanoid ×1.11,
#   Ant ×0.98; the same slots left stale, with no carrying (wrong physics, the bound): ×1.22 and ×1.10.
#   Each slot's four body poses gathered per environment in every substep cost half of what the
#   skipped collision saves, and a contact that begins inside a control step would wait for the next
#   one. Not worth the change of physics.
def solve_velocity(m: Model, f: Frames, minv, q, qd, qd_free, h):
    """Constrained velocity (nv, B) and the (nbody, 3, B) world contact force on each body.

    minv: (nv, nv, B) inverse of the mass matrix the smooth step used (with armature and h·damping).

    Each iteration sweeps the contact blocks, then the limit rows (one row per limited joint). The
    restitution sweep visits only the contacts of pairs that can bounce (`m.pair_bounce`, decided at
    compile time), and none when no pair can."""
    dtype = q.dtype
    batch = q.shape[-1]
    if not has_constraints(m) or m.nv == 0:
        return qd_free, no_impulses(m, qd_free)
    bias_of = lambda tc, dr, C: _bias(tc, dr, C, h)                     # noqa: E731
    elliptic = m.cone == "elliptic"
    carry = [qd_free]

    # --- contacts: blocks of three rows (normal, two tangents) ---------------------------------------
    ncontact, unrolled = 0, False
    if m.pair_groups:
        # Sub-scopes name the setup's parts in a profile (tools/profile_scopes.py); metadata only.
        with jax.named_scope("collide"):
            slots = _candidates(m, f)
        if 0 < m.contact_budget < len(slots.pair):
            with jax.named_scope("select"):
                slots = _closest(slots, m.contact_budget)
        slots = _pad_slots(slots, contact_slots(m, batch))
        with jax.named_scope("jacobians"):
            Jc, frames = _slot_jacobians(m, f, slots)                   # (nc, 3, nv, B), (nc, 3, 3, B)
        ncontact = Jc.shape[0]
        with jax.named_scope("rows_times_minv"):
            Wc = _rows_times_minv(Jc, minv)                             # rows of J·M⁻¹
            Ac = _row_dot(Jc, Wc)                                       # (nc, 3, B) diag of J M⁻¹ Jᵀ
        mc = _inverse_or_zero(Ac)
        Cc = slots.dist
        active = slots.active.astype(dtype)
        per_pair = lambda x: _pair_values(x, slots.pair, batch)           # noqa: E731
        mu = per_pair(m.pair_friction)
        bias_c, ms_c, is_c = bias_of(per_pair(m.pair_solref[:, 0]), per_pair(m.pair_solref[:, 1]), Cc)
        contacts = (Jc, Wc, mc, active, mu, bias_c, ms_c, is_c)
        unrolled = ncontact <= _UNROLLED_UP_TO
        lam0 = sm.zeros_like_batch((ncontact, 3, batch), qd_free)
        carry.append(tuple(lam0) if unrolled else lam0)

    def contact_update(qd_vec, blk):
        Jb, Wb, mb, on, mu_b, bias_b, ms_b, is_b, lam = blk             # Jb (3, nv, B), lam (3, B)
        # v as a reduction, not an elementwise chain: XLA's CPU fusion copies a cheap chain into each of
        # its consumers (the cone's norm, the clamp, the update) and recomputes it there.
        v = jnp.sum(Jb * qd_vec[None], axis=1)                          # (3, B) row velocities
        ln = jnp.maximum(lam[0] - mb[0] * ms_b * (v[0] + bias_b) - is_b * lam[0], 0.0) * on
        lt = lam[1:] - mb[1:] * v[1:]
        limit = mu_b * ln
        if elliptic:
            norm_t = sm.safe_norm(lt)
            lt = lt * sm.where(norm_t > limit, limit / sm.where(norm_t > 0, norm_t, 1.0), 1.0)
        else:
            lt = sm.clip(lt, -limit, limit)
        new = jnp.concatenate([ln[None], lt * on])
        step = new - lam
        if unrolled:
            return sm.by_halves(lambda rows: qd_vec[rows] + Wb[0, rows] * step[0] + Wb[1, rows] * step[1]
                                + Wb[2, rows] * step[2], m.nv), new
        return qd_vec + Wb[0] * step[0] + Wb[1] * step[1] + Wb[2] * step[2], new

    # --- joint limits: one row each --------------------------------------------------------------
    with jax.named_scope("limit_rows"):
        system = _limit_system(m, q, minv, bias_of)
        nlimit = 0
        if system is not None:
            nlimit, limit_sweep = system
            carry.append(sm.zeros_like_batch((nlimit, batch), qd_free))

    def sweep(carry, _):
        qd_vec, *lams = carry
        out = []
        if ncontact and unrolled:
            news = []
            for b, lam_b in enumerate(lams.pop(0)):
                qd_vec, new = contact_update(qd_vec, tuple(x[b] for x in contacts) + (lam_b,))
                # Without the barrier XLA fuses the chain of blocks and recomputes each block's velocity
                # in every later consumer.
                qd_vec, new = jax.lax.optimization_barrier((qd_vec, new))
                news.append(new)
            out.append(tuple(news))
        elif ncontact:
            qd_vec, lam = jax.lax.scan(contact_update, qd_vec, contacts + (lams.pop(0),),
                                       unroll=_sweep_unroll(batch, ncontact))
            out.append(lam)
        if nlimit:
            qd_vec, lam = limit_sweep(qd_vec, lams.pop(0))
            out.append(lam)
        return (qd_vec, *out), None

    with jax.named_scope("iterations"):
        (qd_vec, *lams), _ = jax.lax.scan(sweep, tuple(carry), None, length=m.solver_iterations,
                                          unroll=_ITERATIONS_UNROLL)
    if not ncontact:
        return qd_vec, no_impulses(m, qd_free)
    lam = jnp.stack(lams[0]) if unrolled else lams[0]

    # Restitution: contacts of bouncing pairs that hit faster than the threshold and carry a normal
    # impulse bounce back. Without a budget only the slots of pairs that can bounce are visited (pairs
    # whose restitution was 0 at compile time); with one, every slot when any pair can bounce.
    bounces = np.asarray(m.pair_bounce.array, bool)
    if isinstance(slots.pair, np.ndarray):
        idx = np.flatnonzero(bounces[slots.pair])
    else:
        idx = np.arange(ncontact) if bounces.any() else np.zeros(0, int)
    if len(idx):
        e = _pair_values(m.pair_restitution, slots.pair, batch)[idx]    # (k, B)
        Jn, Wn = Jc[idx, 0], Wc[idx, 0]                                 # (k, nv, B)
        v_before = _row_dot(Jn, qd[None])                               # normal velocity at the start
        lam_n = lam[idx, 0]
        bounce = (v_before < -RESTITUTION_THRESHOLD) & (e > 0) & (lam_n > 0)

        def restitution(qd_vec, blk):
            Jb, Wb, mb, lam_b, on, e_b, v0 = blk
            v = sm.total(Jb[d] * qd_vec[d] for d in range(m.nv))
            new = sm.where(on, jnp.maximum(lam_b + mb * (-e_b * v0 - v), 0.0), lam_b)
            return qd_vec + Wb * (new - lam_b), new

        qd_vec, lam_n = jax.lax.scan(restitution, qd_vec, (Jn, Wn, mc[idx, 0], lam_n, bounce, e, v_before))
        lam = lam.at[idx, 0].set(lam_n)

    # Each contact's impulse in the world frame, as a force on its second body.
    world = jnp.sum(lam[:, :, None] * frames, axis=1) / h               # (ncontact, 3, B) on body2
    # The slots' bodies per environment (s, B), broadcast where they are static.
    per_env = lambda b: (sm.zeros_like_batch((len(b), batch), world).astype(jnp.int32)   # noqa: E731
                         + jnp.asarray(b, jnp.int32)[:, None]) if isinstance(b, np.ndarray) else b.astype(jnp.int32)
    return qd_vec, ContactForces(world, per_env(slots.body1), per_env(slots.body2))


class ContactForces(NamedTuple):
    """Each contact slot's force (s, 3, B), world frame, on its second body (its opposite on the
    first), and the slots' first and second bodies (s, B) in each environment (static slots'
    broadcast). The substep loop carries these and sums them onto the bodies once, after its last
    turn (`body_forces`), rather than in every substep: against the sums in every substep (`python
    tools/ab_revision.py scenes/humanoid.yaml scenes/ant.yaml --base 01da1e7`, results bit-identical),
    2-core Intel Xeon, batch 1024, 15 rounds: Ant ×1.021 (rounds 1.006–1.081), Humanoid ×1.002; TPU
    v5e, batch 16,384, 5 rounds: Ant ×1.017, Humanoid ×0.990 (rounds within 0.001; carrying the
    slots' pairs instead of their two bodies: ×1.018 and ×0.988)."""

    world: jax.Array
    body1: jax.Array
    body2: jax.Array


def solved_contacts(m: Model) -> tuple[int, int]:
    """(contacts the solver takes in every step, candidate contacts): every candidate contact, or
    the contact budget's closest; the same number in every step, touching or not."""
    if not m.pair_groups or m.nv == 0:
        return 0, 0
    n = candidate_rows(m)
    return (m.contact_budget if 0 < m.contact_budget < n else n), n


def contact_slots(m: Model, batch: int) -> int:
    """The contact slots `solve_velocity` solves for a tile of `batch` environments: every candidate
    row, or the contact budget; past _UNROLLED_UP_TO, padded to the sweep's unroll (`_padded`)."""
    k, _ = solved_contacts(m)
    return _padded(k, _sweep_unroll(batch, k)) if k > _UNROLLED_UP_TO else k


def no_impulses(m: Model, like) -> ContactForces:
    """ContactForces of no contact (zeros) in `contact_slots` slots, for the batch of `like` (…, B)."""
    batch = like.shape[-1]
    s = contact_slots(m, batch)
    body = sm.zeros_like_batch((s, batch), like).astype(jnp.int32)
    return ContactForces(sm.zeros_like_batch((s, 3, batch), like), body, body)


def body_forces(m: Model, c: ContactForces):
    """(nbody, 3, B): + each slot's force on its second body, − on its first, by a 0/±1 weight per
    body and slot (once per step, after the substep loop)."""
    world = c.world
    bodies = np.arange(m.nbody)[:, None, None]
    weight = ((c.body2[None] == bodies).astype(world.dtype) - (c.body1[None] == bodies).astype(world.dtype))
    return jnp.sum(weight[:, :, None, :] * world[None], axis=1)        # (nbody, s, 1, B)·(1, s, 3, B)


def _bias(tc, dr, C, h):
    """Per-row bias velocity, mass scale and impulse scale (k, B): soft rows (C <= 0) follow the soft
    step; speculative rows (C > 0, still apart) only stop the approach that would close the gap."""
    bias_rate, mass_scale, impulse_scale = _soft(tc, dr, h)
    speculative = C > 0
    return (sm.where(speculative, C / h, bias_rate * C), sm.where(speculative, 1.0, mass_scale),
            sm.where(speculative, 0.0, impulse_scale))
