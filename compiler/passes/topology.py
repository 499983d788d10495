"""Pass `topology`: fuse welded bodies, order the kinematic forest, lay out q and qd.

Input: IR with body mass properties (geometry pass). Output: `bodies` becomes the simulated bodies,
world first, parents before children (breadth-first by tree level, authored order within a level);
every body welded to another (a `fixed` joint, or no joint at all, which welds to the world) is fused
into the body that carries it: its colliders are re-expressed in that body's frame and its mass
properties added. Joints are ordered by body, depth-first (MuJoCo's qpos order), and `Topology`
records the dof layout (free: 7 q, 6 qd; ball: 4, 3; hinge and slide: 1, 1) and each dof's parent dof
for the tree-sparse mass matrix.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .. import ir
from ..ir import Kind, diag
from ..frames import mat_to_quat, quat_to_mat
from .geometry import shift_inertia


def _mat_to_quat(r) -> ir.Quat:
    return tuple(float(x) for x in mat_to_quat(r))


def relative_pose(parent_pos, parent_quat, child_pos, child_quat):
    """The child's pose in the parent's frame, from two world poses."""
    rp = quat_to_mat(parent_quat)
    rc = quat_to_mat(child_quat)
    pos = rp.T @ (np.asarray(child_pos, float) - np.asarray(parent_pos, float))
    return tuple(float(x) for x in pos), _mat_to_quat(rp.T @ rc)


def combine_props(holder: ir.Body, members) -> ir.MassProps:
    """Mass properties of `holder` plus its fused `members`, in the holder's frame."""
    total, first_moment, parts = 0.0, np.zeros(3), []
    for b in members:
        p = b.props
        if p is None or p.mass <= 0:
            continue
        pos, quat = relative_pose(holder.pos, holder.quat, b.pos, b.quat)
        rot = quat_to_mat(quat)
        com = np.asarray(pos) + rot @ np.asarray(p.com)
        parts.append((p.mass, com, rot @ np.asarray(p.inertia) @ rot.T))
        total += p.mass
        first_moment += p.mass * com
    if total <= 0:
        return ir.MassProps(0.0, holder.props.com if holder.props else (0.0, 0.0, 0.0),
                            ((0.0,) * 3,) * 3)
    com = first_moment / total
    inertia = np.zeros((3, 3))
    for m, c, i in parts:
        inertia += shift_inertia(i, m, c - com)
    return ir.MassProps(float(total), tuple(float(x) for x in com), tuple(map(tuple, inertia.tolist())))


