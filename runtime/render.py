"""A CPU ray caster for compiled scenes: body poses → RGB images, batched over frames.

Where it sits: after the step, beside `trajectory.py`. `scenec render` draws a trajectory with it
(PNG, GIF, MP4 without a browser or a GPU); `render_frame` is a pure jnp function of the poses, so
`jax.vmap` over environments turns it into pixel observations. jax and numpy only.

Every collider is intersected analytically in its own frame: planes (one-sided, +z up, finite when
their display size is set), spheres, capsules (a cylinder and two balls), boxes (slabs), convex
meshes (the intersection of their hull's face half-spaces) and height fields (the ray walks the
grid cells it crosses and meets each cell's two triangles). The nearest hit per pixel is shaded
with Lambert + ambient light from one directional light, a small specular highlight, hard shadows
(a second ray toward the light), a checkerboard on planes that fades where its cells get smaller
than a pixel, and a sky gradient behind everything. Colours are the colliders' `geom_rgba` (alpha 0
hides a collider), lit in linear space and written as sRGB.

Camera model (a pinhole; tests project with the same equations, written independently):
  forward f = unit(target - eye), right r = unit(f × up), up' = r × f,
  focal length in pixels F = (height / 2) / tan(fovy / 2).
  A world point X with depth z = (X - eye)·f > 0 appears at image coordinates
      u = width / 2 + F (X - eye)·r / z,   v = height / 2 - F (X - eye)·up' / z,
  where pixel (row i, column j) covers u ∈ [j, j + 1), v ∈ [i, i + 1), (0, 0) the top-left corner.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .collision_table import Shape
from .types import Model

# A ray parameter standing for "no hit": finite, so that min/argmin never meet inf - inf.
BIG = 1e30
# Hits closer than this to the ray origin (m) are ignored: the camera sits outside every collider,
# and shadow rays start just off the surface they leave.
T_MIN = 1e-4
# Shadow rays start this far (m) off the surface along its normal, plus SHADOW_BIAS_REL of the
# distance to the camera: float32 hit points are only that accurate, and a smaller offset lets a
# surface shadow itself in speckles ("shadow acne").
SHADOW_BIAS = 1e-3
SHADOW_BIAS_REL = 2e-4
# Divisors smaller than this are replaced by it (keeping the sign) so rays parallel to a slab or a
# face give huge, finite parameters instead of inf or NaN.
TINY = 1e-12
# Barycentric slack of the ray-triangle test: a ray through the shared diagonal of two terrain
# triangles must not slip between them by rounding (1e-6 of a cell is far below a pixel).
TRIANGLE_EDGE_SLACK = 1e-6
# Contact points shown by the viewer: rows with a signed distance below this, m (resting contacts
# penetrate slightly; 1 mm also shows contacts that are just touching).
CONTACT_SHOW_DISTANCE = 1e-3

# Rays shaded together by `render_frame`: 4096 rays × a dozen colliders × a few float32 temporaries fit
# in a core's L2 cache.
RAY_TILE = 4096

# Light: a direction toward the light in world coordinates (from above, front left, so that shadows
# fall behind and beside bodies seen from the default camera), and the shading weights.
LIGHT_DIR = (-0.35, -0.5, 1.0)
AMBIENT = 0.32
DIFFUSE = 0.68
SPECULAR = 0.18
SHININESS = 24.0
# The checkerboard's dark cells scale the colour by this; it fades to the average of both cells once a
# pixel covers more than half a cell (otherwise a distant floor shimmers with moiré).
CHECKER_DARK = 0.72
SKY_HORIZON = (0.80, 0.84, 0.89)   # sRGB
SKY_ZENITH = (0.42, 0.55, 0.72)
DEFAULT_RGBA = (0.7, 0.7, 0.7, 1.0)
# The automatic camera keeps the bodies' bounding ball within 1/FRAMING_MARGIN of the vertical field
# of view, leaving some of the ground around them in the picture (the viewer does the same).
FRAMING_MARGIN = 1.4


class Camera(NamedTuple):
    """A pinhole camera (see the module docstring). Fields may carry a leading frame axis (T, ...)
    for a camera that moves with the frames.

    eye:    (3,) camera position, world, m
    target: (3,) the point at the image centre, world, m
    up:     (3,) world direction that appears upward (need not be unit or orthogonal)
    fovy:   () vertical field of view, degrees
    """

    eye: jax.Array
    target: jax.Array
    up: jax.Array
    fovy: jax.Array


@dataclasses.dataclass(frozen=True)
class RenderOptions:
    """What fixes the shape of the computation (static under jit).

    width, height: image size in pixels
    samples: rays per pixel along each axis (samples² rays, averaged: anti-aliasing)
    shadows: cast shadow rays
    checker: checkerboard cell size on planes, m (0: plain planes)
    """

    width: int = 320
    height: int = 240
    samples: int = 1
    shadows: bool = True
    checker: float = 0.5


# --------------------------------------------------------------------------------- small helpers


def _dot(a, b):
    return jnp.sum(a * b, axis=-1)


def _unit(v):
    n = jnp.sqrt(jnp.maximum(_dot(v, v), TINY * TINY))
    return v / n[..., None]


def _safe(x):
    """x with magnitudes below TINY replaced by ±TINY (keeps the sign; 0 counts as positive)."""
    return jnp.where(jnp.abs(x) < TINY, jnp.where(x < 0, -TINY, TINY), x)


def _quat_mul(p, q):
    pw, px, py, pz = p[..., 0], p[..., 1], p[..., 2], p[..., 3]
    qw, qx, qy, qz = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    return jnp.stack([pw * qw - px * qx - py * qy - pz * qz,
                      pw * qx + px * qw + py * qz - pz * qy,
                      pw * qy - px * qz + py * qw + pz * qx,
                      pw * qz + px * qy - py * qx + pz * qw], axis=-1)


def _quat_mat(q):
    """(…, 3, 3) rotation matrices of unit quaternions (…, 4); columns are the rotated axes."""
    q = q / jnp.linalg.norm(q, axis=-1, keepdims=True)
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    rows = [jnp.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
            jnp.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
            jnp.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1)]
    return jnp.stack(rows, axis=-2)


def geom_world(m: Model, xpos, xquat):
    """World position (ngeom, 3) and rotation (ngeom, 3, 3) of each collider from body poses
    xpos (nbody, 3), xquat (nbody, 4): xpos[b] + R(xquat[b]) geom_pos, xquat[b] ⊗ geom_quat."""
    b = np.asarray(m.geom_body_id.array)
    body_mat = _quat_mat(xquat[b])
    gpos = xpos[b] + jnp.einsum("gij,gj->gi", body_mat, m.geom_pos.astype(xpos.dtype))
    gmat = _quat_mat(_quat_mul(xquat[b], m.geom_quat.astype(xquat.dtype)))
    return gpos, gmat


# -------------------------------------------------------------------------- ray-shape intersections
# The primitives take ray origins o (P, 3) and unit directions d (P, 3) in the collider's frame and
# return the nearest hit's ray parameter t (P,) (BIG when there is none). Their normals are computed
# afterwards, only for the collider each pixel sees (`_primitive_normal`), which halves the work.
# Meshes and height fields, one collider each, return (t, normal) at once.


def _miss(hit, t):
    return jnp.where(hit & (t > T_MIN), t, BIG)


def ray_sphere(o, d, size):
    r = size[0]
    b = _dot(o, d)
    c = _dot(o, o) - r * r
    disc = b * b - c
    return _miss(disc >= 0, -b - jnp.sqrt(jnp.maximum(disc, 0.0)))


def ray_capsule(o, d, size):
    """Capsule of radius size[0] around the segment z ∈ [-size[1], size[1]]: the nearest of the
    cylinder's side and the two end balls (the flat ends of the cylinder lie inside the balls)."""
    r, h = size[0], size[1]
    a = d[:, 0] ** 2 + d[:, 1] ** 2
    b = o[:, 0] * d[:, 0] + o[:, 1] * d[:, 1]
    c = o[:, 0] ** 2 + o[:, 1] ** 2 - r * r
    disc = b * b - a * c
    t_side = (-b - jnp.sqrt(jnp.maximum(disc, 0.0))) / jnp.maximum(a, TINY)
    z_side = o[:, 2] + t_side * d[:, 2]
    t = _miss((disc >= 0) & (a > TINY) & (jnp.abs(z_side) <= h), t_side)
    for sign in (1.0, -1.0):
        oz = o - jnp.stack([jnp.zeros_like(h), jnp.zeros_like(h), sign * h])
        t = jnp.minimum(t, ray_sphere(oz, d, size))
    return t


