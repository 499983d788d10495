"""Compile-time collider data: merged convex hulls padded to budgets, and height-field windows."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial import ConvexHull

from scenec.runtime import collision_data as D

# Geometry here is float64 NumPy on unit-size shapes: 1e-9 m is rounding, not geometry.
EPS = 1e-9


def prism(n: int, radius=1.0, half_height=0.5):
    """Vertices and triangles of a regular n-gon prism (caps with n vertices, n quad sides)."""
    ang = 2 * np.pi * np.arange(n) / n
    ring = np.stack([radius * np.cos(ang), radius * np.sin(ang)], 1)
    v = np.concatenate([np.c_[ring, -half_height * np.ones(n)], np.c_[ring, half_height * np.ones(n)]])
    return v, ConvexHull(v).simplices


def check_hull(c: D.ConvexData, vertices):
    """Properties every padded hull must have, whatever its budgets."""
    # Every vertex is inside or on every face plane; every face plane touches the hull.
    s = vertices @ c.face_normal.T - c.face_offset
    assert np.all(s <= EPS) and np.allclose(s.max(axis=0), 0.0, atol=EPS)
    np.testing.assert_allclose(np.linalg.norm(c.face_normal, axis=1), 1.0, atol=EPS)
    # Merged faces are flat up to the merge angle times the hull's size.
    flat = EPS + np.sqrt(2 * D.COPLANAR_NORMAL_TOLERANCE) * 2 * float(c.radius)
    for n, o, poly, side in zip(c.face_normal, c.face_offset, c.face_vert, c.face_side):
        np.testing.assert_allclose(poly @ n, o, atol=flat)             # polygon in its plane
        edges = np.roll(poly, -1, axis=0) - poly
        # Counter-clockwise seen from outside: consecutive edges turn about +normal (never negative).
        assert np.all(np.cross(edges, np.roll(edges, -1, axis=0)) @ n >= -EPS)
        # Side normals: unit, in the plane, pointing inward (every polygon vertex on their inner side).
        length = np.linalg.norm(edges, axis=1)
        np.testing.assert_allclose(np.linalg.norm(side, axis=1), (length > 0).astype(float), atol=EPS)
        assert np.all(np.abs(side @ n) <= EPS)
        assert np.all(np.einsum("kc,mkc->mk", side, poly[:, None, :] - poly[None, :, :]) >= -EPS)
    for a, b, (n1, n2) in zip(c.edge_a, c.edge_b, c.edge_normal):
        # An edge lies on both faces it separates, and the two are different faces.
        o1 = c.face_offset[np.argmax(c.face_normal @ n1)]
        o2 = c.face_offset[np.argmax(c.face_normal @ n2)]
        np.testing.assert_allclose([a @ n1, b @ n1, a @ n2, b @ n2], [o1, o1, o2, o2], atol=flat)
        assert n1 @ n2 < 1 - D.COPLANAR_NORMAL_TOLERANCE
    assert np.all(np.abs(c.vert[:, None, :] - vertices[None]).sum(-1).min(axis=1) <= EPS)
    assert c.radius > 0


def test_cube_merges_into_six_squares():
    v, f = D.box_mesh_triangles([0.5, 1.0, 1.5])
    assert D.convex_mesh_counts(v, f) == (8, 6, 12)
    c = D.convex_mesh_data(v, f, vertex_budget=8, face_budget=6, edge_budget=12, face_vertex_budget=4)
    check_hull(c, v)
    np.testing.assert_allclose(np.sort(c.face_offset), [0.5, 0.5, 1.0, 1.0, 1.5, 1.5])
    np.testing.assert_allclose(np.abs(c.face_normal).sum(axis=1), 1.0)   # axis-aligned normals
    np.testing.assert_allclose(c.center, 0.0, atol=EPS)


def test_prism_faces_are_polygons():
    v, f = prism(6)
    assert D.convex_mesh_counts(v, f) == (12, 8, 18)    # 2 hexagons + 6 quads; Euler 12 - 18 + 8 = 2
    c = D.convex_mesh_data(v, f, vertex_budget=12, face_budget=8, edge_budget=18)
    check_hull(c, v)
    assert sorted(int((np.linalg.norm(np.diff(p, axis=0, append=p[:1]), axis=1) > 0).sum())
                  for p in c.face_vert) == [4] * 6 + [6, 6]


@pytest.mark.parametrize("seed", range(5))
def test_random_hulls_satisfy_euler_and_invariants(seed):
    rng = np.random.default_rng(seed)
    pts = rng.normal(size=(20, 3))
    v = pts[ConvexHull(pts).vertices]
    nv, nf, ne = D.convex_mesh_counts(v, ConvexHull(v).simplices)
    assert nv - ne + nf == 2
    c = D.convex_mesh_data(v, ConvexHull(v).simplices, vertex_budget=nv, face_budget=nf, edge_budget=ne)
    check_hull(c, v)


def test_padding_changes_no_support_or_plane_result():
    rng = np.random.default_rng(7)
    v, f = prism(5)
    tight = D.convex_mesh_data(v, f, vertex_budget=10, face_budget=7, edge_budget=15)
    loose = D.convex_mesh_data(v, f, vertex_budget=24, face_budget=16, edge_budget=40, face_vertex_budget=12)
    check_hull(loose, v)
    assert loose.vert.shape == (24, 3) and loose.face_vert.shape == (16, 12, 3) and loose.edge_a.shape == (40, 3)
    for d in rng.normal(size=(50, 3)):
        assert np.max(tight.vert @ d) == np.max(loose.vert @ d)                     # support function
        p = d * 2
        assert np.max(tight.face_normal @ p - tight.face_offset) == np.max(loose.face_normal @ p - loose.face_offset)
    # Padding repeats the last polygon vertex: zero-length sides with zero side normals, the real sides
    # unchanged (the closing side now starts at the last repeat).
    real = lambda sides: sides[np.linalg.norm(sides, axis=1) > 0]  # noqa: E731
    for f in range(len(tight.face_normal)):
        m = len(real(loose.face_side[f]))
        np.testing.assert_array_equal(loose.face_vert[f, m:], np.repeat(loose.face_vert[f, m - 1:m], 12 - m, axis=0))
        np.testing.assert_array_equal(loose.face_side[f, m - 1:-1], 0.0)
        np.testing.assert_allclose(real(loose.face_side[f]), real(tight.face_side[f]))


def test_large_faces_are_inscribed_for_clipping():
    v, f = prism(16)
    c = D.convex_mesh_data(v, f, vertex_budget=32, face_budget=18, edge_budget=48, face_vertex_budget=8)
    check_hull(c, v)
    caps = [p for p, n in zip(c.face_vert, c.face_normal) if abs(n[2]) > 0.5]
    for p in caps:
        # Eight of the cap's own vertices, spread round it (area within 15 % of the 16-gon's).
        assert len(np.unique(p, axis=0)) == 8
        area = 0.5 * abs(np.cross(p, np.roll(p, -1, axis=0))[:, 2].sum())
        full = 0.5 * 16 * np.sin(2 * np.pi / 16)
        assert 0.85 * full < area <= full
    # The edges still describe the whole hull (the 16 cap edges of each cap are kept).
    assert D.convex_mesh_counts(v, f)[2] == 48


def test_budget_errors():
    v, f = D.box_mesh_triangles([1, 1, 1])
    with pytest.raises(ValueError, match="budgets"):
        D.convex_mesh_data(v, f, vertex_budget=7, face_budget=6, edge_budget=12)
    with pytest.raises(ValueError):
        D.convex_mesh_data(v, f[:3], vertex_budget=8, face_budget=6, edge_budget=12)
    with pytest.raises(ValueError):                        # an open surface is not a hull
        D.convex_mesh_data(v, f[:-1], vertex_budget=8, face_budget=6, edge_budget=12)


def test_heightfield_window_and_padding():
    elev = np.linspace(0, 1, 11 * 21).reshape(11, 21)   # rows along y
    whole = D.heightfield_data(elev, 2.0, 1.0)
    assert whole.window_col.shape == (21,) and whole.window_row.shape == (11,)
    assert whole.padded_elevation.shape == (13, 23)
    np.testing.assert_array_equal(whole.padded_elevation[1:-1, 1:-1], elev)
    ring = np.concatenate([whole.padded_elevation[0], whole.padded_elevation[-1],
                           whole.padded_elevation[:, 0], whole.padded_elevation[:, -1]])
    assert np.all(ring < elev.min() - np.ptp(elev) - 2 * (2.0 + 1.0))
    # Cells are 0.2 m along both axes: reach 0.3 m needs 2 * ceil(1.5 + 0.5) = 4 cells.
    near = D.heightfield_data(elev, 2.0, 1.0, reach=0.3)
    assert near.window_col.shape == (5,) and near.window_row.shape == (5,)
    np.testing.assert_array_equal(near.window_col, np.arange(5))
    # A window never exceeds the grid.
    far = D.heightfield_data(elev, 2.0, 1.0, reach=50.0)
    assert far.window_col.shape == (21,) and far.window_row.shape == (11,)


def test_heightfield_errors():
    with pytest.raises(ValueError):
        D.heightfield_data(np.zeros((1, 5)), 1.0, 1.0)
    with pytest.raises(ValueError):
        D.heightfield_data(np.zeros((3, 3)), 0.0, 1.0)
    with pytest.raises(ValueError):
        D.heightfield_data(np.full((3, 3), np.nan), 1.0, 1.0)
