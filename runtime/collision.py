"""Collision kernels: contact points between two colliders, branch-free and differentiable.

Where it sits: the runtime step computes colliders' world poses, then calls, for each group of
collider pairs with the same shape pair, `KERNELS[name]` vmapped over the pairs (and over
environments), or, for the kernels in `BATCHED`, once on all of them with the batch axes last; the
contact solver consumes the `Contact` rows. `collision_table.PAIRS` says which
kernel and how many rows each shape pair has; the compiler prepares mesh and height-field data with
`collision_data`. jax and numpy only.

Conventions. A kernel takes two `Geom`s in canonical order (the smaller `collision_table.Shape`
first) and returns a `Contact` with exactly `ncon` rows. `normal` points from the first collider into
the second (the direction the second must move to separate); `dist` is the signed distance between
the surfaces along that normal (< 0 when penetrating); `pos` is midway between the two surfaces.
Rows are candidates: they are returned even when the colliders are apart (dist > 0) so that the
solver sees contacts coming, and the solver decides from `dist` (e.g. dist < margin) which to use.
`active` is False only for padding rows (unused, or a duplicate of an earlier row); their values are
finite. Nothing here branches on data: choices are `jnp.where`, `argmax` / `top_k` and gathers;
norms and divisions that can meet zero use the double-`where` so gradients stay finite.

Accuracy, per kernel ("exact" means: the smallest `dist` over active rows equals the true signed
distance up to float rounding, separated or penetrating, and its normal is the true one):
- plane_sphere, plane_capsule, sphere_sphere, sphere_capsule, sphere_box, sphere_mesh, capsule_capsule,
  capsule_box, capsule_mesh: exact. Capsule pairs add a second row when the capsule lies along a face
  (or parallel to the other capsule): the two ends of the overlap, with dist measured along the
  contact normal, so a resting capsule has two supports.
- plane_box: exact (the box's lowest corner is always a row); the rows are the corners of the face
  that holds the three lowest corners.
- plane_mesh: exact (the deepest vertex is row 0), plus the corners of the incident face (the hull
  face turned furthest down), so that a hull resting on a face has all of its corners as supports.
- box_box, box_mesh, mesh_mesh: the separating-axis test (SAT) over face normals and over edge
  pairs (for meshes, the pairs whose Gauss-map arcs cross, which are exactly the edge faces of the
  Minkowski difference; for two boxes, the nine axis products) picks the axis of least penetration,
  preferring a face axis, and a's face over b's, unless the other is better by FACE_PREFERENCE of
  the smaller radius. Overlapping: the depth along that axis is the exact penetration depth (it is
  attained at a face of the Minkowski difference), so the smallest dist is exact up to that
  preference, and never shallower. Apart: the SAT value is only a lower bound of the distance, so
  the rows report true distances of actual surface points instead; no row claims a distance smaller
  than the true one, and the smallest is exact when the nearest features are a face and a vertex
  or two parallel faces; when the faces do not overlap seen along the axis (apart across corners or
  edges) there may be no active row at all. Face contacts are the overlap polygon of the reference
  face and the most anti-parallel incident face (plus, overlapping, the incident hull's deepest
  vertex when it is deeper than all of them): box_box returns the eight deepest candidates, which
  hold every corner of a box-box overlap; the mesh kernels return the deepest and the four extreme
  ones in four directions of the contact plane. Edge contacts are one row at the two edges' closest
  points.
- heightfield_sphere: exact while the centre is above the terrain (penetration shallower than the
  radius); rows are the four nearest terrain features: faces the centre lies over, and edges and
  vertices that are local peaks seen from it (so a sphere on flat ground has one row, in a valley one
  per slope). Below the terrain, the face under the centre gives the depth to its plane.
  heightfield_capsule: exact while the axis is above the terrain (segment against every feature),
  rows are both caps and the two best segment candidates (a face the axis dips under, a ridge edge or
  a peak under it). heightfield_box: rows are the box's four deepest corners (each corner's exact
  distance to the terrain) and the four terrain vertices deepest in the box among those that are peaks
  (not on flat ground); a box edge resting across a terrain ridge between grid vertices is missed,
  and each corner only sees the terrain within half a cell of it (CORNER_CELLS), so the smallest
  dist is exact when a corner within half a cell of the terrain, or a terrain vertex, is nearest, and
  never too small.
  Height fields are examined only in the window of cells around the partner (see
  collision_data.heightfield_data), are infinitely deep under their surface (the base thickness does
  not matter for contacts) and have no side walls.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from . import math as sm
from .collision_data import ConvexData, HeightFieldData, box_mesh_triangles, convex_mesh_data


class Geom(NamedTuple):
    """One collider in world coordinates.

    pos:    (3,) world position of the collider frame, m
    mat:    (3, 3) world rotation, columns = the collider's local x, y, z axes
    size:   (3,) plane: (half x, half y, 0), display only; sphere: (r, 0, 0); capsule: (r,
            half_length, 0) along local z; box: half sizes; mesh: unused; heightfield: (size_x, size_y, 0), m
    mesh:   MESH only: the padded hull in the collider frame
    hfield: HEIGHTFIELD only: the elevation grid and its window
    """

    pos: jax.Array
    mat: jax.Array
    size: jax.Array
    mesh: ConvexData | None = None
    hfield: HeightFieldData | None = None


class Contact(NamedTuple):
    """Fixed-size contact candidates of one collider pair (n = PairInfo.ncon rows).

    dist:   (n,) signed distance between the surfaces along normal, m; < 0 when penetrating
    pos:    (n, 3) world contact point, midway between the two surfaces, m
    normal: (n, 3) world unit normal pointing from geom1 (first argument) into geom2
    active: (n,) bool, this row holds a real candidate (padding rows are False, values finite)
    """

    dist: jax.Array
    pos: jax.Array
    normal: jax.Array
    active: jax.Array


# --- tolerances --------------------------------------------------------------------------------------
# Squared lengths below this (m^2) are treated as zero when normalising: 1e-20 m^2 is (0.1 nm)^2, far
# below float32 resolution of metre-scale coordinates, yet far above float32's smallest normal numbers.
TINY2 = 1e-20
# Two directions are parallel when sin(angle)^2 is below this (angle ~ 1e-4 rad): their cross product is
# then too small to give a reliable axis in float32.
PARALLEL_SIN2 = 1e-8
# Capsule axes closer to parallel than this (sin of the angle) get two contact rows, at the ends of
# their overlap. 1e-3 rad: two crossing cylinders touch at one point; only (nearly) aligned ones touch
# along a line, and the distances along the common normal then err by at most 1e-3 x overlap / 2.
CAPSULE_PARALLEL_SIN = 1e-3
# A contact normal within this of a face normal (1 - cos, ~0.26 degree) lies along that face: capsules
# then get two rows clipped to the face. Face contacts copy the face normal exactly, so this only has to
# absorb rounding.
FACE_ALIGN = 1e-5
# SAT prefers a face axis (and A's face over B's) unless the other beats it by this fraction of the
# smaller shape's radius: otherwise rounding makes resting boxes flip between equivalent axes.
FACE_PREFERENCE = 1e-3
# Clipping accepts points this fraction of the smaller shape's radius outside a polygon, so that
# vertices lying exactly on an edge (aligned faces) are not lost to rounding.
CLIP_SLACK = 1e-5
# Candidate points closer than this fraction of the smaller shape's radius are one point.
DEDUPE = 1e-4
# Mesh contact reduction takes extreme points in four directions of the contact plane at this angle
# (rad) from the reference face's first edge, plus 90-degree turns: an angle no common shape is
# aligned with, so that ties between corners are rare.
SPREAD_ANGLE = 0.3
# A terrain edge or vertex is a local peak seen from direction w when no neighbour rises above the plane
# through it normal to w by more than this fraction of their distance (rounding on flat ground).
CONE_SLACK = 1e-5
# heightfield_box examines each corner against CORNER_CELLS x CORNER_CELLS cells around it, which
# cover at least half a cell on each side: a corner's distance is exact when it is within half a
# cell of the terrain (contacts are), and otherwise never too small.
CORNER_CELLS = 2
# Sentinel for "not a candidate" in max / min selections (finite, so no inf - inf ever appears).
BIG = 1e30


# --- small vector helpers ---------------------------------------------------------------------------

# The helpers take the axis that holds x, y, z: -1 (the default) for one pair's vectors, as the kernels
# under vmap see them; XYZ (0) for the batched kernels (`BATCHED`), whose vectors are (3, *batch).
XYZ = 0


# Tried and not kept (Humanoid, batch 1024, `python tools/ab_revision.py scenes/humanoid.yaml --base HEAD`,
# 2-core Intel Xeon, 2026-12-06): the batched kernels' dot products as a[0]·b[0] + a[1]·b[1] + a[2]·b[2]
# instead of a reduction over x, y, z: ×0.949 (XLA copies the elementwise chains into their consumers);
# capsule_capsule's three first products as one reduction over a stack: ×1.004, noise.
def _dot(a, b, axis=-1):
    return jnp.sum(a * b, axis=axis)


def _xyz(a, axis):
    return (a[0], a[1], a[2]) if axis == 0 else (a[..., 0], a[..., 1], a[..., 2])


def _cross(a, b, axis=-1):
    a0, a1, a2 = _xyz(a, axis)
    b0, b1, b2 = _xyz(b, axis)
    return jnp.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=axis)


def _norm(v, axis=-1):
    """|v| with a finite gradient at v = 0 (double where)."""
    n2 = _dot(v, v, axis)
    ok = n2 > TINY2
    return sm.where(ok, jnp.sqrt(sm.where(ok, n2, 1.0)), 0.0)


def _normalize(v, fallback, axis=-1):
    """v / |v|, or `fallback` (a unit vector) where v is too short to have a direction."""
    n2 = _dot(v, v, axis)
    ok = n2 > TINY2
    inv = jax.lax.rsqrt(sm.where(ok, n2, 1.0))
    return sm.where(jnp.expand_dims(ok, axis), v * jnp.expand_dims(inv, axis), fallback)


def _div(num, den, default=0.0):
    """num / den where den != 0, else `default`, with finite gradients."""
    ok = den != 0
    return sm.where(ok, num / sm.where(ok, den, 1.0), default)


def _perpendicular(d, axis=-1):
    """A unit vector perpendicular to d (any, when d = 0)."""
    x, y, z = _xyz(jnp.abs(d), axis)
    # Cross with the coordinate axis least aligned with d.
    e = sm.where((x <= y) & (x <= z), 0, sm.where(y <= z, 1, 2))
    basis = jnp.stack([e == k for k in range(3)], axis=axis).astype(d.dtype)
    return _normalize(_cross(d, basis, axis), _unit(0, d, axis), axis)


def _unit(k, like, axis=-1):
    """The unit vector along coordinate k, shaped to broadcast against vectors `like`."""
    v = jnp.zeros((3,), like.dtype).at[k].set(1.0)
    return v if axis != 0 else v.reshape((3,) + (1,) * (like.ndim - 1))


def _rotate(mat, v):
    """mat @ v for v (..., 3), written as broadcasts so small products stay fused."""
    return v[..., 0:1] * mat[:, 0] + v[..., 1:2] * mat[:, 1] + v[..., 2:3] * mat[:, 2]


def _unrotate(mat, v):
    """mat.T @ v for v (..., 3)."""
    return jnp.stack([_dot(v, mat[:, 0]), _dot(v, mat[:, 1]), _dot(v, mat[:, 2])], axis=-1)


def _const(x, like):
    return jnp.asarray(x, dtype=like.dtype)


def _rows(dist, pos, normal, active):
    return Contact(dist, pos, normal, active)


def _stack(contacts):
    return Contact(*(jnp.concatenate(f, axis=0) for f in zip(*contacts)))


def _select(cond, a: Contact, b: Contact) -> Contact:
    """Row-wise choice between two contact sets of the same size; cond broadcasts over rows."""
    cond = jnp.asarray(cond)
    c1 = jnp.broadcast_to(cond, a.dist.shape)
    return Contact(sm.where(c1, a.dist, b.dist), sm.where(c1[:, None], a.pos, b.pos),
                   sm.where(c1[:, None], a.normal, b.normal), sm.where(c1, a.active, b.active))


def _take(c: Contact, idx) -> Contact:
    return Contact(c.dist[idx], c.pos[idx], c.normal[idx], c.active[idx])


def _dedupe(c: Contact, tol) -> Contact:
    """Deactivate rows that repeat an earlier active row (same point within tol)."""
    n = c.dist.shape[0]
    d2 = _dot(c.pos[:, None, :] - c.pos[None, :, :], c.pos[:, None, :] - c.pos[None, :, :])
    earlier = np.tril(np.ones((n, n), dtype=bool), k=-1)       # [i, j]: j < i
    dup = jnp.any(earlier & c.active[None, :] & (d2 < tol * tol), axis=1)
    return c._replace(active=c.active & ~dup)


def _to_world(g: Geom, c: Contact) -> Contact:
    """Rows computed in g's frame, expressed in world coordinates."""
    return c._replace(pos=_rotate(g.mat, c.pos) + g.pos, normal=_rotate(g.mat, c.normal))


