"""Forward kinematics, centres of mass and motion subspaces.

Where it sits: first stage of a substep (see step.py). Input: the model and joint positions q (nq,);
output: `Frames`, arrays over bodies, joints and dofs used by the dynamics, contacts and outputs.

The tree is walked one level at a time (plan.py): all bodies of a level are placed at once from their
parents' poses, then their joints are applied slot by slot (first joints of all bodies, then second
joints, ...), in the order MuJoCo applies a body's joints. Every joint kind goes through the same
arithmetic (`_joint_slot`): a rotation `qloc` about the anchor and a translation along the axis, with
the kind choosing the values by masks, so a slot costs the same few vector operations whatever its
mix of joints. A free joint overrides its body's pose with q. The walk is unrolled for shallow trees
(`_walk`), and a `lax.scan` over uniform steps for deeper ones and for the step's output poses
(`_walk_steps`, `LOOP_FROM`): the same arithmetic, far fewer operations to compile.

Spatial quantities (`cdof`, [angular; linear]) are expressed in a world-aligned frame at a reference
point per kinematic tree: the tree's centre of mass at the start of the substep, as in MuJoCo's
"com-based" formulation. It needs no frame transforms between bodies and keeps moment arms short.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from . import math as sm
from .plan import plan_of
from .types import JointKind, Model


# From this many steps of the walk (plan.PoseSteps: a level's first joint slot, then one per further
# slot), `forward_kinematics` loops over them instead of unrolling them. Looped, the walk is one copy of
# its code; trace + XLA compile against unrolled, and run speed (scratch A/B in one process, batch 1024,
# run-to-run spread about ±3%): Humanoid (8 steps) 5.3 → 4.1 s, ×0.98–1.02; grasp (12) 7.7 → 6.1 s,
# ×0.98–1.01; half_cheetah (6) 3.1 → 2.0 s, ×0.99; hopper (6) 3.3 → 2.3 s, ×0.97; walker2d (6)
# 3.2 → 2.4 s, ×0.98; UR5e (6) 2.3 → 1.6 s, ×1.06. From 3 steps on: fresh
# processes at batch 1024 on a quiet machine, alternating, Ant (3 steps) 2.11–2.13 → 1.73–1.96 s at
# ×0.96–0.99 run speed, fetch (4) 2.39–2.53 → 2.02–2.04 s at ×0.98: the compile target (Ant
# under 2 s) against 1–4% of a run speed 2.1× MuJoCo's. Two steps (cartpole, reacher, the pendulums)
# stay unrolled. Tried and not kept: the free-joint steps as straight code ahead of the loop (a
# loop body without free-joint arithmetic): Ant ×1.02 run, +0.2 s compile. The looped walk kept a loop
# of thunks (`step.keep_out_of_small_loops` on its carry) rather than one kernel under the raised
# small-loop threshold: Ant's largest codegen task 0.37 → 0.26 s (the walk was it), codegen summed over
# its tasks 1.93 → 1.96 s and XLA compile 1.78 → 1.86 s (`python tools/compile_phases.py`): no gain.
# Every row's q and its joint's rotation (the sines and cosines) gathered and computed before the loop,
# so that its body holds no transcendental code: the step's XLA compile at batch 1024, fresh processes
# taken in turn, four each (2-core AMD EPYC), Ant 1.68–1.94 s against 1.71–1.86 s, Humanoid 2.92–4.04 s
# against 3.01–3.12 s; run ×1.00: no gain either.
LOOP_FROM = 3


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
    if len(p.pose_steps.src) >= LOOP_FROM:
        xpos, xquat, xanchor, xaxis, jquat = _walk_steps(m, p, q, with_joints=True)
    else:
        xpos, xquat, xanchor, xaxis, jquat = _walk(m, p, q)
    xmat = sm.quat_to_mat(xquat)
    xipos = xpos + sm.matvec(xmat, sm.c(m.body_com))

    # Each tree's reference point: its centre of mass.
    dtype = q.dtype
    same = jnp.asarray(p.same_tree, dtype)
    tree_m = same @ m.body_mass
    tree_mx = jnp.tensordot(same, m.body_mass[:, None, None] * xipos, axes=(1, 0))
    root_com = tree_mx / sm.where(tree_m > 0, tree_m, 1.0)[:, None, None]

    if m.njnt == 0:
        empty = jnp.zeros((0, 3, batch), dtype)
        return Frames(xpos, xquat, xmat, xipos, root_com, empty, empty, jnp.zeros((0, 6, batch), dtype))
    jnt_mat = sm.quat_to_mat(jquat)
    cdof = motion_subspaces(m, p, root_com, xanchor, xaxis, jnt_mat)
    return Frames(xpos, xquat, xmat, xipos, root_com, xanchor, xaxis, cdof)


def body_poses(m: Model, q):
    """Only the body frames' positions (nbody, 3, B) and orientations (nbody, 4, B) from q (nq, B),
    always by the looped walk: the step's outputs (the poses after the last substep) are under 1% of
    its run time, and a second unrolled walk was 20% of Humanoid's XLA compile time (−1.1 s)."""
    return _walk_steps(m, plan_of(m), q, with_joints=False)[:2]


