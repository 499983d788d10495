"""A proof that two colliders stay apart for every joint value in (widened) ranges, by branch and bound.

Where it sits: called by pass `pruning` (`unreachable`) for a pair that its bounding-ball test could not
prune. Input: the two colliders, their bodies and the joints between those bodies and their closest
common ancestor (hinges and slides with ranges). Output: True only when the pair is proven apart; False
when a touching configuration is found, when a joint on the way has no bound (free, ball, an unlimited
slide), or when the proof would take more than `MAX_BOXES` boxes. Pure numpy, float64.

The colliders are segments with a radius: a capsule its axis, a sphere a point, anything else its
bounding ball (`pruning.collider_ball`). A box of joint values (one interval per joint) is safe when

    d(mid) − e₁ − e₂ > r₁ + r₂ + GAP

with d(mid) the distance between the two segments at the box's midpoint, in the common ancestor's
frame, and e the most any point of a segment can move when the joints leave the midpoint within the
box. That bound: write the pose of a point as the product of the joints' transforms from the ancestor
down, and change one joint at a time, the proximal ones to their new values and the distal ones at the
midpoint. Each change is a rigid motion of everything proximal (which keeps distances) applied to a
rotation by at most δ about joint j's axis of a point at the midpoint configuration, which moves it by
at most 2ρⱼ·sin(δ/2) (ρⱼ its distance from the axis there), or a slide by at most δ; so

    |p(θ) − p(θ_mid)| ≤ Σⱼ wⱼ·ρⱼ(θ_mid),    wⱼ = 2·sin(min(δⱼ, π)/2) for a hinge, δⱼ for a slide,

δⱼ the box's half-width in joint j. ρⱼ is convex along a segment (a distance from a line), so the
segment's largest bound is at one of its ends. A box that is not safe is split in half along the joint
whose term is largest; a midpoint where the segments touch (d ≤ r₁ + r₂ + GAP) ends the search.

Ranges are widened by `HINGE_SLACK` and `SLIDE_SLACK` before the search: scenec's limits are soft and
let a joint pass its end under load, so a pair proven apart only inside the exact ranges could still
meet. Measured with `python tools/limit_overshoot.py SCENE` (every control step of 256 random-action
rollouts of 400 steps, seeds 0 and 1 for walker2d and Humanoid, 0 for the others; 2026-12-06), the most
past an end: walker2d 47.9° (its feet: light bodies,
strong motors, MuJoCo's 0.02 s limit softness), Humanoid 22.9°, half_cheetah 8.3°, hopper 5.4°, Ant
1.1°. The slack covers them with room; a scene with softer limits or stronger motors can pass even
that, and a pair it needs kept can be listed in `contacts.pairs`.

What it buys and costs (Humanoid, 108 body-body pairs; analysis time, best of three in one process,
`api.analyse`): 1 pair proven apart (head–butt; 2 with a 30° slack, 0 with 90°), where the bounding
balls, ranges widened, prove none; 29 → 165 ms to analyse the scene. With exact ranges (no slack) and
up to 400,000 boxes a pair it proves 17; random sampling within the exact ranges finds 30 pairs that never touched
in 100,000 configurations, so most of what sampling suggests either needs more boxes or touches at the
ranges' corners. The other shipped scenes have no pair it proves, and their analysis takes as long
as before (grasp 23 ms).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from scenec.runtime.collision_table import Shape

from ..frames import quat_to_mat
from ..ir import Kind

HINGE_SLACK = math.radians(60.0)   # each end of a hinge's range, outward (measured: up to 47.9°, below)
SLIDE_SLACK = 0.25                 # each end of a slide's range, outward, as a fraction of its length
GAP = 1e-3                         # m: the proven clearance (covers float rounding and the kernels' own)
MAX_BOXES = 1_000                  # boxes evaluated per pair before giving up (the pair is then kept)
WITNESS_SAMPLES = 256              # random configurations tried for a touching one before the search


def widened_range(joint) -> tuple | None:
    """(low, high) of a hinge's or slide's value, its range widened by the slack; a hinge whose widened
    range reaches 2π (or that has no range) gets a whole turn about its reference; None for an
    unlimited slide."""
    if joint.kind == Kind.HINGE:
        if joint.range is None or joint.range[1] - joint.range[0] + 2 * HINGE_SLACK >= 2 * math.pi:
            return joint.reference - math.pi, joint.reference + math.pi
        return joint.range[0] - HINGE_SLACK, joint.range[1] + HINGE_SLACK
    if joint.range is None:
        return None
    slack = SLIDE_SLACK * (joint.range[1] - joint.range[0])
    return joint.range[0] - slack, joint.range[1] + slack


@dataclass(frozen=True)
class _Step:
    """One move of a point towards the ancestor's frame: a joint (`var` its variable) or a frame change."""
    kind: str                      # "hinge", "slide" or "frame"
    var: int = -1
    anchor: np.ndarray | None = None
    axis: np.ndarray | None = None
    reference: float = 0.0
    rot: np.ndarray | None = None  # frame: p ↦ rot·p + shift
    shift: np.ndarray | None = None
    cross: np.ndarray | None = None  # hinge: the matrix of p ↦ axis × p


