"""Contacts and joint limits: soft velocity constraints solved by projected Gauss–Seidel.

Where it sits: stage 6 of a substep (see step.py), after the smooth acceleration gives the velocity
qd_free = qd + h·M⁻¹τ. It returns the constrained velocity and each body's contact force.

Every constraint is a block of three rows in joint space (J: (3, nv)):
- a contact: the normal row (separation velocity of geom2 from geom1 along the kernel's normal) and two
  tangent rows; Coulomb friction keeps |λ_t| ≤ μ·λ_n (a disc for the elliptic cone, a square for the
  pyramidal one);
- a joint limit: one row (the distance to the limit grows along it) and two empty rows.

Softness (per pair or joint: time constant τ, damping ratio ζ) makes the error obey
C̈ + 2ζω·Ċ + ω²·C = 0 with ω = 1/(τζ), integrated implicitly ("soft step", E. Catto, Solver2D, 2024):
with a₁ = 2ζ + hω, a₂ = hω·a₁, a₃ = 1/(1 + a₂), each normal-row update is
    Δλ = −m_eff·a₂a₃·(v + ω/a₁·C) − a₃·λ,
mass-independent (m_eff = 1/(J M⁻¹ Jᵀ) is the row's effective mass) and stable for any h. A row whose
surfaces are still apart (C > 0) is a speculative contact: it only stops the approach that would close
the gap within this substep (bias C/h, rigid). Restitution e: after the iterations, one more sweep asks
the normal velocity of rows that arrived faster than `RESTITUTION_THRESHOLD` to reach −e·v_before.

The solver is a `lax.scan` over iterations of a `lax.scan` over blocks (fixed lengths: branch-free and
reverse-differentiable). Velocities are updated in joint space: qd += W_bᵀ·Δλ with W = M⁻¹Jᵀ from the
tree factorisation, which is cheaper than forming J·M⁻¹·Jᵀ.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from . import math as sm
from .plan import plan_of
from .kinematics import Frames, geom_poses
from .types import JointKind, Model

RESTITUTION_THRESHOLD = 0.2   # m/s: slower impacts do not bounce (keeps resting contacts quiet)
_TINY = 1e-12                 # guards 1/A for empty rows (limits' tangent rows)


def has_constraints(m: Model) -> bool:
    return bool(len(m.pair_groups)) or bool(np.any(np.asarray(m.jnt_limited.array)))


def _soft(tc, dr, h):
    omega = 1.0 / (tc * dr)
    a1 = 2.0 * dr + h * omega
    a2 = h * omega * a1
    a3 = 1.0 / (1.0 + a2)
    return omega / a1, a2 * a3, a3          # bias rate, mass scale, impulse scale


def _tangents(n):
    """An orthonormal pair spanning the plane normal to unit n, smooth almost everywhere."""
    dtype = n.dtype
    ex = jnp.array([1.0, 0.0, 0.0], dtype)
    ey = jnp.array([0.0, 1.0, 0.0], dtype)
    a = jnp.where((jnp.abs(n[..., 0]) < 0.9)[..., None], ex, ey)
    t1 = sm.normalize(a - sm.dot(a, n)[..., None] * n)
    return t1, sm.cross(n, t1)


def _chain_mask(m: Model, body: int) -> np.ndarray:
    """(nv,) 1 for the dofs that move `body` (its own and its ancestors'), else 0."""
    return plan_of(m).moves[body]


def _dot3(a, b):
    """Σₓ a[..., x]·b[..., x] for a trailing axis of 3, written out so that XLA fuses it."""
    return a[..., 0] * b[..., 0] + a[..., 1] * b[..., 1] + a[..., 2] * b[..., 2]


def _contact_blocks(m: Model, f: Frames):
    """Run every pair group's kernel; return the contact blocks and what the force output needs."""
    from . import collision

    gpos, gmat = geom_poses(m, f)
    dtype = gpos.dtype
    c_ang, c_lin = f.cdof[:, :3], f.cdof[:, 3:]
    out = {k: [] for k in ("J", "C", "active", "mu", "e", "tc", "dr", "frame", "b1", "b2")}
    pair = 0
    for grp in m.pair_groups:
        ids1, ids2 = np.asarray(grp.geom1.array), np.asarray(grp.geom2.array)
        npair = len(ids1)

        def geoms(ids):
            mesh = [m.geom_mesh[g] for g in ids]
            hf = [m.geom_hfield[g] for g in ids]
            stack = lambda xs: None if xs[0] is None else jax.tree_util.tree_map(  # noqa: E731
                lambda *a: jnp.stack(a), *xs)
            return collision.Geom(pos=gpos[ids], mat=gmat[ids], size=m.geom_size[ids],
                                  mesh=stack(mesh), hfield=stack(hf))

        con = jax.vmap(collision.KERNELS[grp.kernel])(geoms(ids1), geoms(ids2))
        ncon = grp.ncon
        body_id = np.asarray(m.geom_body_id.array)
        b1, b2 = body_id[ids1], body_id[ids2]
        n = con.normal                                                    # (npair, ncon, 3)
        t1, t2 = _tangents(n)
        frame = jnp.stack([n, t1, t2], axis=-2)                           # (npair, ncon, 3 rows, 3)

        def rows(body):
            # row·(lin_d + ang_d × r) = row·lin_d + ang_d·(r × row), masked to the body's chain.
            r = con.pos - f.root_com[body][:, None, :]                    # (npair, ncon, 3)
            rxf = sm.cross(r[:, :, None, :], frame)                       # (npair, ncon, 3, 3)
            jac = (_dot3(frame[..., None, :], c_lin) + _dot3(rxf[..., None, :], c_ang))
            return jac * jnp.asarray(plan_of(m).moves[body], dtype)[:, None, None, :]

        jac = rows(b2) - rows(b1)                                         # (npair, ncon, 3, nv)
        sl = slice(pair, pair + npair)
        out["J"].append(jac.reshape(npair * ncon, 3, m.nv))
        out["C"].append(con.dist.reshape(-1))
        out["active"].append(con.active.reshape(-1))
        out["mu"].append(jnp.repeat(m.pair_friction[sl], ncon))
        out["e"].append(jnp.repeat(m.pair_restitution[sl], ncon))
        out["tc"].append(jnp.repeat(m.pair_solref[sl, 0], ncon))
        out["dr"].append(jnp.repeat(m.pair_solref[sl, 1], ncon))
        out["frame"].append(frame.reshape(npair * ncon, 3, 3))
        out["b1"].append(np.repeat(b1, ncon))
        out["b2"].append(np.repeat(b2, ncon))
        pair += npair
    return out


def _limit_blocks(m: Model, q):
    """One block per limited joint. Hinge/slide: the row pushes away from the nearer end of the range
    (its distance is the smaller of the two). Ball: the cone angle's distance to its maximum."""
    dtype = q.dtype
    kinds = np.asarray(m.jnt_kind.array)
    limited = np.asarray(m.jnt_limited.array)
    J, C, tc, dr = [], [], [], []
    one = np.flatnonzero(limited & ((kinds == JointKind.HINGE) | (kinds == JointKind.SLIDE)))
    if len(one):
        a = np.asarray(m.jnt_qpos_adr.array)[one]
        d = np.asarray(m.jnt_dof_adr.array)[one]
        lo, hi = m.jnt_range[one, 0], m.jnt_range[one, 1]
        below, above = q[a] - lo, hi - q[a]
        lower_nearer = below < above
        sign = jnp.where(lower_nearer, 1.0, -1.0).astype(dtype)
        rows = np.zeros((len(one), 3, m.nv))
        rows[np.arange(len(one)), 0, d] = 1.0
        J.append(jnp.asarray(rows, dtype) * sign[:, None, None])
        C.append(jnp.where(lower_nearer, below, above))
        tc.append(m.jnt_limit_solref[one, 0])
        dr.append(m.jnt_limit_solref[one, 1])
    balls = np.flatnonzero(limited & (kinds == JointKind.BALL))
    for j in balls:
        a, d = m.jnt_qpos_adr[j], m.jnt_dof_adr[j]
        quat = sm.normalize(q[a:a + 4])
        quat = quat * jnp.where(quat[0] < 0, -1.0, 1.0)      # the short way round
        vec = quat[1:]
        sin_half = sm.safe_norm(vec)
        angle = 2.0 * jnp.arctan2(sin_half, quat[0])
        axis = vec / jnp.where(sin_half > 0, sin_half, 1.0)
        row = jnp.zeros((1, 3, m.nv), dtype).at[0, 0, d:d + 3].set(-axis)   # the angle grows along axis
        J.append(row)
        C.append((m.jnt_range[j, 1] - angle)[None])
        tc.append(m.jnt_limit_solref[j, 0][None])
        dr.append(m.jnt_limit_solref[j, 1][None])
    return J, C, tc, dr


def solve_velocity(m: Model, f: Frames, minv, q, qd, qd_free, h):
    """Constrained velocity (nv,) and the (nbody, 3) world contact force per body.

    minv: (nv, nv) inverse of the mass matrix the smooth step used (with armature and h·damping)."""
    dtype = q.dtype
    zero_force = jnp.zeros((m.nbody, 3), dtype)
    if not has_constraints(m) or m.nv == 0:
        return qd_free, zero_force

    con = _contact_blocks(m, f) if m.pair_groups else None
    lJ, lC, ltc, ldr = _limit_blocks(m, q)

    Js, Cs, act, mus, es, tcs, drs = [], [], [], [], [], [], []
    ncontact = 0
    if con is not None and con["J"]:
        Js += con["J"]
        Cs += con["C"]
        act += [a.astype(dtype) for a in con["active"]]
        mus += con["mu"]
        es += con["e"]
        tcs += con["tc"]
        drs += con["dr"]
        ncontact = sum(x.shape[0] for x in con["J"])
    if lJ:
        nlim = sum(x.shape[0] for x in lJ)
        Js += lJ
        Cs += lC
        act.append(jnp.ones(nlim, dtype))
        mus.append(jnp.zeros(nlim, dtype))
        es.append(jnp.zeros(nlim, dtype))
        tcs += ltc
        drs += ldr
    J = jnp.concatenate(Js)                                            # (nb, 3, nv)
    C = jnp.concatenate(Cs)
    active = jnp.concatenate(act)
    mu = jnp.concatenate(mus)
    e = jnp.concatenate(es)
    tc = jnp.concatenate(tcs)
    dr = jnp.concatenate(drs)
    nb = J.shape[0]

    W = sum(J[..., k:k + 1] * minv[k] for k in range(m.nv))           # (nb, 3, nv) rows of J·M⁻¹
    A = jnp.sum(J * W, axis=-1)                                        # (nb, 3) diagonal of J M⁻¹ Jᵀ
    m_eff = jnp.where(A > _TINY, 1.0 / jnp.where(A > _TINY, A, 1.0), 0.0)
    v_before = jnp.sum(J[:, 0, :] * qd, axis=-1)                       # (nb,) normal velocity at start

    bias_rate, mass_scale, impulse_scale = _soft(tc, dr, h)
    speculative = C > 0
    bias = jnp.where(speculative, C / h, bias_rate * C)
    mass_scale = jnp.where(speculative, 1.0, mass_scale)
    impulse_scale = jnp.where(speculative, 0.0, impulse_scale)
    elliptic = m.cone == "elliptic"

    def block_update(qd_vec, blk):
        Jb, Wb, mb, lam, on, mu_b, bias_b, ms_b, is_b = blk
        v = jnp.sum(Jb * qd_vec, axis=-1)                               # (3,) row velocities
        ln = jnp.maximum(lam[0] - mb[0] * ms_b * (v[0] + bias_b) - is_b * lam[0], 0.0) * on
        lt = lam[1:] - mb[1:] * v[1:]
        limit = mu_b * ln
        if elliptic:
            norm_t = sm.safe_norm(lt)
            lt = lt * jnp.where(norm_t > limit, limit / jnp.where(norm_t > 0, norm_t, 1.0), 1.0)
        else:
            lt = jnp.clip(lt, -limit, limit)
        new = jnp.concatenate([ln[None], lt * on])
        return qd_vec + jnp.sum(Wb * (new - lam)[:, None], axis=0), new

    def sweep(carry, _):
        qd_vec, lam = carry
        blocks = (J, W, m_eff, lam, active, mu, bias, mass_scale, impulse_scale)
        qd_vec, lam = jax.lax.scan(block_update, qd_vec, blocks)
        return (qd_vec, lam), None

    qd_vec = qd_free
    lam0 = jnp.zeros((nb, 3), dtype)
    (qd_vec, lam), _ = jax.lax.scan(sweep, (qd_vec, lam0), None, length=m.solver_iterations)

    # Restitution: rows that hit faster than the threshold and carry a normal impulse bounce back.
    bounce = (v_before < -RESTITUTION_THRESHOLD) & (e > 0) & (lam[:, 0] > 0)

    def restitution(qd_vec, blk):
        Jb, Wb, mb, lam_n, on, e_b, v0 = blk
        v = jnp.sum(Jb[0] * qd_vec)
        new = jnp.maximum(lam_n + mb[0] * (-e_b * v0 - v), 0.0)
        new = jnp.where(on, new, lam_n)
        return qd_vec + Wb[0] * (new - lam_n), new

    qd_vec, lam_n = jax.lax.scan(restitution, qd_vec, (J, W, m_eff, lam[:, 0], bounce, e, v_before))
    lam = lam.at[:, 0].set(lam_n)

    force = zero_force
    if ncontact:
        frames = jnp.concatenate(con["frame"])                         # (ncontact, 3, 3)
        world = jnp.sum(lam[:ncontact, :, None] * frames, axis=1) / h  # (ncontact, 3) on geom2's body
        b1 = np.concatenate(con["b1"])
        b2 = np.concatenate(con["b2"])
        scatter = np.zeros((m.nbody, ncontact))
        scatter[b2, np.arange(ncontact)] += 1.0
        scatter[b1, np.arange(ncontact)] -= 1.0
        force = jnp.asarray(scatter, dtype) @ world
    return qd_vec, force
