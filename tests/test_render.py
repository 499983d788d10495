"""The CPU renderer (runtime/render.py) against projection maths done independently in numpy.

Each shape's image is compared with a different method than the renderer's: a sphere with the cone
of rays within asin(r/d) of its centre, a box with the polygon of its projected corners, a capsule
with the closest distance between each ray and its segment, a convex mesh and a height field with
Möller–Trumbore ray-triangle tests over their triangles. Image files (PNG, GIF, MP4) are decoded by
readers written here (and by ffmpeg when it is installed) and compared with the frames.
"""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from scenec.runtime import render as R

# Shapes in the image may differ from the projection by at most this, in pixels (the bar).
EDGE_TOLERANCE_PX = 2.0
# Pixels whose centre is farther than this from every silhouette edge must agree exactly: both sides
# decide a pixel by its centre, so only rounding right on an edge (float32 vs float64) can differ.
INTERIOR_MARGIN_PX = 0.5
# A height field's depth: float32 ray-triangle tests against float64 ones, on rays about 5 m long
# (float32 resolves 5 m to 5e-7 m; the triangle's float32 corners add as much again).
HFIELD_DEPTH_RTOL = 1e-5

W, H = 160, 120

SCENE = """\
name: sphere_box_plane
bodies:
  - name: ground
    colliders:
      - plane: {size: [2, 1.5]}
        rgba: [0.8, 0.8, 0.8, 1]
  - name: ball
    pos: [0.5, 0.1, 0.5]
    colliders:
      - sphere: {radius: 0.3}
        rgba: [0.9, 0.1, 0.1, 1]
  - name: crate
    pos: [-0.6, -0.2, 0.3]
    colliders:
      - box: {half_size: [0.3, 0.2, 0.15]}
        rgba: [0.1, 0.2, 0.9, 1]
joints:
  - {name: ball_free, kind: free, child: ball}
  - {name: crate_free, kind: free, child: crate}
"""

SHAPES = """\
name: more_shapes
meshes:
  - name: octahedron
    vertices: [0.3, 0, 0, -0.3, 0, 0, 0, 0.3, 0, 0, -0.3, 0, 0, 0, 0.4, 0, 0, -0.4]
    faces: [0, 2, 4, 2, 1, 4, 1, 3, 4, 3, 0, 4, 2, 0, 5, 1, 2, 5, 3, 1, 5, 0, 3, 5]
heightfields:
  - name: hills
    nrow: 5
    ncol: 6
    size_x: 0.6
    size_y: 0.5
    elevation: [0, 0.1, 0.2, 0.1, 0, 0,
                0.1, 0.3, 0.4, 0.2, 0.1, 0,
                0, 0.2, 0.5, 0.3, 0.1, 0.05,
                0, 0.1, 0.2, 0.1, 0.2, 0.1,
                0, 0, 0.1, 0, 0.1, 0]
bodies:
  - name: terrain
    pos: [0, 1.2, 0]
    colliders:
      - {heightfield: {heightfield: hills}, rgba: [0.3, 0.7, 0.3, 1]}
  - name: rod
    pos: [0.9, -0.1, 0.6]
    quat: [0.9238795, 0.3826834, 0, 0]
    colliders:
      - {capsule: {radius: 0.12, half_length: 0.3}, rgba: [0.9, 0.6, 0.1, 1]}
  - name: gem
    pos: [-0.7, 0.2, 0.5]
    quat: [0.9659258, 0, 0.258819, 0]
    colliders:
      - {mesh: {mesh: octahedron}, rgba: [0.6, 0.2, 0.8, 1]}
contacts:
  exclude: [{first: terrain, second: gem}]
joints:
  - {name: rod_free, kind: free, child: rod}
  - {name: gem_free, kind: free, child: gem}
"""

CAMERA = R.Camera(eye=np.array([2.2, -2.8, 1.9], np.float32), target=np.array([0.0, 0.1, 0.35], np.float32),
                  up=np.array([0.0, 0.0, 1.0], np.float32), fovy=np.float32(42.0))


@pytest.fixture(scope="module")
def scene(tmp_path_factory):
    from scenec.compiler import api

    path = tmp_path_factory.mktemp("render") / "scene.yaml"
    path.write_text(SCENE)
    c = api.compile(str(path), measure_jit=False)
    s = c.init()
    return c.model, np.asarray(s.xpos), np.asarray(s.xquat)


