"""Per-collider data that the collision kernels need, prepared once at compile time (numpy only).

Where it sits: the compiler's lowering step calls these functions on each mesh hull and height field
(after trimesh has computed the hull), and stores the results in the runtime model; the kernels in
`runtime/collision.py` read them while tracing. No jax here, so the compiler can call it without
importing jax.

Static shapes. Kernels are traced once per shape pair, so every mesh that shares a kernel must have
arrays of the same shapes: `convex_mesh_data` pads each table to a budget that the caller chooses per
scene (from `convex_mesh_counts` of the largest hull). Padding repeats real entries, never invents
new ones, so that it cannot change any result a kernel computes:
- a repeated vertex does not change a support function (a max over vertices);
- a repeated face (same normal, offset and polygon) does not change a max over face planes;
- a repeated edge does not change a max over edge pairs or a min over edge distances;
- a polygon padded by repeating its last vertex gains zero-length edges, whose side planes have a
  zero normal and therefore exclude nothing.

Height fields are padded by one ring of samples far below the terrain, so that every grid vertex
has six neighbours (the kernels test whether a terrain feature is a local peak) and the terrain
simply drops away at the grid's border. Their window (how many cells around a collider a kernel
examines) is encoded in the shapes of two index arrays, so that it is static without being a Python
int inside a pytree that the runtime vmaps.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

# Polygons of merged hull faces are clipped against each other; a face with more vertices than this
# is replaced, for clipping only, by an inscribed polygon of this many vertices (SAT, distances and
# depths still use the whole face). Eight covers boxes, prisms and most CAD hulls; it keeps the
# clipping candidates at K + K + K^2 = 80 per face pair.
FACE_VERTEX_BUDGET = 8

# Two hull triangles belong to the same face when 1 - cos of the angle between their unit normals is
# below this (an angle of 1.4e-5 rad). A convex hull has one face per outward normal, so the normal
# alone decides. qhull splits a flat face into triangles whose normals agree to rounding (1e-15);
# folds above this angle stay separate faces, and merged ones are flat to 1.4e-5 x the hull's size.
COPLANAR_NORMAL_TOLERANCE = 1e-10


class ConvexData(NamedTuple):
    """A convex hull in its collider's frame, padded to static budgets.

    V = vertex budget, F = face budget, K = vertices per face polygon, E = edge budget.

    vert:        (V, 3) hull vertices, m
    face_normal: (F, 3) unit outward normals of the (merged, polygonal) faces
    face_offset: (F,) plane offsets, m: x is inside when face_normal . x <= face_offset
    face_vert:   (F, K, 3) each face's polygon, counter-clockwise seen from outside, m
    face_side:   (F, K, 3) unit inward normals of the polygon's sides (in the face plane; side k runs
                 from vertex k to k+1; zero for the zero-length sides of padding)
    edge_a:      (E, 3) first endpoint of each hull edge, m
    edge_b:      (E, 3) second endpoint, m
    edge_normal: (E, 2, 3) unit outward normals of the two faces that meet at the edge
    center:      (3,) centroid of the vertices (an interior point), m
    radius:      () largest distance from `center` to a vertex, m (a length scale for tolerances)
    """

    vert: np.ndarray
    face_normal: np.ndarray
    face_offset: np.ndarray
    face_vert: np.ndarray
    face_side: np.ndarray
    edge_a: np.ndarray
    edge_b: np.ndarray
    edge_normal: np.ndarray
    center: np.ndarray
    radius: np.ndarray


class HeightFieldData(NamedTuple):
    """An elevation grid and the window of cells a kernel examines around a collider.

    The grid has nrow rows along y and ncol columns along x, spanning [-size_x, size_x] x
    [-size_y, size_y] of the collider frame (sizes come from `Geom.size`, so they stay traced values).
    Each cell is split into two triangles along its diagonal from (row i, col j) to (i+1, j+1).

    padded_elevation: (nrow + 2, ncol + 2) heights along the local z axis, m: the grid surrounded by
                      one ring of samples far below it (not terrain; neighbours for border vertices)
    window_row:       (wy + 1,) int32 0..wy: row offsets of the window's vertices; wy cells along y
    window_col:       (wx + 1,) int32 0..wx: column offsets; wx cells along x
    """

    padded_elevation: np.ndarray
    window_row: np.ndarray
    window_col: np.ndarray


# ---------------------------------------------------------------------------------------------------
# Convex meshes


class _Hull(NamedTuple):
    vert: np.ndarray            # (n, 3) vertices used by some face
    faces: list                 # polygons, each a list of indices into vert, CCW seen from outside
    normals: np.ndarray         # (nface, 3)
    offsets: np.ndarray         # (nface,)
    edges: list                 # (i, j, face_left, face_right) for each undirected edge


def _merge_faces(vertices: np.ndarray, triangles: np.ndarray) -> _Hull:
    """Group the hull's triangles by plane into polygons, and list the edges between polygons."""
    vertices = np.asarray(vertices, dtype=np.float64).reshape(-1, 3)
    triangles = np.asarray(triangles, dtype=np.int64).reshape(-1, 3)
    if len(triangles) < 4:
        raise ValueError(f"a convex hull needs at least 4 triangles, got {len(triangles)}")
    if triangles.min() < 0 or triangles.max() >= len(vertices):
        raise ValueError("triangle indices out of range")
    used = np.unique(triangles)
    remap = -np.ones(len(vertices), dtype=np.int64)
    remap[used] = np.arange(len(used))
    vert = vertices[used]
    tri = remap[triangles]
    centroid = vert.mean(axis=0)
    scale = float(np.max(np.linalg.norm(vert - centroid, axis=1)))
    if not scale > 0.0:
        raise ValueError("a convex hull needs a positive size")

    p0, p1, p2 = vert[tri[:, 0]], vert[tri[:, 1]], vert[tri[:, 2]]
    cross = np.cross(p1 - p0, p2 - p0)
    area2 = np.linalg.norm(cross, axis=1)
    keep = area2 > 1e-12 * scale * scale           # drop slivers qhull sometimes leaves
    tri, cross, area2, p0 = tri[keep], cross[keep], area2[keep], p0[keep]
    normal = cross / area2[:, None]
    # Orient outward: the centroid of a convex body is behind every face.
    flip = np.einsum("ij,ij->i", normal, p0 - centroid) < 0
    normal[flip] = -normal[flip]

    planes: list[tuple[np.ndarray, set]] = []
    for n, t in zip(normal, tri):
        for pn, members in planes:
            if 1.0 - float(pn @ n) < COPLANAR_NORMAL_TOLERANCE:
                members.update(int(i) for i in t)
                break
        else:
            planes.append((n.copy(), set(int(i) for i in t)))

    faces, normals, offsets = [], [], []
    for n, members in planes:
        idx = np.array(sorted(members))
        pts = vert[idx]
        ring = _convex_polygon_ccw(pts, n)
        faces.append([int(idx[i]) for i in ring])
        normals.append(n)
        offsets.append(float(np.max(pts @ n)))
    normals = np.array(normals)
    offsets = np.array(offsets)

    edge_faces: dict[tuple[int, int], list[int]] = {}
    for f, ring in enumerate(faces):
        for k in range(len(ring)):
            i, j = ring[k], ring[(k + 1) % len(ring)]
            edge_faces.setdefault((min(i, j), max(i, j)), []).append(f)
    edges = []
    for (i, j), fs in sorted(edge_faces.items()):
        if len(fs) != 2:
            raise ValueError("the mesh is not a closed convex hull (an edge is not shared by two faces)")
        edges.append((i, j, fs[0], fs[1]))
    used_vert = sorted({i for ring in faces for i in ring})
    if len(used_vert) != len(vert):
        # Vertices interior to a merged face (collinear or coplanar leftovers) are not hull corners.
        remap2 = -np.ones(len(vert), dtype=np.int64)
        remap2[used_vert] = np.arange(len(used_vert))
        vert = vert[used_vert]
        faces = [[int(remap2[i]) for i in ring] for ring in faces]
        edges = [(int(remap2[i]), int(remap2[j]), a, b) for i, j, a, b in edges]
    return _Hull(vert, faces, normals, offsets, edges)


