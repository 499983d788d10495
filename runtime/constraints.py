"""Contacts and joint limits: soft velocity constraints solved by projected Gauss–Seidel.

Where it sits: stage 6 of a substep (see step.py), after the smooth acceleration gives the velocity
qd_free = qd + h·M⁻¹τ. It returns the constrained velocity and each body's contact force. Arrays have
the batch last (math.py).

Every constraint is a block of three rows in joint space (J: (3, nv)):
- a contact: the normal row (separation velocity of geom2 from geom1 along the kernel's normal) and two
  tangent rows; Coulomb friction keeps |λ_t| ≤ μ·λ_n (a disc for the elliptic cone, a square for the
  pyramidal one);
- a joint limit: one row along which the distance to the nearer end of the range grows, and two empty
  rows.

Softness (per pair or joint: time constant τ, damping ratio ζ) makes the error obey
C̈ + 2ζω·Ċ + ω²·C = 0 with ω = 1/(τζ), integrated implicitly ("soft step", E. Catto, Solver2D, 2024):
with a₁ = 2ζ + hω, a₂ = hω·a₁, a₃ = 1/(1 + a₂), each normal-row update is
    Δλ = −m_eff·a₂a₃·(v + ω/a₁·C) − a₃·λ,
mass-independent (m_eff = 1/(J M⁻¹ Jᵀ) is the row's effective mass) and stable for any h; at rest a
row carrying a load F sinks F/(m_eff·ω²): g·(τζ)² = 0.25 mm for a sphere at the default τ = 0.005 s,
4× that at each end of a free capsule lying on its two ends (m_eff = m/4 there). A row whose surfaces are still apart (C > 0)
is a speculative contact: it only stops the approach that would close the gap within this substep
(bias C/h, rigid). Restitution e: after the iterations, one more sweep asks the normal velocity of rows
that arrived faster than `RESTITUTION_THRESHOLD` to reach −e·v_before.

The solver is a `lax.scan` over iterations of a `lax.scan` over blocks (fixed lengths: branch-free and
reverse-differentiable). Velocities are updated in joint space, qd += W_bᵀ·Δλ with W = J·M⁻¹, which is
cheaper than forming J·M⁻¹·Jᵀ.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from . import math as sm
from .kinematics import Frames, geom_poses
from .plan import plan_of
from .types import JointKind, Model

RESTITUTION_THRESHOLD = 0.2   # m/s: slower impacts do not bounce (keeps resting contacts quiet)
_TINY = 1e-12                 # guards 1/A for empty rows (the limits' tangent rows)


def has_constraints(m: Model) -> bool:
    return bool(len(m.pair_groups)) or bool(np.any(np.asarray(m.jnt_limited.array)))


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
    a = jnp.where(pick_x, jnp.asarray([1.0, 0.0, 0.0], dtype)[:, None], jnp.asarray([0.0, 1.0, 0.0], dtype)[:, None])
    t1 = sm.normalize(a - sm.dot(a, n)[..., None, :] * n)
    return t1, sm.cross(n, t1)


def _run_kernel(m: Model, grp, gpos, gmat):
    """The group's kernel vmapped over its pairs and the batch: Contact fields with the batch last."""
    from . import collision

    def geoms(ids):
        stack = lambda xs: None if xs[0] is None else jax.tree_util.tree_map(  # noqa: E731
            lambda *a: jnp.stack(a), *xs)
        return collision.Geom(pos=jnp.moveaxis(gpos[ids], -1, 1), mat=jnp.moveaxis(gmat[ids], -1, 1),
                              size=m.geom_size[ids], mesh=stack([m.geom_mesh[g] for g in ids]),
                              hfield=stack([m.geom_hfield[g] for g in ids]))

    g1, g2 = geoms(np.asarray(grp.geom1.array)), geoms(np.asarray(grp.geom2.array))

    # Inner vmap over the batch: only poses vary; sizes, meshes and height fields are shared.
    batch_axes = collision.Geom(pos=0, mat=0, size=None, mesh=None, hfield=None)
    kernel = jax.vmap(collision.KERNELS[grp.kernel], in_axes=(batch_axes, batch_axes))
    con = jax.vmap(kernel)(g1, g2)                                   # fields (npair, B, ncon, ...)
    return type(con)(*(jnp.moveaxis(x, 1, -1) for x in con))         # (npair, ncon, ..., B)


