"""Forward kinematics, centres of mass and motion subspaces.

Where it sits: first stages of the step (`runtime/step.py`). Input: the model and joint positions q;
output: a `Frames` record of per-body and per-dof quantities used by the dynamics, contacts and outputs.

The code is specialised by the model's static structure: Python loops over bodies and joints unroll at
trace time into straight-line arithmetic (no gathers, no branches), one short block per body. Per-body
quantities are kept in Python lists while tracing and stacked once at the end.

Spatial quantities (motion subspaces `cdof`, velocities) are expressed in a world-aligned frame at a
reference point per kinematic tree: the tree's centre of mass at the start of the (sub)step, as in
MuJoCo's "com-based" formulation. It needs no frame transforms between bodies and keeps moment arms
short in float32.
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp

from . import math as sm
from .types import JointKind, Model


class Frames(NamedTuple):
    xpos: list            # nbody × (3,) body frame origins, world, m
    xquat: list           # nbody × (4,) body orientations, world
    xmat: list            # nbody × (3, 3)
    xipos: list           # nbody × (3,) centres of mass, world, m
    root_com: list        # nbody × (3,) reference point of the body's tree (its subtree com), m
    cdof: list            # nv × (6,) motion subspace of each dof, [angular; linear] at root_com
    cdof_pre_vel: list    # nv × int|None: which velocity the dof's derivative uses (see comvel)
    jnt_xanchor: list     # njnt × (3,) world anchor
    jnt_xaxis: list       # njnt × (3,) world axis (hinge/slide)
    jnt_xmat: list        # njnt × (3, 3) frame right after the joint's rotation (ball and free dof axes)


def forward_kinematics(m: Model, q) -> Frames:
    """Body poses from joint positions, joints applied in order within each body (MuJoCo's rule)."""
    dtype = q.dtype
    zero3 = jnp.zeros(3, dtype)
    ident = jnp.array([1.0, 0.0, 0.0, 0.0], dtype)
    xpos, xquat = [zero3], [ident]
    jnt_xanchor = [None] * m.njnt
    jnt_xaxis = [None] * m.njnt
    jnt_xquat = [None] * m.njnt
    for b in range(1, m.nbody):
        p = m.body_parent_id[b]
        pos = xpos[p] + sm.quat_rotate(xquat[p], m.body_pos[b])
        quat = sm.quat_mul(xquat[p], m.body_quat[b])
        for j in range(m.body_jnt_adr[b], m.body_jnt_adr[b] + m.body_jnt_num[b]):
            kind = JointKind(m.jnt_kind[j])
            a = m.jnt_qpos_adr[j]
            if kind is JointKind.FREE:
                pos = q[a:a + 3]
                quat = sm.normalize(q[a + 3:a + 7])
                jnt_xanchor[j] = pos
                jnt_xaxis[j] = sm.quat_rotate(quat, m.jnt_axis[j])
                jnt_xquat[j] = quat
                continue
            anchor = pos + sm.quat_rotate(quat, m.jnt_anchor[j])
            axis = sm.quat_rotate(quat, m.jnt_axis[j])
            jnt_xanchor[j], jnt_xaxis[j] = anchor, axis
            if kind is JointKind.SLIDE:
                pos = pos + axis * (q[a] - m.jnt_reference[j])
                continue
            if kind is JointKind.HINGE:
                qloc = sm.axis_angle_quat(m.jnt_axis[j], q[a] - m.jnt_reference[j])
            else:  # BALL
                qloc = sm.normalize(q[a:a + 4])
            quat = sm.normalize(sm.quat_mul(quat, qloc))
            pos = anchor - sm.quat_rotate(quat, m.jnt_anchor[j])  # rotation about the anchor
            jnt_xquat[j] = quat
        xpos.append(pos)
        xquat.append(quat)
    xmat = [sm.quat_to_mat(x) for x in xquat]
    xipos = [xpos[b] + sm.matvec(xmat[b], m.body_com[b]) for b in range(m.nbody)]

    # Reference point of each tree: its centre of mass (subtree com of the world's child).
    mass = [m.body_mass[b] for b in range(m.nbody)]
    tree_m, tree_mx = {}, {}
    for b in range(1, m.nbody):
        r = m.body_root_id[b]
        tree_m[r] = tree_m.get(r, 0.0) + mass[b]
        tree_mx[r] = tree_mx.get(r, 0.0) + mass[b] * xipos[b]
    root_com = [zero3]
    for b in range(1, m.nbody):
        r = m.body_root_id[b]
        tm = tree_m[r]
        root_com.append(tree_mx[r] / jnp.where(tm > 0, tm, 1.0))

    jnt_xmat = [None if x is None else sm.quat_to_mat(x) for x in jnt_xquat]
    cdof, pre = _motion_subspaces(m, root_com, jnt_xanchor, jnt_xaxis, jnt_xmat)
    return Frames(xpos, xquat, xmat, xipos, root_com, cdof, pre, jnt_xanchor, jnt_xaxis, jnt_xmat)


def _motion_subspaces(m, root_com, jnt_xanchor, jnt_xaxis, jnt_xmat):
    """cdof for every dof, and for each the marker the velocity stage needs for its time derivative.

    The marker is "translation" for the free joint's world-fixed translations (derivative 0) and
    "joint" otherwise (derivative = velocity accumulated before the joint × cdof; summed over the dofs of
    a joint this equals the exact derivative because a joint's own velocity crossed with itself is 0).
    """
    dtype = root_com[0].dtype
    cdof = [None] * m.nv
    marker = [None] * m.nv
    for j in range(m.njnt):
        b = m.jnt_body_id[j]
        o = root_com[b]
        d = m.jnt_dof_adr[j]
        kind = JointKind(m.jnt_kind[j])
        if kind is JointKind.HINGE:
            ax = jnt_xaxis[j]
            cdof[d] = jnp.concatenate([ax, sm.cross(ax, o - jnt_xanchor[j])])
            marker[d] = "joint"
        elif kind is JointKind.SLIDE:
            cdof[d] = jnp.concatenate([jnp.zeros(3, dtype), jnt_xaxis[j]])
            marker[d] = "joint"
        elif kind is JointKind.BALL:
            # Local angular velocity, in the frame right after the ball's rotation (for a ball that is
            # its body's last joint, the usual case and MuJoCo's, that is the body frame).
            rot = jnt_xmat[j]
            for k in range(3):
                r = rot[:, k]
                cdof[d + k] = jnp.concatenate([r, sm.cross(r, o - jnt_xanchor[j])])
                marker[d + k] = "joint"
        else:  # FREE: world linear velocity of the body origin, then body-frame angular velocity
            eye = jnp.eye(3, dtype=dtype)
            for k in range(3):
                cdof[d + k] = jnp.concatenate([jnp.zeros(3, dtype), eye[k]])
                marker[d + k] = "translation"
            rot = jnt_xmat[j]
            for k in range(3):
                r = rot[:, k]
                cdof[d + 3 + k] = jnp.concatenate([r, sm.cross(r, o - jnt_xanchor[j])])
                marker[d + 3 + k] = "joint"
    return cdof, marker


def geom_poses(m: Model, f: Frames):
    """World position (ngeom, 3) and rotation (ngeom, 3, 3) of every collider."""
    if m.ngeom == 0:
        return [], []
    gpos, gmat = [], []
    for g in range(m.ngeom):
        b = m.geom_body_id[g]
        gpos.append(f.xpos[b] + sm.matvec(f.xmat[b], m.geom_pos[g]))
        gmat.append(sm.quat_to_mat(sm.quat_mul(f.xquat[b], m.geom_quat[g])))
    return gpos, gmat
