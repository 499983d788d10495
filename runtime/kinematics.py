"""Forward kinematics, centres of mass and motion subspaces.

Where it sits: first stage of a substep (see step.py). Input: the model and joint positions q (nq,);
output: `Frames`, arrays over bodies, joints and dofs used by the dynamics, contacts and outputs.

The tree is walked one level at a time (plan.py): all bodies of a level are placed at once from their
parents' poses, then their joints are applied slot by slot (first joints of all bodies, then second
joints, ...), in the order MuJoCo applies a body's joints. Every joint kind goes through the same
arithmetic — a rotation `qloc` about the anchor and a translation along the axis — with the kind
choosing the values by static masks, so a level costs the same few vector operations whatever its mix
of joints. A free joint overrides its body's pose with q.

Spatial quantities (`cdof`, [angular; linear]) are expressed in a world-aligned frame at a reference
point per kinematic tree: the tree's centre of mass at the start of the substep, as in MuJoCo's
"com-based" formulation. It needs no frame transforms between bodies and keeps moment arms short.
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from . import math as sm
from .plan import plan_of
from .types import JointKind, Model


class Frames(NamedTuple):
    """Arrays with the batch last (see math.py)."""

    xpos: jnp.ndarray       # (nbody, 3, B) body frame origins, world, m
    xquat: jnp.ndarray      # (nbody, 4, B) body orientations, world
    xmat: jnp.ndarray       # (nbody, 3, 3, B)
    xipos: jnp.ndarray      # (nbody, 3, B) centres of mass, world, m
    root_com: jnp.ndarray   # (nbody, 3, B) reference point of each body's tree (its centre of mass), m
    xanchor: jnp.ndarray    # (njnt, 3, B) joint anchors, world, m
    xaxis: jnp.ndarray      # (njnt, 3, B) joint axes, world
    cdof: jnp.ndarray       # (nv, 6, B) motion subspace of each dof, [angular; linear] at root_com


def forward_kinematics(m: Model, q) -> Frames:
    """Body poses from joint positions q (nq, B), then centres of mass and motion subspaces."""
    p = plan_of(m)
    batch = q.shape[-1]
    xpos, xquat, j_anchor, j_axis, j_quat = _walk(m, p, q, with_joints=True)
    xmat = sm.quat_to_mat(xquat)
    xipos = xpos + sm.matvec(xmat, sm.c(m.body_com))

    # Each tree's reference point: its centre of mass.
    dtype = q.dtype
    same = jnp.asarray(p.same_tree, dtype)
    tree_m = same @ m.body_mass
    tree_mx = jnp.tensordot(same, m.body_mass[:, None, None] * xipos, axes=(1, 0))
    root_com = tree_mx / jnp.where(tree_m > 0, tree_m, 1.0)[:, None, None]

    if m.njnt == 0:
        empty = jnp.zeros((0, 3, batch), dtype)
        return Frames(xpos, xquat, xmat, xipos, root_com, empty, empty, jnp.zeros((0, 6, batch), dtype))
    order = p.jnt_order
    xanchor = jnp.concatenate(j_anchor)[order]
    xaxis = jnp.concatenate(j_axis)[order]
    jnt_mat = sm.quat_to_mat(jnp.concatenate(j_quat)[order])
    cdof = motion_subspaces(m, p, root_com, xanchor, xaxis, jnt_mat)
    return Frames(xpos, xquat, xmat, xipos, root_com, xanchor, xaxis, cdof)


def body_poses(m: Model, q):
    """Only the body frames' positions (nbody, 3, B) and orientations (nbody, 4, B) from q (nq, B): the
    level walk of `forward_kinematics` without the joints' world anchors and axes (the step's outputs
    need no more; a smaller program to trace and compile)."""
    return _walk(m, plan_of(m), q, with_joints=False)[:2]


def _walk(m: Model, p, q, with_joints: bool):
    """The tree walk by levels: body positions and orientations, and with `with_joints` each joint slot's
    world anchors, axes and frame orientations (lists in slot order)."""
    dtype = q.dtype
    batch = q.shape[-1]
    nq = m.nq
    kinds_all = np.asarray(m.jnt_kind.array)
    adr_all = np.asarray(m.jnt_qpos_adr.array)
    identity = np.array([1.0, 0.0, 0.0, 0.0])[:, None]
    pos_levels = [jnp.zeros((1, 3, batch), dtype)]
    quat_levels = [jnp.broadcast_to(jnp.asarray(identity, dtype), (1, 4, batch))]
    j_anchor, j_axis, j_quat = [], [], []
    for lv in p.levels:
        ppos = pos_levels[-1][lv.parent_local]
        pquat = quat_levels[-1][lv.parent_local]
        sl = slice(int(lv.bodies[0]), int(lv.bodies[-1]) + 1)
        pos = ppos + sm.quat_rotate(pquat, sm.c(m.body_pos[sl]))
        quat = sm.quat_mul(pquat, sm.c(m.body_quat[sl]))
        for local, joints in lv.slots:
            full = len(local) == len(lv.bodies)
            ps, qs = (pos, quat) if full else (pos[local], quat[local])
            kinds = kinds_all[joints]
            adr = adr_all[joints]
            anchor, axis = sm.c(m.jnt_anchor[joints]), sm.c(m.jnt_axis[joints])
            anchor_w = ps + sm.quat_rotate(qs, anchor)
            has_slide = bool(np.any(kinds == JointKind.SLIDE))
            axis_w = sm.quat_rotate(qs, axis) if with_joints or has_slide else None
            value = q[adr] - m.jnt_reference[joints][:, None]          # hinge angle / slide offset
            hinge = (kinds == JointKind.HINGE)[:, None, None]
            qloc = jnp.where(hinge, sm.axis_angle_quat(axis, value), identity)
            if np.any(kinds == JointKind.BALL):
                ball = q[np.minimum(adr[:, None] + np.arange(4), nq - 1)]
                qloc = jnp.where((kinds == JointKind.BALL)[:, None, None], sm.normalize(ball), qloc)
            new_quat = sm.normalize(sm.quat_mul(qs, qloc))
            new_pos = anchor_w - sm.quat_rotate(new_quat, anchor)
            if has_slide:
                new_pos = new_pos + axis_w * jnp.where((kinds == JointKind.SLIDE)[:, None], value, 0.0)[:, None, :]
            if np.any(kinds == JointKind.FREE):
                free = (kinds == JointKind.FREE)[:, None, None]
                fq = q[np.minimum(adr[:, None] + np.arange(7), nq - 1)]
                new_pos = jnp.where(free, fq[:, :3], new_pos)
                new_quat = jnp.where(free, sm.normalize(fq[:, 3:]), new_quat)
                anchor_w = jnp.where(free, new_pos, anchor_w)
            j_anchor.append(anchor_w)
            j_axis.append(axis_w)
            j_quat.append(new_quat)
            if full:
                pos, quat = new_pos, new_quat
            else:
                pos, quat = pos.at[local].set(new_pos), quat.at[local].set(new_quat)
        pos_levels.append(pos)
        quat_levels.append(quat)
    return jnp.concatenate(pos_levels), jnp.concatenate(quat_levels), j_anchor, j_axis, j_quat


def motion_subspaces(m: Model, p, root_com, xanchor, xaxis, jnt_mat):
    """cdof = [r; r × (o − anchor) + l] per dof, with r the rotation axis and l the translation.

    Hinge: r = its axis. Slide: l = its axis. Ball: r = an axis of the frame right after the ball's
    rotation (body-frame angular velocity, as MuJoCo's qvel). Free: l = a world axis for the first
    three dofs, r = an axis of the body frame, about the body origin, for the last three."""
    dtype = root_com.dtype
    j = p.dof_jnt
    kinds = np.asarray(m.jnt_kind.array)[j]
    frame_axis = jnt_mat[j, :, p.dof_axis]                                 # (nv, 3, B)
    one_axis = ((kinds == JointKind.HINGE) | (kinds == JointKind.SLIDE))[:, None, None]
    r = jnp.where(one_axis, xaxis[j], frame_axis) * jnp.asarray(p.dof_rot, dtype)[:, None, None]
    lin = (xaxis[j] * jnp.asarray(p.dof_slide, dtype)[:, None, None]
           + jnp.asarray(np.eye(3)[p.dof_axis] * p.dof_trans[:, None], dtype)[:, :, None])
    o = root_com[p.dof_body]
    return jnp.concatenate([r, sm.cross(r, o - xanchor[j]) + lin], axis=-2)


def geom_poses(m: Model, f: Frames):
    """World position (ngeom, 3, B) and rotation (ngeom, 3, 3, B) of every collider."""
    b = np.asarray(m.geom_body_id.array)
    gpos = f.xpos[b] + sm.matvec(f.xmat[b], sm.c(m.geom_pos))
    gmat = sm.quat_to_mat(sm.quat_mul(f.xquat[b], sm.c(m.geom_quat)))
    return gpos, gmat