def _slab(o, d, half):
    """Entry and exit parameters of the ray through the box |x| <= half, and the entry axis."""
    inv = 1.0 / _safe(d)
    t1 = (-half - o) * inv
    t2 = (half - o) * inv
    near = jnp.minimum(t1, t2)
    far = jnp.maximum(t1, t2)
    return jnp.max(near, axis=-1), jnp.min(far, axis=-1), jnp.argmax(near, axis=-1)


def ray_box(o, d, size):
    t_in, t_out, _ = _slab(o, d, size)
    return _miss(t_in <= t_out, t_in)


def ray_plane(o, d, size):
    """The plane z = 0, seen from above only (colliders below it are inside the ground); bounded
    by |x| <= size[0], |y| <= size[1] where those are positive."""
    dz = d[:, 2]
    t = -o[:, 2] / _safe(dz)
    p = o + t[:, None] * d
    inside = (((size[0] <= 0) | (jnp.abs(p[:, 0]) <= size[0]))
              & ((size[1] <= 0) | (jnp.abs(p[:, 1]) <= size[1])))
    return _miss((dz < -TINY) & (o[:, 2] > 0) & inside, t)


def _primitive_normal(shape, p, size):
    """Outward unit normal (P, 3) at local surface points p (P, 3) of primitives of the given
    shapes (P,) and sizes (P, 3)."""
    sphere = _unit(p)
    axis_point = jnp.clip(p[:, 2], -size[:, 1], size[:, 1])
    capsule = _unit(p - jnp.stack([jnp.zeros_like(axis_point), jnp.zeros_like(axis_point), axis_point], -1))
    face = jnp.argmax(jnp.abs(p) / jnp.maximum(size, TINY), axis=-1)      # the face the point lies on
    box = jnp.where(p < 0, -1.0, 1.0) * jax.nn.one_hot(face, 3, dtype=p.dtype)
    up = jnp.broadcast_to(jnp.asarray([0.0, 0.0, 1.0], p.dtype), p.shape)
    shape = shape[:, None]
    return jnp.where(shape == Shape.SPHERE, sphere, jnp.where(shape == Shape.CAPSULE, capsule,
                                                                  jnp.where(shape == Shape.BOX, box, up)))