def _convex_polygon_ccw(points: np.ndarray, normal: np.ndarray) -> list[int]:
    """Indices of the 2-D convex hull of coplanar points, counter-clockwise about `normal`.

    Monotone chain in the face's own 2-D basis; collinear points on an edge are dropped.
    """
    u = np.cross(normal, [1.0, 0.0, 0.0])
    if np.linalg.norm(u) < 0.5:
        u = np.cross(normal, [0.0, 1.0, 0.0])
    u /= np.linalg.norm(u)
    v = np.cross(normal, u)                          # (u, v, normal) is right-handed
    xy = np.stack([points @ u, points @ v], axis=1)
    order = sorted(range(len(points)), key=lambda i: (xy[i, 0], xy[i, 1]))
    span = float(np.ptp(xy, axis=0).max()) or 1.0

    def turn(o, a, b):
        return (xy[a, 0] - xy[o, 0]) * (xy[b, 1] - xy[o, 1]) - (xy[a, 1] - xy[o, 1]) * (xy[b, 0] - xy[o, 0])

    lower: list[int] = []
    for i in order:
        while len(lower) >= 2 and turn(lower[-2], lower[-1], i) <= 1e-12 * span * span:
            lower.pop()
        lower.append(i)
    upper: list[int] = []
    for i in reversed(order):
        while len(upper) >= 2 and turn(upper[-2], upper[-1], i) <= 1e-12 * span * span:
            upper.pop()
        upper.append(i)
    return lower[:-1] + upper[:-1]