def _segment(g: Geom):
    """The capsule's axis segment, world endpoints (2 x (3,))."""
    half = g.size[1] * g.mat[:, 2]
    return g.pos - half, g.pos + half


def _closest_on_segment(a, b, p, axis=-1):
    """Parameter t in [0, 1] and point of segment a-b closest to p (broadcasting over leading axes)."""
    d = b - a
    t = sm.clip(_div(_dot(p - a, d, axis), _dot(d, d, axis)), 0.0, 1.0)
    return t, a + jnp.expand_dims(t, axis) * d


def _closest_segments(a0, a1, b0, b1, axis=-1):
    """Closest points of segments a0-a1 and b0-b1: (s, t, point on a, point on b), broadcasting.

    Parallel segments (whose closest points are not unique) get the middle of their overlap, so that
    symmetric configurations give symmetric answers.
    """
    d1, d2, r = a1 - a0, b1 - b0, a0 - b0
    a, e, b = _dot(d1, d1, axis), _dot(d2, d2, axis), _dot(d1, d2, axis)
    c, f = _dot(d1, r, axis), _dot(d2, r, axis)

    def params(a, e, b, c, f):
        denom = a * e - b * b
        skew = denom > PARALLEL_SIN2 * a * e
        s_skew = sm.clip(_div(b * f - c * e, sm.where(skew, denom, 0.0)), 0.0, 1.0)
        sb0, sb1 = _div(-c, a), _div(b - c, a)              # b0 and b1 projected on a's line
        lo = sm.clip(jnp.minimum(sb0, sb1), 0.0, 1.0)
        hi = sm.clip(jnp.maximum(sb0, sb1), 0.0, 1.0)
        s = sm.where(skew, s_skew, 0.5 * (lo + hi))
        t = sm.clip(_div(b * s + f, e), 0.0, 1.0)
        s = sm.clip(_div(b * t - c, a), 0.0, 1.0)
        return s, t

    if jnp.ndim(a) >= 1:        # many segments at once (a hull's or terrain's edges): math.by_halves
        s, t = sm.by_halves(lambda rows: params(*(x[rows] for x in (a, e, b, c, f))), jnp.shape(a)[0])
    else:
        s, t = params(a, e, b, c, f)
    return s, t, a0 + jnp.expand_dims(s, axis) * d1, b0 + jnp.expand_dims(t, axis) * d2


# --- plane -------------------------------------------------------------------------------------------

# The kernels in BATCHED (planes, spheres and capsules with each other, and plane_box) take vectors
# with x, y, z on their first axis, so besides one pair's Geom they accept Geoms with trailing batch
# axes: pos (3, *b), mat (3, 3, *b), size (3, *b) (or broadcastable, e.g. (3, npair, 1)), and return
# rows (n, *b) and (n, 3, *b). The runtime calls them that way, with the batch on the last (fastest)
# axis: vmap would put x, y, z last instead, and these small dot products then run about 3x slower.

def _batched_rows(rows):
    """Contact rows from a list of (dist, pos, normal, active) with x, y, z first: all broadcast to the
    common batch shape and stacked row first."""
    shape = jnp.broadcast_shapes(*(r[0].shape for r in rows), *(r[1].shape[1:] for r in rows))
    vec = (3,) + shape
    return Contact(jnp.stack([jnp.broadcast_to(r[0], shape) for r in rows]),
                   jnp.stack([jnp.broadcast_to(r[1], vec) for r in rows]),
                   jnp.stack([jnp.broadcast_to(r[2], vec) for r in rows]),
                   jnp.stack([jnp.broadcast_to(r[3], shape) for r in rows]))


def plane_sphere(plane: Geom, sphere: Geom) -> Contact:
    n = plane.mat[:, 2]
    r = sphere.size[0]
    h = _dot(n, sphere.pos - plane.pos, XYZ)
    return _batched_rows([(h - r, sphere.pos - n * (0.5 * (r + h)), n, True)])