def _contact_blocks(m: Model, f: Frames):
    """Run every pair group's kernel; return the contact blocks and what the force output needs."""
    p = plan_of(m)
    gpos, gmat = geom_poses(m, f)
    dtype = gpos.dtype
    c_ang, c_lin = f.cdof[:, :3], f.cdof[:, 3:]                         # (nv, 3, B)
    body_id = np.asarray(m.geom_body_id.array)
    out = {k: [] for k in ("J", "C", "active", "mu", "e", "tc", "dr", "frame", "b1", "b2")}
    pair = 0
    for grp in m.pair_groups:
        con = _run_kernel(m, grp, gpos, gmat)
        npair, ncon = len(grp.geom1), grp.ncon
        b1, b2 = body_id[np.asarray(grp.geom1.array)], body_id[np.asarray(grp.geom2.array)]
        n = con.normal                                                   # (npair, ncon, 3, B)
        t1, t2 = _tangents(n)
        frame = jnp.stack([n, t1, t2], axis=2)                           # (npair, ncon, row, 3, B)

        def rows(body):
            # row·(lin_d + ang_d × r) = row·lin_d + ang_d·(r × row), masked to the body's chain.
            r = con.pos - f.root_com[body][:, None]                      # (npair, ncon, 3, B)
            rxf = sm.cross(r[:, :, None], frame)                         # (npair, ncon, row, 3, B)
            jac = sum(frame[:, :, :, None, x, :] * c_lin[:, x, :] + rxf[:, :, :, None, x, :] * c_ang[:, x, :]
                      for x in range(3))                                 # (npair, ncon, row, nv, B)
            return jac * jnp.asarray(p.moves[body], dtype)[:, None, None, :, None]

        jac = rows(b2) - rows(b1)
        sl = slice(pair, pair + npair)
        flat = lambda x: x.reshape((npair * ncon,) + x.shape[2:])        # noqa: E731
        out["J"].append(flat(jac))
        out["C"].append(flat(con.dist))
        out["active"].append(flat(con.active).astype(dtype))
        out["mu"].append(jnp.repeat(m.pair_friction[sl], ncon))
        out["e"].append(jnp.repeat(m.pair_restitution[sl], ncon))
        out["tc"].append(jnp.repeat(m.pair_solref[sl, 0], ncon))
        out["dr"].append(jnp.repeat(m.pair_solref[sl, 1], ncon))
        out["frame"].append(flat(frame))
        out["b1"].append(np.repeat(b1, ncon))
        out["b2"].append(np.repeat(b2, ncon))
        pair += npair
    return out


def _limit_blocks(m: Model, q):
    """One block per limited joint. Hinge/slide: the row pushes away from the nearer end of the range
    (its distance is the smaller of the two). Ball: the cone angle's distance to its maximum."""
    dtype = q.dtype
    batch = q.shape[-1]
    kinds = np.asarray(m.jnt_kind.array)
    limited = np.asarray(m.jnt_limited.array)
    J, C, tc, dr = [], [], [], []
    one = np.flatnonzero(limited & ((kinds == JointKind.HINGE) | (kinds == JointKind.SLIDE)))
    if len(one):
        a = np.asarray(m.jnt_qpos_adr.array)[one]
        d = np.asarray(m.jnt_dof_adr.array)[one]
        below = q[a] - m.jnt_range[one, 0:1]
        above = m.jnt_range[one, 1:2] - q[a]
        lower_nearer = below < above
        sign = jnp.where(lower_nearer, 1.0, -1.0).astype(dtype)          # (k, B)
        rows = np.zeros((len(one), 3, m.nv))
        rows[np.arange(len(one)), 0, d] = 1.0
        J.append(jnp.asarray(rows, dtype)[..., None] * sign[:, None, None, :])
        C.append(jnp.where(lower_nearer, below, above))
        tc.append(jnp.broadcast_to(m.jnt_limit_solref[one, 0:1], (len(one), batch)))
        dr.append(jnp.broadcast_to(m.jnt_limit_solref[one, 1:2], (len(one), batch)))
    for j in np.flatnonzero(limited & (kinds == JointKind.BALL)):
        a, d = m.jnt_qpos_adr[j], m.jnt_dof_adr[j]
        quat = sm.normalize(q[a:a + 4])
        quat = quat * jnp.where(quat[0] < 0, -1.0, 1.0)                  # the short way round
        vec = quat[1:]
        sin_half = sm.safe_norm(vec)
        angle = 2.0 * jnp.arctan2(sin_half, quat[0])
        axis = vec / jnp.where(sin_half > 0, sin_half, 1.0)
        row = jnp.zeros((1, 3, m.nv, batch), dtype).at[0, 0, d:d + 3].set(-axis)  # angle grows along axis
        J.append(row)
        C.append((m.jnt_range[j, 1] - angle)[None])
        tc.append(jnp.broadcast_to(m.jnt_limit_solref[j, 0], (1, batch)))
        dr.append(jnp.broadcast_to(m.jnt_limit_solref[j, 1], (1, batch)))
    return J, C, tc, dr


