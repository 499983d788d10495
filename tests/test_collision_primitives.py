"""Kernels whose closest distance is exact: planes, spheres and capsules against everything convex.

Each kernel runs in float32 on seeded random poses (separated and penetrating) and is compared with
float64 references from collision_reference: analytic distances for planes and spheres, golden-section
search for segments, and the Minkowski difference of point sets (qhull / NNLS) for boxes and meshes.
"""

from __future__ import annotations

import zlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import collision_cases as K
import collision_reference as R
from scenec.runtime import collision, collision_data
from scenec.runtime.collision_table import Shape

# float32 kernels on coordinates of a few metres: observed errors of the distances are below 4e-7 m;
# 1e-5 m leaves room for other CPUs' rounding and is still far below any geometric mistake.
DIST_TOL = 1e-5
# A contact point is on a surface when the reference distance to it is below this: its coordinates
# pass through a few more float32 operations than the distance does.
SURFACE_TOL = 2e-5
NPOSE = 40


@pytest.fixture(autouse=True)
def strict_promotion():
    with jax.numpy_dtype_promotion("strict"):
        yield


def signed_distance_to(points, radius, p):
    """Signed distance of point p to a sphere / capsule / convex hull given by points and radius."""
    if len(points) == 1:
        return float(np.linalg.norm(p - points[0]) - radius)
    if len(points) == 2:
        return R.point_segment_distance(p, points[0], points[1]) - radius
    return R.hull_signed_distance(points, p[None])


def random_pairs(a: Shape, b: Shape, seed: int, n=NPOSE, spread=1.2, dtype=jnp.float32):
    """n pairs of random shapes a, b at random relative positions (both touching and apart), with their
    reference point sets."""
    rng = np.random.default_rng(seed)
    pairs, refs = [], []
    hull = K.random_hull(rng)
    for _ in range(n):
        p1 = rng.normal(size=3) * 0.1
        d = rng.normal(size=3)
        p2 = p1 + d / np.linalg.norm(d) * rng.uniform(0.0, spread)
        g1, s1 = K.shape_geom(a, rng, p1, hull=hull, dtype=dtype)
        g2, s2 = K.shape_geom(b, rng, p2, hull=hull, dtype=dtype)
        pairs.append((g1, g2))
        refs.append((s1, s2))
    return pairs, refs


def reference_distance(s1, s2):
    (pts1, r1), (pts2, r2) = s1, s2
    if len(pts1) <= 2 and len(pts2) <= 2:            # spheres and capsules: segment distances
        a0, a1 = pts1[0], pts1[-1]
        b0, b1 = pts2[0], pts2[-1]
        return R.segment_segment_distance(a0, a1, b0, b1) - r1 - r2
    return R.hull_signed_distance(pts1, pts2) - r1 - r2


EXACT = [("sphere_sphere", Shape.SPHERE, Shape.SPHERE), ("sphere_capsule", Shape.SPHERE, Shape.CAPSULE),
         ("sphere_box", Shape.SPHERE, Shape.BOX), ("sphere_mesh", Shape.SPHERE, Shape.MESH),
         ("capsule_capsule", Shape.CAPSULE, Shape.CAPSULE), ("capsule_box", Shape.CAPSULE, Shape.BOX),
         ("capsule_mesh", Shape.CAPSULE, Shape.MESH)]


