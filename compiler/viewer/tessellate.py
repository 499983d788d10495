"""Triangle meshes of colliders, for the browser viewer (numpy only).

Where it sits: compiler/viewer, between the runtime `Model` and the HTML page. Each collider becomes
flat arrays of triangle vertices in its body's frame (positions, normals), so the page uploads its
geometry once and moves whole bodies by one transform per frame. Shapes follow the runtime's
conventions (collision.Geom): capsules along local z, planes facing +z, height-field rows along y,
cells split along the diagonal (i, j)–(i+1, j+1); meshes are drawn as the convex hull the simulation
uses (`geom_mesh[g]`'s merged face polygons).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from scenec.runtime.collision_table import Shape

# Tessellation density: segments around a sphere's or capsule's axis and from pole to pole. 24 × 12
# keeps silhouettes round at a few hundred pixels across while a 15-body scene stays under 30k
# triangles.
ROUND_SEGMENTS = 24
ROUND_RINGS = 12
# An unbounded plane (display size 0) is drawn as a square this many times the scene's size.
INFINITE_PLANE_SCALE = 30.0


class Triangles(NamedTuple):
    """Unindexed triangles (3 vertices each), in some frame.

    position: (N, 3) m
    normal:   (N, 3) unit
    uv:       (N, 2) plane coordinates for the checkerboard (planes only, else 0), m
    """

    position: np.ndarray
    normal: np.ndarray
    uv: np.ndarray


def _tri(position, normal, uv=None) -> Triangles:
    position = np.asarray(position, np.float64).reshape(-1, 3)
    normal = np.asarray(normal, np.float64).reshape(-1, 3)
    uv = np.zeros((len(position), 2)) if uv is None else np.asarray(uv, np.float64).reshape(-1, 2)
    return Triangles(position, normal, uv)


def _grid_triangles(points, normals) -> Triangles:
    """Two triangles per cell of a (rows, cols, 3) grid of points (counter-clockwise from outside
    when rows run along +v and columns along +u with u × v outward)."""
    a, b = points[:-1, :-1], points[:-1, 1:]
    c, d = points[1:, 1:], points[1:, :-1]
    na, nb, nc, nd = normals[:-1, :-1], normals[:-1, 1:], normals[1:, 1:], normals[1:, :-1]
    pos = np.stack([a, b, c, a, c, d], axis=2)
    nrm = np.stack([na, nb, nc, na, nc, nd], axis=2)
    return _tri(pos, nrm)


def sphere(radius: float, centre=(0.0, 0.0, 0.0), z_from=-np.pi / 2, z_to=np.pi / 2) -> Triangles:
    """A latitude-longitude sphere (or the band of it between latitudes z_from and z_to)."""
    rings = max(2, int(round(ROUND_RINGS * (z_to - z_from) / np.pi)))
    lat = np.linspace(z_from, z_to, rings + 1)
    lon = np.linspace(0.0, 2 * np.pi, ROUND_SEGMENTS + 1)
    n = np.stack([np.cos(lat)[:, None] * np.cos(lon)[None, :],
                  np.cos(lat)[:, None] * np.sin(lon)[None, :],
                  np.broadcast_to(np.sin(lat)[:, None], (len(lat), len(lon)))], axis=-1)
    return _grid_triangles(np.asarray(centre) + radius * n, n)


def capsule(radius: float, half_length: float) -> Triangles:
    """Two half spheres joined by a cylinder, along local z."""
    lon = np.linspace(0.0, 2 * np.pi, ROUND_SEGMENTS + 1)
    ring = np.stack([np.cos(lon), np.sin(lon), np.zeros_like(lon)], axis=-1)
    z = np.array([-half_length, half_length])
    pts = radius * ring[None, :, :] + np.stack([np.zeros(2), np.zeros(2), z], -1)[:, None, :]
    side = _grid_triangles(pts, np.broadcast_to(ring, pts.shape))
    top = sphere(radius, (0, 0, half_length), 0.0, np.pi / 2)
    bottom = sphere(radius, (0, 0, -half_length), -np.pi / 2, 0.0)
    return concat([side, top, bottom])


def box(half) -> Triangles:
    hx, hy, hz = half
    tris = []
    for axis in range(3):
        for sign in (-1.0, 1.0):
            n = np.zeros(3)
            n[axis] = sign
            u, v = (axis + 1) % 3, (axis + 2) % 3
            if sign < 0:
                u, v = v, u                      # keep u × v = n (counter-clockwise from outside)
            h = np.array([hx, hy, hz])
            corners = []
            for cu, cv in ((-1, -1), (1, -1), (1, 1), (-1, 1)):
                p = n * h
                p[u] += cu * h[u]
                p[v] += cv * h[v]
                corners.append(p.copy())
            c = np.array(corners)
            tris.append(_tri(c[[0, 1, 2, 0, 2, 3]], np.broadcast_to(n, (6, 3))))
    return concat(tris)


def plane(half_x: float, half_y: float) -> Triangles:
    c = np.array([[-half_x, -half_y, 0], [half_x, -half_y, 0], [half_x, half_y, 0], [-half_x, half_y, 0]])
    idx = [0, 1, 2, 0, 2, 3]
    return _tri(c[idx], np.broadcast_to([0.0, 0.0, 1.0], (6, 3)), c[idx, :2])


def convex_hull(hull) -> Triangles:
    """A runtime ConvexData hull: each merged face polygon as a fan, padding removed (repeated faces
    and the zero-length sides of padded polygons)."""
    normals = np.asarray(hull.face_normal, np.float64)
    offsets = np.asarray(hull.face_offset, np.float64)
    polys = np.asarray(hull.face_vert, np.float64)
    seen = set()
    tris = []
    for n, off, poly in zip(normals, offsets, polys):
        key = tuple(np.round(np.append(n, off), 9))
        if key in seen:
            continue
        seen.add(key)
        keep = [0] + [k for k in range(1, len(poly)) if np.linalg.norm(poly[k] - poly[k - 1]) > 1e-12]
        ring = poly[keep]
        if len(ring) > 3 and np.linalg.norm(ring[-1] - ring[0]) <= 1e-12:
            ring = ring[:-1]
        for k in range(1, len(ring) - 1):
            tris.append(_tri(ring[[0, k, k + 1]], np.broadcast_to(n, (3, 3))))
    return concat(tris)


def heightfield(elevation, size_x: float, size_y: float) -> Triangles:
    """The elevation grid (nrow along y, ncol along x) as flat-shaded triangles, split along the
    diagonal (i, j)–(i+1, j+1) as the collision kernels split it, plus walls down to the lowest
    point so the terrain reads as a solid."""
    e = np.asarray(elevation, np.float64)
    nrow, ncol = e.shape
    x = np.linspace(-size_x, size_x, ncol)
    y = np.linspace(-size_y, size_y, nrow)
    p = np.stack(np.broadcast_arrays(x[None, :], y[:, None], e), axis=-1)    # (nrow, ncol, 3)
    a, b, c, d = p[:-1, :-1], p[:-1, 1:], p[1:, 1:], p[1:, :-1]
    tri = np.concatenate([np.stack([a, b, c], 2).reshape(-1, 3, 3), np.stack([a, c, d], 2).reshape(-1, 3, 3)])
    n = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    n /= np.linalg.norm(n, axis=-1, keepdims=True)
    parts = [_tri(tri, np.repeat(n, 3, axis=0))]
    base = float(e.min()) - 0.02 * max(size_x, size_y)
    edges = [(p[0, :], (0, -1, 0)), (p[-1, ::-1], (0, 1, 0)), (p[::-1, 0], (-1, 0, 0)), (p[:, -1], (1, 0, 0))]
    for line, normal in edges:
        top0, top1 = line[:-1], line[1:]
        bot0, bot1 = top0.copy(), top1.copy()
        bot0[:, 2] = bot1[:, 2] = base
        quad = np.stack([bot0, bot1, top1, bot0, top1, top0], 1).reshape(-1, 3)
        parts.append(_tri(quad, np.broadcast_to(normal, quad.shape)))
    return concat(parts)


def concat(parts) -> Triangles:
    parts = [p for p in parts if len(p.position)]
    if not parts:
        return _tri(np.zeros((0, 3)), np.zeros((0, 3)))
    return Triangles(*(np.concatenate([getattr(p, f) for p in parts]) for f in Triangles._fields))


def transform(t: Triangles, pos, quat) -> Triangles:
    """Move triangles by a rotation (quaternion w, x, y, z) then a translation."""
    w, x, y, z = np.asarray(quat, np.float64) / np.linalg.norm(quat)
    rot = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                    [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                    [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])
    return Triangles(t.position @ rot.T + np.asarray(pos, np.float64), t.normal @ rot.T, t.uv)


def geom_triangles(model, g: int, scene_radius: float) -> Triangles:
    """Collider g of a runtime Model, in its body's frame."""
    shape = Shape(int(model.geom_shape[g]))
    size = np.asarray(model.geom_size[g], np.float64)
    if shape is Shape.PLANE:
        hx, hy = size[0], size[1]
        if hx <= 0 or hy <= 0:
            hx = hy = INFINITE_PLANE_SCALE * scene_radius
        local = plane(hx, hy)
    elif shape is Shape.SPHERE:
        local = sphere(size[0])
    elif shape is Shape.CAPSULE:
        local = capsule(size[0], size[1])
    elif shape is Shape.BOX:
        local = box(size)
    elif shape is Shape.MESH:
        local = convex_hull(model.geom_mesh[g])
    else:
        elev = np.asarray(model.geom_hfield[g].padded_elevation)[1:-1, 1:-1]
        local = heightfield(elev, size[0], size[1])
    return transform(local, np.asarray(model.geom_pos[g]), np.asarray(model.geom_quat[g]))