def ray_convex(o, d, normal, offset):
    """The convex polytope {x : normal_f · x <= offset_f for every face f}: the ray enters at the
    latest entering face and must do so before its earliest exit. Repeated (padding) faces change
    neither the max nor the min."""
    denom = d @ normal.T                               # (P, F)
    num = offset[None, :] - o @ normal.T               # (P, F) > 0 while the origin is inside face f
    t_face = num / _safe(denom)
    entering = denom < -TINY
    exiting = denom > TINY
    t_in = jnp.max(jnp.where(entering, t_face, -BIG), axis=1)
    t_out = jnp.min(jnp.where(exiting, t_face, BIG), axis=1)
    parallel_outside = jnp.any(~entering & ~exiting & (num < 0), axis=1)
    t = _miss((t_in <= t_out) & ~parallel_outside, t_in)
    face = jnp.argmax(jnp.where(entering, t_face, -BIG), axis=1)
    return t, normal[face]


def _hfield_height(elev, sx, sy, x, y):
    """Height (P,) and slopes dh/dx, dh/dy of the triangulated grid at local (x, y); cells split
    along the diagonal from (row i, col j) to (i + 1, j + 1), as the collision kernels do."""
    nrow, ncol = elev.shape
    u = jnp.clip((x + sx) / (2 * sx) * (ncol - 1), 0.0, ncol - 1)
    v = jnp.clip((y + sy) / (2 * sy) * (nrow - 1), 0.0, nrow - 1)
    j = jnp.clip(jnp.floor(u).astype(jnp.int32), 0, ncol - 2)
    i = jnp.clip(jnp.floor(v).astype(jnp.int32), 0, nrow - 2)
    fu, fv = u - j, v - i
    h00, h01 = elev[i, j], elev[i, j + 1]
    h10, h11 = elev[i + 1, j], elev[i + 1, j + 1]
    upper = fu >= fv                                   # triangle (i,j), (i,j+1), (i+1,j+1)
    h = jnp.where(upper, h00 + fu * (h01 - h00) + fv * (h11 - h01),
                  h00 + fv * (h10 - h00) + fu * (h11 - h10))
    dh_du = jnp.where(upper, h01 - h00, h11 - h10)
    dh_dv = jnp.where(upper, h11 - h01, h10 - h00)
    return h, dh_du * (ncol - 1) / (2 * sx), dh_dv * (nrow - 1) / (2 * sy)


