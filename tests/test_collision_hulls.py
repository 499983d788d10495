"""box_box, box_mesh, mesh_mesh: the claims of the SAT + clipping kernels, checked against the exact
signed distance of the Minkowski difference (float64, qhull / NNLS).

Claims (collision.py's docstring): overlapping, the smallest row distance is the penetration depth up
to the face preference; apart, no row claims a distance smaller than the true one; resting contacts
have the right number of rows at the right places.
"""

from __future__ import annotations

import zlib

import jax
import numpy as np
import pytest

import collision_cases as K
import collision_reference as R
from scenec.runtime import collision, collision_data
from scenec.runtime.collision_table import Shape

# float32 distances on metre-size shapes (observed errors below 5e-7 m).
DIST_TOL = 1e-5
# Contact points pass through a few more float32 operations (two rotations) than distances.
SURFACE_TOL = 2e-5
NPOSE = 60


@pytest.fixture(autouse=True)
def strict_promotion():
    with jax.numpy_dtype_promotion("strict"):
        yield


HULL_PAIRS = [("box_box", Shape.BOX, Shape.BOX), ("box_mesh", Shape.BOX, Shape.MESH),
              ("mesh_mesh", Shape.MESH, Shape.MESH)]


def random_configurations(name, a, b):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    hulls = [K.random_hull(rng) for _ in range(3)]
    pairs, refs, radii = [], [], []
    for k in range(NPOSE):
        p1 = rng.normal(size=3) * 0.1
        d = rng.normal(size=3)
        p2 = p1 + d / np.linalg.norm(d) * rng.uniform(0.1, 2.2)
        g1, (pts1, _) = K.shape_geom(a, rng, p1, hull=hulls[k % 3])
        g2, (pts2, _) = K.shape_geom(b, rng, p2, hull=hulls[(k + 1) % 3])
        pairs.append((g1, g2))
        refs.append(R.hull_signed_distance(pts1, pts2))
        radii.append(min(np.linalg.norm(pts1 - pts1.mean(0), axis=1).max(),
                         np.linalg.norm(pts2 - pts2.mean(0), axis=1).max()))
    return pairs, np.array(refs), np.array(radii)


@pytest.mark.parametrize("name,a,b", HULL_PAIRS, ids=[h[0] for h in HULL_PAIRS])
def test_depth_exact_and_rows_honest(name, a, b):
    pairs, want, radius = random_configurations(name, a, b)
    out = K.run(name, pairs)
    got = K.min_active(out)
    over = want < 0
    assert over.sum() >= 10 and (~over).sum() >= 10
    # Overlapping: the exact depth, except that a face axis is kept over a better edge axis (or b's face
    # over a's) by up to FACE_PREFERENCE x the smaller radius, each, which can only deepen the answer.
    slack = 2 * collision.FACE_PREFERENCE * radius[over] + DIST_TOL
    assert np.all(np.isfinite(got[over]))
    assert np.all(got[over] <= want[over] + DIST_TOL)
    assert np.all(got[over] >= want[over] - slack)
    # Apart: every active row is a pair of surface points, at least the true distance apart.
    rows = np.where(out.active[~over], out.dist[~over], np.inf)
    assert np.all(rows >= want[~over][:, None] - DIST_TOL)
    # Normals are unit, every value finite (padding rows included).
    act = out.active
    np.testing.assert_allclose(np.linalg.norm(out.normal[act], axis=-1), 1.0, atol=1e-5)
    assert all(np.all(np.isfinite(x)) for x in (out.dist, out.pos, out.normal))


def test_face_contacts_are_exact_when_apart_or_touching():
    # A box above another, faces parallel (a face-face contact): every row is at the gap, and they
    # are the corners of the overlap.
    rng = np.random.default_rng(5)
    pairs, gaps, shapes = [], [], []
    for _ in range(10):
        gap = rng.uniform(-0.05, 0.2)
        h1, h2 = rng.uniform(0.2, 0.6, 3), rng.uniform(0.1, 0.3, 3)
        spin = R.rotation_about([0, 0, 1], rng.uniform(0, np.pi))
        shift = np.r_[rng.uniform(-0.1, 0.1, 2), h1[2] + h2[2] + gap]
        pairs.append((K.geom([0, 0, 0], np.eye(3), h1), K.geom(shift, spin, h2)))
        gaps.append(gap)
        shapes.append((R.box_corners([0, 0, 0], np.eye(3), h1), R.box_corners(shift, spin, h2)))
    out = K.run("box_box", pairs)
    for i, gap in enumerate(gaps):
        act = out.active[i]
        assert act.sum() >= 4
        np.testing.assert_allclose(out.dist[i][act], gap, atol=DIST_TOL)
        np.testing.assert_allclose(out.normal[i][act], np.broadcast_to([0, 0, 1], (act.sum(), 3)), atol=1e-6)
        # Midway: half the distance back along the normal is on the lower box, forward on the upper.
        for k in np.flatnonzero(act):
            d, n, p = out.dist[i, k], out.normal[i, k], out.pos[i, k]
            assert abs(R.hull_signed_distance(shapes[i][0], (p - 0.5 * d * n)[None])) < SURFACE_TOL
            assert abs(R.hull_signed_distance(shapes[i][1], (p + 0.5 * d * n)[None])) < SURFACE_TOL