def plane_capsule(plane: Geom, capsule: Geom) -> Contact:
    n = plane.mat[:, 2]
    r = capsule.size[0]
    rows = []
    for end in _segment(capsule):
        h = _dot(end - plane.pos, n, XYZ)
        rows.append((h - r, end - n * (0.5 * (r + h)), n, True))
    return _batched_rows(rows)


def _face_flips():
    """(3, 4, 3) sign patterns: for face axis k, the four corners of that face, in cyclic order."""
    out = np.ones((3, 4, 3))
    for k in range(3):
        i, j = [m for m in range(3) if m != k]
        for c, (a, b) in enumerate([(1, 1), (-1, 1), (-1, -1), (1, -1)]):
            out[k, c, i], out[k, c, j] = a, b
    return out


_FACE_FLIPS = _face_flips()


def plane_box(plane: Geom, box: Geom) -> Contact:
    n = plane.mat[:, 2]
    h = box.size
    axes = [box.mat[:, i] for i in range(3)]
    nl = jnp.stack([_dot(n, a, XYZ) for a in axes])   # plane normal in the box frame
    lowest = sm.where(nl > 0, -1.0, 1.0) * h       # the corner deepest below the plane
    # Keep the axis whose flip would raise the corner most; the face across the other two axes is the
    # one facing the plane, and contains the lowest corner.
    k = jnp.argmax(jnp.abs(nl) * h, axis=0)
    rows = []
    for c in range(4):
        flip = [_const(_FACE_FLIPS[a, c], h).reshape((3,) + (1,) * k.ndim) for a in range(3)]
        local = lowest * sm.where(k == 0, flip[0], sm.where(k == 1, flip[1], flip[2]))
        corner = local[0] * axes[0] + local[1] * axes[1] + local[2] * axes[2] + box.pos
        d = _dot(corner - plane.pos, n, XYZ)
        rows.append((d, corner - n * (0.5 * d), n, True))
    return _batched_rows(rows)


def plane_mesh(plane: Geom, mesh: Geom) -> Contact:
    n = plane.mat[:, 2]
    m = _cast_mesh(mesh)
    v = _rotate(mesh.mat, m.vert) + mesh.pos                   # (V, 3) world vertices
    # Row 0: the deepest vertex (exact). Rows 1..K: the polygon of the incident face, the hull face
    # whose outward normal is most anti-parallel to the plane's: a face lying on the plane gives all its
    # corners, and the set changes only when another face turns further down, so a resting hull does
    # not rock between partial supports. Repeated points (the deepest vertex on that face, the padding
    # of short polygons) are deactivated.
    deepest = v[jnp.argmin(_dot(v - plane.pos, n))]
    face = jnp.argmin(_dot(_rotate(mesh.mat, m.face_normal), n))
    polygon = _rotate(mesh.mat, m.face_vert[face]) + mesh.pos   # (K, 3)
    pts = jnp.concatenate([deepest[None], polygon])
    d = _dot(pts - plane.pos, n)
    rows = _rows(d, pts - n * (0.5 * d)[:, None], jnp.broadcast_to(n, pts.shape),
                 jnp.ones(pts.shape[:1], bool))
    return _dedupe(rows, DEDUPE * m.radius)


# --- sphere ------------------------------------------------------------------------------------------

def _spheres(c1, r1, c2, r2, fallback) -> Contact:
    """One row between spheres (c1, r1) and (c2, r2), x, y, z first; `fallback` normal when the
    centres coincide."""
    d = c2 - c1
    n = _normalize(d, fallback, XYZ)
    dist = _norm(d, XYZ) - r1 - r2
    return _batched_rows([(dist, 0.5 * (c1 + r1 * n + c2 - r2 * n), n, True)])


def sphere_sphere(s1: Geom, s2: Geom) -> Contact:
    return _spheres(s1.pos, s1.size[0], s2.pos, s2.size[0], _unit(2, s1.pos, XYZ))


def _along_axis(g: Geom, p):
    """The point of capsule g's axis segment closest to p, x, y, z first: the centre plus p's offset
    along the unit axis clipped to ±half length. The axis is a column of a rotation, so |axis| = 1 and
    no division is needed (see capsule_capsule)."""
    u, half = g.mat[:, 2], g.size[1]
    return g.pos + sm.clip(_dot(p - g.pos, u, XYZ), -half, half) * u


def sphere_capsule(sphere: Geom, capsule: Geom) -> Contact:
    q = _along_axis(capsule, sphere.pos)
    return _spheres(sphere.pos, sphere.size[0], q, capsule.size[0], _perpendicular(capsule.mat[:, 2], XYZ))


def sphere_box(sphere: Geom, box: Geom) -> Contact:
    h = box.size
    c = _unrotate(box.mat, sphere.pos - box.pos)     # centre in the box frame
    q = sm.clip(c, -h, h)
    outside = jnp.any(jnp.abs(c) > h)
    depth = h - jnp.abs(c)                           # inside: distance to each face pair
    k = jnp.argmin(depth)
    face = jnp.arange(3) == k
    sign = sm.where(c >= 0, 1.0, -1.0)
    n_face = sm.where(face, sign, 0.0)              # outward normal of the nearest face
    n_out = sm.where(outside, _normalize(c - q, n_face), n_face)
    sd = sm.where(outside, _norm(c - q), -jnp.min(depth))
    qb = sm.where(outside, q, sm.where(face, sign * h, c))   # nearest point of the box surface
    r = sphere.size[0]
    pos = 0.5 * (c - r * n_out + qb)
    out = _rows((sd - r)[None], pos[None], -n_out[None], jnp.ones((1,), bool))
    return _to_world(box, out)


# --- convex polytopes (boxes and meshes) ---------------------------------------------------------------

_CUBE = convex_mesh_data(*box_mesh_triangles([1.0, 1.0, 1.0]), vertex_budget=8, face_budget=6,
                         edge_budget=12, face_vertex_budget=4)


def _box_hull(h) -> ConvexData:
    """A box with half sizes h (3,) as a convex hull in its own frame."""
    c = jax.tree.map(lambda x: _const(x, h), _CUBE)
    # Scaling a box along its axes keeps its face normals and side normals (all axis-aligned).
    return ConvexData(vert=c.vert * h, face_normal=c.face_normal,
                      face_offset=_dot(jnp.abs(c.face_normal), h), face_vert=c.face_vert * h,
                      face_side=c.face_side,
                      edge_a=c.edge_a * h, edge_b=c.edge_b * h, edge_normal=c.edge_normal,
                      center=jnp.zeros_like(h), radius=_norm(h))


def _cast_mesh(g: Geom) -> ConvexData:
    return jax.tree.map(lambda x: jnp.asarray(x, dtype=g.pos.dtype), g.mesh)


def _hull_of(g: Geom, is_box: bool) -> ConvexData:
    return _box_hull(g.size) if is_box else _cast_mesh(g)


def _move_hull(p: ConvexData, mat, pos) -> ConvexData:
    """The hull under the rigid motion x -> mat x + pos, except its polygons (face_vert, face_side),
    which stay in the hull's own frame: moving all of them would cost more than the rest together,
    and the callers need two."""
    move = lambda x: _rotate(mat, x) + pos
    return ConvexData(vert=move(p.vert), face_normal=_rotate(mat, p.face_normal),
                      face_offset=p.face_offset + _dot(_rotate(mat, p.face_normal), pos),
                      face_vert=p.face_vert, face_side=p.face_side,
                      edge_a=move(p.edge_a), edge_b=move(p.edge_b),
                      edge_normal=_rotate(mat, p.edge_normal), center=move(p.center), radius=p.radius)


def _side_normals(poly, normal):
    """Inward side normals (..., K, 3) of polygons (..., K, 3) counter-clockwise about normal (..., 3)."""
    edge = jnp.roll(poly, -1, axis=-2) - poly
    return _cross(normal[..., None, :], edge), edge


def _point_candidates(p, hull: ConvexData):
    """Distances from p to the hull's faces (where p projects inside them) and edges.

    Returns plane distances s (F,), and candidates (F + E): distance (BIG where not a candidate),
    nearest hull point, outward normal there. Outside the hull their minimum is the exact distance.
    """
    s = _dot(hull.face_normal, p) - hull.face_offset
    over = jnp.all(_dot(hull.face_side, p - hull.face_vert) >= 0.0, axis=-1)
    d_face = sm.where(over & (s >= 0.0), s, BIG)
    q_face = p - s[:, None] * hull.face_normal
    _, q_edge = _closest_on_segment(hull.edge_a, hull.edge_b, p)
    edge_dir = _normalize(jnp.sum(hull.edge_normal, axis=1), hull.edge_normal[:, 0])
    n_edge = _normalize(p - q_edge, edge_dir)
    return s, (jnp.concatenate([d_face, _norm(p - q_edge)]), jnp.concatenate([q_face, q_edge]),
               jnp.concatenate([hull.face_normal, n_edge]))