def segment_of(collider, ball) -> tuple | None:
    """(end0, end1, radius) of a collider in its body's frame, or None when it is unbounded. `ball` is
    its bounding ball (centre, radius), used for shapes that are not spheres or capsules."""
    pos = np.asarray(collider.pos, float)
    if collider.shape == Shape.SPHERE:
        return pos, pos, float(collider.size[0])
    if collider.shape == Shape.CAPSULE:
        half = quat_to_mat(collider.quat)[:, 2] * float(collider.size[1])
        return pos - half, pos + half, float(collider.size[0])
    centre, radius = ball
    if not math.isfinite(radius):
        return None
    centre = np.asarray(centre, float)
    return centre, centre, float(radius)


def _path(scene, body: int, ancestor: int, variables: dict):
    """The steps that carry a point of `body` into `ancestor`'s frame, each joint given a variable
    (index into `variables`, joint name → (index, low, high)); None when a joint on the way is unbounded."""
    topo = scene.topology
    joints = {j.name: j for j in scene.joints}
    steps = []
    b = body
    while b != ancestor:
        own = [joints[n] for k, n in enumerate(topo.joints) if topo.jnt_body[k] == b]
        for j in reversed(own):        # joints apply from the parent side: undo the last first
            bounds = widened_range(j) if j.kind in (Kind.HINGE, Kind.SLIDE) else None
            if bounds is None:
                return None
            var = variables.setdefault(j.name, (len(variables),) + bounds)[0]
            ax = np.asarray(j.axis, float)
            cross = np.array([[0.0, -ax[2], ax[1]], [ax[2], 0.0, -ax[0]], [-ax[1], ax[0], 0.0]])
            steps.append(_Step("hinge" if j.kind == Kind.HINGE else "slide", var,
                               np.asarray(j.anchor, float), ax, float(j.reference), cross=cross))
        p = topo.parent[b]
        parent, child = scene.bodies[p], scene.bodies[b]
        rp = quat_to_mat(parent.quat)
        steps.append(_Step("frame", rot=rp.T @ quat_to_mat(child.quat),
                           shift=rp.T @ (np.asarray(child.pos, float) - np.asarray(parent.pos, float))))
        b = p
    return steps


def _carry(steps, ends, theta, nvar):
    """Points `ends` (2, 3) of a body carried into the ancestor's frame at joint values theta (N, k):
    ((N, 2, 3) positions, (N, 2, k) distance of each point from each joint's axis, 1 for a slide,
    0 for a joint not on this path)."""
    n = theta.shape[0]
    p = np.broadcast_to(ends, (n,) + ends.shape).copy()
    rho = np.zeros((n, ends.shape[0], nvar))
    for st in steps:
        if st.kind == "frame":
            p = p @ st.rot.T + st.shift
            continue
        value = (theta[:, st.var] - st.reference)[:, None, None]
        if st.kind == "slide":
            rho[:, :, st.var] = 1.0
            p = p + st.axis * value
            continue
        rel = p - st.anchor
        along = rel @ st.axis
        rho[:, :, st.var] = np.linalg.norm(rel - along[..., None] * st.axis, axis=-1)
        c, s = np.cos(value), np.sin(value)
        p = st.anchor + rel * c + (rel @ st.cross.T) * s + st.axis * along[..., None] * (1 - c)
    return p, rho


