"""The static plan of a model: index arrays and 0/1 matrices derived from its tree, computed once.

Where it sits: read by kinematics.py, dynamics.py and constraints.py while tracing. Everything here is
numpy, derived from the model's static fields only, and memoised on them, so it costs nothing per step:
it becomes constants in the compiled program. This is where the compiler's knowledge of the tree turns
into arithmetic without branches or sequential loops:

- `levels`: bodies by tree depth (bodies are ordered breadth-first, so each level is a contiguous range
  and its parents lie in the previous level), with each level's joints grouped by their slot in their
  body (first joint, second joint, ...), for forward kinematics one level at a time; `pose_steps`,
  the same walk as uniform steps for the looped form of it;
- `moves` (nbody, nv): 1 where dof d moves body b (d belongs to b or an ancestor), so body velocities
  are one product `moves @ (cdof * qd)`;
- `subtree` (nbody, nbody): 1 where body c is in the subtree of body b, so composite inertias and
  accumulated forces are one product `subtree @ x`;
- `before` (nv, nv): 1 where dof e contributes to the velocity a dof's joint sees before moving (dofs
  of ancestors, of earlier joints of the same body, and a free joint's translations for its rotations);
- `ancestor` (nv, nv): 1 where e is d or an ancestor dof of d: the sparsity pattern of the mass matrix,
  kept exactly (no fill-in) by the factorisation.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from .types import JointKind, Model


class Level(NamedTuple):
    bodies: np.ndarray        # (n,) body ids, a contiguous range
    parents: np.ndarray       # (n,) parent body ids
    parent_local: np.ndarray  # (n,) parent index within the previous level's arrays (world level: 0)
    slots: tuple              # per joint slot: (local body index (k,), joint ids (k,))


class PoseSteps(NamedTuple):
    """The level walk as S uniform steps over blocks of W rows (`kinematics._walk_steps`): a level's
    first step places each of its bodies on its parent and applies the body's first joint, each later
    step the next joint slot. A step reads its rows' sources and writes the block of W rows from the
    level's first body, one write per step. Rows past the level's bodies are padding: they read and
    write back their own values (bodies of deeper levels, placed by a later step, or scratch rows
    past the last body), as do the level's bodies that have no joint in the step's slot."""
    start: np.ndarray         # (S,) the level's first body: the step writes rows start … start + W - 1
    src: np.ndarray           # (S, W) row read: the parent when placing, else the row itself
    place: np.ndarray         # (S, W) bool: the row applies its body's offset from the parent
    jnt: np.ndarray           # (S, W) joint applied, -1 for none (padding, or no joint in this slot)


class Plan(NamedTuple):
    levels: tuple
    moves: np.ndarray
    subtree: np.ndarray
    same_tree: np.ndarray     # (nbody, nbody): 1 where both bodies hang from the same world child
    before: np.ndarray
    ancestor: np.ndarray
    dof_body: np.ndarray
    dof_jnt: np.ndarray
    dof_axis: np.ndarray      # (nv,) which of its joint's three axes a dof uses (0 for 1-dof joints)
    dof_rot: np.ndarray       # (nv,) 1 for rotational dofs (hinge, ball, free rotation)
    dof_slide: np.ndarray     # (nv,) 1 for slide dofs
    dof_trans: np.ndarray     # (nv,) 1 for a free joint's translations (world axes)
    jnt_order: np.ndarray     # (njnt,) position of each joint in the level/slot traversal order
    tree_blocks: tuple        # ((start, stop), ...) each kinematic tree's dof range (`_tree_blocks`)
    pose_steps: PoseSteps     # the level walk as uniform steps (`_pose_steps`)


def _key(m: Model):
    return (m.nbody, m.njnt, m.nv, m.body_parent_id, m.body_jnt_adr, m.body_jnt_num, m.body_dof_adr,
            m.body_dof_num, m.jnt_kind, m.jnt_body_id, m.jnt_dof_adr, m.dof_body_id, m.dof_jnt_id,
            m.dof_parent_id, m.body_root_id)


def plan_of(m: Model) -> Plan:
    return _plan(_key(m))


@functools.lru_cache(maxsize=64)
def _plan(key) -> Plan:
    (nbody, njnt, nv, parent, jnt_adr, jnt_num, dof_adr, dof_num, jnt_kind, jnt_body, jnt_dof,
     dof_body, dof_jnt, dof_parent, root) = key
    parent = np.asarray(parent.array)
    depth = np.zeros(nbody, int)
    for b in range(1, nbody):
        depth[b] = depth[parent[b]] + 1
    levels = []
    prev_start = 0
    for d in range(1, int(depth.max(initial=0)) + 1):
        bodies = np.flatnonzero(depth == d)
        assert np.all(np.diff(bodies) == 1), "bodies are ordered breadth-first"
        parents = parent[bodies]
        slots = []
        for s in range(int(max((jnt_num[b] for b in bodies), default=0))):
            local = np.asarray([i for i, b in enumerate(bodies) if jnt_num[b] > s], int)
            joints = np.asarray([jnt_adr[bodies[i]] + s for i in local], int)
            slots.append((local, joints))
        levels.append(Level(bodies, parents, parents - prev_start, tuple(slots)))
        prev_start = bodies[0]

    moves = np.zeros((nbody, nv))
    subtree = np.eye(nbody)
    subtree[0, :] = 0.0
    for b in range(1, nbody):
        a = b
        while a > 0:
            moves[b, dof_adr[a]:dof_adr[a] + dof_num[a]] = 1.0
            subtree[a, b] = 1.0
            a = parent[a]
    subtree[0, 0] = 0.0
    roots = np.asarray(root.array)
    same_tree = ((roots[:, None] == roots[None, :]) & (roots[:, None] > 0)).astype(float)

    ancestor = np.zeros((nv, nv))
    for d in range(nv):
        e = d
        while e >= 0:
            ancestor[d, e] = 1.0
            e = dof_parent[e]

    dof_axis = np.zeros(nv, int)
    dof_rot = np.zeros(nv)
    dof_slide = np.zeros(nv)
    dof_trans = np.zeros(nv)
    before = np.zeros((nv, nv))
    for j in range(njnt):
        kind = JointKind(jnt_kind[j])
        d0 = jnt_dof[j]
        b = jnt_body[j]
        n = {JointKind.HINGE: 1, JointKind.SLIDE: 1, JointKind.BALL: 3, JointKind.FREE: 6}[kind]
        # The velocity the joint sees before it moves: ancestors' dofs and earlier joints' of b.
        seen = moves[parent[b]].copy()
        seen[dof_adr[b]:d0] = 1.0
        for k in range(n):
            d = d0 + k
            before[d] = seen
            if kind is JointKind.FREE:
                dof_axis[d] = k % 3
                if k < 3:
                    dof_trans[d] = 1.0
                else:
                    dof_rot[d] = 1.0
                    before[d, d0:d0 + 3] = 1.0
            else:
                dof_axis[d] = k
                dof_rot[d] = 0.0 if kind is JointKind.SLIDE else 1.0
                dof_slide[d] = 1.0 if kind is JointKind.SLIDE else 0.0

    order = np.concatenate([np.concatenate([s[1] for s in lv.slots]) if lv.slots else np.zeros(0, int)
                            for lv in levels]) if levels else np.zeros(0, int)
    jnt_order = np.zeros(njnt, int)
    jnt_order[order.astype(int)] = np.arange(len(order))

    return Plan(tuple(levels), moves, subtree, same_tree, before, ancestor,
                np.asarray(dof_body.array, int), np.asarray(dof_jnt.array, int), dof_axis, dof_rot,
                dof_slide, dof_trans, jnt_order, _tree_blocks(ancestor), _pose_steps(levels))


def _tree_blocks(ancestor: np.ndarray) -> tuple:
    """The dof ranges [start, stop) of the kinematic trees when each tree's dofs are contiguous (the
    mass matrix is then block diagonal, one block per tree), else one range over every dof; () for
    no dofs."""
    nv = len(ancestor)
    if nv == 0:
        return ()
    root = np.array([int(np.flatnonzero(ancestor[d])[0]) for d in range(nv)])   # a tree's first dof
    starts = [0] + [d for d in range(1, nv) if root[d] != root[d - 1]]
    if len(set(root[s] for s in starts)) != len(starts):       # a tree's dofs come back later: one block
        return ((0, nv),)
    return tuple(zip(starts, starts[1:] + [nv]))


def _pose_steps(levels) -> PoseSteps:
    """`levels` rearranged as `PoseSteps`: per level one step that places every body and applies the
    first joint slot, then one step per further slot."""
    width = max((len(lv.bodies) for lv in levels), default=0)
    start, src, place, jnt = [], [], [], []
    for lv in levels:
        first = int(lv.bodies[0])
        rows = first + np.arange(width)
        real = np.arange(width) < len(lv.bodies)
        for k in range(max(1, len(lv.slots))):
            joint = np.full(width, -1)
            if lv.slots:
                local, joints = lv.slots[k]
                joint[local] = joints
            start.append(first)
            src.append(np.where(real, np.r_[lv.parents, np.zeros(width - len(lv.bodies), int)], rows)
                       if k == 0 else rows)
            place.append(real & (k == 0))
            jnt.append(joint)
    shape = (len(start), width)
    return PoseSteps(np.asarray(start, np.int32), np.asarray(src, np.int32).reshape(shape),
                     np.asarray(place, bool).reshape(shape), np.asarray(jnt, np.int32).reshape(shape))