def _ray_triangle(o, d, a, b, c):
    """Möller–Trumbore: ray parameter (P,) of the hit with triangles a, b, c (P, 3) (BIG: none) and
    the triangles' unit normals (P, 3), oriented toward +z (terrain faces up)."""
    e1, e2 = b - a, c - a
    pvec = jnp.cross(d, e2)
    det = _dot(e1, pvec)
    inv = 1.0 / _safe(det)
    s = o - a
    u = _dot(s, pvec) * inv
    q = jnp.cross(s, e1)
    v = _dot(d, q) * inv
    t = _dot(e2, q) * inv
    inside = (u >= -TRIANGLE_EDGE_SLACK) & (v >= -TRIANGLE_EDGE_SLACK) & (u + v <= 1 + TRIANGLE_EDGE_SLACK)
    n = _unit(jnp.cross(e1, e2))
    return _miss((jnp.abs(det) > TINY) & inside, t), n * jnp.where(n[:, 2:3] < 0, -1.0, 1.0)


def ray_heightfield(o, d, size, elev):
    """Terrain z = h(x, y) over |x| <= size[0], |y| <= size[1], with walls down to its lowest
    point. The ray walks the grid's cells in the order it crosses them (a 2D DDA over a fixed
    nrow + ncol steps, enough to cross the grid) and intersects each cell's two triangles exactly;
    the first hit wins."""
    nrow, ncol = elev.shape
    sx, sy = size[0], size[1]
    zlo, zhi = jnp.min(elev), jnp.max(elev)
    mid = jnp.stack([jnp.zeros_like(sx), jnp.zeros_like(sx), 0.5 * (zlo + zhi)])
    half = jnp.stack([sx, sy, jnp.maximum(0.5 * (zhi - zlo), 1e-6)])
    t_in, t_out, axis = _slab(o - mid, d, half)
    in_box = t_in <= t_out
    t0 = jnp.maximum(t_in, T_MIN)
    cu, cv = 2 * sx / (ncol - 1), 2 * sy / (nrow - 1)        # cell size along x and y, m
    entry = o + t0[:, None] * d
    u0, v0 = (entry[:, 0] + sx) / cu, (entry[:, 1] + sy) / cv  # grid coordinates at entry
    j0 = jnp.clip(jnp.floor(u0), 0, ncol - 2).astype(jnp.int32)
    i0 = jnp.clip(jnp.floor(v0), 0, nrow - 2).astype(jnp.int32)
    du, dv = d[:, 0] / cu, d[:, 1] / cv                        # grid units per unit of t
    step_j = jnp.where(du > 0, 1, -1).astype(jnp.int32)
    step_i = jnp.where(dv > 0, 1, -1).astype(jnp.int32)
    still_u, still_v = jnp.abs(du) < TINY, jnp.abs(dv) < TINY
    next_u = jnp.where(du > 0, j0 + 1, j0).astype(d.dtype)
    next_v = jnp.where(dv > 0, i0 + 1, i0).astype(d.dtype)
    tmax_u = jnp.where(still_u, BIG, t0 + (next_u - u0) / _safe(du))
    tmax_v = jnp.where(still_v, BIG, t0 + (next_v - v0) / _safe(dv))
    tdelta_u = jnp.where(still_u, BIG, 1.0 / jnp.abs(_safe(du)))
    tdelta_v = jnp.where(still_v, BIG, 1.0 / jnp.abs(_safe(dv)))

    def corner(i, j):
        ic, jc = jnp.clip(i, 0, nrow - 1), jnp.clip(j, 0, ncol - 1)
        return jnp.stack([-sx + jc * cu, -sy + ic * cv, elev[ic, jc]], axis=-1)

    def cross_cell(carry, _):
        i, j, tmu, tmv, t_hit, n_hit = carry
        valid = (i >= 0) & (i <= nrow - 2) & (j >= 0) & (j <= ncol - 2)
        p00, p01, p11, p10 = corner(i, j), corner(i, j + 1), corner(i + 1, j + 1), corner(i + 1, j)
        t_up, n_up = _ray_triangle(o, d, p00, p01, p11)
        t_lo, n_lo = _ray_triangle(o, d, p00, p11, p10)
        t_cell = jnp.where(valid, jnp.minimum(t_up, t_lo), BIG)
        n_cell = jnp.where((t_up <= t_lo)[:, None], n_up, n_lo)
        first = (t_hit >= BIG) & (t_cell < BIG)
        t_hit = jnp.where(first, t_cell, t_hit)
        n_hit = jnp.where(first[:, None], n_cell, n_hit)
        go_u = tmu < tmv
        return (jnp.where(go_u, i, i + step_i), jnp.where(go_u, j + step_j, j),
                jnp.where(go_u, tmu + tdelta_u, tmu), jnp.where(go_u, tmv, tmv + tdelta_v),
                t_hit, n_hit), None

    init = (i0, j0, tmax_u, tmax_v, jnp.full_like(t0, BIG), jnp.zeros_like(d))
    (_, _, _, _, t_top, n_top), _ = jax.lax.scan(cross_cell, init, None, length=nrow + ncol)

    h0, _, _ = _hfield_height(elev, sx, sy, entry[:, 0], entry[:, 1])
    below0 = entry[:, 2] < h0                                  # entered through a wall, under the top
    n_wall = -jnp.sign(_safe(d)) * jax.nn.one_hot(axis, 3, dtype=d.dtype)
    t = jnp.where(below0, t0, t_top)
    normal = jnp.where(below0[:, None], n_wall, n_top)
    return _miss(in_box & (t < BIG), t), normal