@pytest.mark.parametrize("name,a,b", EXACT, ids=[e[0] for e in EXACT])
def test_exact_distance_normal_and_points(name, a, b):
    spread = 2.2 if Shape.MESH in (a, b) else 1.2      # reach past the larger hulls too
    pairs, refs = random_pairs(a, b, seed=zlib.crc32(name.encode()), spread=spread)
    out = K.run(name, pairs)
    got = K.min_active(out)
    want = np.array([reference_distance(*r) for r in refs])
    assert (want < 0).sum() >= 5 and (want > 0).sum() >= 5          # both regimes are exercised
    np.testing.assert_allclose(got, want, atol=DIST_TOL)
    for i, ((pts1, r1), (pts2, r2)) in enumerate(refs):
        row = int(np.argmin(np.where(out.active[i], out.dist[i], np.inf)))
        n, pos, d = out.normal[i, row], out.pos[i, row], out.dist[i, row]
        assert abs(np.linalg.norm(n) - 1) < 1e-5
        # pos is midway: stepping half the distance back along the normal reaches the first surface,
        # forward the second (this also fixes the normal's direction, from geom1 into geom2).
        assert abs(signed_distance_to(pts1, r1, pos - 0.5 * d * n)) < SURFACE_TOL
        assert abs(signed_distance_to(pts2, r2, pos + 0.5 * d * n)) < SURFACE_TOL
    assert np.all(np.isfinite(out.dist)) and np.all(np.isfinite(out.pos)) and np.all(np.isfinite(out.normal))


PLANES = [("plane_sphere", Shape.SPHERE), ("plane_capsule", Shape.CAPSULE), ("plane_box", Shape.BOX),
          ("plane_mesh", Shape.MESH)]


@pytest.mark.parametrize("name,b", PLANES, ids=[p[0] for p in PLANES])
def test_plane_kernels_are_exact(name, b):
    rng = np.random.default_rng(len(name))
    hull = K.random_hull(rng)
    pairs, refs = [], []
    for _ in range(NPOSE):
        mat, pos = R.random_rotation(rng), rng.normal(size=3)
        g1, _ = K.shape_geom(Shape.PLANE, rng, pos, mat=mat)
        height, lateral = rng.uniform(-0.6, 0.8), rng.normal(size=2)
        at = pos + height * mat[:, 2] + lateral[0] * mat[:, 0] + lateral[1] * mat[:, 1]
        g2, s2 = K.shape_geom(b, rng, at, hull=hull)
        pairs.append((g1, g2))
        refs.append((pos, mat[:, 2], s2))
    out = K.run(name, pairs)
    for i, (p0, n, (pts, r)) in enumerate(refs):
        heights = (pts - p0) @ n - r
        assert abs(K.min_active(out)[i] - heights.min()) < DIST_TOL
        np.testing.assert_allclose(out.normal[i], np.broadcast_to(n, out.normal[i].shape), atol=1e-6)
        # Every row is the lowest point of a sphere round one of the shape's points (the sphere, a
        # cap, a corner or a hull vertex with radius 0), at its height above the plane.
        surface = out.pos[i] + 0.5 * out.dist[i][:, None] * out.normal[i]
        plane_pt = out.pos[i] - 0.5 * out.dist[i][:, None] * out.normal[i]
        np.testing.assert_allclose((plane_pt - p0) @ n, 0.0, atol=SURFACE_TOL)
        for k in np.flatnonzero(out.active[i]):
            assert np.min(np.abs(np.linalg.norm(pts - surface[k] - r * n, axis=1))) < SURFACE_TOL


def test_box_on_plane_rows_are_a_face():
    rng = np.random.default_rng(3)
    pairs = []
    angles = [0.0, 0.3, np.pi / 4]
    for ang in angles:
        g1, _ = K.shape_geom(Shape.PLANE, rng, [0, 0, 0], mat=np.eye(3))
        g2 = K.geom([0.2, 0.1, 0.1 - 1e-3], R.rotation_about([0, 0, 1], ang), [0.3, 0.2, 0.1])
        pairs.append((g1, g2))
    # Tilted onto an edge: the rows are still the corners of one face, the lowest corner among them.
    tilt = R.rotation_about([1, 0, 0], 0.4)
    pairs.append((pairs[0][0], K.geom([0, 0, 0.5], tilt, [0.3, 0.2, 0.1])))
    out = K.run("plane_box", pairs)
    for i in range(3):
        assert out.active[i].all()
        np.testing.assert_allclose(out.dist[i], -1e-3, atol=DIST_TOL)      # the four bottom corners
        assert len(np.unique(np.round(out.pos[i], 5), axis=0)) == 4
    corners = R.box_corners([0, 0, 0.5], tilt, [0.3, 0.2, 0.1])
    np.testing.assert_allclose(out.dist[3].min(), corners[:, 2].min(), atol=DIST_TOL)
    assert len(np.unique(np.round(out.pos[3], 5), axis=0)) == 4