def run(scene: ir.SceneIR) -> ir.SceneIR:
    diags = []
    bodies = {b.name: b for b in scene.bodies}
    world = ir.Body(name="world", pos=(0.0, 0.0, 0.0), quat=(1.0, 0.0, 0.0, 0.0), colliders=(),
                    mass=None, com=None, inertia=None, props=ir.MassProps(0.0, (0.0,) * 3, ((0.0,) * 3,) * 3))
    by_child: dict[str, list[ir.Joint]] = {}
    for j in scene.joints:
        by_child.setdefault(j.child, []).append(j)

    # Which body carries each authored body: itself when it moves on its own, else its parent's carrier.
    holder: dict[str, str] = {"world": "world"}

    def carrier(name, seen=()):
        if name in holder:
            return holder[name]
        joints = by_child.get(name, [])
        if name in seen:  # a cycle: validate reports it; fall back to the world
            return "world"
        if not joints:
            h = "world"
        elif all(j.kind == Kind.FIXED for j in joints):
            h = carrier(joints[0].parent, seen + (name,))
        else:
            h = name
        holder[name] = h
        return h

    for name in bodies:
        carrier(name)

    members: dict[str, list[ir.Body]] = {"world": []}
    for name, b in bodies.items():
        members.setdefault(holder[name], []).append(b)

    def fuse(h: ir.Body, group) -> ir.Body:
        colliders = []
        for b in group:
            for c in b.colliders:
                if b.name == h.name:
                    colliders.append(c)
                    continue
                rel_pos, rel_quat = relative_pose(h.pos, h.quat, b.pos, b.quat)
                rot = quat_to_mat(rel_quat)
                pos = tuple(float(x) for x in np.asarray(rel_pos) + rot @ np.asarray(c.pos))
                quat = _mat_to_quat(rot @ quat_to_mat(c.quat))
                colliders.append(dataclasses.replace(c, pos=pos, quat=quat))
        fused = tuple(b.name for b in group if b.name != h.name)
        props = combine_props(h, group) if h.name != "world" else world.props
        return dataclasses.replace(h, colliders=tuple(colliders), fused=fused, props=props)

    # The tree over carriers: each moving body's parent is the carrier of its joints' parent.
    moving_joints = [j for j in scene.joints if j.kind != Kind.FIXED and holder.get(j.child) == j.child]
    parent_of: dict[str, str] = {}
    for j in moving_joints:
        parent_of.setdefault(j.child, holder.get(j.parent, "world"))
    children: dict[str, list[str]] = {}
    for name in bodies:  # authored order
        if holder[name] == name and name in parent_of:
            children.setdefault(parent_of[name], []).append(name)

    order, level, parent_idx = ["world"], [0], [-1]
    frontier = ["world"]
    while frontier:
        nxt = []
        for p in frontier:
            for c in children.get(p, []):
                order.append(c)
                level.append(level[order.index(p)] + 1)
                parent_idx.append(order.index(p))
                nxt.append(c)
        frontier = nxt
    index = {name: i for i, name in enumerate(order)}
    unreached = [n for n in bodies if holder[n] == n and n not in index]
    if unreached:  # validate reports cycles and stray parents before the passes run
        raise AssertionError(f"compiler bug: bodies {unreached} are not in the tree")

    root = [0]
    for i in range(1, len(order)):
        root.append(i if parent_idx[i] == 0 else root[parent_idx[i]])

    new_bodies = [fuse(world, members.get("world", []))]
    for name in order[1:]:
        new_bodies.append(fuse(bodies[name], members.get(name, [])))

    # Joints, q and qd follow the bodies depth-first (children in authored order), as MuJoCo lays out
    # qpos and qvel, so an imported MJCF's state lines up with MuJoCo's entry by entry; within a body,
    # authored order. Bodies themselves stay breadth-first (forward kinematics goes level by level).
    depth_first = []
    stack = ["world"]
    while stack:
        name = stack.pop()
        if name != "world":
            depth_first.append(name)
        stack.extend(reversed(children.get(name, [])))
    ordered_joints = []
    for name in depth_first:
        ordered_joints.extend(j for j in moving_joints if j.child == name)
    jnt_qpos_adr, jnt_dof_adr, jnt_body, dof_parent = [], [], [], []
    nq = nv = 0
    last_dof_of_body = {0: -1}
    for name in depth_first:
        bi = index[name]
        prev = last_dof_of_body[parent_idx[bi]]
        for j in (j for j in ordered_joints if j.child == name):
            jnt_qpos_adr.append(nq)
            jnt_dof_adr.append(nv)
            jnt_body.append(bi)
            for _ in range(Kind.NV[j.kind]):
                dof_parent.append(prev)
                prev = nv
                nv += 1
            nq += Kind.NQ[j.kind]
        last_dof_of_body[bi] = prev

    for b in new_bodies[1:]:
        p = b.props
        kinds = {j.kind for j in ordered_joints if j.child == b.name}
        if p.mass <= 0:
            diags.append(diag("E503", f"body '{b.name}' moves but has no mass", b.span,
                              "give it a `mass` (and `inertia`), or a collider with volume"))
        elif kinds & {Kind.FREE, Kind.BALL} and np.any(np.linalg.eigvalsh(np.asarray(p.inertia)) <= 0):
            diags.append(diag("E504", f"body '{b.name}' rotates freely but has no rotational inertia",
                              b.span, "give it an `inertia`, or a collider with volume"))

    topo = ir.Topology(
        bodies=tuple(order), parent=tuple(parent_idx), root=tuple(root), level=tuple(level),
        joints=tuple(j.name for j in ordered_joints), jnt_body=tuple(jnt_body),
        jnt_qpos_adr=tuple(jnt_qpos_adr), jnt_dof_adr=tuple(jnt_dof_adr), nq=nq, nv=nv,
        dof_parent=tuple(dof_parent), fused_into=dict(holder))
    joints = tuple(ordered_joints) + tuple(j for j in scene.joints if j not in ordered_joints)
    return scene.replace(bodies=tuple(new_bodies), joints=joints, topology=topo).with_diagnostics(diags)
