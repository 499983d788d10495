"""Float64 NumPy references for the collision-kernel tests (tests/test_collision_*.py).

Independent of the kernels: distances come from the Minkowski difference of point sets (signed
distance of the origin to a convex hull: scipy's qhull facets when inside, a non-negative least-squares
projection when outside), from golden-section minimisation of convex one-dimensional functions, and
from random poses built with numpy. No jax here.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import nnls
from scipy.spatial import ConvexHull


def random_rotation(rng: np.random.Generator) -> np.ndarray:
    """A uniformly random rotation matrix (columns = the rotated x, y, z axes)."""
    q = rng.normal(size=4)
    w, x, y, z = q / np.linalg.norm(q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def rotation_about(axis, angle) -> np.ndarray:
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k


def distance_to_hull(points: np.ndarray, target=None) -> float:
    """Euclidean distance from `target` (default the origin) to the convex hull of points (n, 3),
    by non-negative least squares: min |P^T l - x| subject to l >= 0, sum l = 1 (the sum enforced by
    a heavily weighted extra row). Works for flat and degenerate point sets too."""
    points = np.asarray(points, float)
    x = np.zeros(3) if target is None else np.asarray(target, float)
    scale = max(1.0, float(np.abs(points - x).max()))
    weight = 1e4 * scale
    a = np.vstack([(points - x).T, weight * np.ones(len(points))])
    b = np.concatenate([np.zeros(3), [weight]])
    lam, _ = nnls(a, b, maxiter=5000)
    lam = lam / lam.sum()
    return float(np.linalg.norm(lam @ (points - x)))


def origin_signed_distance(points: np.ndarray) -> float:
    """Signed distance of the origin to the convex hull of points (n, 3): negative inside (minus the
    distance to the boundary, from qhull's facet planes), positive outside (distance_to_hull)."""
    hull = ConvexHull(points)
    # qhull: normal . x + offset <= 0 inside, unit normals.
    inside = float(np.max(hull.equations[:, 3]))
    if inside < 0:
        return inside
    return distance_to_hull(points[hull.vertices])


def minkowski(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Vertices of A - B for point sets a (n, 3), b (m, 3): the origin lies in it when they overlap."""
    return (a[:, None, :] - b[None, :, :]).reshape(-1, 3)


def hull_signed_distance(a: np.ndarray, b: np.ndarray) -> float:
    """Signed distance between the convex hulls of a and b: the gap when apart, minus the
    penetration depth (the shortest translation that separates them) when they overlap."""
    return origin_signed_distance(minkowski(a, b))


def box_corners(pos, mat, half) -> np.ndarray:
    signs = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], float)
    return (signs * half) @ np.asarray(mat).T + pos


def golden_min(f, lo=0.0, hi=1.0, iters=120) -> tuple[float, float]:
    """Minimum of a convex function on [lo, hi] by golden-section search: (argmin, min)."""
    g = (np.sqrt(5) - 1) / 2
    a, b = lo, hi
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(iters):
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = f(d)
    x = 0.5 * (a + b)
    candidates = [(f(lo), lo), (f(hi), hi), (f(x), x)]
    best = min(candidates)
    return best[1], best[0]


def point_segment_distance(p, a, b) -> float:
    d = b - a
    dd = float(d @ d)
    t = 0.0 if dd == 0 else float(np.clip((p - a) @ d / dd, 0.0, 1.0))
    return float(np.linalg.norm(p - (a + t * d)))


def segment_segment_distance(a0, a1, b0, b1) -> float:
    """Distance between two segments: the distance from a point of the first to the second segment
    is convex along the first, so golden-section search finds its minimum."""
    _, m = golden_min(lambda s: point_segment_distance(a0 + s * (a1 - a0), b0, b1))
    return m


def terrain_triangles(elevation: np.ndarray, size_x: float, size_y: float) -> np.ndarray:
    """(2 (nrow-1)(ncol-1), 3, 3) triangles of a height field in its frame (diagonal (i,j)-(i+1,j+1))."""
    nrow, ncol = elevation.shape
    x = np.linspace(-size_x, size_x, ncol)
    y = np.linspace(-size_y, size_y, nrow)
    v = np.stack(np.broadcast_arrays(x[None, :], y[:, None], elevation), axis=-1)
    v00, v10, v01, v11 = v[:-1, :-1], v[:-1, 1:], v[1:, :-1], v[1:, 1:]
    t1 = np.stack([v00, v10, v11], axis=-2).reshape(-1, 3, 3)
    t2 = np.stack([v00, v11, v01], axis=-2).reshape(-1, 3, 3)
    return np.concatenate([t1, t2])


def terrain_height(elevation, size_x, size_y, x, y) -> float:
    """Height of the triangulated terrain at (x, y) (inside the grid)."""
    nrow, ncol = elevation.shape
    u = (x + size_x) / (2 * size_x) * (ncol - 1)
    v = (y + size_y) / (2 * size_y) * (nrow - 1)
    j, i = min(int(np.floor(u)), ncol - 2), min(int(np.floor(v)), nrow - 2)
    fu, fv = u - j, v - i
    z00, z10, z01, z11 = elevation[i, j], elevation[i, j + 1], elevation[i + 1, j], elevation[i + 1, j + 1]
    if fu >= fv:   # lower-right triangle (i,j), (i,j+1), (i+1,j+1)
        return float(z00 + fu * (z10 - z00) + fv * (z11 - z10))
    return float(z00 + fv * (z01 - z00) + fu * (z11 - z01))


def terrain_distance(points: np.ndarray, triangles: np.ndarray) -> float:
    """Distance between the convex hull of points (a point, segment or box) and a set of triangles:
    the minimum over triangles of the distance from the origin to their Minkowski difference."""
    return min(distance_to_hull(minkowski(t, points)) for t in triangles)