@pytest.fixture(scope="module")
def shapes(tmp_path_factory):
    from scenec.compiler import api

    path = tmp_path_factory.mktemp("render") / "shapes.yaml"
    path.write_text(SHAPES)
    c = api.compile(str(path), measure_jit=False)
    s = c.init()
    model = c.model
    # The model must carry the height field's half extents in geom_size (runtime.collision.Geom);
    # the front end leaves them zero for now (reported), so they are put in here from the scene.
    g = int(np.flatnonzero(np.asarray(model.geom_shape.array) == 1)[0])
    if not np.any(np.asarray(model.geom_size[g])):
        import dataclasses

        import jax.numpy as jnp

        model = dataclasses.replace(model, geom_size=jnp.asarray(model.geom_size).at[g].set(
            jnp.array([0.6, 0.5, 0.0], model.geom_size.dtype)))
    return model, np.asarray(s.xpos), np.asarray(s.xquat)


# ------------------------------------------------------------------------- numpy pinhole maths


def basis(cam):
    eye, target, up = (np.asarray(v, np.float64) for v in (cam.eye, cam.target, cam.up))
    f = (target - eye) / np.linalg.norm(target - eye)
    r = np.cross(f, up)
    r /= np.linalg.norm(r)
    return eye, f, r, np.cross(r, f), (H / 2) / np.tan(np.radians(float(cam.fovy)) / 2)


def project(cam, points):
    eye, f, r, u, focal = basis(cam)
    rel = np.asarray(points, np.float64) - eye
    z = rel @ f
    return np.stack([W / 2 + focal * (rel @ r) / z, H / 2 - focal * (rel @ u) / z], -1)


def pixel_rays(cam):
    """Unit directions (H, W, 3) through pixel centres (u, v) = (j + 1/2, i + 1/2)."""
    eye, f, r, u, focal = basis(cam)
    x = (np.arange(W) + 0.5 - W / 2) / focal
    y = (H / 2 - np.arange(H) - 0.5) / focal
    d = f + x[None, :, None] * r + y[:, None, None] * u
    return eye, d / np.linalg.norm(d, axis=-1, keepdims=True)


def pixel_centres():
    j, i = np.meshgrid(np.arange(W) + 0.5, np.arange(H) + 0.5)
    return np.stack([j, i], -1)


def polygon_mask(poly):
    """Pixel centres inside the convex polygon (counter-clockwise or not), and their distance to
    its boundary."""
    from scipy.spatial import ConvexHull

    hull = poly[ConvexHull(poly).vertices]                 # counter-clockwise in (u, v)
    p = pixel_centres()
    inside = np.ones((H, W), bool)
    dist = np.full((H, W), np.inf)
    for a, b in zip(hull, np.roll(hull, -1, axis=0)):
        e = b - a
        n = np.array([e[1], -e[0]]) / np.linalg.norm(e)     # outward for a counter-clockwise ring
        s = (p - a) @ n
        inside &= s <= 0
        dist = np.minimum(dist, np.abs(s))
    return inside, dist


def moller_trumbore(eye, d, tri):
    """Nearest hit parameter (H, W) of rays eye + t d with triangles (n, 3, 3); inf for none."""
    v0, v1, v2 = tri[:, 0], tri[:, 1], tri[:, 2]
    e1, e2 = v1 - v0, v2 - v0
    pvec = np.cross(d[..., None, :], e2)                    # (H, W, n, 3)
    det = np.einsum("hwnk,nk->hwn", pvec, e1)
    ok = np.abs(det) > 1e-12
    inv = 1.0 / np.where(ok, det, 1.0)
    s = eye - v0                                            # (n, 3)
    u = np.einsum("hwnk,nk->hwn", pvec, s) * inv
    q = np.cross(s, e1)                                     # (n, 3)
    v = np.einsum("hwk,nk->hwn", d, q) * inv
    t = np.einsum("nk,nk->n", e2, q)[None, None] * inv
    hit = ok & (u >= 0) & (v >= 0) & (u + v <= 1) & (t > 0)
    return np.min(np.where(hit, t, np.inf), axis=-1)


def quat_mat(q):
    w, x, y, z = np.asarray(q, np.float64) / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def geom_pose(model, xpos, xquat, g):
    """World position and rotation of collider g, from its body's pose (numpy, float64)."""
    b = int(model.geom_body_id[g])
    rb = quat_mat(xquat[b])
    return xpos[b] + rb @ np.asarray(model.geom_pos[g], np.float64), rb @ quat_mat(model.geom_quat[g])


