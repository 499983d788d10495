"""Pass `pruning`: decide, for every candidate collider pair, whether it is kept, and why.

Input: IR after `topology` (simulated bodies, fusion map, joint tree). Output: `SceneIR.pairs`, one
`PairVerdict` per pair of colliders on different authored bodies, in a deterministic order.

Predicates, in the order they are tried (the first that applies gives the reason):

  same_body     both colliders belong to one authored body
  fused         their bodies were fused into one rigid body (fixed joints, or both welded to the world)
  static        both are static (on the world after fusion) — nothing can move them
  parent_child  the bodies are parent and child in the tree (contacts.filter_parent, default on; as in
                MuJoCo, a body still touches the world when the world is its parent)
  mask          group/mask bits disjoint: neither (group1 & mask2) nor (group2 & mask1)
  excluded      a `contacts.exclude` rule names the body pair
  not_included  `contacts.include` is non-empty and no rule names the body pair
  unreachable   the colliders cannot meet for any joint values inside the limits widened by a slack
                (soft limits overshoot): first their bounding balls swept over the joints
                (`reach_ball`), then a branch-and-bound proof on their segments (`separation`).
                Conservative: a pair that could touch is never pruned
  no_kernel     no kernel for the shape pair — an error (E510) naming the pair, never a silent drop

A pair listed in `contacts.pairs` is kept whatever the filters say (it still needs a kernel).
"""

from __future__ import annotations

import fnmatch
import math

import numpy as np

from scenec.runtime.collision_table import Shape, pair_info, suggest

from .. import ir
from ..ir import Kind, diag
from ..frames import quat_to_mat
from . import separation

REASONS = {
    "kept": "may touch",
    "explicit": "kept: listed in contacts.pairs",
    "same_body": "same body",
    "fused": "bodies fused into one rigid body",
    "static": "both static",
    "parent_child": "parent and child bodies",
    "mask": "group/mask bits disjoint",
    "excluded": "excluded by a contacts.exclude rule",
    "not_included": "not in contacts.include",
    "unreachable": "can never meet within the joint limits (widened: soft limits overshoot)",
    "no_kernel": "no collision kernel for this shape pair",
}

INFINITE = math.inf


def collider_ball(c: ir.Collider, meshes: dict):
    """Bounding ball (centre in the body frame, radius) of a collider; radius inf when unbounded."""
    centre = np.asarray(c.pos, float)
    if c.shape == Shape.SPHERE:
        return centre, c.size[0]
    if c.shape == Shape.CAPSULE:
        return centre, c.size[0] + c.size[1]
    if c.shape == Shape.BOX:
        return centre, float(np.linalg.norm(c.size))
    if c.shape == Shape.MESH:
        me = meshes.get(c.mesh)
        if me is not None and me.hull_vertices:
            v = np.asarray(me.hull_vertices)
            mid = 0.5 * (v.min(axis=0) + v.max(axis=0))
            r = float(np.max(np.linalg.norm(v - mid, axis=1)))
            return centre + quat_to_mat(c.quat) @ mid, r
    return centre, INFINITE  # planes and height fields are unbounded


def _sweep_hinge(centre, radius, anchor, axis, span):
    """Bounding ball of the copies of a ball (centre, radius) rotated about the line (anchor, axis) by
    every angle within ±span/2 of the current one (span = inf when unlimited).

    Two bounds hold; the smaller is kept: the circle the centre runs on (centre on the axis, radius
    + the centre's distance ρ from the axis), and, for a partial arc, the current centre with radius
    + 2ρ·sin(span/4) (the farthest point of the arc from its middle)."""
    rel = centre - anchor
    along = axis * (rel @ axis)
    rho = float(np.linalg.norm(rel - along))
    best = (anchor + along, radius + rho)
    if span < 2 * math.pi:
        chord = 2 * rho * math.sin(span / 4)
        if radius + chord < best[1]:
            best = (np.asarray(centre, float), radius + chord)
    return best


def _rotate(v, axis, angle):
    c, s = math.cos(angle), math.sin(angle)
    return v * c + np.cross(axis, v) * s + axis * (axis @ v) * (1 - c)


