"""The scene viewer: one self-contained HTML page with the scene's geometry and a trajectory.

Where it sits: compiler/, after lowering. `scenec view` compiles a scene (or loads a generated
module), optionally reads or simulates a trajectory, and calls `build_html`. The page needs no
network: the WebGL code (`viewer.js`) and style (`viewer.css`) are package data written for this
project and inlined, the geometry and poses are inlined as JSON with base64 float32 arrays, and a
Content-Security-Policy forbids every fetch. The browser uploads the triangles once; per frame it
sets one transform per body (and environment) and draws.

Data handed to the page (`scene_data`):
  bodies (nbody names), geoms ({name, body, shape}), joints ({name, body, kind, anchor, axis}),
  vertex arrays (position, normal: float32 (N, 3) in body frames; color: uint8 (N, 4); uvp: float32
  (N, 4) plane coordinates, a checkerboard flag and the collider id), indices (uint32,
  three per triangle), draws ({body, first, count, per_env}: index ranges; the world's planes are drawn once, everything
  else once per environment), frames (T, E, nbody, time/xpos/xquat as float32), contacts (active
  contact points per frame and environment, packed: offsets (T·E + 1,) and points (K, 3)),
  env_offsets (E, 3) where environments are laid side by side, the scene's centre and radius, and
  ground: the height of an upward-facing world plane that bodies cast shadows on (or null).
"""

from __future__ import annotations

import base64
import html
import importlib.resources
import json
import math

import numpy as np

from scenec.runtime.collision_table import Shape

from . import tessellate

# The runtime renderer's default colour for colliders without one (rgba all zero).
DEFAULT_RGBA = (0.7, 0.7, 0.7, 1.0)
# Checkerboard cell on planes, m: the same default as `scenec render`.
CHECKER = 0.5
# Environments side by side are this many scene diameters apart (centre to centre).
ENV_SPACING = 1.25


def _b64(a) -> str:
    return base64.b64encode(np.ascontiguousarray(a).tobytes()).decode("ascii")