_PRIMITIVES = {Shape.PLANE: ray_plane, Shape.SPHERE: ray_sphere, Shape.CAPSULE: ray_capsule,
               Shape.BOX: ray_box}


def cast(m: Model, gpos, gmat, o, d, normals: bool = True):
    """Nearest collider along each ray: t (P,), world unit normal (P, 3), geom id (P,) (-1: none).

    gpos (ngeom, 3), gmat (ngeom, 3, 3) from `geom_world`; o, d (P, 3) world origins and unit
    directions. Colliders of one primitive shape are intersected together (vmapped); each mesh and
    height field on its own (their padded tables may differ in size). Without `normals` (shadow
    rays), the normal is zeros and costs nothing."""
    shapes = np.asarray(m.geom_shape.array)
    size = m.geom_size.astype(o.dtype)
    visible = m.geom_rgba[:, 3] > 0
    ts, ids, special = [], [], []

    def local(g):
        return (o - gpos[g]) @ gmat[g], d @ gmat[g]      # R^T (o - p), R^T d, as row vectors

    for shape, fn in _PRIMITIVES.items():
        g = np.flatnonzero(shapes == shape)
        if len(g):
            ts.append(jax.vmap(lambda p, r, sz: fn((o - p) @ r, d @ r, sz))(gpos[g], gmat[g], size[g]))
            ids.extend(int(i) for i in g)
    for g in np.flatnonzero(shapes == Shape.MESH):
        hull = m.geom_mesh[g]
        lo, ld = local(g)
        t, n = ray_convex(lo, ld, jnp.asarray(hull.face_normal, o.dtype), jnp.asarray(hull.face_offset, o.dtype))
        ts.append(t[None])
        ids.append(int(g))
        special.append((int(g), n @ gmat[g].T))
    for g in np.flatnonzero(shapes == Shape.HEIGHTFIELD):
        elev = jnp.asarray(m.geom_hfield[g].padded_elevation, o.dtype)[1:-1, 1:-1]
        lo, ld = local(g)
        t, n = ray_heightfield(lo, ld, size[g], elev)
        ts.append(t[None])
        ids.append(int(g))
        special.append((int(g), n @ gmat[g].T))
    P = o.shape[0]
    if not ts:
        return jnp.full((P,), BIG, o.dtype), jnp.zeros((P, 3), o.dtype), jnp.full((P,), -1, jnp.int32)
    ids = np.asarray(ids, np.int32)
    t_all = jnp.where(visible[ids][:, None], jnp.concatenate(ts), BIG)      # (G, P)
    t = jnp.min(t_all, axis=0)
    geom = jnp.where(t < BIG, jnp.asarray(ids)[jnp.argmin(t_all, axis=0)], -1)
    if not normals:
        return t, jnp.zeros((P, 3), o.dtype), geom
    g = jnp.maximum(geom, 0)
    p_local = jnp.einsum("pi,pij->pj", o + jnp.minimum(t, 1e6)[:, None] * d - gpos[g], gmat[g])
    shape_of = jnp.asarray(shapes, jnp.int32)[g]
    normal = jnp.einsum("pij,pj->pi", gmat[g], _primitive_normal(shape_of, p_local, size[g]))
    for gs, n in special:
        normal = jnp.where((geom == gs)[:, None], n, normal)
    return t, normal, geom


# ------------------------------------------------------------------------------------- the camera


