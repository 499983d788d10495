"""Helpers shared by the MJCF, URDF and Brax v1 importers: volumes, names, meshes, shapes.

Where it sits: below mjcf.py / urdf.py / brax_v1.py, above frames.py. No jax; trimesh only to read
mesh files (their vertices when they must be written inline, their hull volume when a mass has to
become a density).
"""

from __future__ import annotations

import math
import os
import pathlib

import numpy as np

from scenec.schema import scene_pb2
from scenec.schema.diagnostics import Span

# ---------------------------------------------------------------------------------------------
# Volumes, with the formulas MuJoCo uses for a geom's mass (mass = density * volume), so that a
# density derived here from a `mass` attribute gives back MuJoCo's mass in the compiler.


def sphere_volume(r: float) -> float:
    return 4.0 / 3.0 * math.pi * r ** 3


def capsule_volume(r: float, half_length: float) -> float:
    """A cylinder of height 2 * half_length plus a sphere (the two caps)."""
    return math.pi * r * r * 2.0 * half_length + sphere_volume(r)


def cylinder_volume(r: float, half_height: float) -> float:
    return math.pi * r * r * 2.0 * half_height


def box_volume(half_size) -> float:
    return 8.0 * float(half_size[0]) * float(half_size[1]) * float(half_size[2])


def ellipsoid_volume(radii) -> float:
    return 4.0 / 3.0 * math.pi * float(radii[0]) * float(radii[1]) * float(radii[2])


def hull_volume(vertices, scale=(1.0, 1.0, 1.0)) -> float:
    """Volume of the convex hull of the (scaled) vertices: scenec's mesh collider is that hull."""
    import trimesh

    pts = np.asarray(vertices, dtype=float).reshape(-1, 3) * np.asarray(scale, dtype=float)
    return float(trimesh.convex.convex_hull(pts).volume)


def closed_mesh_volume(vertices, faces, scale=(1.0, 1.0, 1.0)) -> float | None:
    """Volume enclosed by a watertight triangle mesh (what MuJoCo weighs), None if not closed."""
    import trimesh

    pts = np.asarray(vertices, dtype=float).reshape(-1, 3) * np.asarray(scale, dtype=float)
    mesh = trimesh.Trimesh(pts, np.asarray(faces, dtype=np.int64).reshape(-1, 3), process=True)
    if not mesh.is_watertight:
        return None
    return abs(float(mesh.volume))


def collider_volume(col: scene_pb2.Collider, meshes: dict) -> float | None:
    """Volume of a scene collider; `meshes` maps mesh name -> (vertices (n, 3), scale (3,))."""
    shape = col.WhichOneof("shape")
    if shape == "sphere":
        return sphere_volume(col.sphere.radius)
    if shape == "capsule":
        return capsule_volume(col.capsule.radius, col.capsule.half_length)
    if shape == "box":
        return box_volume(col.box.half_size)
    if shape == "mesh" and col.mesh.mesh in meshes:
        verts, scale = meshes[col.mesh.mesh]
        return hull_volume(verts, scale)
    return None


# ---------------------------------------------------------------------------------------------
# Cylinders: scenec has no cylinder collider. With --convert-cylinders a cylinder of radius r and
# half-height h becomes a capsule of the same radius whose total extent along the axis is the
# cylinder's: half_length = max(h - r, 0) (a disc shorter than its radius becomes a sphere). The
# mass is kept: the capsule's density is the cylinder's mass over the capsule's volume.

CYLINDER_HINT = ("scenec has no cylinder collider: use a capsule (same radius, half_length = "
                 "half-height - radius), or run `scenec import --convert-cylinders` to do it")


def cylinder_to_capsule(radius: float, half_height: float) -> tuple[float, str]:
    half_length = max(half_height - radius, 0.0)
    note = (f"converted from a cylinder: radius {fmt(radius)}, half-height {fmt(half_height)}; "
            f"capsule half_length = half-height - radius, same end-to-end length and mass")
    if half_length == 0.0:
        note += " (shorter than its radius: a sphere-like capsule)"
    return half_length, note


def fmt(x: float) -> str:
    """Short human form of a number for notes and messages (repr, without a trailing .0)."""
    x = float(x)
    if x == int(x) and abs(x) < 1e15:
        return str(int(x))
    return repr(x)


# ---------------------------------------------------------------------------------------------
# Names


class Names:
    """Unique names for one entity kind: keeps the model's own names, invents the missing ones."""

    def __init__(self, reserved=()):
        self.taken: set[str] = set(reserved)

    def claim(self, name: str) -> bool:
        """Take `name`; False if it was already taken."""
        if name in self.taken:
            return False
        self.taken.add(name)
        return True

    def fresh(self, base: str) -> str:
        name, i = base, 2
        while name in self.taken:
            name = f"{base}_{i}"
            i += 1
        self.taken.add(name)
        return name


def fnmatch_escape(name: str) -> str:
    """A body name as an fnmatch pattern that matches only itself ('a*b' -> 'a[*]b')."""
    out = []
    for ch in name:
        out.append(f"[{ch}]" if ch in "*?[" else ch)
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# Meshes


def relative_inside(path: pathlib.Path, folder: pathlib.Path) -> str | None:
    """`path` relative to `folder` with '/' separators, or None when it lies outside `folder`."""
    try:
        rel = os.path.relpath(os.path.abspath(path), os.path.abspath(folder))
    except ValueError:  # another drive on Windows
        return None
    if rel == ".." or rel.startswith(".." + os.sep) or os.path.isabs(rel):
        return None
    return rel.replace(os.sep, "/")


def load_mesh_file(path: pathlib.Path):
    """(vertices (n, 3) float64, faces (m, 3) int) of a mesh file, or raise OSError/ValueError."""
    import trimesh

    mesh = trimesh.load(str(path), force="mesh")  # merges the duplicate vertices of STL files
    verts = np.asarray(mesh.vertices, dtype=float)
    faces = np.asarray(mesh.faces, dtype=np.int64)
    if verts.ndim != 2 or verts.shape[0] < 4 or faces.ndim != 2 or faces.shape[0] < 1:
        raise ValueError("the file holds no triangle mesh with at least 4 vertices")
    return verts, faces


def mesh_message(name: str, file_path: pathlib.Path | None, out_dir: pathlib.Path, scale,
                 vertices=None, faces=None) -> tuple[scene_pb2.Mesh, bool]:
    """A Scene.meshes entry: a path relative to the YAML's folder when the file lies inside it,
    else the vertices and faces inline. Returns (message, inlined_from_file)."""
    msg = scene_pb2.Mesh(name=name)
    inlined = False
    if file_path is not None:
        rel = relative_inside(file_path, out_dir)
        if rel is not None:
            msg.file = rel
        else:
            if vertices is None:
                vertices, faces = load_mesh_file(file_path)
            inlined = True
    if not msg.file:
        msg.vertices.extend(float(v) for v in np.asarray(vertices, dtype=float).reshape(-1))
        msg.faces.extend(int(f) for f in np.asarray(faces).reshape(-1))
    if scale is not None and any(float(s) != 1.0 for s in scale):
        msg.scale.extend(float(s) for s in scale)
    return msg, inlined


def span_or(span: Span | None, fallback: Span) -> Span:
    return span if span is not None else fallback