def solve_velocity(m: Model, f: Frames, minv, q, qd, qd_free, h):
    """Constrained velocity (nv, B) and the (nbody, 3, B) world contact force on each body.

    minv: (nv, nv, B) inverse of the mass matrix the smooth step used (with armature and h·damping)."""
    dtype = q.dtype
    batch = q.shape[-1]
    zero_force = jnp.zeros((m.nbody, 3, batch), dtype)
    if not has_constraints(m) or m.nv == 0:
        return qd_free, zero_force

    con = _contact_blocks(m, f) if m.pair_groups else {k: [] for k in ("J", "C")}
    lJ, lC, ltc, ldr = _limit_blocks(m, q)
    ncontact = sum(x.shape[0] for x in con["J"])
    nlim = sum(x.shape[0] for x in lJ)
    bcast = lambda x: jnp.broadcast_to(x[:, None], (x.shape[0], batch))  # noqa: E731
    J = jnp.concatenate(con["J"] + lJ)                                  # (nb, 3, nv, B)
    C = jnp.concatenate(con["C"] + lC)                                  # (nb, B)
    active = jnp.concatenate(con.get("active", []) + [jnp.ones((nlim, batch), dtype)])
    mu = jnp.concatenate([bcast(x) for x in con.get("mu", [])] + [jnp.zeros((nlim, batch), dtype)])
    e = jnp.concatenate([bcast(x) for x in con.get("e", [])] + [jnp.zeros((nlim, batch), dtype)])
    tc = jnp.concatenate([bcast(x) for x in con.get("tc", [])] + ltc)
    dr = jnp.concatenate([bcast(x) for x in con.get("dr", [])] + ldr)

    W = sum(J[:, :, k:k + 1, :] * minv[k][None, None] for k in range(m.nv))   # rows of J·M⁻¹
    A = jnp.sum(J * W, axis=2)                                          # (nb, 3, B) diag of J M⁻¹ Jᵀ
    m_eff = jnp.where(A > _TINY, 1.0 / jnp.where(A > _TINY, A, 1.0), 0.0)
    v_before = jnp.sum(J[:, 0] * qd[None], axis=1)                      # (nb, B) normal velocity at start

    bias_rate, mass_scale, impulse_scale = _soft(tc, dr, h)
    speculative = C > 0
    bias = jnp.where(speculative, C / h, bias_rate * C)
    mass_scale = jnp.where(speculative, 1.0, mass_scale)
    impulse_scale = jnp.where(speculative, 0.0, impulse_scale)
    elliptic = m.cone == "elliptic"

    def block_update(qd_vec, blk):
        Jb, Wb, mb, lam, on, mu_b, bias_b, ms_b, is_b = blk             # Jb (3, nv, B), lam (3, B)
        v = sum(Jb[:, d] * qd_vec[d] for d in range(m.nv))              # (3, B) row velocities
        ln = jnp.maximum(lam[0] - mb[0] * ms_b * (v[0] + bias_b) - is_b * lam[0], 0.0) * on
        lt = lam[1:] - mb[1:] * v[1:]
        limit = mu_b * ln
        if elliptic:
            norm_t = sm.safe_norm(lt)
            lt = lt * jnp.where(norm_t > limit, limit / jnp.where(norm_t > 0, norm_t, 1.0), 1.0)
        else:
            lt = jnp.clip(lt, -limit, limit)
        new = jnp.concatenate([ln[None], lt * on])
        step = new - lam
        return qd_vec + Wb[0] * step[0] + Wb[1] * step[1] + Wb[2] * step[2], new

    def sweep(carry, _):
        qd_vec, lam = carry
        blocks = (J, W, m_eff, lam, active, mu, bias, mass_scale, impulse_scale)
        qd_vec, lam = jax.lax.scan(block_update, qd_vec, blocks)
        return (qd_vec, lam), None

    lam0 = jnp.zeros((J.shape[0], 3, batch), dtype)
    (qd_vec, lam), _ = jax.lax.scan(sweep, (qd_free, lam0), None, length=m.solver_iterations)

    # Restitution: rows that hit faster than the threshold and carry a normal impulse bounce back.
    bounce = (v_before < -RESTITUTION_THRESHOLD) & (e > 0) & (lam[:, 0] > 0)

    def restitution(qd_vec, blk):
        Jb, Wb, mb, lam_n, on, e_b, v0 = blk
        v = sum(Jb[0, d] * qd_vec[d] for d in range(m.nv))
        new = jnp.where(on, jnp.maximum(lam_n + mb[0] * (-e_b * v0 - v), 0.0), lam_n)
        return qd_vec + Wb[0] * (new - lam_n)[None], new

    qd_vec, lam_n = jax.lax.scan(restitution, qd_vec, (J, W, m_eff, lam[:, 0], bounce, e, v_before))
    lam = lam.at[:, 0].set(lam_n)

    force = zero_force
    if ncontact:
        frames = jnp.concatenate(con["frame"])                          # (ncontact, row, 3, B)
        world = jnp.sum(lam[:ncontact, :, None] * frames, axis=1) / h   # (ncontact, 3, B) on geom2's body
        b1, b2 = np.concatenate(con["b1"]), np.concatenate(con["b2"])
        scatter = np.zeros((m.nbody, ncontact))
        scatter[b2, np.arange(ncontact)] += 1.0
        scatter[b1, np.arange(ncontact)] -= 1.0
        force = jnp.tensordot(jnp.asarray(scatter, dtype), world, axes=(1, 0))
    return qd_vec, force
