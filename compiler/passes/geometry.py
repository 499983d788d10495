"""Pass `geometry`: convex hulls of meshes and the mass properties of every authored body.

Input: the front end's IR (authored bodies, meshes read). Output: meshes with their hulls, volumes and
unit-density inertias; bodies with `props` (mass, com, inertia about the com in the body frame).

Rules, per body: an authored `mass` overrides the colliders' Σ density·volume; an authored `com`
overrides the volume-weighted centroid; an authored `inertia` overrides the colliders' (otherwise the
colliders' inertia is scaled to the body's mass and moved to its com by the parallel-axis theorem).
Planes and height fields have no volume. Volumes and inertias follow MuJoCo's formulas for the same
primitives (a capsule is a cylinder plus two hemispheres), so MJCF imports get MuJoCo's masses; a mesh
uses its convex hull (the shape contacts use).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from scenec.runtime.collision_table import Shape

from .. import ir
from ..frames import quat_to_mat
from ..ir import diag


def primitive_volume_inertia(shape: Shape, size, mesh: ir.Mesh | None = None):
    """(volume m³, centroid in the collider frame, inertia (3, 3) about the centroid for density 1)."""
    if shape == Shape.SPHERE:
        r = size[0]
        v = 4.0 / 3.0 * math.pi * r ** 3
        return v, np.zeros(3), np.eye(3) * 0.4 * v * r * r
    if shape == Shape.CAPSULE:
        r, hl = size[0], size[1]
        h = 2.0 * hl
        m_cyl = math.pi * r * r * h
        m_sph = 4.0 / 3.0 * math.pi * r ** 3
        ixx = m_cyl * (3 * r * r + h * h) / 12.0 + m_sph * (0.4 * r * r + 0.375 * r * h + 0.25 * h * h)
        izz = m_cyl * r * r / 2.0 + m_sph * 0.4 * r * r
        return m_cyl + m_sph, np.zeros(3), np.diag([ixx, ixx, izz])
    if shape == Shape.BOX:
        hx, hy, hz = size
        v = 8.0 * hx * hy * hz
        return v, np.zeros(3), np.diag([hy * hy + hz * hz, hx * hx + hz * hz, hx * hx + hy * hy]) * v / 3.0
    if shape == Shape.MESH and mesh is not None and mesh.volume > 0:
        return mesh.volume, np.array(mesh.center), np.array(mesh.inertia_unit)
    return 0.0, np.zeros(3), np.zeros((3, 3))


def hull_of(mesh: ir.Mesh) -> ir.Mesh:
    import trimesh

    vertices = np.asarray(mesh.vertices, dtype=float).reshape(-1, 3)
    hull = trimesh.Trimesh(vertices=vertices, faces=np.zeros((0, 3), int), process=False).convex_hull
    center = hull.center_mass if hull.volume > 0 else vertices.mean(axis=0)
    hull.density = 1.0
    inertia = hull.moment_inertia if hull.volume > 0 else np.zeros((3, 3))
    return dataclasses.replace(
        mesh, hull_vertices=tuple(map(tuple, hull.vertices.tolist())),
        hull_faces=tuple(map(tuple, hull.faces.tolist())),
        volume=float(hull.volume), center=tuple(float(x) for x in center),
        inertia_unit=tuple(map(tuple, np.asarray(inertia, float).tolist())))


def inertia_matrix(six) -> np.ndarray:
    xx, yy, zz, xy, xz, yz = six
    return np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]], dtype=float)


def shift_inertia(inertia, mass, d) -> np.ndarray:
    """Parallel-axis theorem: inertia about a point displaced by d from the com."""
    d = np.asarray(d, float)
    return np.asarray(inertia) + mass * (d @ d * np.eye(3) - np.outer(d, d))


def body_props(body: ir.Body, meshes: dict) -> ir.MassProps:
    parts = []
    for c in body.colliders:
        v, centroid, unit_inertia = primitive_volume_inertia(c.shape, c.size, meshes.get(c.mesh))
        if v <= 0:
            continue
        rot = quat_to_mat(c.quat)
        m = c.density * v
        parts.append((m, np.asarray(c.pos) + rot @ centroid, rot @ (unit_inertia * c.density) @ rot.T))
    m_geo = sum(p[0] for p in parts)
    com_geo = sum(p[0] * p[1] for p in parts) / m_geo if m_geo > 0 else np.zeros(3)
    inertia_geo = np.zeros((3, 3))
    for m, c, i in parts:
        inertia_geo += shift_inertia(i, m, c - com_geo)

    mass = body.mass if body.mass is not None else m_geo
    com = np.asarray(body.com, float) if body.com is not None else com_geo
    if body.inertia is not None:
        inertia = inertia_matrix(body.inertia)
    elif m_geo > 0:
        inertia = shift_inertia(inertia_geo * (mass / m_geo), mass, com - com_geo)
    else:
        inertia = np.zeros((3, 3))
    return ir.MassProps(mass=float(mass), com=tuple(float(x) for x in com),
                        inertia=tuple(map(tuple, inertia.tolist())))


def run(scene: ir.SceneIR) -> ir.SceneIR:
    diags = []
    meshes = []
    for me in scene.meshes:
        if len(me.vertices) < 4:
            meshes.append(me)
            continue
        try:
            meshes.append(hull_of(me))
        except Exception as e:  # qhull failures (coplanar points) surface as several exception types
            diags.append(diag("E405", f"mesh '{me.name}' has no convex hull: {e}", me.span,
                              "a mesh collider needs at least 4 vertices that are not coplanar"))
            meshes.append(me)
    by_name = {me.name: me for me in meshes}
    bodies = tuple(dataclasses.replace(b, props=body_props(b, by_name)) for b in scene.bodies)
    return scene.replace(meshes=tuple(meshes), bodies=bodies).with_diagnostics(diags)
