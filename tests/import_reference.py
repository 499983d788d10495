"""Reference computations for the importer tests: what MuJoCo says about a model, and the same
quantities read back from an imported scenec Scene (float64 NumPy, independent of the importers
except for the quaternion helpers, which test_import_frames.py checks against MuJoCo's own).

Used by tests/test_import_mjcf.py and tests/test_import_urdf.py.
"""

from __future__ import annotations

import numpy as np

from scenec.compiler.importers import frames
from scenec.schema import scene_pb2

# Poses, axes, masses and inertias are float64 arithmetic with no iteration on both sides (MuJoCo
# composes the same frames in double precision), so they agree to round-off: ~1e-15 per operation,
# a few dozen operations deep. 1e-9 leaves six orders of magnitude and still catches any real error.
TOL = 1e-9


def body_pose(body: scene_pb2.Body):
    pos = np.array(body.pos) if len(body.pos) else np.zeros(3)
    quat = np.array(body.quat) if len(body.quat) else frames.IDENTITY.copy()
    return pos, quat


def inertia_matrix(body: scene_pb2.Body) -> np.ndarray:
    v = list(body.inertia)
    if len(v) == 3:
        return np.diag(v)
    xx, yy, zz, xy, xz, yz = v
    return np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])


def mujoco_body_names(scene: scene_pb2.Scene, model) -> dict[int, str]:
    """MuJoCo body id (>= 1) -> scenec body name (named bodies keep their name; the importer names
    an unnamed body `body<id>`)."""
    names = {b.name for b in scene.bodies}
    out = {}
    for i in range(1, model.nbody):
        n = model.body(i).name or f"body{i}"
        assert n in names, f"MuJoCo body {i} ({n!r}) missing from the imported scene"
        out[i] = n
    return out


def same_rotation(q1, q2) -> float:
    """1 - |<q1, q2>|: 0 for the same rotation (q and -q are one rotation)."""
    return 1.0 - abs(float(np.dot(q1, q2)))


def assert_kinematics(scene: scene_pb2.Scene, model, data, tol: float = TOL) -> None:
    """Every body's world pose and every joint's world anchor/axis match MuJoCo at qpos0."""
    bodies = {b.name: b for b in scene.bodies}
    for i, name in mujoco_body_names(scene, model).items():
        pos, quat = body_pose(bodies[name])
        np.testing.assert_allclose(pos, data.xpos[i], atol=tol, err_msg=f"body {name} pos")
        assert same_rotation(quat, data.xquat[i]) < tol, f"body {name} quat {quat} vs {data.xquat[i]}"
    moving = [j for j in scene.joints if j.kind != scene_pb2.FIXED]
    assert len(moving) == model.njnt, "one scenec joint per MuJoCo joint (fixed ones aside)"
    for jid, j in enumerate(moving):
        assert model.jnt_bodyid[jid] and mujoco_body_names(scene, model)[model.jnt_bodyid[jid]] == j.child
        if j.kind == scene_pb2.FREE:
            continue
        pos, quat = body_pose(bodies[j.child])
        anchor = pos + frames.rotate(quat, list(j.anchor) or [0.0, 0.0, 0.0])
        np.testing.assert_allclose(anchor, data.xanchor[jid], atol=tol, err_msg=f"joint {j.name} anchor")
        if j.kind != scene_pb2.BALL:
            axis = frames.rotate(quat, list(j.axis) or [0.0, 0.0, 1.0])
            np.testing.assert_allclose(axis, data.xaxis[jid], atol=tol, err_msg=f"joint {j.name} axis")


def assert_inertials(scene: scene_pb2.Scene, model, tol: float = TOL) -> int:
    """Bodies that carry mass/inertia in the scene match MuJoCo's body_mass, body_ipos and the
    inertia tensor R(body_iquat) diag(body_inertia) R^T. Returns how many were compared."""
    bodies = {b.name: b for b in scene.bodies}
    n = 0
    for i, name in mujoco_body_names(scene, model).items():
        b = bodies[name]
        if not b.HasField("mass"):
            continue
        n += 1
        assert abs(b.mass - model.body_mass[i]) < tol, name
        com = np.array(b.com) if len(b.com) else np.zeros(3)
        np.testing.assert_allclose(com, model.body_ipos[i], atol=tol, err_msg=f"{name} com")
        want = frames.inertia_in_frame(model.body_inertia[i], model.body_iquat[i])
        np.testing.assert_allclose(inertia_matrix(b), want, atol=tol, err_msg=f"{name} inertia")
    return n


