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

import jax.numpy as jnp
import numpy as np

from . import math as sm
from .kinematics import Frames
from .plan import plan_of
from .types import JointKind, Model


def const(x, dtype):
    return jnp.asarray(x, dtype)


def com_velocities(m: Model, f: Frames, qd):
    """(cvel (nbody, 6), cdof_dot (nv, 6))."""
    p = plan_of(m)
    dtype = qd.dtype
    cdof_qd = f.cdof * qd[:, None]
    cvel = const(p.moves, dtype) @ cdof_qd
    seen = const(p.before, dtype) @ cdof_qd
    cdof_dot = sm.motion_cross_motion(seen, f.cdof) * const(1.0 - p.dof_trans, dtype)[:, None]
    return cvel, cdof_dot


def body_inertias(m: Model, f: Frames):
    """Each body's spatial inertia about its tree's reference point (world row is zero mass)."""
    mass = m.body_mass
    i_world = sm.matmul(sm.matmul(f.xmat, m.body_inertia), jnp.swapaxes(f.xmat, -1, -2))
    c = f.xipos - f.root_com
    eye = jnp.eye(3, dtype=c.dtype)
    i_ref = i_world + mass[:, None, None] * (jnp.sum(c * c, -1)[:, None, None] * eye
                                             - c[:, :, None] * c[:, None, :])
    return i_ref, mass[:, None] * c, mass


def subtree_sum(m: Model, x):
    p = plan_of(m)
    s = const(p.subtree, x.dtype)
    return jnp.tensordot(s, x, axes=(1, 0))


def mass_matrix(m: Model, f: Frames, cinert, diag_extra):
    """Dense (nv, nv) joint-space inertia, zero outside the tree's ancestor pattern, plus diag_extra."""
    p = plan_of(m)
    crb = tuple(subtree_sum(m, x) for x in cinert)
    body_of_dof = p.dof_body
    force = sm.inertia_apply(tuple(x[body_of_dof] for x in crb), f.cdof)      # (nv, 6)
    g = jnp.sum(force[:, None, :] * f.cdof[None, :, :], axis=-1)              # g[i, j] = F_i · cdof_j
    lower = g * const(p.ancestor, g.dtype)                                    # j ancestor-or-self of i
    strict = lower * const(1.0 - np.eye(m.nv), g.dtype)
    return lower + strict.T + jnp.diag(diag_extra)


def inverse_spd(a):
    """Inverse of a symmetric positive-definite matrix by Gauss–Jordan elimination without pivoting
    (the pivots of an SPD matrix are positive), one static rank-1 update per column: no LAPACK call,
    so it vectorises across a batch of small matrices."""
    n = a.shape[-1]
    eye = np.eye(n)
    for k in range(n):
        piv = 1.0 / a[..., k, k]
        row = jnp.where(eye[k], 1.0, a[..., k, :]) * piv[..., None]   # row k of the next matrix
        col = jnp.where(eye[k], 0.0, a[..., :, k])
        # In place: column k now holds the inverse's column k, so clear it before the update.
        a = jnp.where(eye[k], 0.0, a) - col[..., :, None] * row[..., None, :]
        a = jnp.where(eye[k][:, None], row[..., None, :], a)
    return a


def bias_forces(m: Model, f: Frames, cvel, cdof_dot, cinert, gravity, qd):
    """c(q, qd) per dof: Coriolis, centrifugal and gravity forces (RNE with q̈ = 0)."""
    p = plan_of(m)
    dtype = qd.dtype
    base = jnp.concatenate([jnp.zeros(3, dtype), -gravity])
    cacc = const(p.moves, dtype) @ (cdof_dot * qd[:, None]) + base
    momentum = sm.inertia_apply(cinert, cvel)
    cfrc = sm.inertia_apply(cinert, cacc) + sm.motion_cross_force(cvel, momentum)
    cfrc = subtree_sum(m, cfrc)
    return jnp.sum(f.cdof * cfrc[p.dof_body], axis=-1)


def passive_forces(m: Model, q, qd):
    """Joint springs (hinge and slide, toward the spring reference) and viscous damping, per dof."""
    force = -m.dof_damping * qd
    kinds = np.asarray(m.jnt_kind.array)
    one = np.flatnonzero((kinds == JointKind.HINGE) | (kinds == JointKind.SLIDE))
    if len(one):
        d = np.asarray(m.jnt_dof_adr.array)[one]
        a = np.asarray(m.jnt_qpos_adr.array)[one]
        force = force.at[d].add(-m.dof_stiffness[d] * (q[a] - m.dof_spring_ref[d]))
    return force


def actuator_forces(m: Model, q, qd, ctrl):
    """MuJoCo's affine actuator on a hinge/slide joint, with length = gear·q and velocity = gear·qd:
    force = gain₀·ctrl + bias₀ + bias₁·length + bias₂·velocity, clamped; generalised force gear·force.
    Control and force are clamped to their ranges where the model says they are limited."""
    if m.nu == 0:
        return jnp.zeros((m.nv,), q.dtype)
    j = np.asarray(m.actuator_jnt_id.array)
    d = np.asarray(m.jnt_dof_adr.array)[j]
    a = np.asarray(m.jnt_qpos_adr.array)[j]
    gear = m.actuator_gear
    lo, hi = m.actuator_ctrl_range[:, 0], m.actuator_ctrl_range[:, 1]
    limited = np.asarray(m.actuator_ctrl_limited.array)
    c = jnp.where(limited, jnp.clip(ctrl, lo, hi), ctrl) if limited.any() else ctrl
    gain, bias = m.actuator_gain, m.actuator_bias
    force = gain[:, 0] * c + bias[:, 0] + bias[:, 1] * gear * q[a] + bias[:, 2] * gear * qd[d]
    flimited = np.asarray(m.actuator_force_limited.array)
    if flimited.any():
        force = jnp.where(flimited, jnp.clip(force, m.actuator_force_range[:, 0], m.actuator_force_range[:, 1]),
                          force)
    return jnp.zeros((m.nv,), q.dtype).at[d].add(gear * force)
