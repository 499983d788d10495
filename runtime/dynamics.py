"""Smooth dynamics: velocities, the joint-space mass matrix and its inverse, bias forces, passive and
actuator forces.

Where it sits: after `kinematics.forward_kinematics` in a substep. The tree's structure enters only as
the constant 0/1 matrices of plan.py, so each algorithm is a handful of vector operations with no
sequential walk over bodies:

- velocities: cvel = moves·(cdof ⊙ qd), and each dof's ċdof = (velocity its joint sees) ×ₘ cdof;
- composite rigid bodies: crb = subtree·cinert; M_ij = cdofⱼᵀ·crb_body(i)·cdofᵢ for j an ancestor of
  i (the tree's sparsity pattern, applied as a mask), mirrored;
- recursive Newton–Euler with q̈ = 0 and gravity as a base acceleration: body accelerations
  moves·(ċdof ⊙ qd), forces I·a + v ×* I·v, accumulated by subtree·f, projected on cdof.

Notation: spatial vectors [angular; linear] in each tree's world-aligned frame at its reference point
(kinematics.py). A spatial inertia is packed as (I about the reference point (…, 3, 3), h = m·c (…, 3),
m (…)) with c the centre of mass relative to the reference point.
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np

from . import math as sm
from .kinematics import Frames
from .plan import plan_of
from .types import JointKind, Model


def const(x, dtype):
    return jnp.asarray(x, dtype)


def static_apply(matrix, x):
    """A constant (r, n) matrix applied along the first axis of x (n, ...): one small GEMM."""
    return jnp.tensordot(const(matrix, x.dtype), x, axes=(1, 0))


def sparse_apply(matrix, x):
    """The same product for a 0/1 matrix, written out: row i is the sum of x's rows j where
    matrix[i, j] = 1, with no GEMM. XLA fuses these sums into the code around them, where a GEMM is a
    call of its own that needs its operand written out first and its result read back. Measured
    against `static_apply` (in-process A/B at batch 1024, interleaved; fresh-process compile, pairs):
    the subtree sums of the mass matrix alone, Ant ×1.14; those and the two of the bias forces, Ant
    ×1.22 (trace + XLA +0.1 s) and Humanoid ×1.08 (+0.27 s). The other two sites (the velocities'
    `moves` and `before`, the trees' centres of mass in kinematics) would give Ant another ×1.04
    and ×1.025 for +0.15 s of compile together, which its 2 s target cannot pay; they stay GEMMs.
    The same sums as one scatter-add (`math.place_rows` of the gathered rows) run Ant ×0.76 and
    Humanoid ×0.88 against this loop (A/B, batch 1024): XLA fuses the unrolled adds, not the scatter.

    A row whose set of ones holds an earlier row's set is written from that row's sum (rows taken
    from the smallest sets up, the largest earlier sets first): a subtree's sum is its body's row
    plus its children's sums, and a body's `moves` row its parent's plus its own dofs. The traced
    program then has one add per edge of the tree instead of one per (row, one) entry, and each x
    row is a slice kept (1, ...) instead of a slice and a reshape (Ant's step: 415 → 105 operations of
    its 2,961); XLA's fused code sums the same terms as before."""
    matrix = np.asarray(matrix)
    assert np.isin(matrix, (0.0, 1.0)).all(), "sparse_apply sums rows: a 0/1 matrix"
    sets = [frozenset(np.flatnonzero(r).tolist()) for r in matrix]
    done: dict = {}
    for i in sorted(range(len(sets)), key=lambda i: (len(sets[i]), i)):
        need, terms = set(sets[i]), []
        for j in sorted(done, key=lambda j: (-len(sets[j]), j)):
            if sets[j] and sets[j] <= need:
                terms.append(done[j])
                need -= sets[j]
        terms += [jax.lax.slice_in_dim(x, k, k + 1) for k in sorted(need)]
        done[i] = sm.total(terms) if terms else jnp.zeros((1,) + x.shape[1:], x.dtype)
    return jnp.concatenate([done[i] for i in range(len(sets))])


def com_velocities(m: Model, f: Frames, qd):
    """(cvel (nbody, 6, B), cdof_dot (nv, 6, B)) from qd (nv, B)."""
    p = plan_of(m)
    cdof_qd = f.cdof * qd[:, None, :]
    cvel = static_apply(p.moves, cdof_qd)
    seen = static_apply(p.before, cdof_qd)
    cdof_dot = sm.motion_cross_motion(seen, f.cdof) * const(1.0 - p.dof_trans, qd.dtype)[:, None, None]
    return cvel, cdof_dot


def body_inertias(m: Model, f: Frames):
    """Each body's spatial inertia about its tree's reference point (the world row has zero mass).

    The rotated inertia and the parallel-axis term are one reduction over k, so XLA writes I_ref out
    once: as an elementwise chain it was fused into each of its readers (every ancestor's row of the
    subtree sums, the bias forces) and computed again there, 10.5× the arithmetic the chain asks for
    in Humanoid's optimised step (1.18M against 0.11M operations per tile and substep). Batch 1024,
    in-process A/B against the chain: Ant ×1.13, half_cheetah ×1.14, grasp ×1.04, Humanoid ×1.02–1.03."""
    mass = m.body_mass[:, None]                                          # (nbody, 1)
    c = f.xipos - f.root_com
    r_i = sm.matmul(f.xmat, sm.c(m.body_inertia))                        # R·I (nbody, 3, 3, B)
    eye = np.eye(3)
    # I_ref[i, j] = Σ_k (R·I)[i, k]·R[j, k] + m·c_k·(c_k·δ_ij − c_i·δ_jk), summed over k as a reduction
    terms = (r_i[:, :, None, :, :] * f.xmat[:, None, :, :, :]
             + mass[:, None, None, None] * c[:, None, None, :, :]
             * (c[:, None, None, :, :] * eye[:, :, None, None] - c[:, :, None, None, :] * eye[None, :, :, None]))
    i_ref = jnp.sum(terms, axis=3)                                       # (nbody, 3, 3, B)
    return i_ref, mass[:, None] * c, mass


def subtree_sum(m: Model, x):
    """Each body's x plus its descendants' (nbody, ...); the world's row is zero."""
    return sparse_apply(plan_of(m).subtree, x)


# Whether `mass_matrix` computes only the ancestor pairs' products: None, on a CPU only; True or False
# on every backend (the tests take both ways). On a TPU v5e at 16,384 environments the pairs ran
# Humanoid 1.07 and Ant 0.99 of the masked product's time (`python3 tools/ablate.py SCENE --batch 16384
# --steps 100 --repeats 3 pairs=1`, 2026-12-06); why (the gather into both triangles?) not looked into.
PAIR_PRODUCTS = None


def mass_matrix(m: Model, f: Frames, cinert, diag_extra):
    """(nv, nv, B) joint-space inertia, zero outside the tree's ancestor pattern, plus diag_extra (nv,).

    Only the entries the pattern holds are computed: M_ij = F_i·cdof_j for each pair (i, j) with j an
    ancestor-or-self of i, one product of six terms per pair, and M is then one gather of those
    values (and a zero) into both triangles. Humanoid has 185 such pairs of its 529 entries, Ant 81
    of 196, grasp 315 of 2025; the products over every (i, j) and a mask, as before, did 2.9, 2.4 and
    6.4 times the multiply-adds. The barrier keeps XLA from folding the gather into each reader of M
    (the elimination reads it many times): without it grasp ran ×0.99. One step against the full
    product in one process (`python tools/ab_revision.py SCENES --base be1e6a6 --rounds 11`, batch
    1024, 2-core Intel Xeon, 2026-12-06, two runs for three of them): Humanoid ×1.029 and ×1.028, Ant
    ×1.027 and ×1.014, grasp ×1.002 and ×1.000, fetch ×1.024, half_cheetah ×1.029, hopper ×1.014;
    rollout compile within ±0.15 s (Ant +0.14 and +0.04 s); one step's results identical.

    On a CPU only (PAIR_PRODUCTS): elsewhere M is the products over every (i, j), masked, as it was
    when the GPU and TPU tables were measured; the gathers are unmeasured there."""
    p = plan_of(m)
    dtype = f.cdof.dtype
    crb = tuple(subtree_sum(m, x) for x in cinert)
    force = sm.inertia_apply(tuple(sm.take(x, p.dof_body) for x in crb), f.cdof)    # (nv, 6, B)
    if not (jax.default_backend() == "cpu" if PAIR_PRODUCTS is None else PAIR_PRODUCTS):
        g = sm.total(force[:, k:k + 1, :] * f.cdof[None, :, k, :] for k in range(6))  # F_i · cdof_j
        lower = g * const(p.ancestor, dtype)[:, :, None]                   # j ancestor-or-self of i
        strict = lower * const(1.0 - np.eye(m.nv), dtype)[:, :, None]
        return lower + jnp.swapaxes(strict, 0, 1) + (jnp.eye(m.nv, dtype=dtype) * diag_extra)[:, :, None]
    i, j = np.nonzero(p.ancestor)                                                  # j ancestor-or-self of i
    values = sm.total(sm.take(force[:, k], i) * sm.take(f.cdof[:, k], j) for k in range(6))  # (npair, B)
    where = np.full((m.nv, m.nv), len(i))                                          # len(i): the zero row
    where[i, j] = where[j, i] = np.arange(len(i))
    full = sm.take(jnp.concatenate([values, jnp.zeros_like(values[:1])]), where.reshape(-1))
    mass = (full.reshape((m.nv, m.nv) + values.shape[1:])
            + (jnp.eye(m.nv, dtype=dtype) * diag_extra)[:, :, None])
    return jax.lax.optimization_barrier(mass)


def inverse_by_tree(m: Model, mass, tau):
    """(M⁻¹ (nv, nv, B), M⁻¹·τ (nv, B)) with each tree's block inverted on its own: dofs of different
    trees share no entry of M, so M⁻¹ is block diagonal too, and eliminating one tree's columns changes
    no entry of another's. Grasp (a 39-dof hand and a 6-dof object): 0.65 of the 45-dof elimination's
    multiply-adds. A tree of BRANCHES_FROM dofs or more whose root chain branches is inverted branch by
    branch (`_inverse_by_branches`), any other whole (`inverse_spd`)."""
    blocks = plan_of(m).tree_blocks
    parent = np.asarray(m.dof_parent_id.array)
    batch, dtype = mass.shape[2:], mass.dtype
    rows, qacc = [], []
    for lo, hi in blocks:
        split = branches(parent[lo:hi] - lo) if hi - lo >= BRANCHES_FROM else None
        a, b = mass[lo:hi, lo:hi], tau[lo:hi]
        inv, acc = _inverse_by_branches(a, b, *split) if split else inverse_spd(a, b)
        if len(blocks) == 1:
            return inv, acc
        rows.append(jnp.concatenate([jnp.zeros((hi - lo, lo) + batch, dtype), inv,
                                     jnp.zeros((hi - lo, m.nv - hi) + batch, dtype)], axis=1))
        qacc.append(acc)
    return jnp.concatenate(rows), jnp.concatenate(qacc)


# A tree of this many dofs or more whose root chain branches is inverted branch by branch. Earlier
# measurements, against the whole elimination (`python tools/ablate.py SCENE --batch 1024
# branches_from=1`, products as chains, that session's machine): grasp (39 dofs) ran ×1.17 and compiled
# 0.5 s slower; below, the gain did not pay for the compile time: Humanoid (23) ×1.07 for +0.8 s of
# trace and XLA compile (3.3 → 4.1 s, over its 4 s target), Ant (14) ×1.03 for +0.6 s (2.4 → 3.0 s),
# fetch (16) ×0.97, half_cheetah (9) ×1.03. Again on a 2-core AMD EPYC (2026-12-05): Humanoid ×1.08 (7
# rounds in one process), XLA compile 3.1 → 3.6–3.7 s and trace +0.1–0.2 s in fresh processes (4.5 s in
# all, over the target). Its products as one over all branches at once (X stacked, one X·S⁻¹, one
# X·S⁻¹·Xᵀ, the result held apart from W = J·M⁻¹ by an optimization barrier): ×0.99 of the whole
# elimination, XLA compile 4.0–4.4 s (the machine loaded then). Once more after the grouped limit sweep
# (constraints.py `_LIMIT_SCAN_FROM`) took 0.2–0.3 s off Humanoid's compile (2026-12-06, fresh processes
# in turn, three each): trace + XLA 3.60–4.07 s whole, 4.20–4.53 s branch by branch: still over the 4 s
# target. On a faster 2-core AMD EPYC (2026-12-06, matmul peak 458 GFLOP/s against 204 the day before),
# `scenec bench scenes/humanoid.yaml --batch 1024 --compare mujoco` with BRANCHES_FROM = 23 and 32 in
# turn, two runs each: 339k and 329k physics steps/s against 314k and 310k (×1.06–1.08), trace + XLA
# compile 3.49 and 3.90 s against 2.90 and 2.82 s: at the target's edge even there. Branches padded to
# the widest and eliminated side by side in one loop (Humanoid's arms beside its 11-dof abdomen and
# legs: one loop fewer to compile): ×1.02 against ×1.10 unpadded (`tools/ablate.py`, one process), the
# padding's work eating the gain. Set at 15 (2026-12-07, 2-core Intel Xeon), once the products were
# reductions (`_matmul`) and the step's compile had come down (Humanoid 2.3–2.5 s whole in the machine's
# faster state that day). Fresh processes in turn, batch 1024, `scenec bench` under a scratch script
# setting BRANCHES_FROM, three rounds against the whole elimination: Humanoid ×1.10 (315–319k against
# 281–291k physics steps/s), trace + XLA compile 2.55–2.61 s against 2.33–2.53 s; fetch (16) ×1.01–1.07,
# 1.97–2.04 s against 1.75–1.85 s; grasp (already branch by branch) ×1.22 against its hand eliminated
# whole. With every tree taken branch by branch (two rounds): Ant (14) ×1.05 for +0.3 s of compile (1.52
# → 1.82 s; its 2 s target, which it meets only in the machine's faster states: 1.84–2.55 s in the
# recent tables, cannot pay that), half_cheetah (9) ×1.10 and walker2d (9) ×1.04–1.07 for +0.14 s each,
# which no threshold can take without Ant. Earlier that day, in a slower state of the machine
# (Humanoid's whole step compiled in 2.7–2.9 s) and with the products as chains, Humanoid branch by
# branch ran ×0.99–1.01 of the whole elimination in two rounds: the gain is not the same in every state.
# On a TPU v5e at 16,384 environments (`python3 tools/ablate.py SCENE --batch 16384 --steps 100
# --repeats 3 branches_from=1000`): the whole elimination took 1.02 (Humanoid) and 1.31 (grasp) of the
# time. Tried and not kept: a branch that branches again taken branch by branch too (Humanoid's 11-dof
# abdomen and legs as its 3-dof chain and two legs of 4 side by side, with several right-hand sides
# through the block elimination): ×0.97–1.05 in six rounds of fresh processes in turn (median ×1.01),
# trace + XLA compile +0.1 s.
BRANCHES_FROM = 15


def branches(parent) -> tuple | None:
    """A tree's root chain and its branches, from each dof's parent dof (-1 at the root; dofs in
    depth-first order, parents first): (r, ((start, stop), ...)) with dofs [0, r) the chain from the
    root down to the first dof with two or more children, and each branch the contiguous range of one
    child's subtree; None for a chain without branches."""
    n = len(parent)
    children = [[] for _ in range(n)]
    for d in range(1, n):
        if parent[d] >= 0:
            children[parent[d]].append(d)
    d = 0
    while len(children[d]) == 1:
        d = children[d][0]
    if len(children[d]) < 2 or any(parent[k] != k - 1 for k in range(1, d + 1)):
        return None
    heads = children[d]
    spans = tuple(zip(heads, heads[1:] + [n]))
    for start, stop in spans:              # each branch must be exactly the subtree of its head
        for k in range(start + 1, stop):
            if not (start <= parent[k] < k):
                return None
    return d + 1, spans


def elimination_floats(m: Model) -> int:
    """Floats per environment of the largest matrix `inverse_by_tree` eliminates at once: a whole tree's
    (n, n + 1), or for a tree taken branch by branch its branches of one size side by side,
    (b, b + r + 1) each, and the root chain's (r, r + 1)."""
    parent = np.asarray(m.dof_parent_id.array)
    largest = 0
    for lo, hi in plan_of(m).tree_blocks:
        n = hi - lo
        split = branches(parent[lo:hi] - lo) if n >= BRANCHES_FROM else None
        if split is None:
            largest = max(largest, n * (n + 1))
            continue
        r, spans = split
        sizes = [e - s for s, e in spans]
        largest = max([largest, r * (r + 1)] + [sizes.count(b) * b * (b + r + 1) for b in set(sizes)])
    return largest


def _matmul(a, b):
    """(p, q, B) @ (q, s, B) as one product and a sum over q (a reduction).

    Against one elementwise chain of q products (2-core Intel Xeon, 2026-12-07, batch 1024, fresh
    processes in turn, three rounds each): Humanoid inverted branch by branch ×1.01 (315–317k against
    312–314k physics steps/s), trace + XLA compile 2.60–2.62 s against 2.71–2.84 s (the step's optimised
    module 7,776 against 8,492 HLO instructions); grasp ×1.12 (186k against 165k, two rounds), compile
    2.74–2.78 s against 2.84–2.85 s. With an optimization barrier on the assembled M⁻¹ (so that no
    product is fused into its readers), Humanoid ran ×0.91 as a reduction and ×0.74 as chains: its
    readers' fusions of the products are worth keeping."""
    return jnp.sum(a[:, :, None, :] * b[None], axis=1)


def _inverse_by_branches(a, tau, r, spans):
    """(M⁻¹, M⁻¹·τ) of one tree's block a (n, n, B) whose dofs [0, r) are the root chain and whose
    `spans` are branches that share no entry of M with each other (block elimination, the Schur
    complement on the root chain):
        X_i = M_ii⁻¹ M_iR, S = M_RR − Σ_i M_Ri X_i,
        (M⁻¹)_RR = S⁻¹, (M⁻¹)_iR = −X_i S⁻¹, (M⁻¹)_ij = δ_ij M_ii⁻¹ + X_i S⁻¹ X_jᵀ.
    Branches of one size are eliminated together, side by side in the batch axis. Grasp's hand (a
    3-dof root chain and four 9-dof fingers): 9.4k multiply-adds per environment against 61k for the
    whole 39-dof elimination, and 12 elimination steps in a row instead of 39.

    Each block of M⁻¹ is its own product (`_matmul`), joined by concatenation: one product over all
    the branches at once ran 1.2–1.9× slower (XLA fused the product into W = J·M⁻¹ and evaluated it
    again for every constraint row)."""
    batch = a.shape[-1]
    by_size = {}
    for i, (s, e) in enumerate(spans):
        by_size.setdefault(e - s, []).append(i)
    inv, X, y = [None] * len(spans), [None] * len(spans), [None] * len(spans)
    cat = lambda parts: jnp.concatenate(parts, axis=-1)                  # noqa: E731  (side by side)
    for idx in by_size.values():
        block_inv, sol = inverse_spd(
            cat([a[spans[i][0]:spans[i][1], spans[i][0]:spans[i][1]] for i in idx]),
            cat([jnp.concatenate([a[spans[i][0]:spans[i][1], :r], tau[spans[i][0]:spans[i][1], None]], axis=1)
                 for i in idx]))
        for j, i in enumerate(idx):
            lanes = slice(j * batch, (j + 1) * batch)
            inv[i], X[i], y[i] = block_inv[..., lanes], sol[:, :r, lanes], sol[:, r, lanes]
    m_ir = [a[s:e, :r] for s, e in spans]
    schur = a[:r, :r] - sum(_matmul(jnp.swapaxes(mi, 0, 1), xi) for mi, xi in zip(m_ir, X))
    t_root = tau[:r] - sum(_matmul(jnp.swapaxes(mi, 0, 1), yi[:, None])[:, 0] for mi, yi in zip(m_ir, y))
    s_inv, acc_root = inverse_spd(schur, t_root)
    Y = [_matmul(xi, s_inv) for xi in X]                                 # X_i S⁻¹ (b_i, r, B)
    acc = [yi - _matmul(xi, acc_root[:, None])[:, 0] for xi, yi in zip(X, y)]
    rows = [jnp.concatenate([s_inv] + [-jnp.swapaxes(yi, 0, 1) for yi in Y], axis=1)]
    for i, yi in enumerate(Y):
        rows.append(jnp.concatenate([-yi] + [_matmul(yi, jnp.swapaxes(xj, 0, 1)) + (inv[i] if i == j else 0.0)
                                             for j, xj in enumerate(X)], axis=1))
    return jnp.concatenate(rows), jnp.concatenate([acc_root] + acc)


# Elimination steps per iteration of the column loop: 0 chooses by size, two steps from a block of
# `_inverse_unroll_from()` dofs up, else one. Measured with `python tools/ablate.py SCENE --batch 1024
# --repeats 9 inverse_unroll=2` on a 2-core AMD EPYC:
# - with XLA's 512-bit vectors (runtime/__init__.py sets them on AVX-512 CPUs), two steps ran faster
#   from Ant's 14 dofs up, two runs each: Ant ×1.05 and ×1.03, Humanoid (23) ×1.03 and ×1.02, fetch
#   (16) ×1.03; half_cheetah (9) ×0.97. Fresh-process compile time did not move (Ant 2.46–2.64 s,
#   Humanoid 3.44–3.74 s either way);
# - with 256-bit vectors, two steps ran Ant, fetch and hopper 2–6% slower and Humanoid as fast; only a
#   block of 32 dofs or more gained (grasp's hand when it was eliminated whole: ×1.11 and ×1.06).
INVERSE_UNROLL = 0
_INVERSE_UNROLL_FROM = {512: 12, 256: 32}


def _inverse_unroll_from() -> int:
    """The block size from which the elimination takes two steps per iteration, for the vector width
    XLA's CPU code uses (512 where runtime/__init__.py or the user set it in XLA_FLAGS)."""
    wide = "--xla_cpu_prefer_vector_width=512" in os.environ.get("XLA_FLAGS", "")
    return _INVERSE_UNROLL_FROM[512 if wide else 256]


# Tried and not kept (in-process A/B at batch 1024, Humanoid unless named; the whole elimination is
# 0.17 of the step, `python tools/ablate.py SCENE diagonal=inverse`):
# - the tree's LDLᵀ (M = LᵀDL on the ancestor pattern, no fill-in: ~3.5k multiply-adds against the
#   elimination's 12.7k) as straight-line code over each dof's row: ×0.42–0.45 the speed, XLA compile
#   +15 s; about a thousand small operations, each a kernel of its own;
# - one rank-1 update per column with the in-place bookkeeping folded into one entry of the row and
#   of the column (no select over the matrix): ×1.05 (Ant ×1.03–1.11), but above a pivot of 1 its
#   rounding grows with the pivot (so with the scene's units); with the scaling that keeps pivots
#   ≤ 1 (by 1 / the largest diagonal entry, the inverse written out once) ×0.97–1.01 (Ant ×0.96–
#   0.98); with row and column written back by dynamic_update_slice instead, ×1.00 (Ant ×1.02),
#   within the A/B's spread;
# - M formed column by column from static slices of each dof's subtree (1.1k multiply-adds against
#   3.2k): ×1.01, XLA compile +0.7 s.
# - the symmetric sweep (pivot k: a_ij −= a_ik·a_kj/a_kk, a_ik /= a_kk, a_kk = −1/a_kk; all pivots
#   swept give −A⁻¹, and A⁻¹b in the last column of [[A, b], [bᵀ, 0]]) on the packed lower triangle,
#   300 floats per environment for 23 dofs against the 552 of (n, n + 1): alone, 23 dofs at a tile of
#   64 on one core (2-core AMD EPYC), 435–456 µs with gathers for the packed indices and 131–136 µs
#   with each packed row a static slice, against 90–94 µs for this elimination;
# - this loop as one kernel (XLA's small-loop threshold raised to 3 MB for it): 135 µs with two steps
#   per iteration, 143 µs with one, against 90 µs as the loop of fused thunks it is at the default
#   threshold (the same test).
# - no selects: [M | I] with only its n + 1 live columns carried (the pivot column first; each step
#   drops it and appends the next unit column), one multiply-subtract per entry: 92–97 µs against
#   56–88 µs for this elimination (23 dofs, tiles of 64, one process, 2026-12-06); a window sliding
#   along the whole [M | I] by dynamic slices: 288 µs against 54 µs.
# - the tree's LDLᵀ level by level (2026-12-07): every dof of one depth eliminated at once (dofs of
#   one depth share no entry of M), each row kept as its entries at its ancestors, indexed by depth
#   ((n, 13, B) for Humanoid: 0.7k multiply-adds for the factor, 0.7k for L⁻¹ on the same rows),
#   and M⁻¹[i, j] = Σ_t U[i, t]·U[j, t]/D[anc_t] over the depths t of their common ancestors. Alone,
#   23 dofs at a tile of 64, one core (2-core Intel Xeon, a scratch script timing both in a jitted
#   loop as tools/stage_times.py does; both within 2e-6 of float64's inverse): 181–188 µs
#   against 116–125 µs for this elimination. The factor alone took 67–71 µs with an optimization
#   barrier after each level (193–211 µs without: XLA recomputed the earlier levels inside each
#   later gather), the same as one kernel (a loop that turns once: 95 µs), with slices and
#   concatenates instead of its gathers 102 µs; M⁻¹ assembled from the factor, 90 µs more (the 23
#   × 23 × 13 masked products: as much arithmetic as the elimination saves). Some 60 small fused
#   operations on 64 environments cost what the 23 passes of one fused update over the matrix do.
# - the pivot row and column put out of the update's fusion (an optimization barrier), so that the
#   update reads the carried matrix only at the entry it writes and might write over it: XLA still
#   writes a new matrix and copies it into the loop's state each turn (a copy of 23 × 24 × 64
#   floats), and the time stayed 130–132 µs against 128–132 µs (alone, as above).
# - blocked: b pivots per pass, one rank-b update of the whole matrix ([P R; C S] → [P⁻¹ P⁻¹R;
#   −CP⁻¹ S − CP⁻¹R], P the b × b pivot block inverted by an unrolled elimination, n padded to a
#   multiple of b with unit rows), so the matrix is read and written n/b times instead of n. Alone,
#   in a jitted loop, one core (2-core Intel Xeon, 2026-12-07; the same results to float32 rounding):
#   23 dofs at a tile of 64, 126–132 µs for this elimination against 146–155 µs with b = 2 and
#   134–162 µs with b = 4 (a scan over blocks); 14 dofs at 128, 79–84 µs against 73–89 µs (b = 2) and
#   97–271 µs (b = 4); the blocks unrolled with static slices, 2–5× slower. One rank-4 pass cost about
#   twice a rank-1 pass (each entry's four products read four broadcast operands), and each block
#   added its own kernels (the pivot block's inverse, the scaled rows, the columns).
# - an optimization barrier after every step, with more steps per iteration: Humanoid's step took
#   1.16 (one step), 1.49 (4), 1.70 (8) and 1.93 (23, no loop) of its time with two (`python
#   tools/ablate.py scenes/humanoid.yaml inverse_unroll=N`, batch 1024), as without the barrier
#   (1.13, 1.48, 1.68); each step's result written as two halves (`math.by_halves`, never over its
#   operand): 146 µs against 94 µs (23 dofs, 64 environments, in a loop). What two steps per turn
#   are in the optimised module: one fusion, one pass over the matrix, in which the first step's
#   pivot row and column are computed again for every entry (`python tools/flops_by_scope.py
#   scenes/humanoid.yaml --xla`: the mass matrix's stage ×1.57 of the arithmetic the jaxpr asks);
#   with four or eight steps per turn each later step presumably recomputes all earlier ones' rows
#   and columns so (not checked in those modules).
def inverse_spd(a, b=None):
    """Inverse of symmetric positive-definite matrices (n, n, B) by Gauss–Jordan elimination without
    pivoting (an SPD matrix's pivots are positive), one rank-1 update per column: no LAPACK call, so
    it vectorises across the batch.

    With right-hand sides b (n, B), or several (n, k, B), returns (A⁻¹, A⁻¹·b): b rides along as extra
    columns of the elimination, which cost a column each and need no product with A⁻¹ afterwards.

    The columns are a `lax.scan` (dynamic column index), not an unrolled loop: the result then leaves
    a loop, so XLA materialises it instead of fusing the last elimination step into every reader of
    A⁻¹ (W = J·A⁻¹ in the constraints read each entry once per constraint row), and the step has n
    times fewer operations to compile."""
    n = a.shape[0]
    if b is not None:
        many = b.ndim == a.ndim                                           # columns (n, k, B), or one (n, B)
        a = jnp.concatenate([a, b if many else b[:, None, :]], axis=1)    # (n, n + k, B)
    rows, cols = jnp.arange(n), jnp.arange(a.shape[1])

    def eliminate(a, k):
        on_row = (rows == k)[:, None]                                     # (n, 1)
        on_col = (cols == k)[:, None]                                     # (n or n + 1, 1)
        a_k = jax.lax.dynamic_index_in_dim(a, k, axis=0, keepdims=False)  # row k (n(+1), B)
        piv = 1.0 / jax.lax.dynamic_index_in_dim(a_k, k, axis=0, keepdims=False)
        row = sm.where(on_col, 1.0, a_k) * piv                           # row k of the next matrix
        col = sm.where(on_row, 0.0, jax.lax.dynamic_index_in_dim(a, k, axis=1, keepdims=False))
        # In place: column k now holds the inverse's column k, so clear it before the update.
        a = sm.where(on_col[None], 0.0, a) - col[:, None, :] * row[None, :, :]
        return sm.where(on_row[:, :, None], row[None], a), None

    unroll = INVERSE_UNROLL or (2 if n >= _inverse_unroll_from() else 1)
    a, _ = jax.lax.scan(eliminate, a, jnp.arange(n), unroll=unroll)
    return a if b is None else (a[:, :n], a[:, n:] if many else a[:, n])


def bias_forces(m: Model, f: Frames, cvel, cdof_dot, cinert, gravity, qd):
    """c(q, qd) per dof (nv, B): Coriolis, centrifugal and gravity forces (RNE with q̈ = 0)."""
    p = plan_of(m)
    dtype = qd.dtype
    base = jnp.concatenate([jnp.zeros(3, dtype), -gravity])[:, None]
    cacc = sparse_apply(p.moves, cdof_dot * qd[:, None, :]) + base
    momentum = sm.inertia_apply(cinert, cvel)
    cfrc = sm.inertia_apply(cinert, cacc) + sm.motion_cross_force(cvel, momentum)
    cfrc = subtree_sum(m, cfrc)
    return sm.dot(f.cdof, sm.take(cfrc, p.dof_body))


def passive_forces(m: Model, q, qd):
    """Joint springs (hinge and slide, toward the spring reference) and viscous damping, (nv, B)."""
    force = -m.dof_damping[:, None] * qd
    kinds = np.asarray(m.jnt_kind.array)
    one = np.flatnonzero((kinds == JointKind.HINGE) | (kinds == JointKind.SLIDE))
    if len(one):
        d = np.asarray(m.jnt_dof_adr.array)[one]
        a = np.asarray(m.jnt_qpos_adr.array)[one]
        force = force + sm.place_rows(-sm.take(m.dof_stiffness, d)[:, None] * (sm.take(q, a) - sm.take(m.dof_spring_ref, d)[:, None]),
                                       d, m.nv)
    return force


def actuator_forces(m: Model, q, qd, ctrl):
    """MuJoCo's affine actuator on a hinge/slide joint, with length = gear·q and velocity = gear·qd:
    force = gain₀·ctrl + bias₀ + bias₁·length + bias₂·velocity, clamped; generalised force gear·force.
    Control and force are clamped to their ranges where the model says they are limited. (nv, B)."""
    if m.nu == 0:
        return jnp.zeros_like(qd)
    j = np.asarray(m.actuator_jnt_id.array)
    d = np.asarray(m.jnt_dof_adr.array)[j]
    a = np.asarray(m.jnt_qpos_adr.array)[j]
    gear = m.actuator_gear[:, None]
    lo, hi = m.actuator_ctrl_range[:, 0:1], m.actuator_ctrl_range[:, 1:2]
    limited = np.asarray(m.actuator_ctrl_limited.array)[:, None]
    ctrl = sm.where(limited, sm.clip(ctrl, lo, hi), ctrl) if limited.any() else ctrl
    gain, bias = m.actuator_gain[:, :, None], m.actuator_bias[:, :, None]
    force = gain[:, 0] * ctrl + bias[:, 0] + bias[:, 1] * gear * sm.take(q, a) + bias[:, 2] * gear * sm.take(qd, d)
    flimited = np.asarray(m.actuator_force_limited.array)[:, None]
    if flimited.any():
        frange = m.actuator_force_range[:, :, None]
        force = sm.where(flimited, sm.clip(force, frange[:, 0], frange[:, 1]), force)
    return sm.place_rows(gear * force, d, m.nv)