def box(pos, mat, h):
    return K.geom(pos, mat, h)


def cube_mesh(pos, mat, half=0.5):
    v, f = collision_data.box_mesh_triangles([half] * 3)
    return K.geom(pos, mat, [0, 0, 0], mesh=K.mesh_data(v, f))


def unique_points(p, act, decimals=4):
    return np.unique(np.round(p[act], decimals), axis=0)


def test_resting_boxes_have_the_overlap_corners():
    eye = np.eye(3)
    z45 = R.rotation_about([0, 0, 1], np.pi / 4)
    depth = 1e-3
    cases = [  # (second box, expected rows, expected x-y corners or None)
        (box([0, 0, 1 - depth], eye, [0.5] * 3), 4, [[-.5, -.5], [-.5, .5], [.5, -.5], [.5, .5]]),
        # Same width along y, shifted along x: the reference corners lie on the incident edges.
        (box([0.3, 0, 1 - depth], eye, [0.5] * 3), 4, [[-.2, -.5], [-.2, .5], [.5, -.5], [.5, .5]]),
        (box([0, 0, 1 - depth], z45, [0.5] * 3), 8, None),           # an octagon
        (box([0.1, 0.2, 0.7 - depth], R.rotation_about([0, 0, 1], 0.3), [0.2, 0.3, 0.2]), 4, None),
    ]
    out = K.run("box_box", [(box([0, 0, 0], eye, [0.5, 0.5, 0.5] if i != 3 else [2, 2, 0.5]), c[0])
                            for i, c in enumerate(cases)])
    for i, (_, nrow, corners) in enumerate(cases):
        act = out.active[i]
        assert act.sum() == nrow
        assert len(unique_points(out.pos[i], act)) == nrow
        np.testing.assert_allclose(out.dist[i][act], -depth, atol=DIST_TOL)
        if corners is not None:
            np.testing.assert_allclose(unique_points(out.pos[i], act)[:, :2], corners, atol=1e-4)
    octagon = out.pos[2][out.active[2]]
    # The octagon's corners: the two squares' edges cross at x, y = +-0.5, +-(sqrt(2) - 1) * 0.5.
    np.testing.assert_allclose(np.sort(np.abs(octagon[:, :2]).ravel()),
                               np.sort(np.tile([0.5, (np.sqrt(2) - 1) / 2], 8)), atol=1e-4)


def test_resting_meshes_have_spread_supports():
    eye = np.eye(3)
    depth = 1e-3
    pairs = {
        "mesh_mesh": [(cube_mesh([0, 0, 0], eye), cube_mesh([0.3, 0, 1 - depth], eye)),
                      (cube_mesh([0, 0, 0], eye), cube_mesh([0, 0, 1 - depth], R.rotation_about([0, 0, 1], 0.7)))],
        "box_mesh": [(box([0, 0, 0], eye, [0.5] * 3), cube_mesh([0.3, 0, 1 - depth], eye)),
                     (box([0, 0, 0], eye, [0.5] * 3), cube_mesh([0, 0, 1 - depth], R.rotation_about([0, 0, 1], 0.7)))],
    }
    for name, ps in pairs.items():
        out = K.run(name, ps)
        for i in range(len(ps)):
            act = out.active[i]
            # At least four distinct supports that surround the centre of the contact patch.
            pts = unique_points(out.pos[i], act)
            assert len(pts) >= 4
            np.testing.assert_allclose(out.dist[i][act], -depth, atol=DIST_TOL)
            centre = np.array([0.15, 0.0]) if i == 0 else np.zeros(2)
            assert np.all(pts[:, :2].min(0) < centre) and np.all(pts[:, :2].max(0) > centre)


def test_crossed_edges_give_one_exact_row():
    rx, ry = R.rotation_about([1, 0, 0], np.pi / 4), R.rotation_about([0, 1, 0], np.pi / 4)
    h = np.array([0.5, 0.5, 0.5])
    pairs, want = [], []
    for gap in (-0.05, -0.01, 0.02):
        z = np.sqrt(2) + gap
        pairs.append((box([0, 0, 0], rx, h), box([0, 0, z], ry, h)))
        want.append(R.hull_signed_distance(R.box_corners([0, 0, 0], rx, h), R.box_corners([0, 0, z], ry, h)))
    out = K.run("box_box", pairs)
    for i in range(len(pairs)):
        assert out.active[i].sum() == 1
        np.testing.assert_allclose(K.min_active(out)[i], want[i], atol=DIST_TOL)
        row = int(np.argmax(out.active[i]))
        np.testing.assert_allclose(out.normal[i, row], [0, 0, 1], atol=1e-5)
        np.testing.assert_allclose(out.pos[i, row], [0, 0, np.sqrt(2) / 2 + 0.5 * want[i]], atol=1e-4)