def _inscribed(ring: list[int], vert: np.ndarray, budget: int) -> list[int]:
    """Drop polygon vertices, the one whose removal loses the least area first, down to `budget`."""
    ring = list(ring)
    while len(ring) > budget:
        losses = []
        for k in range(len(ring)):
            a, b, c = vert[ring[k - 1]], vert[ring[k]], vert[ring[(k + 1) % len(ring)]]
            losses.append(np.linalg.norm(np.cross(b - a, c - a)))
        del ring[int(np.argmin(losses))]
    return ring


def convex_mesh_counts(vertices, faces) -> tuple[int, int, int]:
    """(vertices, faces, edges) of the merged hull: the smallest budgets `convex_mesh_data` accepts.

    `vertices` (n, 3) and `faces` (m, 3) are the convex hull's vertices and triangles.
    """
    hull = _merge_faces(vertices, faces)
    return len(hull.vert), len(hull.faces), len(hull.edges)


def convex_mesh_data(vertices, faces, *, vertex_budget: int, face_budget: int, edge_budget: int,
                     face_vertex_budget: int = FACE_VERTEX_BUDGET) -> ConvexData:
    """Pad a convex hull's tables to static budgets (see the module docstring).

    vertices: (n, 3) hull vertices in the collider frame, m; faces: (m, 3) its triangles (any
    orientation; coplanar triangles are merged into polygons). Raises ValueError when the hull does
    not fit the budgets; `convex_mesh_counts` gives the budgets a hull needs.
    """
    hull = _merge_faces(vertices, faces)
    nv, nf, ne = len(hull.vert), len(hull.faces), len(hull.edges)
    if nv > vertex_budget or nf > face_budget or ne > edge_budget:
        raise ValueError(f"hull has {nv} vertices, {nf} faces, {ne} edges; budgets are "
                         f"{vertex_budget}, {face_budget}, {edge_budget}")
    if face_vertex_budget < 3:
        raise ValueError("face_vertex_budget must be at least 3")
    vert = hull.vert
    center = vert.mean(axis=0)
    radius = float(np.max(np.linalg.norm(vert - center, axis=1)))

    pad_v = np.concatenate([vert, np.repeat(vert[:1], vertex_budget - nv, axis=0)])
    polys = []
    for ring in hull.faces:
        ring = _inscribed(ring, vert, face_vertex_budget)
        ring = ring + [ring[-1]] * (face_vertex_budget - len(ring))
        polys.append(vert[ring])
    polys = np.array(polys)
    face_vert = np.concatenate([polys, np.repeat(polys[:1], face_budget - nf, axis=0)])
    face_normal = np.concatenate([hull.normals, np.repeat(hull.normals[:1], face_budget - nf, axis=0)])
    face_offset = np.concatenate([hull.offsets, np.repeat(hull.offsets[:1], face_budget - nf)])

    side = np.cross(face_normal[:, None, :], np.roll(face_vert, -1, axis=1) - face_vert)
    length = np.linalg.norm(side, axis=-1, keepdims=True)
    face_side = np.divide(side, length, out=np.zeros_like(side), where=length > 0)

    ei = np.array([e[0] for e in hull.edges])
    ej = np.array([e[1] for e in hull.edges])
    en = np.stack([hull.normals[[e[2] for e in hull.edges]], hull.normals[[e[3] for e in hull.edges]]], axis=1)
    pad = lambda a: np.concatenate([a, np.repeat(a[:1], edge_budget - ne, axis=0)])
    return ConvexData(
        vert=pad_v,
        face_normal=face_normal,
        face_offset=face_offset,
        face_vert=face_vert,
        face_side=face_side,
        edge_a=pad(vert[ei]),
        edge_b=pad(vert[ej]),
        edge_normal=pad(en),
        center=center,
        radius=np.array(radius),
    )


