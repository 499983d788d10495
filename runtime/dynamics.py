"""Smooth dynamics: velocities, the joint-space mass matrix and its factorisation, bias forces,
passive and actuator forces.

Where it sits: after `kinematics.forward_kinematics` in the step. Everything is specialised by the
model's static tree: the mass matrix is kept as its non-zero entries only (dof i couples with dof j
only when one is an ancestor of the other, so a branched tree like an Ant's has far fewer entries than
nv²), and its factorisation M = Lᵀ·D·L follows the tree with no fill-in (Featherstone, "Rigid Body
Dynamics Algorithms", §6.5), unrolled at trace time into straight-line arithmetic.

Notation: spatial vectors [angular; linear] in the world-aligned frame at each tree's reference point
(see kinematics.py); `cinert` is a spatial inertia packed as (I about the reference point (3, 3),
h = m·c (3,), m ()) with c the com relative to the reference point.
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp

from . import math as sm
from .kinematics import Frames
from .types import JointKind, Model


class Velocities(NamedTuple):
    cvel: list       # nbody × (6,) spatial velocity of each body
    cdof_dot: list   # nv × (6,) time derivative of each cdof


def com_velocities(m: Model, f: Frames, qd) -> Velocities:
    """cvel_b = cvel_parent + Σ cdof·qd over the body's dofs, and each dof's ċdof (see kinematics)."""
    dtype = qd.dtype
    zero6 = jnp.zeros(6, dtype)
    cvel = [zero6]
    cdof_dot = [None] * m.nv
    for b in range(1, m.nbody):
        v = cvel[m.body_parent_id[b]]
        for j in range(m.body_jnt_adr[b], m.body_jnt_adr[b] + m.body_jnt_num[b]):
            d0 = m.jnt_dof_adr[j]
            kind = JointKind(m.jnt_kind[j])
            if kind is JointKind.FREE:
                for d in range(d0, d0 + 3):
                    cdof_dot[d] = zero6
                    v = v + f.cdof[d] * qd[d]
                dofs = range(d0 + 3, d0 + 6)
            else:
                dofs = range(d0, d0 + (3 if kind is JointKind.BALL else 1))
            v_before = v
            for d in dofs:
                cdof_dot[d] = sm.motion_cross_motion(v_before, f.cdof[d])
                v = v + f.cdof[d] * qd[d]
        cvel.append(v)
    return Velocities(cvel, cdof_dot)


def body_inertias(m: Model, f: Frames):
    """Each body's spatial inertia about its tree's reference point."""
    out = [None]
    for b in range(1, m.nbody):
        mass = m.body_mass[b]
        rot_b = f.xmat[b]
        i_com = sm.matmul(sm.matmul(rot_b, m.body_inertia[b]), jnp.swapaxes(rot_b, -1, -2))
        c = f.xipos[b] - f.root_com[b]
        i_ref = i_com + mass * (jnp.sum(c * c) * jnp.eye(3, dtype=c.dtype) - c[:, None] * c[None, :])
        out.append((i_ref, mass * c, mass))
    return out


def composite_inertias(m: Model, cinert):
    """Subtree sums of the spatial inertias (all in one frame per tree, so plain sums)."""
    crb = list(cinert)
    for b in range(m.nbody - 1, 0, -1):
        p = m.body_parent_id[b]
        if p > 0:
            crb[p] = tuple(x + y for x, y in zip(crb[p], crb[b]))
    return crb


def ancestors(m: Model, d: int):
    """Dofs on the path from dof d to the root, d excluded, nearest first (static)."""
    out = []
    i = m.dof_parent_id[d]
    while i >= 0:
        out.append(int(i))
        i = m.dof_parent_id[i]
    return out


def mass_matrix(m: Model, f: Frames, crb, diag_extra) -> dict:
    """Non-zero entries M[(i, j)], j ancestor-or-self of i, by the composite-rigid-body algorithm:
    M_ij = cdof_jᵀ · crb_{body(i)} · cdof_i. `diag_extra` (nv,) is added to the diagonal (armature and
    the implicit damping term)."""
    entries = {}
    for i in range(m.nv):
        force = sm.inertia_apply(crb[m.dof_body_id[i]], f.cdof[i])
        entries[(i, i)] = sm.dot(f.cdof[i], force) + diag_extra[i]
        for j in ancestors(m, i):
            entries[(i, j)] = sm.dot(f.cdof[j], force)
    return entries


class Factor(NamedTuple):
    """M = Lᵀ·D·L with L unit lower-triangular on the tree's sparsity pattern."""

    lower: dict      # (k, i) -> L_ki for i an ancestor of k
    diag: list       # nv × D_k
    parents: tuple   # per dof, its ancestors nearest first (static)