def test_mesh_cube_on_plane_has_four_supports():
    v, f = collision_data.box_mesh_triangles([0.5, 0.5, 0.5])
    mesh = K.mesh_data(v, f)
    plane = K.geom([0, 0, 0], np.eye(3), K.PLANE_SIZE)
    pairs = [(plane, K.geom([0.3, 0, 0.499], R.rotation_about([0, 0, 1], a), [0, 0, 0], mesh=mesh))
             for a in (0.0, 0.1, np.pi / 4, 1.0)]
    out = K.run("plane_mesh", pairs)
    for i in range(len(pairs)):
        act = out.active[i]
        assert act.sum() == 4                       # the four bottom corners, no duplicate
        np.testing.assert_allclose(out.dist[i][act], -1e-3, atol=DIST_TOL)


def test_coincident_spheres_and_parallel_capsules():
    rot = R.rotation_about([0, 1, 0], np.pi / 2)       # capsule axes along world x
    cases = {
        "sphere_sphere": (K.geom([1, 2, 3], np.eye(3), [0.2, 0, 0]), K.geom([1, 2, 3], np.eye(3), [0.3, 0, 0])),
        "capsule_capsule": (K.geom([0, 0, 0], rot, [0.1, 0.3, 0]), K.geom([0.2, 0, 0.199], rot, [0.1, 0.3, 0])),
    }
    out = K.run("sphere_sphere", [cases["sphere_sphere"]])
    assert abs(out.dist[0, 0] + 0.5) < DIST_TOL and abs(np.linalg.norm(out.normal[0, 0]) - 1) < 1e-6
    out = K.run("capsule_capsule", [cases["capsule_capsule"]])
    # Parallel, overlapping over x in [-0.1, 0.3]: two rows at the ends of the overlap.
    assert out.active[0].all()
    np.testing.assert_allclose(out.dist[0], -1e-3, atol=DIST_TOL)
    np.testing.assert_allclose(np.sort(out.pos[0][:, 0]), [-0.1, 0.3], atol=DIST_TOL)
    np.testing.assert_allclose(out.normal[0], [[0, 0, 1], [0, 0, 1]], atol=1e-6)
    # Crossing at right angles: one row.
    cross = K.geom([0.1, 0, 0.19], R.rotation_about([1, 0, 0], np.pi / 2), [0.1, 0.3, 0])
    out = K.run("capsule_capsule", [(cases["capsule_capsule"][0], cross)])
    assert out.active[0].tolist() == [True, False]
    np.testing.assert_allclose(out.dist[0, 0], -0.01, atol=DIST_TOL)


@pytest.mark.parametrize("name", ["capsule_box", "capsule_mesh"])
def test_capsule_lying_on_a_face_gets_two_rows(name):
    v, f = collision_data.box_mesh_triangles([0.5, 0.5, 0.5])
    rot = R.rotation_about([0, 1, 0], np.pi / 2)
    other = (K.geom([0, 0, 0], np.eye(3), [0.5, 0.5, 0.5]) if name == "capsule_box"
             else K.geom([0, 0, 0], np.eye(3), [0, 0, 0], mesh=K.mesh_data(v, f)))
    level = K.geom([0.2, 0, 0.599], rot, [0.1, 0.3, 0])                           # x in [-0.1, 0.5]
    overhang = K.geom([0.4, 0, 0.599], rot, [0.1, 0.3, 0])                        # x in [0.1, 0.7]
    tilted = K.geom([0.2, 0, 0.65], R.rotation_about([0, 1, 0], np.pi / 2 - 0.1), [0.1, 0.3, 0])
    out = K.run(name, [(level, other), (overhang, other), (tilted, other)])
    assert out.active[0].all() and out.active[1].all()
    np.testing.assert_allclose(np.sort(out.pos[0][:, 0]), [-0.1, 0.5], atol=DIST_TOL)
    np.testing.assert_allclose(np.sort(out.pos[1][:, 0]), [0.1, 0.5], atol=DIST_TOL)   # clipped to the face
    np.testing.assert_allclose(out.dist[:2], -1e-3, atol=DIST_TOL)
    np.testing.assert_allclose(out.normal[:2], np.broadcast_to([0, 0, -1], (2, 2, 3)), atol=1e-6)
    # Tilted: the low end touches, the high end is a candidate further away.
    low = 0.65 - 0.3 * np.sin(0.1) - 0.1 - 0.5
    assert out.active[2].all()
    np.testing.assert_allclose(out.dist[2].min(), low, atol=DIST_TOL)
    assert out.dist[2].max() > low + 0.05