def _resource(name: str) -> str:
    return importlib.resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def env_offsets(n: int, spacing: float) -> np.ndarray:
    """(n, 3) offsets on a near-square grid in the xy plane, centred on the origin."""
    cols = max(1, math.ceil(math.sqrt(n)))
    rows = math.ceil(n / cols)
    k = np.arange(n)
    x = (k % cols - (cols - 1) / 2) * spacing
    y = ((rows - 1) / 2 - k // cols) * spacing
    return np.stack([x, y, np.zeros(n)], axis=-1)


def ground_height(model) -> float | None:
    """Height of the highest world plane that faces straight up (shadows fall on it), or None."""
    heights = []
    for g in range(model.ngeom):
        if int(model.geom_body_id[g]) != 0 or int(model.geom_shape[g]) != Shape.PLANE:
            continue
        w, x, y, _ = np.asarray(model.geom_quat[g], np.float64) / np.linalg.norm(model.geom_quat[g])
        normal_z = 1 - 2 * (x * x + y * y)
        if normal_z > 1 - 1e-6:
            heights.append(float(np.asarray(model.geom_pos[g])[2]))
    return max(heights) if heights else None


def scene_data(model, trajectory, title: str = "", checker: float = CHECKER) -> dict:
    """The JSON-ready description of the scene and its frames (see the module docstring)."""
    from scenec.runtime import render

    T, E, nbody = trajectory.nframe, trajectory.nenv, trajectory.nbody
    if nbody != model.nbody:
        raise ValueError(f"the trajectory has {nbody} bodies, the model {model.nbody}")
    xpos, xquat = trajectory.xpos, trajectory.xquat
    centre, radius = render.bounds(model, xpos[:, 0].reshape(1, -1, 3), xquat[:, 0].reshape(1, -1, 4))
    centre, radius = centre[0], float(radius[0])
    per_env = [float(render.bounds(model, xpos[:, e].reshape(1, -1, 3), xquat[:, e].reshape(1, -1, 4))[1][0])
               for e in range(E)]
    offsets = env_offsets(E, 2 * ENV_SPACING * max(per_env)) if E > 1 else np.zeros((1, 3))

    shapes = np.asarray(model.geom_shape.array)
    geom_body = np.asarray(model.geom_body_id.array)
    rgba = np.asarray(model.geom_rgba, np.float64)
    parts, draws, index_parts = [], [], []
    first = nvert = 0
    for body in range(model.nbody):
        groups = [(True, [g for g in range(model.ngeom) if geom_body[g] == body])]
        if body == 0:   # the ground is drawn once, other world colliders once per environment
            groups = [(False, [g for g in groups[0][1] if shapes[g] == Shape.PLANE]),
                      (True, [g for g in groups[0][1] if shapes[g] != Shape.PLANE])]
        for repeat, gs in groups:
            count = 0
            for g in gs:
                colour = rgba[g] if np.any(rgba[g] != 0) else np.asarray(DEFAULT_RGBA)
                if colour[3] <= 0:
                    continue          # alpha 0 hides a collider, as in the renderer
                tri = tessellate.geom_triangles(model, g, radius + float(np.linalg.norm(centre)))
                # Shared vertices once (spheres and capsules share each about six times): fewer
                # vertices to shade per frame and a smaller page.
                rows = np.hstack([tri.position, tri.normal, tri.uv]).astype(np.float32)
                unique, index = np.unique(rows, axis=0, return_inverse=True)
                n = len(unique)
                flag = np.full((n, 1), 1.0 if shapes[g] == Shape.PLANE else 0.0)
                parts.append((unique[:, :3], unique[:, 3:6],
                              np.broadcast_to(np.round(np.clip(colour, 0, 1) * 255), (n, 4)),
                              np.hstack([unique[:, 6:8], flag, np.full((n, 1), g)])))
                index_parts.append(index.reshape(-1) + nvert)
                nvert += n
                count += len(index)
            if count:
                draws.append({"body": body, "first": first, "count": count, "per_env": repeat})
                first += count
    cat = lambda k, dtype: np.concatenate([p[k] for p in parts]).astype(dtype) if parts else np.zeros(0, dtype)  # noqa: E731

    joints = []
    kinds = np.asarray(model.jnt_kind.array)
    for j in range(model.njnt):
        joints.append({"name": model.jnt_names[j], "body": int(model.jnt_body_id[j]), "kind": int(kinds[j]),
                       "anchor": [float(v) for v in np.asarray(model.jnt_anchor[j])],
                       "axis": [float(v) for v in np.asarray(model.jnt_axis[j])]})

    data = {
        "version": 1,
        "title": title or model.name,
        "scene": model.name,
        "sha256": trajectory.scene_sha256,
        "bodies": list(model.body_names),
        "geoms": [{"name": model.geom_names[g], "body": int(geom_body[g]), "shape": Shape(int(shapes[g])).name.lower()}
                  for g in range(model.ngeom)],
        "joints": joints,
        "indices": _b64(np.concatenate(index_parts).astype(np.uint32) if index_parts else np.zeros(0, np.uint32)),
        "vertices": {"count": nvert, "position": _b64(cat(0, np.float32)), "normal": _b64(cat(1, np.float32)),
                     "color": _b64(cat(2, np.uint8)), "uvp": _b64(cat(3, np.float32))},
        "draws": draws,
        "frames": {"T": T, "E": E, "nbody": nbody, "time": _b64(trajectory.time.astype(np.float32)),
                   "xpos": _b64(xpos.astype(np.float32)), "xquat": _b64(xquat.astype(np.float32))},
        "contacts": None,
        "env_offsets": offsets.tolist(),
        "center": [float(v) for v in centre],
        "radius": radius,
        "checker": float(checker),
        "ground": ground_height(model),
    }
    if trajectory.contact_pos is not None:
        active = trajectory.contact_active.reshape(T * E, -1)
        pts = trajectory.contact_pos.reshape(T * E, -1, 3)[active]
        offs = np.concatenate([[0], np.cumsum(active.sum(axis=1))]).astype(np.int32)
        data["contacts"] = {"offsets": _b64(offs), "points": _b64(pts.astype(np.float32)),
                            "count": int(offs[-1])}
    return data


def _script_json(data: dict) -> str:
    """JSON that is safe inside <script>: no '<', '>' or '&' can close or open a tag."""
    text = json.dumps(data, ensure_ascii=True, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="scenec view">
<title>{title}</title>
<style>
{css}
</style>
</head>
<body>
<canvas id="view"></canvas>
<div id="info"><div id="title">{title}</div><div id="hint">drag: orbit · right-drag or shift-drag: pan · wheel: zoom · space: play/pause · ←/→: step</div><div id="status"></div></div>
<div id="tip" hidden></div>
<div id="bar">
<button id="play" type="button" title="play / pause (space)">▶</button>
<input id="scrub" type="range" min="0" max="0" step="1" value="0" aria-label="frame">
<span id="time">t = 0.000 s</span>
<label>speed <select id="speed">
<option value="0.1">0.1×</option><option value="0.25">0.25×</option><option value="0.5">0.5×</option>
<option value="1" selected>1×</option><option value="2">2×</option><option value="4">4×</option>
</select></label>
<label><input id="joints" type="checkbox"> joints</label>
<label><input id="contacts" type="checkbox"> contacts</label>
<label><input id="shadows" type="checkbox" checked> shadows</label>
<label><input id="follow" type="checkbox"> follow</label>
<label id="env-label" hidden>env <select id="env"></select></label>
<button id="reset" type="button" title="frame the scene again">reset view</button>
</div>
<script type="application/json" id="scenec-data">{data}</script>
<script>
{js}
</script>
</body>
</html>
"""


def build_html(model, trajectory, title: str = "", checker: float = CHECKER) -> str:
    """The viewer page for `model` playing `trajectory` (a runtime.trajectory.Trajectory)."""
    data = scene_data(model, trajectory, title, checker)
    return PAGE.format(title=html.escape(data["title"]), css=_resource("viewer.css"),
                       js=_resource("viewer.js"), data=_script_json(data))