def assert_same_silhouette(got, want, edge_dist, what):
    """Masks agree away from edges; every disagreement lies within EDGE_TOLERANCE_PX of an edge."""
    differ = got != want
    assert not np.any(differ & (edge_dist > EDGE_TOLERANCE_PX)), f"{what}: pixels far from the edge differ"
    assert not np.any(differ & (edge_dist > INTERIOR_MARGIN_PX)), f"{what}: {np.argwhere(differ)[:5]}"
    assert want.sum() > 30, f"{what}: too small to test"


def ids(model, xpos, xquat, cam=CAMERA):
    return np.asarray(R.geom_id_image(model, xpos, xquat, cam, W, H))


def geom_of(model, body_name):
    """The collider of a body; static bodies are fused into the world, so those are found by shape."""
    static = {"ground": 0, "terrain": 1}                    # collision_table.Shape: plane, height field
    if body_name in static:
        return int(np.flatnonzero(np.asarray(model.geom_shape.array) == static[body_name])[0])
    b = model.body_names.index(body_name)
    return int(np.flatnonzero(np.asarray(model.geom_body_id.array) == b)[0])


# ------------------------------------------------------------------------------------- shapes


def test_sphere_silhouette_is_the_cone_of_rays(scene):
    model, xpos, xquat = scene
    g = geom_of(model, "ball")
    c, _ = geom_pose(model, xpos, xquat, g)
    eye, d = pixel_rays(CAMERA)
    to_c = c - eye
    dist = np.linalg.norm(to_c)
    cos = d @ (to_c / dist)
    half_angle = np.arcsin(0.3 / dist)
    want = cos >= np.cos(half_angle)
    # Distance of each pixel centre to the silhouette, in pixels: angular distance × focal length.
    focal = basis(CAMERA)[4]
    edge = np.abs(np.arccos(np.clip(cos, -1, 1)) - half_angle) * focal
    got = ids(model, xpos, xquat) == g
    assert_same_silhouette(got, want, edge, "sphere")
    # And the centroid sits at the projected centre within EDGE_TOLERANCE_PX.
    ys, xs = np.nonzero(got)
    centroid = np.array([xs.mean() + 0.5, ys.mean() + 0.5])
    assert np.linalg.norm(centroid - project(CAMERA, c)) < EDGE_TOLERANCE_PX


def test_box_silhouette_is_the_polygon_of_projected_corners(scene):
    model, xpos, xquat = scene
    g = geom_of(model, "crate")
    p, rot = geom_pose(model, xpos, xquat, g)
    half = np.array([0.3, 0.2, 0.15])
    corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]) * half
    uv = project(CAMERA, p + corners @ rot.T)
    want, edge = polygon_mask(uv)
    got = ids(model, xpos, xquat) == g
    assert_same_silhouette(got, want, edge, "box")


def test_plane_fills_its_projected_rectangle_behind_the_bodies(scene):
    model, xpos, xquat = scene
    g = geom_of(model, "ground")
    corners = np.array([[-2, -1.5, 0], [2, -1.5, 0], [2, 1.5, 0], [-2, 1.5, 0]], np.float64)
    want, edge = polygon_mask(project(CAMERA, corners))
    got = ids(model, xpos, xquat)
    others = (got >= 0) & (got != g)
    assert_same_silhouette((got == g) | (others & want), want, edge, "plane")


def test_capsule_silhouette_is_where_rays_pass_within_its_radius(shapes):
    model, xpos, xquat = shapes
    g = geom_of(model, "rod")
    p, rot = geom_pose(model, xpos, xquat, g)
    a, b = p - rot[:, 2] * 0.3, p + rot[:, 2] * 0.3
    eye, d = pixel_rays(CAMERA)
    # Closest distance between each ray's line and the segment a + s (b - a), s in [0, 1]: the squared
    # distance of a segment point from the line is a quadratic A s² + 2 B s + C, minimised in closed
    # form and clamped to the segment.
    w, e = a - eye, b - a
    wd, ed = d @ w, d @ e
    A = e @ e - ed ** 2
    B = w @ e - wd * ed
    C = w @ w - wd ** 2
    s = np.clip(-B / A, 0.0, 1.0)
    gap = np.sqrt(np.maximum(A * s ** 2 + 2 * B * s + C, 0.0))
    want = gap <= 0.12
    dist = np.linalg.norm(p - eye)
    edge = np.abs(gap - 0.12) * basis(CAMERA)[4] / (dist - 0.5)
    got = ids(model, xpos, xquat) == g
    assert_same_silhouette(got, want, edge, "capsule")