_IDENTITY = np.array([1.0, 0.0, 0.0, 0.0])[:, None]
_MULTI = {JointKind.BALL, JointKind.FREE}    # joints with more than one coordinate


def _joint_slot(ps, qs, qv, value, anchor, axis, is_kind, present, with_axes: bool):
    """One joint slot applied to k bodies at (ps (k, 3, B), qs (k, 4, B)), the same arithmetic for every
    kind, the kind choosing by masks (`is_kind(kind)` → (k, 1, 1), static or traced; `present` the
    kinds that occur): a rotation `qloc` about the anchor and a translation along the axis, or a free
    joint's pose. qv (k, 7, B): q from each joint's address (ball and free joints read 4 and 7 of
    them; None when neither occurs); value (k, B): hinge angle or slide offset. Returns the joints'
    world anchors and axes (None without `with_axes` unless a slide needs it) and the bodies' new
    positions and orientations."""
    anchor_w = ps + sm.quat_rotate(qs, anchor)
    slide = JointKind.SLIDE in present
    axis_w = sm.quat_rotate(qs, axis) if with_axes or slide else None
    qloc = sm.where(is_kind(JointKind.HINGE), sm.axis_angle_quat(axis, value), _IDENTITY)
    if JointKind.BALL in present:
        qloc = sm.where(is_kind(JointKind.BALL), sm.normalize(qv[:, :4]), qloc)
    new_quat = sm.normalize(sm.quat_mul(qs, qloc))
    new_pos = anchor_w - sm.quat_rotate(new_quat, anchor)
    if slide:
        new_pos = new_pos + axis_w * sm.where(is_kind(JointKind.SLIDE)[:, 0], value, 0.0)[:, None, :]
    if JointKind.FREE in present:
        free = is_kind(JointKind.FREE)
        new_pos = sm.where(free, qv[:, :3], new_pos)
        new_quat = sm.where(free, sm.normalize(qv[:, 3:]), new_quat)
        anchor_w = sm.where(free, new_pos, anchor_w)
    return anchor_w, axis_w, new_pos, new_quat