def _point_hull(p, hull: ConvexData):
    """Signed distance of p to the hull (exact), nearest surface point, outward normal there."""
    s, (cd, cq, cn) = _point_candidates(p, hull)
    i = jnp.argmin(cd)
    f = jnp.argmax(s)
    inside = s[f] <= 0.0
    sd = sm.where(inside, s[f], cd[i])
    q = sm.where(inside, p - s[f] * hull.face_normal[f], cq[i])
    n = sm.where(inside, hull.face_normal[f], cn[i])
    return sd, q, n


def _sphere_hull(sphere: Geom, hull_geom: Geom, is_box: bool) -> Contact:
    hull = _hull_of(hull_geom, is_box)
    c = _unrotate(hull_geom.mat, sphere.pos - hull_geom.pos)
    sd, q, n_out = _point_hull(c, hull)
    r = sphere.size[0]
    pos = 0.5 * (c - r * n_out + q)
    out = _rows((sd - r)[None], pos[None], -n_out[None], jnp.ones((1,), bool))
    return _to_world(hull_geom, out)


def sphere_mesh(sphere: Geom, mesh: Geom) -> Contact:
    return _sphere_hull(sphere, mesh, is_box=False)


def _segment_hull(p0, p1, hull: ConvexData):
    """Signed distance of segment p0-p1 to the hull (exact), with the segment point, the outward
    normal, and the hull point. Apart: the nearest of endpoint-to-hull and segment-to-edge
    candidates. Overlapping: SAT over the face normals and the (segment x edge) axes, which are all the
    face normals of the Minkowski difference, so the least overlap is the exact depth."""
    d = p1 - p0
    s0, (cd0, cq0, cn0) = _point_candidates(p0, hull)
    s1, (cd1, cq1, cn1) = _point_candidates(p1, hull)
    _, _, ps, pe = _closest_segments(p0, p1, hull.edge_a, hull.edge_b)     # (E, 3) each
    edge_dir = _normalize(jnp.sum(hull.edge_normal, axis=1), hull.edge_normal[:, 0])
    ne = _normalize(ps - pe, edge_dir)
    cand_d = jnp.concatenate([cd0, cd1, _norm(ps - pe)])
    cand_p = jnp.concatenate([jnp.broadcast_to(p0, cq0.shape), jnp.broadcast_to(p1, cq1.shape), ps])
    cand_n = jnp.concatenate([cn0, cn1, ne])
    i = jnp.argmin(cand_d)

    # SAT: face axes, then both orientations of each segment x edge axis.
    sep_face = jnp.minimum(s0, s1)
    axis = _cross(d, hull.edge_b - hull.edge_a)
    e2 = _dot(hull.edge_b - hull.edge_a, hull.edge_b - hull.edge_a)
    ok = _dot(axis, axis) > PARALLEL_SIN2 * _dot(d, d) * e2
    u = _normalize(axis, edge_dir)
    proj_v = _dot(hull.vert[None, :, :], u[:, None, :])                  # (E, V)
    proj_s = _dot(p0, u)                                                 # u is perpendicular to d
    sep_pos = proj_s - jnp.max(proj_v, axis=1)
    sep_neg = jnp.min(proj_v, axis=1) - proj_s
    flip = sep_neg > sep_pos
    sep_edge = sm.where(ok, jnp.maximum(sep_pos, sep_neg), -BIG)
    u = sm.where(flip[:, None], -u, u)
    sep = jnp.concatenate([sep_face, sep_edge])
    j = jnp.argmax(sep)
    nf = hull.face_normal.shape[0]
    n_in = jnp.concatenate([hull.face_normal, u])[j]
    # Deepest segment point along the axis: the lower endpoint for a face (the middle if level); for an
    # edge axis, the point nearest the hull's supporting edge along it (of the edges parallel to the
    # winning one, the outermost: the winner itself may be a parallel edge behind it).
    h0, h1 = _dot(n_in, p0), _dot(n_in, p1)
    p_face = sm.where(h0 < h1, p0, sm.where(h1 < h0, p1, 0.5 * (p0 + p1)))
    de = hull.edge_b - hull.edge_a
    dj = de[jnp.maximum(j - nf, 0)]
    cr = _cross(de, dj)
    parallel = _dot(cr, cr) <= PARALLEL_SIN2 * e2 * _dot(dj, dj)
    k = jnp.argmax(sm.where(parallel, _dot(hull.edge_a, n_in), -BIG))
    _, _, p_edge, _ = _closest_segments(p0, p1, hull.edge_a[k], hull.edge_b[k])
    p_in = sm.where(j < nf, p_face, p_edge)
    inside = sep[j] <= 0.0
    sd = sm.where(inside, sep[j], cand_d[i])
    pa = sm.where(inside, p_in, cand_p[i])
    n_out = sm.where(inside, n_in, cand_n[i])
    return sd, pa, n_out


def _clip_segment(p0, p1, poly, side):
    """Parameters [t_lo, t_hi] of segment p0-p1 inside the prism over polygon (K, 3) with inward side
    normals side (K, 3) (Liang-Barsky), and whether that part is non-empty."""
    a = _dot(side, p0 - poly)                       # a + t b >= 0 inside
    b = _dot(side, p1 - p0)
    t = _div(-a, b)
    lo = jnp.max(sm.where(b > 0, t, -BIG))
    hi = jnp.min(sm.where(b < 0, t, BIG))
    blocked = jnp.any((b == 0) & (a < 0))
    t_lo, t_hi = jnp.maximum(lo, 0.0), jnp.minimum(hi, 1.0)
    return t_lo, t_hi, (t_lo <= t_hi) & ~blocked


def _capsule_hull(capsule: Geom, hull_geom: Geom, is_box: bool) -> Contact:
    hull = _hull_of(hull_geom, is_box)
    p0, p1 = (_unrotate(hull_geom.mat, p - hull_geom.pos) for p in _segment(capsule))
    r = capsule.size[0]
    sd, pa, n_out = _segment_hull(p0, p1, hull)
    main = _rows((sd - r)[None], (pa - n_out * (0.5 * (r + sd)))[None], -n_out[None], jnp.ones((1,), bool))
    # Lying along a face: the two ends of the segment's part over that face.
    f = jnp.argmax(_dot(hull.face_normal, n_out))
    nf, poly = hull.face_normal[f], hull.face_vert[f]
    t_lo, t_hi, nonempty = _clip_segment(p0, p1, poly, hull.face_side[f])
    # Only when the nearest point itself lies over the face (else the face's rows would be farther).
    d = p1 - p0
    t_a = _div(_dot(pa - p0, d), _dot(d, d))
    off_face = jnp.abs(t_a - sm.clip(t_a, t_lo, t_hi)) * _norm(d)
    along = (_dot(nf, n_out) > 1.0 - FACE_ALIGN) & nonempty & (off_face <= CLIP_SLACK * hull.radius)
    ends = p0 + jnp.stack([t_lo, t_hi])[:, None] * (p1 - p0)
    he = _dot(ends, nf) - hull.face_offset[f]
    face_rows = _rows(he - r, ends - nf * (0.5 * (r + he))[:, None], jnp.broadcast_to(-nf, (2, 3)),
                      jnp.stack([jnp.array(True), t_hi - t_lo > DEDUPE]))
    single = _stack([main, main._replace(active=jnp.zeros((1,), bool))])
    return _to_world(hull_geom, _select(along, face_rows, single))


def capsule_box(capsule: Geom, box: Geom) -> Contact:
    return _capsule_hull(capsule, box, is_box=True)


def capsule_mesh(capsule: Geom, mesh: Geom) -> Contact:
    return _capsule_hull(capsule, mesh, is_box=False)