# In float64 the same kernels agree with the references to the references' own accuracy (NNLS with a
# 1e4-weighted sum row, golden section to 1e-12): the algorithms are exact, float32 only rounds.
X64_TOL = 1e-8


@pytest.mark.parametrize("name,a,b", [EXACT[2], EXACT[4], EXACT[6]], ids=["sphere_box", "capsule_capsule",
                                                                         "capsule_mesh"])
def test_exact_in_float64(name, a, b):
    with jax.enable_x64(True):
        pairs, refs = random_pairs(a, b, seed=zlib.crc32(name.encode()) + 1, n=16,
                                   spread=2.2 if Shape.MESH in (a, b) else 1.2, dtype=jnp.float64)
        out = K.run(name, pairs)
    assert out.dist.dtype == np.float64
    want = np.array([reference_distance(*r) for r in refs])
    np.testing.assert_allclose(K.min_active(out), want, atol=X64_TOL)


def test_nearly_parallel_capsules_stay_exact():
    # Within CAPSULE_PARALLEL_SIN the rows are the overlap's ends, measured along the common normal:
    # still the exact distance, whatever the offsets and lengths.
    rng = np.random.default_rng(8)
    pairs, want = [], []
    for _ in range(NPOSE):
        rot = R.random_rotation(rng)
        tilt = rng.normal(size=3)
        tilt -= (tilt @ rot[:, 2]) * rot[:, 2]
        rot2 = R.rotation_about(tilt, rng.uniform(-0.9e-3, 0.9e-3)) @ rot
        p1, p2 = rng.normal(size=3) * 0.1, rng.normal(size=3) * 0.3
        r1, r2, h1, h2 = rng.uniform(0.05, 0.3, 2).tolist() + rng.uniform(0.0, 0.6, 2).tolist()
        pairs.append((K.geom(p1, rot, [r1, h1, 0]), K.geom(p2, rot2, [r2, h2, 0])))
        want.append(R.segment_segment_distance(p1 - h1 * rot[:, 2], p1 + h1 * rot[:, 2],
                                               p2 - h2 * rot2[:, 2], p2 + h2 * rot2[:, 2]) - r1 - r2)
    out = K.run("capsule_capsule", pairs)
    np.testing.assert_allclose(K.min_active(out), want, atol=DIST_TOL)
    assert out.active.all(axis=1).sum() >= NPOSE // 2          # most overlap: two rows