def factor(m: Model, entries: dict) -> Factor:
    h = dict(entries)
    anc = tuple(tuple(ancestors(m, k)) for k in range(m.nv))
    for k in range(m.nv - 1, -1, -1):
        for idx, i in enumerate(anc[k]):
            a = h[(k, i)] / h[(k, k)]
            for j in (i,) + anc[k][idx + 1:]:
                h[(i, j)] = h[(i, j)] - a * h[(k, j)]
            h[(k, i)] = a
    lower = {key: v for key, v in h.items() if key[0] != key[1]}
    return Factor(lower, [h[(k, k)] for k in range(m.nv)], anc)


def solve(fac: Factor, rhs: list) -> list:
    """x with M x = rhs; rhs is a list of nv arrays of any common shape (several right-hand sides)."""
    n = len(fac.diag)
    y = list(rhs)
    for k in range(n - 1, -1, -1):       # Lᵀ y = rhs, leaves first
        for i in fac.parents[k]:
            y[i] = y[i] - fac.lower[(k, i)] * y[k]
    x = [y[k] / fac.diag[k] for k in range(n)]
    for k in range(n):                    # L x = D⁻¹ y, roots first
        for i in fac.parents[k]:
            x[k] = x[k] - fac.lower[(k, i)] * x[i]
    return x


def bias_forces(m: Model, f: Frames, vel: Velocities, cinert, gravity, qd) -> list:
    """Recursive Newton–Euler with qdd = 0 and gravity as a base acceleration: c(q, qd) per dof."""
    dtype = gravity.dtype
    cacc = [jnp.concatenate([jnp.zeros(3, dtype), -gravity])]
    cfrc = [None]
    for b in range(1, m.nbody):
        a = cacc[m.body_parent_id[b]]
        for d in range(m.body_dof_adr[b], m.body_dof_adr[b] + m.body_dof_num[b]):
            a = a + vel.cdof_dot[d] * qd[d]
        cacc.append(a)
        momentum = sm.inertia_apply(cinert[b], vel.cvel[b])
        cfrc.append(sm.inertia_apply(cinert[b], a) + sm.motion_cross_force(vel.cvel[b], momentum))
    for b in range(m.nbody - 1, 0, -1):
        p = m.body_parent_id[b]
        if p > 0:
            cfrc[p] = cfrc[p] + cfrc[b]
    return [sm.dot(f.cdof[d], cfrc[m.dof_body_id[d]]) for d in range(m.nv)]


def passive_forces(m: Model, q, qd) -> list:
    """Joint springs (hinge/slide, toward the spring reference) and viscous damping, per dof."""
    out = [-m.dof_damping[d] * qd[d] for d in range(m.nv)]
    for j in range(m.njnt):
        if JointKind(m.jnt_kind[j]) in (JointKind.HINGE, JointKind.SLIDE):
            d, a = m.jnt_dof_adr[j], m.jnt_qpos_adr[j]
            out[d] = out[d] - m.dof_stiffness[d] * (q[a] - m.dof_spring_ref[d])
    return out


def actuator_forces(m: Model, q, qd, ctrl) -> list:
    """MuJoCo's affine actuator on a hinge/slide joint, with length = gear·q and velocity = gear·qd:
    force = gain₀·ctrl + bias₀ + bias₁·length + bias₂·velocity, clamped; generalised force gear·force.
    Control and force are clamped to their ranges where the model says they are limited."""
    out = [jnp.zeros((), q.dtype) for _ in range(m.nv)]
    for u in range(m.nu):
        j = m.actuator_jnt_id[u]
        d, a = m.jnt_dof_adr[j], m.jnt_qpos_adr[j]
        gear = m.actuator_gear[u]
        c = ctrl[u]
        if m.actuator_ctrl_limited[u]:
            c = jnp.clip(c, m.actuator_ctrl_range[u, 0], m.actuator_ctrl_range[u, 1])
        gain, bias = m.actuator_gain[u], m.actuator_bias[u]
        force = gain[0] * c + bias[0] + bias[1] * gear * q[a] + bias[2] * gear * qd[d]
        if m.actuator_force_limited[u]:
            force = jnp.clip(force, m.actuator_force_range[u, 0], m.actuator_force_range[u, 1])
        out[d] = out[d] + gear * force
    return out