def _clip_faces(ref, n, offset, inc, n_inc, slack):
    """Candidate points of the overlap of a reference polygon ref (K, 3) with normal n and plane offset,
    and an incident polygon inc (L, 3) with normal n_inc, seen along n. Candidates lie on the incident
    face: incident vertices over the reference face, reference vertices projected (along n) onto the
    incident plane when inside the incident polygon, and crossings of their edges.

    Each point of the overlap is produced once, without comparing all candidates pairwise: vertices of
    either polygon on the other's boundary count (within `slack`, m) as vertices, crossings only strictly
    inside both edges, a reference vertex only where no incident vertex already is, and a repeated
    (padding) vertex only once.

    Returns points (L + K + K L, 3), valid (L + K + K L,), heights above the reference plane (...,).
    """
    side_r, edge_r = _side_normals(ref, n)
    side_i, edge_i = _side_normals(inc, n_inc)
    len_r, len_i = _norm(edge_r), _norm(edge_i)
    # Incident vertices over the reference face (a padding repeat of the previous vertex is skipped).
    in_r = _dot(side_r[None, :, :], inc[:, None, :] - ref[None, :, :]) >= -slack * len_r[None, :]
    v1 = jnp.all(in_r, axis=1) & (jnp.roll(len_i, 1) > 0)
    # Reference vertices projected onto the incident plane, inside the incident polygon.
    t = _div(_dot(n_inc, inc[0] - ref), _dot(n_inc, n))
    proj = ref + t[:, None] * n
    in_i = _dot(side_i[None, :, :], proj[:, None, :] - inc[None, :, :]) >= -slack * len_i[None, :]
    d2 = _dot(proj[:, None, :] - inc[None, :, :], proj[:, None, :] - inc[None, :, :])
    taken = jnp.any(v1[None, :] & (d2 <= slack * slack), axis=1)
    v2 = jnp.all(in_i, axis=1) & (_dot(n_inc, n) < 0.0) & (jnp.roll(len_r, 1) > 0) & ~taken
    # Edge crossings, in the reference plane: ref[k] + s edge_r[k] = inc'[l] + u edge_i'[l].
    inc_flat = inc - _dot(inc - ref[0], n)[:, None] * n
    edge_if = jnp.roll(inc_flat, -1, axis=0) - inc_flat
    w = inc_flat[None, :, :] - ref[:, None, :]                                       # (K, L, 3)
    den = _dot(n, _cross(edge_r[:, None, :], edge_if[None, :, :]))
    s = _div(_dot(n, _cross(w, edge_if[None, :, :])), den)
    u = _div(_dot(n, _cross(w, edge_r[:, None, :])), den)
    eps_r = _div(slack, len_r)[:, None]
    eps_i = _div(slack, len_i)[None, :]
    big_enough = jnp.abs(den) > PARALLEL_SIN2 ** 0.5 * (len_r[:, None] * len_i[None, :])
    v3 = big_enough & (s > eps_r) & (s < 1 - eps_r) & (u > eps_i) & (u < 1 - eps_i)
    cross_pts = inc[None, :, :] + u[..., None] * edge_i[None, :, :]
    pts = jnp.concatenate([inc, proj, cross_pts.reshape(-1, 3)])
    valid = jnp.concatenate([v1, v2, v3.reshape(-1)])
    return pts, valid, _dot(pts, n) - offset


class _EdgeAxes(NamedTuple):
    """Edge-pair axes of a SAT over (Na, Nb) pairs: the separation along each (-BIG where it is not an
    axis), whether the axis (first edge x second edge) must flip to point out of a, and the two edges
    that realise it, (Na, Nb, 2, 3) each."""

    sep: jax.Array
    flip: jax.Array
    seg_a: jax.Array
    seg_b: jax.Array


def _edge_axes_hulls(a: ConvexData, b: ConvexData) -> _EdgeAxes:
    """Pairs of edges whose Gauss-map arcs cross: exactly the edge-edge faces of the Minkowski
    difference a - b, whose separation is the distance between the two edges' lines.

    Per pair only dot products of per-edge vectors (triple products rewritten so that every cross
    product is per edge): the pairs are many (Ea x Eb).
    """
    da = a.edge_b - a.edge_a
    db = b.edge_b - b.edge_a
    n_a1, n_a2 = a.edge_normal[:, 0], a.edge_normal[:, 1]
    n_b1, n_b2 = -b.edge_normal[:, 0], -b.edge_normal[:, 1]
    bxa = _cross(n_a2, n_a1)                         # normal of arc a's great circle
    dxc = _cross(n_b2, n_b1)
    # All per-pair numbers are dot products of a per-edge vector of a with one of b: one batched
    # matrix product (Ea x 3 by 3 x Eb, eight times) beats broadcasting them (mesh_mesh ran 4x faster on
    # CPU): unlike the 3-vector products elsewhere, these are real matrices. Full precision: GPUs and
    # TPUs would otherwise round float32 products to tf32 / bf16, far too coarse for a SAT.
    left = jnp.stack([bxa, bxa, n_a1, n_a2, da, da, _cross(a.edge_a, da), _cross(a.edge_a - a.center, da)])
    right = jnp.stack([n_b1, n_b2, dxc, dxc, db, _cross(db, b.edge_a), db, db])
    cba, dba, adc, bdc, ab, on_b, on_a, out = jnp.einsum("kic,kjc->kij", left, right,
                                                         precision=jax.lax.Precision.HIGHEST)
    gauss = (cba * dba < 0) & (adc * bdc < 0) & (cba * bdc > 0)
    aa, bb = _dot(da, da), _dot(db, db)
    n2 = aa[:, None] * bb[None, :] - ab * ab                              # |da x db|^2
    ok = gauss & (n2 > PARALLEL_SIN2 * aa[:, None] * bb[None, :])
    inv = jax.lax.rsqrt(sm.where(ok, n2, 1.0))
    flip = out < 0
    sep = sm.where(ok, sm.where(flip, on_a - on_b, on_b - on_a) * inv, -BIG)
    shape = sep.shape + (2, 3)
    seg_a = jnp.broadcast_to(jnp.stack([a.edge_a, a.edge_b], axis=1)[:, None], shape)
    seg_b = jnp.broadcast_to(jnp.stack([b.edge_a, b.edge_b], axis=1)[None, :], shape)
    return _EdgeAxes(sep, flip, seg_a, seg_b)


def _edge_axes_boxes(ha, hb, mat, pos) -> _EdgeAxes:
    """The nine edge-direction axes of two boxes (a's half sizes ha, at the origin of its frame; b's
    half sizes hb, axes the columns of mat, centre pos): the classic box-box SAT, from support
    functions instead of edge pairs."""
    eye = jnp.eye(3, dtype=ha.dtype)
    axis = _cross(eye[:, None, :], mat.T[None, :, :])                 # (3, 3, 3): a_i x b_j
    ok = _dot(axis, axis) > PARALLEL_SIN2
    flip = _dot(axis, pos) < 0
    u = _normalize(sm.where(flip[..., None], -axis, axis), jnp.broadcast_to(eye[:, None, :], axis.shape))
    ub = _dot(u[..., None, :], mat.T)                                  # (3, 3, 3): u . b_k
    sep = _dot(u, pos) - _dot(jnp.abs(u), ha) - _dot(jnp.abs(ub), hb)
    sep = sm.where(ok, sep, -BIG)
    # Supporting edges: a's along a_i at the corner signs of u, b's along b_j at the signs of -u.
    sa = sm.where(u >= 0, 1.0, -1.0) * ha                             # (3, 3, 3) corner, a's frame
    along_a = eye[:, None, :] * ha[:, None, None]                      # half edge a_i
    mid_a = sm.where(eye[:, None, :] > 0, 0.0, sa)
    sb = sm.where(ub >= 0, -1.0, 1.0) * hb                            # corner coordinates on b's axes
    jmask = jnp.broadcast_to(eye[None, :, :], sb.shape) > 0
    mid_b = pos + _rotate(mat, sm.where(jmask, 0.0, sb))
    along_b = jnp.broadcast_to((mat * hb).T[None, :, :], mid_b.shape)   # half edge hb_j b_j
    seg_a = jnp.stack([mid_a - along_a, mid_a + along_a], axis=-2)
    seg_b = jnp.stack([mid_b - along_b, mid_b + along_b], axis=-2)
    return _EdgeAxes(sep, flip, seg_a, seg_b)