def _walk_steps(m: Model, p, q, with_joints: bool):
    """The walk as a `lax.scan` over the plan's uniform steps (plan.PoseSteps), each reading its rows'
    sources and rewriting a block of W rows: the same arithmetic as `_walk`, with one copy of the
    code whatever the tree's depth. Returns xpos, xquat and, with `with_joints`, the joints' world
    anchors, axes and frame orientations in joint order (njnt, ..., B)."""
    st = p.pose_steps
    dtype, batch, nb, nj = q.dtype, q.shape[-1], m.nbody, m.njnt
    if st.src.size == 0:
        return (jnp.zeros((nb, 3, batch), dtype),
                jnp.broadcast_to(jnp.asarray(_IDENTITY, dtype), (nb, 4, batch)), None, None, None)
    has = st.jnt >= 0
    j = np.maximum(st.jnt, 0)
    kinds = np.where(has, np.asarray(m.jnt_kind.array)[j], -1)
    masks = {k: kinds == k for k in (JointKind.HINGE, JointKind.SLIDE, JointKind.BALL, JointKind.FREE)}
    present = {k for k, v in masks.items() if v.any()}
    width = st.src.shape[1]
    body = np.minimum(st.start[:, None] + np.arange(width), nb - 1)
    xs = dict(
        start=st.start, src=st.src, has=has,
        **{k.name: v for k, v in masks.items()},
        qadr=np.where(has, np.asarray(m.jnt_qpos_adr.array)[j], 0).astype(np.int32),
        off_pos=sm.where(st.place[..., None], sm.take(m.body_pos, body), 0.0).astype(dtype),
        off_quat=sm.where(st.place[..., None], sm.take(m.body_quat, body), _IDENTITY[:, 0]).astype(dtype),
        anchor=sm.where(has[..., None], sm.take(m.jnt_anchor, j), 0.0).astype(dtype),
        axis=sm.where(has[..., None], sm.take(m.jnt_axis, j), 0.0).astype(dtype),
        ref=sm.where(has, sm.take(m.jnt_reference, j), 0.0).astype(dtype))
    qpad = jnp.concatenate([q, jnp.zeros((6, batch), dtype)])            # q[adr:adr + 7] in range
    # Rows idx (W,) of a, and 7 values of qpad from each of idx: the indices are in range by
    # construction, so the slices skip lax's wrapping of negative indices (a compare and a select each).
    rows = lambda a, idx: jnp.concatenate([jax.lax.dynamic_slice_in_dim(         # noqa: E731
        a, idx[w], 1, allow_negative_indices=False) for w in range(idx.shape[0])])

    def step(carry, x):
        pos, quat = carry
        ps, qs = rows(pos, x["src"]), rows(quat, x["src"])               # (W, 3, B), (W, 4, B)
        ps = ps + sm.quat_rotate(qs, x["off_pos"][..., None])
        qs = sm.quat_mul(qs, x["off_quat"][..., None])
        # The rows' placed frames computed once: without the barrier XLA copies their gathers and
        # products into each fusion that reads them (Ant's walk body: 903 optimised HLO instructions
        # against 616, the step's 5,442 against 5,150; `python tools/compile_phases.py
        # scenes/ant.yaml`, two runs each: codegen summed over its tasks 2.06–2.09 → 1.97–2.00 s, its
        # largest task, this loop, 0.40 → 0.32 s, XLA 1.96–2.07 → 1.93–1.96 s). Run speed, results
        # bit-identical (`python tools/ab_revision.py scenes/humanoid.yaml scenes/ant.yaml --base HEAD
        # --rounds 11`, 2-core Intel Xeon, 2026-12-07): Humanoid ×1.013, Ant ×1.024 (rounds
        # 0.96–1.13); TPU v5e at 16,384 (5 rounds): ×1.000 and ×1.002. The same barrier on the
        # slot's q values or on its results changed nothing.
        ps, qs = jax.lax.optimization_barrier((ps, qs))
        qv = jnp.stack([jax.lax.dynamic_slice_in_dim(qpad, x["qadr"][w], 7, allow_negative_indices=False)
                        for w in range(width)])
        anchor_w, axis_w, new_pos, new_quat = _joint_slot(
            ps, qs, qv, qv[:, 0] - x["ref"][:, None], x["anchor"][..., None], x["axis"][..., None],
            lambda k: x[k.name][:, None, None], present, with_joints)
        has_j = x["has"][:, None, None]
        out = (jax.lax.dynamic_update_slice_in_dim(pos, sm.where(has_j, new_pos, ps), x["start"], 0),
               jax.lax.dynamic_update_slice_in_dim(quat, sm.where(has_j, new_quat, qs), x["start"], 0))
        return out, ((anchor_w, axis_w, new_quat) if with_joints else None)

    zeros = lambda c: sm.zeros_like_batch((nb + width, c, batch), q)    # noqa: E731  (past nb: scratch)
    init = (zeros(3), zeros(4) + jnp.asarray(_IDENTITY, dtype))
    (pos, quat), ys = jax.lax.scan(step, init, xs)
    if not with_joints:
        return pos[:nb], quat[:nb], None, None, None
    at = np.zeros(nj, int)                                               # joint → its (step, row), flat
    at[st.jnt[has]] = np.flatnonzero(has.reshape(-1))
    ys = tuple(y.reshape((-1,) + y.shape[2:]) for y in ys)
    return pos[:nb], quat[:nb], ys[0][at], ys[1][at], ys[2][at]


