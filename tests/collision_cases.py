"""Collider configurations for the collision-kernel tests (tests/test_collision_*.py).

Builds `collision.Geom`s from numpy (batched for vmap), seeded random poses for every shape pair, and
caches the compiled kernels so that each test module compiles a kernel once.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from scipy.spatial import ConvexHull

from collision_reference import box_corners, random_rotation
from scenec.runtime import collision, collision_data
from scenec.runtime.collision_table import PAIRS, Shape

PLANE_SIZE = (5.0, 5.0, 0.0)


def random_hull(rng: np.random.Generator, npoint: int = 12, scale=(0.3, 0.9)):
    """Vertices (n, 3) and triangles of the convex hull of random points around the origin."""
    pts = rng.normal(size=(npoint, 3)) * rng.uniform(*scale, 3)
    v = pts[ConvexHull(pts).vertices]
    return v, ConvexHull(v).simplices


HULL_BUDGET = dict(vertex_budget=16, face_budget=32, edge_budget=48)


def mesh_data(vertices, faces) -> collision_data.ConvexData:
    return collision_data.convex_mesh_data(vertices, faces, **HULL_BUDGET)


def geom(pos, mat, size, mesh=None, hfield=None, dtype=jnp.float32) -> collision.Geom:
    """A Geom from numpy values, in `dtype` (float64 needs jax.enable_x64)."""
    cast = lambda x: jnp.asarray(x, dtype)  # noqa: E731
    if mesh is not None:
        mesh = jax.tree.map(cast, mesh)
    if hfield is not None:
        hfield = hfield._replace(padded_elevation=cast(hfield.padded_elevation))
    return collision.Geom(cast(pos), cast(mat), cast(size), mesh, hfield)


def stack(geoms: list[collision.Geom]) -> collision.Geom:
    """A batch of geoms (leading axis) from a list."""
    return jax.tree.map(lambda *x: jnp.stack(x), *geoms)


def unstack(batch, i):
    return jax.tree.map(lambda x: x[i], batch)


@functools.cache
def batched(name: str):
    """jit(vmap(kernel)), compiled once per shapes."""
    return jax.jit(jax.vmap(collision.KERNELS[name]))


# Batches are padded to a multiple of this, so that each kernel compiles once per test session
# (compiling dominates these tests' time).
BATCH = 64


def run(name: str, pairs: list[tuple[collision.Geom, collision.Geom]]):
    """Kernel outputs for a list of pairs, as numpy arrays with a leading batch axis."""
    n = len(pairs)
    padded = list(pairs) + [pairs[0]] * (-n % BATCH)
    out = batched(name)(stack([p[0] for p in padded]), stack([p[1] for p in padded]))
    return jax.tree.map(lambda x: np.asarray(x)[:n], out)


def min_active(c):
    """Smallest dist over active rows (per batch item when c is batched); inf when none is active."""
    d = np.where(c.active, c.dist, np.inf)
    return d.min(axis=-1)


# --- a geometry of every shape, with its reference point set (None for plane / height field) -------

def shape_geom(shape: Shape, rng: np.random.Generator, pos, mat=None, hull=None, hfield=None,
               dtype=jnp.float32):
    """(Geom, points) of one shape at pos; points are its vertices for the references (a segment's
    two ends, a sphere's centre) together with the radius to subtract."""
    mat = random_rotation(rng) if mat is None else mat
    pos = np.asarray(pos, float)
    make = functools.partial(geom, dtype=dtype)
    if shape == Shape.PLANE:
        return make(pos, mat, PLANE_SIZE), None
    if shape == Shape.SPHERE:
        r = rng.uniform(0.1, 0.4)
        return make(pos, mat, [r, 0, 0]), (pos[None], r)
    if shape == Shape.CAPSULE:
        r, hl = rng.uniform(0.05, 0.3), rng.uniform(0.0, 0.6)
        ends = np.array([pos - hl * mat[:, 2], pos + hl * mat[:, 2]])
        return make(pos, mat, [r, hl, 0]), (ends, r)
    if shape == Shape.BOX:
        h = rng.uniform(0.1, 0.6, 3)
        return make(pos, mat, h), (box_corners(pos, mat, h), 0.0)
    if shape == Shape.MESH:
        v, f = hull if hull is not None else random_hull(rng)
        return make(pos, mat, [0, 0, 0], mesh=mesh_data(v, f)), (v @ mat.T + pos, 0.0)
    return make(pos, mat, hfield[1], hfield=hfield[0]), None


def example_pair(a: Shape, b: Shape, rng: np.random.Generator, gap: float = 0.0):
    """One pair of geoms of shapes a, b in canonical order, near contact (roughly `gap` apart)."""
    hull = random_hull(rng)
    if a == Shape.PLANE:
        g1, _ = shape_geom(a, rng, [0, 0, 0], mat=np.eye(3))
        g2, _ = shape_geom(b, rng, [0.1, -0.2, 0.3 + gap], hull=hull)
        return g1, g2
    if a == Shape.HEIGHTFIELD:
        elev = 0.1 * rng.normal(size=(9, 9))
        hf = (collision_data.heightfield_data(elev, 2.0, 2.0, reach=1.2), [2.0, 2.0, 0.0])
        g1, _ = shape_geom(a, rng, [0, 0, 0], mat=np.eye(3), hfield=hf)
        g2, _ = shape_geom(b, rng, [0.1, -0.2, 0.35 + gap], hull=hull)
        return g1, g2
    g1, _ = shape_geom(a, rng, [0, 0, 0], hull=hull)
    g2, _ = shape_geom(b, rng, [0.2, 0.1, 0.5 + gap], hull=hull)
    return g1, g2


def all_pairs():
    """(shape a, shape b, kernel name, ncon) for every supported pair."""
    return [(a, b, info.kernel, info.ncon) for (a, b), info in PAIRS.items()]