def _hull_hull(a: ConvexData, b: ConvexData, move_b, edges: _EdgeAxes, spread: bool, ncon: int) -> Contact:
    """Contacts between hulls a and b given in one frame (a's), with their edge axes. b's polygons
    (face_vert) are still in its own frame, `move_b` maps them (only the two polygons used are moved).
    `spread` picks the mesh row reduction (deepest + four extremes); else the `ncon` deepest points."""
    scale = jnp.minimum(a.radius, b.radius)
    # Face axes: the support of the other hull below each face plane.
    sep_a = jnp.min(_dot(a.face_normal[:, None, :], b.vert[None, :, :]), axis=1) - a.face_offset
    sep_b = jnp.min(_dot(b.face_normal[:, None, :], a.vert[None, :, :]), axis=1) - b.face_offset
    fa, fb = jnp.argmax(sep_a), jnp.argmax(sep_b)
    flat = jnp.argmax(edges.sep.reshape(-1))
    ia, ib = flat // edges.sep.shape[1], flat % edges.sep.shape[1]
    tol = FACE_PREFERENCE * scale
    use_b = sep_b[fb] > sep_a[fa] + tol
    face_sep = sm.where(use_b, sep_b[fb], sep_a[fa])
    use_edge = edges.sep[ia, ib] > face_sep + tol

    # Face contact: reference face (a's or b's) and the most anti-parallel face of the other hull.
    ga = jnp.argmin(_dot(a.face_normal, b.face_normal[fb]))
    gb = jnp.argmin(_dot(b.face_normal, a.face_normal[fa]))
    n_ref = sm.where(use_b, b.face_normal[fb], a.face_normal[fa])
    off_ref = sm.where(use_b, b.face_offset[fb], a.face_offset[fa])
    ref = sm.where(use_b, move_b(b.face_vert[fb]), a.face_vert[fa])
    inc = sm.where(use_b, a.face_vert[ga], move_b(b.face_vert[gb]))
    n_inc = sm.where(use_b, a.face_normal[ga], b.face_normal[gb])
    slack = CLIP_SLACK * scale
    pts, valid, height = _clip_faces(ref, n_ref, off_ref, inc, n_inc, slack)
    # Overlapping, the incident hull's deepest vertex is a candidate too when it is deeper than every
    # clipped point (it lies beyond the reference face, or nothing was clipped): its depth is the SAT's,
    # the exact penetration. Apart, its height would understate its distance: left out.
    support_a = a.vert[jnp.argmin(_dot(a.vert, n_ref))]
    support_b = b.vert[jnp.argmin(_dot(b.vert, n_ref))]
    support = sm.where(use_b, support_a, support_b)
    h_support = _dot(support, n_ref) - off_ref
    deeper = h_support < jnp.min(sm.where(valid, height, BIG)) - slack
    pts = jnp.concatenate([pts, support[None]])
    valid = jnp.concatenate([valid, ((face_sep <= 0.0) & deeper)[None]])
    height = jnp.concatenate([height, h_support[None]])
    n_ab = sm.where(use_b, -n_ref, n_ref)
    cands = _rows(height, pts - n_ref * (0.5 * height)[:, None], jnp.broadcast_to(n_ab, pts.shape), valid)
    if spread:
        t1 = _normalize(ref[1] - ref[0], _perpendicular(n_ref))
        t2 = _cross(n_ref, t1)
        idx = [jnp.argmin(sm.where(cands.active, cands.dist, BIG))]
        for k in range(4):
            ang = SPREAD_ANGLE + 0.5 * np.pi * k
            direction = float(np.cos(ang)) * t1 + float(np.sin(ang)) * t2
            idx.append(jnp.argmax(sm.where(cands.active, _dot(cands.pos, direction), -BIG)))
        idx = jnp.stack(idx)
        face_rows = _take(cands, idx)
        act = face_rows.active
        for j in range(1, len(idx)):
            act = act.at[j].set(act[j] & jnp.all(idx[j] != idx[:j]))
        face_rows = face_rows._replace(active=act)
    else:
        _, idx = jax.lax.top_k(sm.where(cands.active, -cands.dist, -BIG), ncon)
        face_rows = _take(cands, idx)

    # Edge contact: closest points of the two edges; overlapping, the depth from the SAT; apart, their
    # distance (at least the SAT's lower bound, and true for these two points).
    sa, sb = edges.seg_a[ia, ib], edges.seg_b[ia, ib]
    _, _, pa, pb = _closest_segments(sa[0], sa[1], sb[0], sb[1])
    axis = _cross(sa[1] - sa[0], sb[1] - sb[0])
    axis = _normalize(sm.where(edges.flip[ia, ib], -axis, axis), _perpendicular(sa[1] - sa[0]))
    sep = edges.sep[ia, ib]
    d_edge = sm.where(sep > 0, _norm(pb - pa), sep)
    edge_row = _rows(d_edge[None], (0.5 * (pa + pb))[None], axis[None], jnp.ones((1,), bool))
    n_rows = face_rows.dist.shape[0]
    edge_rows = _stack([edge_row] + [edge_row._replace(active=jnp.zeros((1,), bool))] * (n_rows - 1))
    return _select(use_edge, edge_rows, face_rows)


def _pad_polygons(hull: ConvexData, k: int) -> ConvexData:
    """Polygons padded to k vertices by repeating the last one (adds zero-length edges only)."""
    fv = hull.face_vert
    extra = jnp.broadcast_to(fv[:, -1:], (fv.shape[0], k - fv.shape[1], 3))
    return hull._replace(face_vert=jnp.concatenate([fv, extra], axis=1))


def _hulls(g1: Geom, box1: bool, g2: Geom, box2: bool, spread: bool, ncon: int) -> Contact:
    a = _hull_of(g1, box1)
    b = _hull_of(g2, box2)
    k = max(a.face_vert.shape[1], b.face_vert.shape[1])
    a, b = _pad_polygons(a, k), _pad_polygons(b, k)
    # Work in g1's frame: only b moves.
    mat = _unrotate(g1.mat, g2.mat.T).T              # g1.mat.T @ g2.mat
    pos = _unrotate(g1.mat, g2.pos - g1.pos)
    b = _move_hull(b, mat, pos)
    edges = _edge_axes_boxes(g1.size, g2.size, mat, pos) if box1 and box2 else _edge_axes_hulls(a, b)
    move_b = lambda x: _rotate(mat, x) + pos
    return _to_world(g1, _hull_hull(a, b, move_b, edges, spread, ncon))


def box_box(b1: Geom, b2: Geom) -> Contact:
    return _hulls(b1, True, b2, True, spread=False, ncon=8)


def box_mesh(box: Geom, mesh: Geom) -> Contact:
    return _hulls(box, True, mesh, False, spread=True, ncon=5)


def mesh_mesh(m1: Geom, m2: Geom) -> Contact:
    return _hulls(m1, False, m2, False, spread=True, ncon=5)


# --- capsules ---------------------------------------------------------------------------------------

def capsule_capsule(c1: Geom, c2: Geom) -> Contact:
    """Rows between two capsules, x, y, z first (BATCHED), from their axes' closest points.

    Each axis point is written as its offset along the capsule's unit axis u from its centre c,
    x ∈ [−h, h] (h the half length): the closest points of the two lines solve s − t·cosθ = −p and
    t − s·cosθ = q, with cosθ = u₁·u₂, p = u₁·(c₁ − c₂), q = u₂·(c₁ − c₂), so s = (q·cosθ − p)/sin²θ.
    Because the axes are columns of rotations (unit length), the general segment algorithm's
    divisions by |d|² (`_closest_segments`) are not needed: one division, by sin²θ, and one rsqrt.
    410 operations per pair against its 512 (`python tools/bench_kernels.py`); Humanoid's 52 pairs at
    a tile of 64 environments, one core, 100–108 µs against 139 µs (`python tools/stage_times.py
    scenes/humanoid.yaml`); the whole step ran as fast either way (fresh processes in turn, batch
    1024: 186k–198k physics steps/s both). The line's second row costs about half of the kernel
    alone (52 pairs × 64 environments: 52 µs without it, 100 µs with it), but not of the step: the
    kernel with one row per pair (`ncon` 1), Humanoid's step in fresh processes taken in turn, 199k
    and 206k physics steps/s against 202k and 201k with two (2-core AMD EPYC, 2026-12-05).

    Nearly parallel axes (sin θ ≤ CAPSULE_PARALLEL_SIN) that overlap along axis 1 touch along a line:
    rows at both ends of the overlap, with the distance measured along the common normal. Otherwise
    row 0 is the closest points' row and row 1 is padding (inactive)."""
    u1, u2 = c1.mat[:, 2], c2.mat[:, 2]
    h1, h2 = c1.size[1], c2.size[1]
    r1 = c1.size[0]
    rr = r1 + c2.size[0]
    w = c1.pos - c2.pos
    cos = _dot(u1, u2, XYZ)
    p, q = _dot(u1, w, XYZ), _dot(u2, w, XYZ)
    sin2 = 1.0 - cos * cos
    # Axis 2's extent projected on axis 1 (offsets from c1), clipped to axis 1: the overlap.
    reach = h2 * jnp.abs(cos)
    lo, hi = sm.clip(-p - reach, -h1, h1), sm.clip(-p + reach, -h1, h1)
    skew = sin2 > PARALLEL_SIN2
    s = sm.where(skew, sm.clip(_div(q * cos - p, sm.where(skew, sin2, 0.0)), -h1, h1), 0.5 * (lo + hi))
    t = sm.clip(s * cos + q, -h2, h2)
    s = sm.clip(t * cos - p, -h1, h1)
    pa = c1.pos + s * u1
    v = c2.pos + t * u2 - pa
    n2 = _dot(v, v, XYZ)
    ok = n2 > TINY2
    inv = jax.lax.rsqrt(sm.where(ok, n2, 1.0))
    # Crossing axes (the closest points coincide): the normal is their common perpendicular.
    fallback = _normalize(_cross(u1, u2, XYZ), _perpendicular(u1, XYZ), XYZ)
    n = sm.where(ok[None], v * inv[None], fallback)
    dist = sm.where(ok, n2 * inv, 0.0) - rr
    main_pos = pa + n * (r1 + 0.5 * dist)
    line = (sin2 <= CAPSULE_PARALLEL_SIN ** 2) & (hi > lo)
    rows = []
    for k, x in enumerate((lo, hi)):
        end = c1.pos + x * u1
        near = c2.pos + sm.clip(x * cos + q, -h2, h2) * u2
        de = _dot(near - end, n, XYZ) - rr
        on = hi - lo > DEDUPE * rr if k else True
        rows.append((sm.where(line, de, dist), sm.where(line, end + n * (r1 + 0.5 * de), main_pos), n,
                     sm.where(line, on, k == 0)))
    return _batched_rows(rows)