def _walk(m: Model, p, q):
    """The walk unrolled, level by level and slot by slot: body positions and orientations, and the
    joints' world anchors, axes and frame orientations in joint order (None without joints)."""
    dtype = q.dtype
    batch = q.shape[-1]
    nq = m.nq
    kinds_all = np.asarray(m.jnt_kind.array)
    adr_all = np.asarray(m.jnt_qpos_adr.array)
    pos_levels = [jnp.zeros((1, 3, batch), dtype)]
    quat_levels = [jnp.broadcast_to(jnp.asarray(_IDENTITY, dtype), (1, 4, batch))]
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
            present = set(JointKind(k) for k in kinds.tolist())
            qv = q[np.minimum(adr[:, None] + np.arange(7), nq - 1)] if present & _MULTI else None
            anchor_w, axis_w, new_pos, new_quat = _joint_slot(
                ps, qs, qv, q[adr] - m.jnt_reference[joints][:, None], sm.c(m.jnt_anchor[joints]),
                sm.c(m.jnt_axis[joints]), lambda k: (kinds == k)[:, None, None], present, True)
            j_anchor.append(anchor_w)
            j_axis.append(axis_w)
            j_quat.append(new_quat)
            if full:
                pos, quat = new_pos, new_quat
            else:
                pos, quat = pos.at[local].set(new_pos), quat.at[local].set(new_quat)
        pos_levels.append(pos)
        quat_levels.append(quat)
    xpos, xquat = jnp.concatenate(pos_levels), jnp.concatenate(quat_levels)
    if not j_anchor:
        return xpos, xquat, None, None, None
    order = p.jnt_order
    return (xpos, xquat, jnp.concatenate(j_anchor)[order], jnp.concatenate(j_axis)[order],
            jnp.concatenate(j_quat)[order])


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
    axis_j = sm.take(xaxis, j)
    r = sm.where(one_axis, axis_j, frame_axis) * jnp.asarray(p.dof_rot, dtype)[:, None, None]
    lin = (axis_j * jnp.asarray(p.dof_slide, dtype)[:, None, None]
           + jnp.asarray(np.eye(3)[p.dof_axis] * p.dof_trans[:, None], dtype)[:, :, None])
    o = sm.take(root_com, p.dof_body)
    return jnp.concatenate([r, sm.cross(r, o - sm.take(xanchor, j)) + lin], axis=-2)


def geom_poses(m: Model, f: Frames):
    """World position (ngeom, 3, B) and rotation (ngeom, 3, 3, B) of every collider."""
    gpos, gquat = geom_positions_quats(m, f)
    return gpos, sm.quat_to_mat(gquat)


def geom_positions_quats(m: Model, f: Frames):
    """World position (ngeom, 3, B) and orientation, a unit quaternion (ngeom, 4, B), of every
    collider. Tried and not kept: the position rotated by the gathered quaternion (shared with the
    orientation's product) instead of the gathered 3×3 rotation: Ant ×0.981, Humanoid ×0.981 (`python
    tools/ab_revision.py scenes/ant.yaml scenes/humanoid.yaml --base HEAD`, 9 rounds, 2026-12-06)."""
    b = np.asarray(m.geom_body_id.array)
    gpos = f.xpos[b] + sm.matvec(f.xmat[b], sm.c(m.geom_pos))
    return gpos, sm.quat_mul(f.xquat[b], sm.c(m.geom_quat))