def segment_distance(p0, p1, q0, q1):
    """Distance between segments [p0, p1] and [q0, q1], each (N, 3) (a segment may be a point): the
    closest pair of parameters (s, t) in the unit square, clamped edge by edge (the interior stationary
    point when both segments have length and are not parallel, then t for that s, then s for that t).
    The runtime's `collision._closest_segments` is jax; the compiler's passes run without it."""
    d1, d2, r = p1 - p0, q1 - q0, p0 - q0
    a, e = np.sum(d1 * d1, -1), np.sum(d2 * d2, -1)
    b, c, f = np.sum(d1 * d2, -1), np.sum(d1 * r, -1), np.sum(d2 * r, -1)
    tiny = 1e-12
    a_ok, e_ok = a > tiny, e > tiny
    denom = a * e - b * b
    s = np.where(a_ok & e_ok & (denom > tiny * np.maximum(a * e, tiny)),
                 np.clip((b * f - c * e) / np.where(denom > 0, denom, 1.0), 0.0, 1.0), 0.0)
    t = np.where(e_ok, (b * s + f) / np.where(e_ok, e, 1.0), 0.0)
    # t outside [0, 1] (or the second segment a point): clamp it and take the best s for that t.
    t_c = np.clip(t, 0.0, 1.0)
    s = np.where((t != t_c) | ~e_ok, np.where(a_ok, np.clip((b * t_c - c) / np.where(a_ok, a, 1.0), 0.0, 1.0), 0.0), s)
    t = t_c
    return np.linalg.norm(p0 + s[:, None] * d1 - q0 - t[:, None] * d2, axis=-1)


def proven_apart(scene, seg1, b1: int, seg2, b2: int, ancestor: int) -> bool:
    """True when segments seg1 on body b1 and seg2 on body b2 (each (end0, end1, radius) in its body's
    frame) stay more than GAP apart for every value of the joints between them and `ancestor` within
    their widened ranges."""
    variables = {}
    path1 = _path(scene, b1, ancestor, variables)
    path2 = _path(scene, b2, ancestor, variables) if path1 is not None else None
    if path2 is None or not variables:
        return False
    nvar = len(variables)
    bounds = sorted(variables.values())
    lo = np.array([[x[1] for x in bounds]])
    hi = np.array([[x[2] for x in bounds]])
    hinge = np.zeros(nvar, bool)
    for st in path1 + path2:
        if st.kind == "hinge":
            hinge[st.var] = True
    ends1, ends2 = np.stack(seg1[:2]), np.stack(seg2[:2])
    clearance = seg1[2] + seg2[2] + GAP
    # Most pairs that can touch show it at one of a few random configurations: look there first.
    theta = np.random.default_rng(0).uniform(lo, hi, (WITNESS_SAMPLES, nvar))
    p1, _ = _carry(path1, ends1, theta, nvar)
    p2, _ = _carry(path2, ends2, theta, nvar)
    if np.any(segment_distance(p1[:, 0], p1[:, 1], p2[:, 0], p2[:, 1]) <= clearance):
        return False
    evaluated = 0
    while len(lo):
        evaluated += len(lo)
        if evaluated > MAX_BOXES:
            return False
        mid, half = 0.5 * (lo + hi), 0.5 * (hi - lo)
        p1, rho1 = _carry(path1, ends1, mid, nvar)
        p2, rho2 = _carry(path2, ends2, mid, nvar)
        d = segment_distance(p1[:, 0], p1[:, 1], p2[:, 0], p2[:, 1])
        if np.any(d <= clearance):
            return False                                   # a configuration where they (nearly) touch
        w = np.where(hinge, 2.0 * np.sin(np.minimum(half, math.pi) / 2), half)     # (N, k)
        move1 = np.max(np.sum(rho1 * w[:, None, :], -1), -1)
        move2 = np.max(np.sum(rho2 * w[:, None, :], -1), -1)
        open_ = d - move1 - move2 <= clearance
        if not np.any(open_):
            return True
        lo, hi, w = lo[open_], hi[open_], w[open_]
        term = (rho1[open_].max(1) + rho2[open_].max(1)) * w
        k = np.argmax(term, axis=1)
        rows = np.arange(len(lo))
        cut = 0.5 * (lo[rows, k] + hi[rows, k])
        lo_b, hi_a = lo.copy(), hi.copy()
        hi_a[rows, k] = cut
        lo_b[rows, k] = cut
        lo, hi = np.concatenate([lo, lo_b]), np.concatenate([hi_a, hi])
    return True