# --- height fields ---------------------------------------------------------------------------------
#
# The terrain near a collider is the window's triangles, their edges and their vertices. A contact with
# an edge or a vertex counts only where that feature is a local peak seen from the contact direction
# (every neighbouring vertex lies below the plane through it normal to that direction): otherwise a
# neighbouring face is nearer, and on flat ground edges would add spurious tilted contacts.


class _Terrain(NamedTuple):
    """Features of a window of terrain, in the height field's frame (m).

    tri (T, 3, 3) triangles counter-clockwise from above, n (T, 3) their upward unit normals, side
    (T, 3, 3) their inward side normals, vside (T, 3, 3) the inward normals of their vertical sides
    (horizontal vectors: the prism above and below the triangle); edge_a, edge_b (Ee, 3) edge
    endpoints, edge_far (Ee, 2, 3) the far vertices of the edge's two triangles relative to edge_a;
    vert (Nv, 3) vertices, nbr (Nv, 6, 3) the six vertices joined to each by an edge, relative to it;
    edge_slack (Ee, 2), nbr_slack (Nv, 6) how far (m) a neighbour may rise above a peak's plane and
    still count as level.
    """

    tri: jax.Array
    n: jax.Array
    side: jax.Array
    vside: jax.Array
    edge_a: jax.Array
    edge_b: jax.Array
    edge_far: jax.Array
    edge_slack: jax.Array
    vert: jax.Array
    nbr: jax.Array
    nbr_slack: jax.Array


def _terrain(hf: Geom, center, cells: int | None = None) -> _Terrain:
    """The window of cells around `center` (3,), in hf's frame: the height field's window, or `cells`
    x `cells` (at most the grid).

    The window starts w//2 cells before the grid vertex nearest the centre (clamped into the grid), so
    it covers at least w//2 - 1/2 cells on each side of it (collision_data.heightfield_window). The
    block read from the padded grid has one more ring of vertices: the neighbours of its border.
    """
    data = hf.hfield
    elev = jnp.asarray(data.padded_elevation, dtype=hf.pos.dtype)
    nrow, ncol = elev.shape[0] - 2, elev.shape[1] - 2
    wy, wx = data.window_row.shape[0] - 1, data.window_col.shape[0] - 1
    if cells is not None:
        wy, wx = min(cells, nrow - 1), min(cells, ncol - 1)
    sx, sy = hf.size[0], hf.size[1]
    dx, dy = 2.0 * sx / (ncol - 1), 2.0 * sy / (nrow - 1)
    j0 = sm.clip(jnp.round((center[0] + sx) / dx).astype(jnp.int32) - wx // 2, 0, ncol - 1 - wx)
    i0 = sm.clip(jnp.round((center[1] + sy) / dy).astype(jnp.int32) - wy // 2, 0, nrow - 1 - wy)
    z = jax.lax.dynamic_slice(elev, (i0, j0), (wy + 3, wx + 3))     # grid rows i0-1 .. i0+wy+1
    x = -sx + (j0 - 1 + jnp.arange(wx + 3, dtype=jnp.int32)).astype(elev.dtype) * dx
    y = -sy + (i0 - 1 + jnp.arange(wy + 3, dtype=jnp.int32)).astype(elev.dtype) * dy
    p = jnp.stack([jnp.broadcast_to(x[None, :], z.shape), jnp.broadcast_to(y[:, None], z.shape), z], axis=-1)

    def at(di, dj, ni, nj):     # vertices (i + di, j + dj) for the ni x nj features starting at (1, 1)
        return p[1 + di:1 + di + ni, 1 + dj:1 + dj + nj].reshape(-1, 3)

    # Cells split along the (i, j)-(i+1, j+1) diagonal.
    lower = jnp.stack([at(0, 0, wy, wx), at(0, 1, wy, wx), at(1, 1, wy, wx)], axis=1)
    upper = jnp.stack([at(0, 0, wy, wx), at(1, 1, wy, wx), at(1, 0, wy, wx)], axis=1)
    tri = jnp.concatenate([lower, upper])
    n = _normalize(_cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]), _unit(2, tri))
    side, edge = _side_normals(tri, n)
    vside = jnp.stack([-edge[..., 1], edge[..., 0], jnp.zeros_like(edge[..., 0])], axis=-1)
    # Edges along x, along y, and diagonals, each with the far vertices of its two triangles.
    ex = (at(0, 0, wy + 1, wx), at(0, 1, wy + 1, wx), at(1, 1, wy + 1, wx), at(-1, 0, wy + 1, wx))
    ey = (at(0, 0, wy, wx + 1), at(1, 0, wy, wx + 1), at(1, 1, wy, wx + 1), at(0, -1, wy, wx + 1))
    ed = (at(0, 0, wy, wx), at(1, 1, wy, wx), at(0, 1, wy, wx), at(1, 0, wy, wx))
    ea, eb, o1, o2 = (jnp.concatenate(f) for f in zip(ex, ey, ed))
    far = jnp.stack([o1, o2], axis=1) - ea[:, None, :]
    nv = (wy + 1, wx + 1)
    vert = at(0, 0, *nv)
    nbr = jnp.stack([at(1, 0, *nv), at(-1, 0, *nv), at(0, 1, *nv), at(0, -1, *nv), at(1, 1, *nv),
                     at(-1, -1, *nv)], axis=1) - vert[:, None, :]
    return _Terrain(tri, n, side, vside, ea, eb, far, CONE_SLACK * _norm(far), vert, nbr,
                    CONE_SLACK * _norm(nbr))


def _peak(w, rel, slack, strict=False):
    """Whether direction w (..., 3) is an outward normal of the terrain at a feature whose neighbours
    lie at `rel` (..., k, 3) from it: w points up and no neighbour rises above the plane through the
    feature normal to w (by more than `slack`). `strict` also asks that one lies below it (by more
    than `slack`), so that flat ground is no peak. Edge features pass their far vertices relative to
    an endpoint: w is normal to the edge, so any point of the edge serves as the base."""
    proj = _dot(w[..., None, :], rel)
    ok = (w[..., 2] > 0) & jnp.all(proj <= slack, axis=-1)
    if strict:
        ok = ok & jnp.any(proj < -slack, axis=-1)
    return ok


def _point_terrain(c, ter: _Terrain):
    """Contact candidates of point c (3,) with the terrain: signed distance (N,), nearest terrain point
    (N, 3), outward terrain normal (N, 3), validity (N,), over faces, edges and vertices.

    A face counts when c lies above it within its normal prism (its distance to the face), or below
    it within its vertical prism (then c is under the terrain, which is this face there; minus its
    distance to the face's plane). An edge or vertex counts when it is a local peak seen from c (then
    c is above it).
    """
    h = _dot(c - ter.tri[:, 0], ter.n)
    over_normal = jnp.all(_dot(ter.side, c - ter.tri) >= 0.0, axis=-1)
    over_vertical = jnp.all(_dot(ter.vside, c - ter.tri) >= 0.0, axis=-1)
    over = sm.where(h >= 0.0, over_normal, over_vertical)
    up = _unit(2, c)
    t, qe = _closest_on_segment(ter.edge_a, ter.edge_b, c)
    we = _normalize(c - qe, up)
    ok_e = (t > 0) & (t < 1) & _peak(we, ter.edge_far, ter.edge_slack)
    wv = _normalize(c - ter.vert, up)
    ok_v = _peak(wv, ter.nbr, ter.nbr_slack)
    sd = jnp.concatenate([h, _norm(c - qe), _norm(c - ter.vert)])
    q = jnp.concatenate([c - h[:, None] * ter.n, qe, ter.vert])
    w = jnp.concatenate([ter.n, we, wv])
    return sd, q, w, jnp.concatenate([over, ok_e, ok_v])