def hull_triangles(model, g, p, rot):
    hull = model.geom_mesh[g]
    tris = []
    for poly in np.asarray(hull.face_vert, np.float64):
        for k in range(1, len(poly) - 1):
            tris.append(poly[[0, k, k + 1]])
    return np.array(tris) @ rot.T + p


def test_mesh_silhouette_matches_ray_triangle_tests(shapes):
    model, xpos, xquat = shapes
    g = geom_of(model, "gem")
    p, rot = geom_pose(model, xpos, xquat, g)
    tri = hull_triangles(model, g, p, rot)
    eye, d = pixel_rays(CAMERA)
    want = np.isfinite(moller_trumbore(eye, d, tri))
    # Edge distance: the projected hull outline (the convex hull of the projected vertices).
    _, edge = polygon_mask(project(CAMERA, tri.reshape(-1, 3)))
    got = ids(model, xpos, xquat) == g
    assert_same_silhouette(got, want, edge, "mesh")
    # The octahedron's 8 faces all survive as hull faces.
    assert len({tuple(np.round(n, 6)) for n in np.asarray(model.geom_mesh[g].face_normal)}) == 8


def test_heightfield_depth_matches_ray_triangle_tests(shapes):
    model, xpos, xquat = shapes
    g = geom_of(model, "terrain")
    p, rot = geom_pose(model, xpos, xquat, g)
    elev = np.asarray(model.geom_hfield[g].padded_elevation, np.float64)[1:-1, 1:-1]
    nrow, ncol = elev.shape
    sx, sy = float(model.geom_size[g][0]), float(model.geom_size[g][1])
    x, y = np.linspace(-sx, sx, ncol), np.linspace(-sy, sy, nrow)
    grid = np.stack(np.broadcast_arrays(x[None, :], y[:, None], elev), -1)
    a, b, c, d4 = grid[:-1, :-1], grid[:-1, 1:], grid[1:, 1:], grid[1:, :-1]
    tri = np.concatenate([np.stack([a, b, c], 2).reshape(-1, 3, 3), np.stack([a, c, d4], 2).reshape(-1, 3, 3)])
    tri = tri @ rot.T + p
    eye, d = pixel_rays(CAMERA)
    t_want = moller_trumbore(eye, d, tri)

    import jax.numpy as jnp

    gpos, gmat = R.geom_world(model, jnp.asarray(xpos, jnp.float32), jnp.asarray(xquat, jnp.float32))
    o = np.broadcast_to(eye, d.shape).reshape(-1, 3).astype(np.float32)
    import jax

    t, _, geom = jax.jit(R.cast)(model, gpos, gmat, jnp.asarray(o), jnp.asarray(d.reshape(-1, 3), jnp.float32))
    t, geom = np.asarray(t).reshape(H, W), np.asarray(geom).reshape(H, W)
    top = np.isfinite(t_want) & (geom == g)
    assert top.sum() > 200
    np.testing.assert_allclose(t[top], t_want[top], rtol=HFIELD_DEPTH_RTOL)
    # Every ray that meets the terrain's top surface sees the terrain (or something in front of it);
    # rays that miss it only see the terrain on its walls (sides down to its lowest point).
    assert np.all((geom == g) | (geom != g) & (t < t_want) | ~np.isfinite(t_want))
    walls = (geom == g) & ~np.isfinite(t_want)
    if walls.any():
        hit_local = ((eye + t[walls, None] * d[walls]) - p) @ rot
        on_side = (np.abs(np.abs(hit_local[:, 0]) - sx) < 1e-3) | (np.abs(np.abs(hit_local[:, 1]) - sy) < 1e-3)
        assert np.all(on_side | (hit_local[:, 2] < elev.max() + 1e-3))


# ------------------------------------------------------------------------------ shading, frames