def camera_rays(camera: Camera, width: int, height: int, samples: int = 1):
    """Ray origins and unit directions (height·samples, width·samples, 3) through the sample points
    of each pixel (a samples × samples grid at the centres of equal sub-cells)."""
    eye = jnp.asarray(camera.eye, jnp.float32)
    f = _unit(jnp.asarray(camera.target, jnp.float32) - eye)
    r = _unit(jnp.cross(f, jnp.asarray(camera.up, jnp.float32)))
    u = jnp.cross(r, f)
    focal = (height / 2) / jnp.tan(jnp.deg2rad(jnp.asarray(camera.fovy, jnp.float32)) / 2)
    cols = (jnp.arange(width * samples, dtype=jnp.float32) + 0.5) / samples - width / 2
    rows = height / 2 - (jnp.arange(height * samples, dtype=jnp.float32) + 0.5) / samples
    d = (f[None, None, :] + (cols[None, :, None] * r + rows[:, None, None] * u) / focal)
    d = _unit(d)
    return jnp.broadcast_to(eye, d.shape), d


def _srgb_to_linear(c):
    return jnp.power(jnp.clip(c, 0.0, 1.0), 2.2)


def _linear_to_srgb(c):
    return jnp.power(jnp.clip(c, 0.0, 1.0), 1.0 / 2.2)


def shade(m: Model, gpos, gmat, o, d, focal, options: RenderOptions):
    """Linear RGB (P, 3) seen along rays o, d (P, 3) (world), given the colliders' poses; `focal`
    is the focal length in sample units (for the checkerboard's fading)."""
    t, n, geom = cast(m, gpos, gmat, o, d)
    hit = geom >= 0
    g = jnp.maximum(geom, 0)
    p = o + jnp.minimum(t, 1e6)[:, None] * d
    light = _unit(jnp.asarray(LIGHT_DIR, jnp.float32))
    # A normal facing away from the viewer (the inside of a shape the camera sits in) is flipped.
    n = jnp.where((_dot(n, d) > 0)[:, None], -n, n)

    lit = jnp.ones_like(t)
    if options.shadows:
        bias = SHADOW_BIAS + SHADOW_BIAS_REL * jnp.minimum(t, 1e6)
        so = p + bias[:, None] * n
        st, _, _ = cast(m, gpos, gmat, so, jnp.broadcast_to(light, so.shape), normals=False)
        lit = jnp.where(st < BIG, 0.0, 1.0)

    rgba = jnp.where(jnp.any(m.geom_rgba != 0, axis=1, keepdims=True), m.geom_rgba,
                     jnp.asarray(DEFAULT_RGBA, m.geom_rgba.dtype)).astype(jnp.float32)
    base = _srgb_to_linear(rgba[g, :3])
    if options.checker > 0:
        is_plane = jnp.asarray(np.asarray(m.geom_shape.array) == Shape.PLANE)[g]
        local = jnp.einsum("pi,pij->pj", p - gpos[g], gmat[g])
        cell = jnp.floor(local[:, 0] / options.checker) + jnp.floor(local[:, 1] / options.checker)
        dark = jnp.mod(cell, 2.0) > 0.5
        footprint = t / (focal * jnp.maximum(jnp.abs(_dot(n, d)), 0.05))
        contrast = jnp.clip(1.5 - 2.0 * footprint / options.checker, 0.0, 1.0)
        mean = 0.5 * (1.0 + CHECKER_DARK)
        scale = jnp.where(dark, CHECKER_DARK, 1.0) * contrast + mean * (1.0 - contrast)
        base = base * jnp.where(is_plane, scale, 1.0)[:, None]
    lambert = jnp.maximum(_dot(n, light), 0.0) * lit
    half = _unit(light[None, :] - d)
    spec = SPECULAR * jnp.power(jnp.maximum(_dot(n, half), 0.0), SHININESS) * lambert
    colour = base * (AMBIENT + DIFFUSE * lambert)[:, None] + spec[:, None]

    up = jnp.clip(d[:, 2], 0.0, 1.0)[:, None]
    sky = (_srgb_to_linear(jnp.asarray(SKY_HORIZON, jnp.float32)) * (1 - up)
           + _srgb_to_linear(jnp.asarray(SKY_ZENITH, jnp.float32)) * up)
    return jnp.where(hit[:, None], colour, sky)