def _segment_terrain(p0, p1, ter: _Terrain):
    """Contact candidates of segment p0-p1 with the terrain: signed distance (N,), nearest segment
    point (N, 3), outward terrain normal (N, 3), validity (N,).

    A face counts when part of the segment lies below it within its vertical prism, i.e. under the
    terrain (the deepest point of that part, by distance to the face's plane). Edges and vertices
    count where they are local peaks seen from the segment's nearest point. The segment's endpoints
    above faces are the caller's point candidates.
    """
    d = p1 - p0
    a = _dot(ter.vside, p0 - ter.tri)                           # (T, 3): a + t b >= 0 over the triangle
    b = _dot(ter.vside, d)
    t = _div(-a, b)
    t_lo = jnp.maximum(jnp.max(sm.where(b > 0, t, -BIG), axis=1), 0.0)
    t_hi = jnp.minimum(jnp.min(sm.where(b < 0, t, BIG), axis=1), 1.0)
    over = (t_lo <= t_hi) & ~jnp.any((b == 0) & (a < 0), axis=1)
    h0 = _dot(p0 + t_lo[:, None] * d - ter.tri[:, 0], ter.n)
    h1 = _dot(p0 + t_hi[:, None] * d - ter.tri[:, 0], ter.n)
    h = jnp.minimum(h0, h1)
    pf = p0 + sm.where(h0 <= h1, t_lo, t_hi)[:, None] * d
    up = _unit(2, p0)
    _, te, ps, pe = _closest_segments(p0, p1, ter.edge_a, ter.edge_b)
    we = _normalize(ps - pe, up)
    ok_e = (te > 0) & (te < 1) & _peak(we, ter.edge_far, ter.edge_slack, strict=True)
    _, pv = _closest_on_segment(p0, p1, ter.vert)
    wv = _normalize(pv - ter.vert, up)
    ok_v = _peak(wv, ter.nbr, ter.nbr_slack, strict=True)
    sd = jnp.concatenate([h, _norm(ps - pe), _norm(pv - ter.vert)])
    p = jnp.concatenate([pf, ps, pv])
    w = jnp.concatenate([ter.n, we, wv])
    return sd, p, w, jnp.concatenate([over & (h < 0), ok_e, ok_v])


def _best(valid, score, k):
    """Indices of the k smallest `score` among valid entries (invalid ones last)."""
    _, idx = jax.lax.top_k(sm.where(valid, -score, -BIG), k)
    return idx


def _sphere_rows(c, r, sd, w, valid, idx):
    """Rows for a sphere (c, r) from candidates (distance of its centre, outward terrain normal)."""
    sd, w = sd[idx], w[idx]
    return _rows(sd - r, c - w * (0.5 * (sd + r))[..., None], w, valid[idx])


def heightfield_sphere(hf: Geom, sphere: Geom) -> Contact:
    c = _unrotate(hf.mat, sphere.pos - hf.pos)
    r = sphere.size[0]
    sd, _, w, valid = _point_terrain(c, _terrain(hf, c))
    rows = _sphere_rows(c, r, sd, w, valid, _best(valid, sd, 4))
    return _to_world(hf, _dedupe(rows, DEDUPE * r))


def heightfield_capsule(hf: Geom, capsule: Geom) -> Contact:
    p0, p1 = (_unrotate(hf.mat, p - hf.pos) for p in _segment(capsule))
    r = capsule.size[0]
    ter = _terrain(hf, 0.5 * (p0 + p1))
    rows = []
    for p in (p0, p1):                                          # each cap as a sphere: its best feature
        sd, _, w, valid = _point_terrain(p, ter)
        rows.append(_sphere_rows(p, r, sd, w, valid, _best(valid, sd, 1)))
    sd, ps, w, valid = _segment_terrain(p0, p1, ter)
    i = _best(valid, sd, 2)
    rows.append(_rows(sd[i] - r, ps[i] - w[i] * (0.5 * (sd[i] + r))[:, None], w[i], valid[i]))
    return _to_world(hf, _dedupe(_stack(rows), DEDUPE * r))


def heightfield_box(hf: Geom, box: Geom) -> Contact:
    h = box.size
    mat = _unrotate(hf.mat, box.mat.T).T                        # box pose in the height field's frame
    center = _unrotate(hf.mat, box.pos - hf.pos)
    corners = _rotate(mat, _const(_CUBE.vert, h) * h) + center                # (8, 3)
    ter = _terrain(hf, center)
    # Each corner against the terrain right around it (a small window of its own): a point's nearest
    # terrain point is no farther sideways than the point is from the terrain.
    sd, _, w, valid = jax.vmap(lambda c: _point_terrain(c, _terrain(hf, c, CORNER_CELLS)))(corners)
    k = jnp.argmin(sm.where(valid, sd, BIG), axis=1)[:, None]
    sd_c = jnp.take_along_axis(sd, k, axis=1)[:, 0]
    w_c = jnp.take_along_axis(w, k[..., None], axis=1)[:, 0]
    ok_c = jnp.any(valid, axis=1)
    i = _best(ok_c, sd_c, 4)
    corner_rows = _rows(sd_c[i], corners[i] - w_c[i] * (0.5 * sd_c[i])[:, None], w_c[i], ok_c[i])
    # Terrain vertices that are peaks under the box (in the box frame: distance to the box).
    vb = _unrotate(mat, ter.vert - center)
    q = sm.clip(vb, -h, h)
    outside = jnp.any(jnp.abs(vb) > h, axis=1)
    depth = h - jnp.abs(vb)
    face = jnp.arange(3) == jnp.argmin(depth, axis=1)[:, None]
    sign = sm.where(vb >= 0, 1.0, -1.0)
    n_face = sm.where(face, sign, 0.0)
    n_box = sm.where(outside[:, None], _normalize(vb - q, n_face), n_face)    # outward, box frame
    sd_v = sm.where(outside, _norm(vb - q), -jnp.min(depth, axis=1))
    qb = sm.where(outside[:, None], q, sm.where(face, sign * h, vb))
    w_v = -_rotate(mat, n_box)
    ok_v = _peak(w_v, ter.nbr, ter.nbr_slack, strict=True)
    j = _best(ok_v, sd_v, 4)
    vertex_rows = _rows(sd_v[j], _rotate(mat, 0.5 * (vb[j] + qb[j])) + center, w_v[j], ok_v[j])
    rows = _stack([corner_rows, vertex_rows])
    return _to_world(hf, _dedupe(rows, DEDUPE * _norm(h)))


# Kernels written with x, y, z first, which accept trailing batch axes (see plane_sphere).
BATCHED = frozenset({"plane_sphere", "plane_capsule", "plane_box", "sphere_sphere", "sphere_capsule",
                     "capsule_capsule"})
# Of those, the kernels that read no more of a collider's rotation than its third column (a plane's
# normal, a capsule's axis; a sphere's none): the runtime gathers only that column for their pairs.
Z_AXIS_ONLY = frozenset({"plane_sphere", "plane_capsule", "sphere_sphere", "sphere_capsule", "capsule_capsule"})

KERNELS: dict[str, Callable[[Geom, Geom], Contact]] = {
    "plane_sphere": plane_sphere,
    "plane_capsule": plane_capsule,
    "plane_box": plane_box,
    "plane_mesh": plane_mesh,
    "heightfield_sphere": heightfield_sphere,
    "heightfield_capsule": heightfield_capsule,
    "heightfield_box": heightfield_box,
    "sphere_sphere": sphere_sphere,
    "sphere_capsule": sphere_capsule,
    "sphere_box": sphere_box,
    "sphere_mesh": sphere_mesh,
    "capsule_capsule": capsule_capsule,
    "capsule_box": capsule_box,
    "capsule_mesh": capsule_mesh,
    "box_box": box_box,
    "box_mesh": box_mesh,
    "mesh_mesh": mesh_mesh,
}