def box_mesh_triangles(half_size) -> tuple[np.ndarray, np.ndarray]:
    """Vertices (8, 3) and outward triangles (12, 3) of a box: the box as a convex mesh.

    The kernels use it to give boxes the same face/edge tables as meshes; tests use it as a mesh.
    """
    h = np.asarray(half_size, dtype=np.float64)
    signs = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], dtype=np.float64)
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    tris = []
    for a, b, c, d in quads:
        tris += [(a, b, c), (a, c, d)]
    return signs * h, np.array(tris)


# ---------------------------------------------------------------------------------------------------
# Height fields


def heightfield_window(shape: tuple[int, int], size_x: float, size_y: float, reach: float | None) -> tuple[int, int]:
    """Cells (wx, wy) a kernel must examine so that every point within `reach` (m, in x and y) of a
    collider's centre lies in the window; the whole grid when reach is None."""
    nrow, ncol = shape
    if reach is None:
        return ncol - 1, nrow - 1
    dx = 2.0 * size_x / (ncol - 1)
    dy = 2.0 * size_y / (nrow - 1)
    # The window starts at the vertex nearest the centre minus w//2, so it covers w//2 - 1/2 cells on
    # either side of the centre (see collision.py); hence w = 2 * ceil(reach / cell + 1/2).
    wx = 2 * math.ceil(reach / dx + 0.5)
    wy = 2 * math.ceil(reach / dy + 0.5)
    return min(wx, ncol - 1), min(wy, nrow - 1)


def heightfield_data(elevation, size_x: float, size_y: float, *, reach: float | None = None) -> HeightFieldData:
    """Check an elevation grid and choose its window.

    elevation: (nrow, ncol) heights, m, rows along y; size_x, size_y: half extents, m.
    reach: the largest distance in the height field's x-y plane from a partner collider's centre to
    a point of that collider (its bounding radius, plus any contact margin), m. Kernels examine the
    cells within reach of the partner's centre; None examines the whole grid (fine for small grids,
    wasteful for large ones).
    """
    elevation = np.asarray(elevation, dtype=np.float64)
    if elevation.ndim != 2 or min(elevation.shape) < 2:
        raise ValueError(f"elevation must be a grid of at least 2 x 2 samples, got shape {elevation.shape}")
    if not (size_x > 0 and size_y > 0):
        raise ValueError("size_x and size_y must be positive")
    if not np.all(np.isfinite(elevation)):
        raise ValueError("elevation must be finite")
    wx, wy = heightfield_window(elevation.shape, size_x, size_y, reach)
    # The ring sits lower than the terrain's whole height range plus its extent, so that seen from any
    # direction with an upward component it is below every real vertex near the border.
    low = float(elevation.min() - np.ptp(elevation) - 2.0 * (size_x + size_y) - 1.0)
    return HeightFieldData(
        padded_elevation=np.pad(elevation, 1, constant_values=low),
        window_row=np.arange(wy + 1, dtype=np.int32),
        window_col=np.arange(wx + 1, dtype=np.int32),
    )