def render_frame(m: Model, xpos, xquat, camera: Camera, options: RenderOptions = RenderOptions()):
    """One image (height, width, 3) uint8 of the colliders at body poses xpos (nbody, 3), xquat
    (nbody, 4). Pure jnp: vmap it over environments for pixel observations.

    Rays are shaded in tiles of RAY_TILE (a `lax.map`): every collider's intermediate arrays for one
    tile stay in the CPU's caches, which is several times faster than streaming whole images."""
    W, H, S = options.width, options.height, options.samples
    gpos, gmat = geom_world(m, jnp.asarray(xpos, jnp.float32), jnp.asarray(xquat, jnp.float32))
    o, d = camera_rays(camera, W, H, S)
    P = W * H * S * S
    ntile = -(-P // RAY_TILE)
    pad = ntile * RAY_TILE - P
    o = jnp.pad(o.reshape(-1, 3), ((0, pad), (0, 0)), mode="edge").reshape(ntile, RAY_TILE, 3)
    d = jnp.pad(d.reshape(-1, 3), ((0, pad), (0, 0)), mode="edge").reshape(ntile, RAY_TILE, 3)
    focal = (H * S / 2) / jnp.tan(jnp.deg2rad(jnp.asarray(camera.fovy, jnp.float32)) / 2)
    colour = jax.lax.map(lambda od: shade(m, gpos, gmat, od[0], od[1], focal, options), (o, d))
    colour = colour.reshape(-1, 3)[:P].reshape(H, S, W, S, 3).mean(axis=(1, 3))
    return jnp.round(_linear_to_srgb(colour) * 255.0).astype(jnp.uint8)


@functools.partial(jax.jit, static_argnames=("width", "height"))
def geom_id_image(m: Model, xpos, xquat, camera: Camera, width: int, height: int):
    """Which collider each pixel centre sees (height, width) int32, -1 for none: segmentation
    masks for observations and tests."""
    gpos, gmat = geom_world(m, jnp.asarray(xpos, jnp.float32), jnp.asarray(xquat, jnp.float32))
    o, d = camera_rays(camera, width, height, 1)
    _, _, geom = cast(m, gpos, gmat, o.reshape(-1, 3), d.reshape(-1, 3), normals=False)
    return geom.reshape(height, width)


def _render_frames(m: Model, xpos, xquat, camera: Camera, options: RenderOptions):
    T = xpos.shape[0]
    # Fields without the frame axis (a fixed eye, one field of view) are the same for every frame.
    cams = Camera(*(jnp.broadcast_to(x, (T,) + x.shape) if x.ndim == base else x
                    for x, base in zip(camera, (1, 1, 1, 0))))

    def one(args):
        p, q, cam = args
        return render_frame(m, p, q, cam, options)

    return jax.lax.map(one, (xpos, xquat, cams))


_render_jit = jax.jit(_render_frames, static_argnames=("options",))


def render(m: Model, xpos, xquat, camera: Camera, options: RenderOptions = RenderOptions()):
    """Images (T, height, width, 3) uint8 of T frames: xpos (T, nbody, 3), xquat (T, nbody, 4);
    `camera` fixed ((3,) fields) or one per frame ((T, 3) fields). One jitted `lax.map` over frames."""
    xpos = jnp.asarray(xpos, jnp.float32)
    xquat = jnp.asarray(xquat, jnp.float32)
    camera = Camera(*(jnp.asarray(x, jnp.float32) for x in camera))
    return np.asarray(_render_jit(m, xpos, xquat, camera, options))


# ------------------------------------------------------------------- framing and contact points


def _np_quat_rotate(q, v):
    w, u = q[..., :1], q[..., 1:]
    t = 2.0 * np.cross(u, v)
    return v + w * t + np.cross(u, t)


def geom_radius(m: Model) -> np.ndarray:
    """(ngeom,) radius of a ball around each collider's origin that holds it, m (planes: 0)."""
    shapes = np.asarray(m.geom_shape.array)
    size = np.asarray(m.geom_size, np.float64)
    r = np.zeros(len(shapes))
    for g, s in enumerate(shapes):
        if s == Shape.SPHERE:
            r[g] = size[g, 0]
        elif s == Shape.CAPSULE:
            r[g] = size[g, 0] + size[g, 1]
        elif s == Shape.BOX:
            r[g] = np.linalg.norm(size[g])
        elif s == Shape.MESH:
            hull = m.geom_mesh[g]
            r[g] = np.max(np.linalg.norm(np.asarray(hull.vert, np.float64), axis=-1))
        elif s == Shape.HEIGHTFIELD:
            elev = np.asarray(m.geom_hfield[g].padded_elevation)[1:-1, 1:-1]
            r[g] = math.hypot(size[g, 0], size[g, 1], float(np.max(np.abs(elev))))
    return r


def bounds(m: Model, xpos, xquat, moving_only: bool = True):
    """Centre (…, 3) and radius (…,) of a ball holding the colliders at poses xpos (…, nbody, 3),
    xquat (…, nbody, 4) (numpy). Planes are left out; with `moving_only`, so are the world's
    colliders unless nothing else is there."""
    xpos = np.asarray(xpos, np.float64)
    xquat = np.asarray(xquat, np.float64)
    shapes = np.asarray(m.geom_shape.array)
    body = np.asarray(m.geom_body_id.array)
    keep = shapes != Shape.PLANE
    if moving_only and np.any(keep & (body != 0)):
        keep &= body != 0
    lead = xpos.shape[:-2]
    if not np.any(keep):
        return np.zeros(lead + (3,)), np.ones(lead)
    g = np.flatnonzero(keep)
    centre = xpos[..., body[g], :] + _np_quat_rotate(xquat[..., body[g], :], np.asarray(m.geom_pos)[g])
    rad = geom_radius(m)[g]
    lo = np.min(centre - rad[:, None], axis=-2)
    hi = np.max(centre + rad[:, None], axis=-2)
    mid = 0.5 * (lo + hi)
    radius = np.max(np.linalg.norm(centre - mid[..., None, :], axis=-1) + rad, axis=-1)
    return mid, np.maximum(radius, 1e-3)


def auto_camera(m: Model, xpos, xquat, azimuth: float = 45.0, elevation: float = 25.0,
                fovy: float = 45.0, distance: float | None = None, track: bool = False) -> Camera:
    """A camera that frames the scene over frames xpos (T, nbody, 3), xquat (T, nbody, 4): looking
    from `azimuth` (degrees, counter-clockwise from +x) and `elevation` (degrees above the
    horizon) at the centre of all frames' colliders, or (`track`) at each frame's own centre."""
    centre, radius = bounds(m, xpos, xquat)
    if track:
        target = centre
        r = float(np.max(radius))
    else:
        all_c, all_r = bounds(m, np.reshape(xpos, (1, -1, 3)), np.reshape(xquat, (1, -1, 4)))
        target, r = all_c[0], float(all_r[0])
    if distance is None:
        distance = FRAMING_MARGIN * r / math.sin(math.radians(fovy) / 2)
    az, el = math.radians(azimuth), math.radians(elevation)
    offset = distance * np.array([math.cos(el) * math.cos(az), math.cos(el) * math.sin(az), math.sin(el)])
    eye = np.asarray(target) + offset
    up = np.broadcast_to(np.array([0.0, 0.0, 1.0]), np.shape(eye))
    return Camera(eye=np.asarray(eye, np.float32), target=np.asarray(target, np.float32),
                  up=np.asarray(up, np.float32), fovy=np.float32(fovy))


def contact_points(m: Model, xpos, xquat):
    """Contact points of the kept collider pairs at poses xpos (nbody, 3), xquat (nbody, 4): pos
    (C, 3) world, m, and active (C,) for rows that are real contacts (signed distance below
    CONTACT_SHOW_DISTANCE). C is the model's contact buffer size, so this vmaps over frames."""
    from . import collision

    gpos, gmat = geom_world(m, jnp.asarray(xpos), jnp.asarray(xquat))
    gpos, gmat = gpos.astype(m.geom_size.dtype), gmat.astype(m.geom_size.dtype)
    pos, active = [], []
    for grp in m.pair_groups:
        ids1, ids2 = np.asarray(grp.geom1.array), np.asarray(grp.geom2.array)

        def geoms(ids):
            stack = lambda xs: None if xs[0] is None else jax.tree_util.tree_map(  # noqa: E731
                lambda *a: jnp.stack([jnp.asarray(x) for x in a]), *xs)
            return collision.Geom(pos=gpos[ids], mat=gmat[ids], size=m.geom_size[ids],
                                  mesh=stack([m.geom_mesh[g] for g in ids]),
                                  hfield=stack([m.geom_hfield[g] for g in ids]))

        con = jax.vmap(collision.KERNELS[grp.kernel])(geoms(ids1), geoms(ids2))
        pos.append(con.pos.reshape(-1, 3))
        active.append((con.active & (con.dist < CONTACT_SHOW_DISTANCE)).reshape(-1))
    if not pos:
        return jnp.zeros((0, 3), jnp.float32), jnp.zeros((0,), bool)
    return jnp.concatenate(pos).astype(jnp.float32), jnp.concatenate(active)