@pytest.mark.parametrize("name", sorted(collision.BATCHED))
def test_batched_call_matches_the_per_pair_call(name):
    # The runtime calls these kernels once on all pairs and environments, x, y, z first (pos (3, npair,
    # B), sizes (3, npair, 1)); the tests above check them per pair under vmap. Both must give the same
    # rows. Cases: random poses, plus (for capsules) parallel axes and (for spheres) coincident centres,
    # where the rows' choices branch.
    a, b = (Shape[s.upper()] for s in name.split("_"))
    pairs, _ = random_pairs(a, b, seed=zlib.crc32(name.encode()) + 2, n=24)
    rot = R.rotation_about([0, 1, 0], np.pi / 2)
    if name == "capsule_capsule":
        pairs += [(K.geom([0, 0, 0], rot, [0.1, 0.3, 0]), K.geom([0.2, 0, 0.199], rot, [0.1, 0.3, 0])),
                  (K.geom([0, 0, 0], rot, [0.1, 0.3, 0]), K.geom([0.6, 0, 0.19], rot, [0.1, 0.3, 0])),
                  (K.geom([0, 0, 0], rot, [0.1, 0.3, 0]), K.geom([0, 0, 0], rot, [0.1, 0.3, 0]))]
    if name == "sphere_sphere":
        pairs += [(K.geom([1, 2, 3], np.eye(3), [0.2, 0, 0]), K.geom([1, 2, 3], np.eye(3), [0.3, 0, 0]))]
    per_pair = K.run(name, pairs)
    npair = len(pairs)
    # Environment e sees the pairs rolled by e places; sizes either per pair and environment, or per
    # pair only (3, npair, 1), as the runtime passes them, with the identity order.
    for env, shared_size in ((3, False), (2, True)):
        order = np.stack([np.roll(np.arange(npair), 0 if shared_size else e) for e in range(env)], 1)

        def batched(geoms):
            g = jax.tree.map(lambda x: np.asarray(x)[order], K.stack(geoms))            # (npair, env, ...)
            size = np.asarray(K.stack(geoms).size).T[:, :, None] if shared_size else np.moveaxis(g.size, -1, 0)
            return collision.Geom(jnp.asarray(np.moveaxis(g.pos, -1, 0)),
                                  jnp.asarray(np.moveaxis(g.mat, (-2, -1), (0, 1))), jnp.asarray(size))

        out = jax.jit(collision.KERNELS[name])(batched([p[0] for p in pairs]), batched([p[1] for p in pairs]))
        ncon = per_pair.dist.shape[1]
        assert out.dist.shape == (ncon, npair, env) and out.pos.shape == (ncon, 3, npair, env)
        for e in range(env):
            want = jax.tree.map(lambda x: x[order[:, e]], per_pair)
            np.testing.assert_array_equal(np.asarray(out.active[..., e]).T, want.active)
            np.testing.assert_allclose(np.asarray(out.dist[..., e]).T, want.dist, atol=BATCH_TOL)
            for field in ("pos", "normal"):
                np.testing.assert_allclose(np.moveaxis(np.asarray(getattr(out, field)[..., e]), 2, 0),
                                           getattr(want, field), atol=BATCH_TOL)


# The batched and per-pair calls run the same float32 operations on the same values; XLA may contract
# them differently (fused multiply-adds): a few ulps of metre-scale values.
BATCH_TOL = 2e-6


@pytest.mark.parametrize("name", sorted(collision.BATCHED))
def test_axis_only_kernels_read_only_the_third_column(name):
    # The runtime gathers only the rotations' third column for the pairs of collision.Z_AXIS_ONLY's
    # kernels and fills the other two with NaN (constraints._run_kernel): such a kernel's rows must be
    # the same, bit for bit, with the first two columns NaN, and free of NaN. The control: plane_box,
    # which reads the box's three axes, is left out of the set and gives NaN rows that way.
    a, b = (Shape[s.upper()] for s in name.split("_"))
    pairs, _ = random_pairs(a, b, seed=zlib.crc32(name.encode()) + 3, n=16)

    def batched(geoms, blank):
        g = K.stack(geoms)                                                        # (npair, ...)
        mat = np.moveaxis(np.asarray(g.mat), 0, -1).copy()                        # (3, 3, npair)
        if blank:
            mat[:, :2] = np.nan
        return collision.Geom(jnp.asarray(np.asarray(g.pos).T), jnp.asarray(mat), jnp.asarray(np.asarray(g.size).T))

    kernel = jax.jit(collision.KERNELS[name])
    full, blank = (kernel(batched([p[0] for p in pairs], x), batched([p[1] for p in pairs], x)) for x in (False, True))
    if name in collision.Z_AXIS_ONLY:
        for f, x in zip(full, blank):
            assert not np.isnan(np.asarray(x)).any()
            np.testing.assert_array_equal(np.asarray(x), np.asarray(f))
    else:
        assert np.isnan(np.asarray(blank.pos)).any()
