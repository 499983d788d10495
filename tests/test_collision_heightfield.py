"""Height-field kernels against brute force over every terrain triangle (float64, NNLS distances of
Minkowski differences), and their rows on flat ground, in valleys and over peaks and ridges."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import collision_cases as K
import collision_reference as R
from scenec.runtime import collision_data

# float32 distances on metre-size terrain (observed errors below 2e-7 m).
DIST_TOL = 1e-5
NPOSE = 40

NROW, NCOL, SX, SY = 9, 11, 2.0, 1.6          # cells 0.4 x 0.4 m
HF_POS = np.array([0.3, -0.2, 0.1])
HF_MAT = R.rotation_about([0.2, 0.3, 1.0], 0.4)


@pytest.fixture(autouse=True)
def strict_promotion():
    with jax.numpy_dtype_promotion("strict"):
        yield


def terrain(elev, reach=1.0):
    data = collision_data.heightfield_data(elev, SX, SY, reach=reach)
    return K.geom(HF_POS, HF_MAT, [SX, SY, 0], hfield=data)


def world(p_local):
    return HF_MAT @ p_local + HF_POS


def rough():
    return np.random.default_rng(11).uniform(-0.3, 0.3, (NROW, NCOL))


def above(elev, points):
    """Whether the convex hull of points (a point, a segment or a box) is above the terrain: tested at
    the points and along the segments between them, in 40 steps (at most 2 cm for these sizes,
    finer than the 0.4 m cells of the piecewise linear terrain)."""
    for a in points:
        for b in points:
            for t in np.linspace(0, 1, 41):
                p = a + t * (b - a)
                if p[2] <= R.terrain_height(elev, SX, SY, p[0], p[1]):
                    return False
    return True


def test_sphere_and_capsule_are_exact_above_the_terrain():
    elev = rough()
    tris = R.terrain_triangles(elev, SX, SY)
    hf = terrain(elev)
    rng = np.random.default_rng(1)
    spheres, capsules, want_s, want_c = [], [], [], []
    while len(spheres) < NPOSE or len(capsules) < NPOSE:
        x, y = rng.uniform(-1.3, 1.3), rng.uniform(-1.0, 1.0)
        c = np.array([x, y, R.terrain_height(elev, SX, SY, x, y) + rng.uniform(0.01, 0.6)])
        r = rng.uniform(0.1, 0.4)
        if len(spheres) < NPOSE:
            spheres.append((hf, K.geom(world(c), np.eye(3), [r, 0, 0])))
            want_s.append(R.terrain_distance(c[None], tris) - r)
        rot, hl = R.random_rotation(rng), rng.uniform(0.0, 0.4)
        ends = np.array([c - hl * rot[:, 2], c + hl * rot[:, 2]])
        if len(capsules) < NPOSE and above(elev, ends):
            capsules.append((hf, K.geom(world(c), HF_MAT @ rot, [r, hl, 0])))
            want_c.append(R.terrain_distance(ends, tris) - r)
    for name, pairs, want in (("heightfield_sphere", spheres, want_s), ("heightfield_capsule", capsules, want_c)):
        want = np.array(want)
        assert (want < 0).sum() >= 5 and (want > 0).sum() >= 5
        out = K.run(name, pairs)
        np.testing.assert_allclose(K.min_active(out), want, atol=DIST_TOL)
        # Normals point out of the terrain (up in its frame) and are unit.
        n_local = out.normal @ HF_MAT
        assert np.all(n_local[..., 2][out.active] > 0)
        np.testing.assert_allclose(np.linalg.norm(out.normal[out.active], axis=-1), 1.0, atol=1e-5)
        assert all(np.all(np.isfinite(x)) for x in (out.dist, out.pos, out.normal))


def test_box_rows_are_honest_and_exact_at_corners_and_peaks():
    elev = rough()
    tris = R.terrain_triangles(elev, SX, SY)
    hf = terrain(elev)
    rng = np.random.default_rng(2)
    pairs, want = [], []
    while len(pairs) < NPOSE:
        x, y = rng.uniform(-1.0, 1.0), rng.uniform(-0.7, 0.7)
        c = np.array([x, y, R.terrain_height(elev, SX, SY, x, y) + rng.uniform(0.1, 0.6)])
        rot, h = R.random_rotation(rng), rng.uniform(0.05, 0.3, 3)
        corners = R.box_corners(c, rot, h)
        if above(elev, corners):
            pairs.append((hf, K.geom(world(c), HF_MAT @ rot, h)))
            want.append(R.terrain_distance(corners, tris))
    out = K.run("heightfield_box", pairs)
    # Every row is the distance of a box point to the terrain or of a terrain point to the box, so no
    # row claims less than the true distance (edge-edge contacts are the only ones missed).
    rows = np.where(out.active, out.dist, np.inf)
    assert np.all(rows >= np.array(want)[:, None] - DIST_TOL)

    # Planar (tilted) terrain: the lowest corner decides, exactly, penetrating or not.
    xs, ys = np.linspace(-SX, SX, NCOL), np.linspace(-SY, SY, NROW)
    plane = 0.2 * xs[None, :] - 0.1 * ys[:, None]
    normal = np.array([-0.2, 0.1, 1.0]) / np.linalg.norm([-0.2, 0.1, 1.0])
    hf_plane = terrain(plane)
    pairs, want = [], []
    for _ in range(10):
        c = np.r_[rng.uniform(-0.8, 0.8, 2), 0.0]
        c[2] = 0.2 * c[0] - 0.1 * c[1] + rng.uniform(-0.1, 0.4)
        rot, h = R.random_rotation(rng), rng.uniform(0.05, 0.3, 3)
        pairs.append((hf_plane, K.geom(world(c), HF_MAT @ rot, h)))
        want.append(np.min((R.box_corners(c, rot, h) - [0, 0, 0]) @ normal))
    out = K.run("heightfield_box", pairs)
    np.testing.assert_allclose(K.min_active(out), want, atol=DIST_TOL)

    # One peak under a level box: a terrain-vertex row at the peak's distance to the bottom face.
    peak = np.zeros((NROW, NCOL))
    peak[4, 5] = 0.5                                   # at the frame's origin
    out = K.run("heightfield_box", [(terrain(peak), K.geom(world([0.05, 0.02, 0.7]), HF_MAT, [0.3, 0.3, 0.1]))])
    np.testing.assert_allclose(K.min_active(out)[0], 0.1, atol=DIST_TOL)
    row = int(np.argmin(np.where(out.active[0], out.dist[0], np.inf)))
    np.testing.assert_allclose(out.normal[0, row], HF_MAT[:, 2], atol=1e-5)


def test_flat_ground_gives_one_upward_row_per_support():
    flat = np.zeros((NROW, NCOL))
    hf = terrain(flat)
    up = HF_MAT[:, 2]
    # Spheres over a cell, an edge, a diagonal and a grid vertex: one row each, straight up.
    spots = [[0.13, 0.07], [0.2, 0.0], [0.1, 0.1], [0.4, 0.4], [-1.2, 0.8]]
    out = K.run("heightfield_sphere", [(hf, K.geom(world([x, y, 0.25]), np.eye(3), [0.3, 0, 0])) for x, y in spots])
    for i in range(len(spots)):
        assert out.active[i].sum() == 1
        np.testing.assert_allclose(out.dist[i][out.active[i]], -0.05, atol=DIST_TOL)
        np.testing.assert_allclose(out.normal[i][out.active[i]][0], up, atol=1e-5)
    # A capsule lying flat: its two caps. A box resting flat: its four bottom corners.
    lying = HF_MAT @ R.rotation_about([0, 1, 0], np.pi / 2)
    out = K.run("heightfield_capsule", [(hf, K.geom(world([0.1, 0.05, 0.099]), lying, [0.1, 0.5, 0]))])
    act = out.active[0]
    assert act.sum() == 2
    np.testing.assert_allclose(np.sort((out.pos[0][act] - HF_POS) @ HF_MAT[:, 0]), [-0.4, 0.6], atol=1e-4)
    out = K.run("heightfield_box", [(hf, K.geom(world([0.1, 0.05, 0.199]), HF_MAT, [0.3, 0.2, 0.2]))])
    act = out.active[0]
    assert act.sum() == 4
    np.testing.assert_allclose(out.dist[0][act], -1e-3, atol=DIST_TOL)
    np.testing.assert_allclose(out.normal[0][act], np.broadcast_to(up, (4, 3)), atol=1e-5)


def test_valley_and_ridge():
    xs = np.linspace(-SX, SX, NCOL)
    valley = np.broadcast_to(0.5 * np.abs(xs)[None, :], (NROW, NCOL))     # V along y, slopes 0.5
    ridge = -valley
    # A sphere in the valley touches both slopes, symmetrically.
    r = 0.3
    z = r * np.sqrt(1 + 0.25) - 0.01                   # 1 cm into both slopes
    out = K.run("heightfield_sphere", [(terrain(valley), K.geom(world([0, 0.1, z]), np.eye(3), [r, 0, 0]))])
    act = out.active[0]
    assert act.sum() == 2
    n = out.normal[0][act] @ HF_MAT
    np.testing.assert_allclose(np.sort(n[:, 0]), [-1 / np.sqrt(5), 1 / np.sqrt(5)], atol=1e-5)
    np.testing.assert_allclose(out.dist[0][act], -0.01 / np.sqrt(1.25) * 1, atol=1e-4)
    # A capsule lying across the ridge, both caps in the air: one row, on the ridge line.
    across = HF_MAT @ R.rotation_about([0, 1, 0], np.pi / 2)
    out = K.run("heightfield_capsule", [(terrain(ridge), K.geom(world([0.0, 0.1, 0.12]), across, [0.1, 0.6, 0]))])
    act = out.active[0]
    np.testing.assert_allclose(K.min_active(out)[0], 0.02, atol=DIST_TOL)
    best = int(np.argmin(np.where(act, out.dist[0], np.inf)))
    np.testing.assert_allclose((out.pos[0, best] - HF_POS) @ HF_MAT[:, 0], 0.0, atol=1e-4)


def test_window_matches_whole_grid():
    # A window sized for the partner gives the same rows as examining the whole grid, also where it is
    # clamped at the grid's border.
    elev = rough()
    rng = np.random.default_rng(4)
    spots = [[0.0, 0.0], [1.9, 1.5], [-1.9, -1.5], [1.95, 0.0], [0.3, -1.55]]
    pairs_w, pairs_g = [], []
    for x, y in spots:
        c = [x, y, R.terrain_height(elev, SX, SY, x, y) + rng.uniform(0.05, 0.2)]
        s = K.geom(world(c), np.eye(3), [0.25, 0, 0])
        pairs_w.append((terrain(elev, reach=0.3), s))
        pairs_g.append((terrain(elev, reach=None), s))
    win = K.run("heightfield_sphere", pairs_w)
    whole = K.run("heightfield_sphere", pairs_g)
    np.testing.assert_allclose(K.min_active(win), K.min_active(whole), atol=DIST_TOL)