def collider_volume(col: scene_pb2.Collider, scene: scene_pb2.Scene, base_dir=None) -> float:
    """Volume by the textbook formulas (a mesh: its convex hull, via trimesh)."""
    shape = col.WhichOneof("shape")
    if shape == "sphere":
        return 4 / 3 * np.pi * col.sphere.radius ** 3
    if shape == "capsule":
        r, h = col.capsule.radius, col.capsule.half_length
        return np.pi * r * r * 2 * h + 4 / 3 * np.pi * r ** 3
    if shape == "box":
        return float(np.prod(np.array(col.box.half_size) * 2))
    if shape == "mesh":
        import trimesh

        mesh = next(m for m in scene.meshes if m.name == col.mesh.mesh)
        if mesh.file:
            pts = trimesh.load(str(base_dir / mesh.file), force="mesh").vertices
        else:
            pts = np.array(mesh.vertices).reshape(-1, 3)
        pts = np.asarray(pts) * (np.array(mesh.scale) if len(mesh.scale) else 1.0)
        return float(trimesh.convex.convex_hull(pts).volume)
    return 0.0


def derived_mass_and_com(body: scene_pb2.Body, scene: scene_pb2.Scene, default_density=1000.0,
                         base_dir=None):
    """Mass and centre of mass the compiler will derive from the colliders' densities."""
    total, moment = 0.0, np.zeros(3)
    for col in body.colliders:
        volume = collider_volume(col, scene, base_dir)
        m = (col.density if col.HasField("density") else default_density) * volume
        total += m
        moment += m * (np.array(col.pos) if len(col.pos) else np.zeros(3))
    return total, (moment / total if total else moment)


def geom_names(scene: scene_pb2.Scene, model) -> dict[int, str]:
    """MuJoCo geom id -> scenec collider name ("<body>/<k>" for unnamed colliders)."""
    bodies = {b.name: b for b in scene.bodies}
    names = mujoco_body_names(scene, model)
    world = next((b.name for b in scene.bodies if b.name.startswith("world_geoms")), None)
    out = {}
    for g in range(model.ngeom):
        bid = model.geom_bodyid[g]
        bname = names[bid] if bid else world
        k = g - model.body_geomadr[bid]
        col = bodies[bname].colliders[k]
        out[g] = col.name or f"{bname}/{k}"
    return out


def mujoco_rule_pairs(scene: scene_pb2.Scene, model) -> set[frozenset]:
    """The geom pairs MuJoCo may collide, by the rules of its documentation ("Collision detection"):
    explicit <pair>s always; otherwise geoms on different weld bodies, not weld parent and child
    (unless one is the world, and only while filterparent is enabled), not excluded, with
    compatible contype/conaffinity."""
    import mujoco

    names = geom_names(scene, model)
    filterparent = not (model.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_FILTERPARENT)
    excluded = set(int(s) for s in model.exclude_signature)
    out = set()
    for g1 in range(model.ngeom):
        for g2 in range(g1 + 1, model.ngeom):
            b1, b2 = model.geom_bodyid[g1], model.geom_bodyid[g2]
            w1, w2 = model.body_weldid[b1], model.body_weldid[b2]
            if w1 == w2:
                continue
            p1 = model.body_weldid[model.body_parentid[w1]]
            p2 = model.body_weldid[model.body_parentid[w2]]
            if filterparent and w1 != 0 and w2 != 0 and (w1 == p2 or w2 == p1):
                continue
            lo, hi = min(b1, b2), max(b1, b2)
            if (int(lo) << 16) + int(hi) in excluded:
                continue
            if not ((model.geom_contype[g1] & model.geom_conaffinity[g2])
                    or (model.geom_contype[g2] & model.geom_conaffinity[g1])):
                continue
            out.add(frozenset((names[g1], names[g2])))
    for p in range(model.npair):
        out.add(frozenset((names[model.pair_geom1[p]], names[model.pair_geom2[p]])))
    return out