def test_colours_shadow_and_determinism(scene):
    model, xpos, xquat = scene
    opts = R.RenderOptions(W, H, samples=1, shadows=True, checker=0.0)
    img = R.render(model, xpos[None], xquat[None], CAMERA, opts)[0]
    again = R.render(model, xpos[None], xquat[None], CAMERA, opts)[0]
    assert img.dtype == np.uint8 and img.shape == (H, W, 3)
    assert np.array_equal(img, again)
    got = ids(model, xpos, xquat)
    c = img.astype(int)
    red = (c[..., 0] > 2 * c[..., 1]) & (c[..., 0] > 2 * c[..., 2])
    blue = (c[..., 2] > 2 * c[..., 0]) & (c[..., 2] > c[..., 1])
    assert np.array_equal(red, got == geom_of(model, "ball"))
    assert np.array_equal(blue, got == geom_of(model, "crate"))
    # The ball's shadow: the ground point below the ball's centre along the light is darker than the
    # lit ground (Lambert: (ambient + diffuse·cosθ)/ambient in linear light).
    light = np.asarray(R.LIGHT_DIR) / np.linalg.norm(R.LIGHT_DIR)
    ball = geom_pose(model, xpos, xquat, geom_of(model, "ball"))[0]
    shadow = ball - light * ball[2] / light[2]
    u, v = project(CAMERA, shadow).astype(int)
    assert got[v, u] == geom_of(model, "ground")
    lit = img[got == geom_of(model, "ground")].astype(int).max(axis=0)
    lin = lambda x: (x / 255.0) ** 2.2  # noqa: E731
    ratio = lin(lit[0]) / lin(img[v, u, 0])
    expected = (R.AMBIENT + R.DIFFUSE * light[2]) / R.AMBIENT
    assert abs(ratio - expected) < 0.1 * expected


def test_frames_are_batched_and_the_camera_can_move(scene):
    model, xpos, xquat = scene
    T = 3
    xp = np.repeat(xpos[None], T, axis=0)
    xp[:, 1, 0] += np.array([-0.2, 0.0, 0.2])               # the ball slides along x
    xq = np.repeat(xquat[None], T, axis=0)
    opts = R.RenderOptions(W, H, samples=1, shadows=False, checker=0.5)
    batch = R.render(model, xp, xq, CAMERA, opts)
    for k in range(T):
        assert np.array_equal(batch[k], R.render(model, xp[k:k + 1], xq[k:k + 1], CAMERA, opts)[0])
    assert not np.array_equal(batch[0], batch[2])
    moving = R.Camera(*(np.repeat(np.asarray(v)[None], T, axis=0) for v in CAMERA))
    assert np.array_equal(R.render(model, xp, xq, moving, opts), batch)
    # A tracking camera (one eye and target per frame, one field of view) keeps the ball's image
    # still while the ball slides: the camera moves with the scene's centre.
    track = R.auto_camera(model, xp, xq, track=True)
    assert np.shape(track.eye) == (T, 3) and np.ndim(track.fovy) == 0
    tracked = R.render(model, xp, xq, track, opts)
    assert tracked.shape == (T, H, W, 3)
    centres = []
    for k in range(T):
        ys, xs = np.nonzero(ids(model, xp[k], xq[k], R.Camera(track.eye[k], track.target[k], track.up[k], track.fovy))
                            == geom_of(model, "ball"))
        centres.append(xs.mean())
    assert np.ptp(centres) < np.ptp(project(CAMERA, xp[:, 1])[:, 0])


def test_auto_camera_frames_the_bodies(scene):
    model, xpos, xquat = scene
    cam = R.auto_camera(model, xpos[None], xquat[None], fovy=45.0)
    got = ids(model, xpos, xquat, cam)
    for body in ("ball", "crate"):
        mask = got == geom_of(model, body)
        assert mask.sum() > 50
        ys, xs = np.nonzero(mask)
        assert xs.min() > 0 and xs.max() < W - 1 and ys.min() > 0 and ys.max() < H - 1


def test_contact_points_of_a_resting_ball(scene):
    model, xpos, xquat = scene
    xp = xpos.copy()
    b = model.body_names.index("ball")
    xp[b] = [0.2, 0.1, 0.3 - 5e-4]                           # 0.5 mm into the ground
    pos, active = R.contact_points(model, xp, xquat)
    pos, active = np.asarray(pos), np.asarray(active)
    assert active.sum() == 1
    np.testing.assert_allclose(pos[active][0], [0.2, 0.1, 0.0], atol=1e-3)
    xp[b, 2] = 0.5                                           # lifted: no contact shown
    assert not np.any(np.asarray(R.contact_points(model, xp, xquat)[1]))


# ------------------------------------------------------------------------------------ images