def reach_ball(scene: ir.SceneIR, body_index: int, ancestor_index: int, centre, radius):
    """Bound the region a ball fixed in body `body_index` can occupy, as a ball in the frame of its
    ancestor `ancestor_index`, over every joint value inside the limits widened by the slack of
    `separation`. Radius inf when unbounded (a free joint or an unlimited slide on the way)."""
    topo = scene.topology
    joints = {j.name: j for j in scene.joints}
    bodies = scene.bodies
    b = body_index
    c, r = np.asarray(centre, float), float(radius)
    while b != ancestor_index:
        if r == INFINITE:
            return c, INFINITE
        body = bodies[b]
        own = [joints[n] for k, n in enumerate(topo.joints) if topo.jnt_body[k] == b]
        # Joints apply in order from the parent side; undo them from the child side (last first).
        for j in reversed(own):
            anchor = np.asarray(j.anchor, float)
            axis = np.asarray(j.axis, float)
            if j.kind == Kind.FREE:
                return c, INFINITE
            if j.kind == Kind.SLIDE:
                bounds = separation.widened_range(j)
                if bounds is None:
                    return c, INFINITE
                lo, hi = bounds[0] - j.reference, bounds[1] - j.reference
                c = c + axis * 0.5 * (lo + hi)
                r = r + 0.5 * (hi - lo)
            elif j.kind == Kind.HINGE:
                lo, hi = (x - j.reference for x in separation.widened_range(j))
                if hi - lo >= 2 * math.pi:
                    c, r = _sweep_hinge(c, r, anchor, axis, INFINITE)
                else:
                    mid = 0.5 * (lo + hi)
                    c = anchor + _rotate(c - anchor, axis, mid)
                    c, r = _sweep_hinge(c, r, anchor, axis, hi - lo)
            elif j.kind == Kind.BALL:
                c, r = anchor, r + float(np.linalg.norm(c - anchor))
        # Into the parent's frame (the fixed offset at the reference configuration).
        p = topo.parent[b]
        parent = bodies[p]
        rp, rb = quat_to_mat(parent.quat), quat_to_mat(body.quat)
        c = rp.T @ (np.asarray(body.pos) - np.asarray(parent.pos) + rb @ c)
        b = p
    return c, r


def _ancestors(topo: ir.Topology, b: int) -> list[int]:
    out = [b]
    while b > 0:
        b = topo.parent[b]
        out.append(b)
    return out


def unreachable(scene: ir.SceneIR, c1: ir.Collider, b1: int, c2: ir.Collider, b2: int, meshes) -> bool:
    topo = scene.topology
    chain1, chain2 = _ancestors(topo, b1), _ancestors(topo, b2)
    common = next(a for a in chain1 if a in chain2)
    centre1, r1 = collider_ball(c1, meshes)
    centre2, r2 = collider_ball(c2, meshes)
    if r1 == INFINITE or r2 == INFINITE:
        return False
    p1, s1 = reach_ball(scene, b1, common, centre1, r1)
    p2, s2 = reach_ball(scene, b2, common, centre2, r2)
    if s1 == INFINITE or s2 == INFINITE:
        return False
    if float(np.linalg.norm(p1 - p2)) > s1 + s2:
        return True
    seg1 = separation.segment_of(c1, (centre1, r1))
    seg2 = separation.segment_of(c2, (centre2, r2))
    return seg1 is not None and seg2 is not None and separation.proven_apart(scene, seg1, b1, seg2, b2, common)


def _matches(rule: ir.BodyPattern, a: str, b: str) -> bool:
    f, s = rule.first, rule.second
    return ((fnmatch.fnmatchcase(a, f) and fnmatch.fnmatchcase(b, s))
            or (fnmatch.fnmatchcase(a, s) and fnmatch.fnmatchcase(b, f)))


def run(scene: ir.SceneIR) -> ir.SceneIR:
    topo = scene.topology
    meshes = {me.name: me for me in scene.meshes}
    index = {name: i for i, name in enumerate(topo.bodies)}
    colliders = [(c, index[b.name]) for b in scene.bodies for c in b.colliders]
    explicit = {frozenset((r.first, r.second)): r for r in scene.contacts.pairs}
    rules = scene.contacts
    verdicts, diags = [], []
    for i in range(len(colliders)):
        for k in range(i + 1, len(colliders)):
            c1, b1 = colliders[i]
            c2, b2 = colliders[k]
            if c1.body == c2.body:
                reason = "same_body"
            elif b1 == b2 and b1 != 0:
                reason = "fused"
            elif b1 == 0 and b2 == 0:
                reason = "static"
            else:
                reason = None
            if reason is None and frozenset((c1.name, c2.name)) in explicit:
                reason = "explicit"
            if reason is None:
                if (rules.filter_parent and b1 != 0 and b2 != 0
                        and (topo.parent[b1] == b2 or topo.parent[b2] == b1)):
                    reason = "parent_child"
                elif not ((c1.group & c2.mask) or (c2.group & c1.mask)):
                    reason = "mask"
                elif any(_matches(r, c1.body, c2.body) for r in rules.exclude):
                    reason = "excluded"
                elif rules.include and not any(_matches(r, c1.body, c2.body) for r in rules.include):
                    reason = "not_included"
                elif unreachable(scene, c1, b1, c2, b2, meshes):
                    reason = "unreachable"
            if reason in (None, "explicit"):
                if pair_info(c1.shape, c2.shape) is None:
                    names = (Shape(c1.shape).name.lower(), Shape(c2.shape).name.lower())
                    diags.append(diag(
                        "E510", f"colliders '{c1.name}' ({names[0]}) and '{c2.name}' ({names[1]}) may "
                        f"touch, but scenec has no {names[0]}-{names[1]} collision kernel",
                        c2.span, suggest(c1.shape, c2.shape)))
                    reason = "no_kernel"
                else:
                    reason = reason or "kept"
            verdicts.append(ir.PairVerdict(
                collider1=c1.name, collider2=c2.name, body1=c1.body, body2=c2.body,
                kept=reason in ("kept", "explicit"), reason=reason))
    return scene.replace(pairs=tuple(verdicts)).with_diagnostics(diags)