def gif_decode(data: bytes) -> list[np.ndarray]:
    """Frames (H, W, 3) of a GIF with a global colour table (LZW decoded here, from the spec)."""
    import struct

    assert data[:6] in (b"GIF89a", b"GIF87a")
    w, h, flags = struct.unpack("<HHB", data[6:11])
    size = 2 << (flags & 7)
    palette = np.frombuffer(data[13:13 + 3 * size], np.uint8).reshape(-1, 3)
    pos = 13 + 3 * size
    frames = []
    while data[pos] != 0x3B:
        if data[pos] == 0x21:                               # extension: skip its sub-blocks
            pos += 2
            while data[pos]:
                pos += data[pos] + 1
            pos += 1
            continue
        assert data[pos] == 0x2C
        fw, fh, fflags = struct.unpack("<4xHHB", data[pos + 1:pos + 10])
        assert (fw, fh, fflags & 0x80) == (w, h, 0)
        min_size = data[pos + 10]
        pos += 11
        stream = bytearray()
        while data[pos]:
            stream += data[pos + 1:pos + 1 + data[pos]]
            pos += data[pos] + 1
        pos += 1
        clear, end = 1 << min_size, (1 << min_size) + 1
        width, bit, out, table, prev = min_size + 1, 0, [], None, None
        value = int.from_bytes(stream, "little")
        while True:
            code = (value >> bit) & ((1 << width) - 1)
            bit += width
            if code == clear:
                table = [bytes([i]) for i in range(clear)] + [b"", b""]
                width, prev = min_size + 1, None
                continue
            if code == end:
                break
            if prev is None:
                entry = table[code]
            else:
                entry = table[code] if code < len(table) else prev + prev[:1]
                table.append(prev + entry[:1])
                if len(table) == (1 << width) and width < 12:
                    width += 1
            out.append(entry)
            prev = entry
        idx = np.frombuffer(b"".join(out), np.uint8)
        assert len(idx) == w * h
        frames.append(palette[idx].reshape(h, w, 3))
    return frames


def test_png_round_trip():
    from test_viewer_browser import decode_png

    from scenec.compiler.viewer.images import encode_png

    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (37, 53, 3), dtype=np.uint8)
    assert np.array_equal(decode_png(encode_png(img)), img)


def test_gif_round_trip_is_exact_for_few_colours():
    from scenec.compiler.viewer.images import encode_gif

    rng = np.random.default_rng(1)
    colours = rng.integers(0, 256, (200, 3), dtype=np.uint8)
    # Noise over 200 colours: long enough (9000 pixels a frame) to fill the 4096-code table and reset.
    frames = colours[rng.integers(0, 200, (3, 60, 150))]
    data = encode_gif(frames, fps=10)
    decoded = gif_decode(data)
    assert len(decoded) == 3
    for a, b in zip(decoded, frames):
        assert np.array_equal(a, b)
    if shutil.which("ffmpeg"):
        raw = subprocess.run(["ffmpeg", "-loglevel", "error", "-i", "-", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],
                             input=data, capture_output=True, check=True).stdout
        assert np.array_equal(np.frombuffer(raw, np.uint8).reshape(3, 60, 150, 3), frames)


def test_gif_of_a_render_is_close(scene):
    from scenec.compiler.viewer.images import encode_gif

    model, xpos, xquat = scene
    img = R.render(model, xpos[None], xquat[None], CAMERA, R.RenderOptions(W, H, samples=2))
    back = gif_decode(encode_gif(img))[0].astype(int)
    # 256 colours chosen by median cut, each within a box of similar colours: a mean error of a few
    # levels, never a wrong hue.
    assert np.abs(back - img[0]).mean() < 3.0
    assert np.abs(back - img[0]).max() < 48


@pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="no ffmpeg on PATH")
def test_mp4_through_ffmpeg(tmp_path, scene):
    from scenec.compiler.viewer.images import write_mp4

    model, xpos, xquat = scene
    frames = np.repeat(R.render(model, xpos[None], xquat[None], CAMERA, R.RenderOptions(W, H - 1)), 4, axis=0)
    path = tmp_path / "out.mp4"
    write_mp4(frames, path, fps=10)
    raw = subprocess.run(["ffmpeg", "-loglevel", "error", "-i", str(path), "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],
                         capture_output=True, check=True).stdout
    back = np.frombuffer(raw, np.uint8).reshape(4, H, W, 3)          # padded to an even height
    # H.264 with 4:2:0 chroma is lossy: compare the mean error only.
    assert np.abs(back[:, :H - 1].astype(int) - frames).mean() < 6.0
