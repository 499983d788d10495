"""Compiled scene → MJCF (MuJoCo's XML): the inverse of `importers/mjcf.py`, for peer engines.

Where it sits: compiler/, after `lower`. `to_mjcf(x)` takes a `Compiled` (api.compile), a
`runtime.types.Model` (e.g. from a generated `<scene>_step.py`) or a scene source (a path, YAML text or
a `Scene` message, compiled here) and returns MJCF text that MuJoCo, MJX and Brax load. `scenec export
SCENE -o model.xml` (cmd_export.py) writes it; `scenec bench --compare` (bench_peers.py) runs it.

It is written from the compiled `Model`, not the scene: fixed joints are already fused, every body has
its final mass, centre of mass and full inertia, colliders sit in their (fused) body's frame, and the
collision pairs are the ones pruning kept. What becomes what:

- options: timestep = the physics substep h = timestep / substeps; gravity; iterations = our solver
  iterations; cone; integrator Euler (scenec's semi-implicit Euler, MuJoCo's Euler with implicit joint
  damping; RK4 where the scene asks for it); solver PGS (projected Gauss–Seidel, as ours).
- bodies are nested depth-first with their pose in the parent frame at the reference configuration
  (every hinge/slide at its `ref`), children ordered so that MuJoCo's qpos layout is ours index for
  index; `<inertial pos mass fullinertia>`; a body without joints is welded to its parent, a static
  body hangs from the worldbody. `inertiafromgeom="false"`: geoms carry no mass.
- joints: free/ball/hinge/slide, anchor (`pos`) and axis in the body frame, applied in order as in
  MuJoCo; `ref`, `range`/`limited`, `solreflimit`, `damping`, `stiffness` + `springref`, `armature`.
- geoms: plane, sphere, capsule, box, mesh (the convex hull's vertices inline in `<asset><mesh
  vertex>`), height field (`<asset><hfield elevation>`). Every geom has contype = conaffinity = 0 and
  our kept pairs are listed as `<contact><pair>` with the pair's friction and softness, so MuJoCo tests
  exactly the pairs we test (MJX honours `<pair>` too).
- actuators: `<motor>`, `<position kp kv>` or `<velocity kv>` when our affine gain/bias is exactly
  that kind, `<general gainprm biastype="affine" biasprm>` otherwise; gear, ctrlrange, forcerange.
- `<keyframe><key name="init">`: our q0 and qd0 (MuJoCo's qpos0 is the reference configuration).
- `joint_refs=False` (Brax, which refuses a joint `ref`): no `ref` is written and each body is placed
  at the zero configuration instead: a joint's motion by −ref is folded into its body's pose, which
  keeps every q meaning the same pose. That needs the motion to commute with the body's earlier
  joints (slides with slides, hinges about one line); a body where it does not is an ExportError.

What cannot be exactly equal (contacts and limits; the smooth dynamics are the same equations, see
tests/test_dynamics_mujoco.py):
- softness: our rows follow C̈ + 2ζω·Ċ + ω²·C = 0 with ω = 1/(τζ), integrated implicitly ("soft step",
  runtime/constraints.py). MuJoCo's reference acceleration −b·Ċ − k·C with b = 2/(d_max·τ),
  k = d(r)/(d_max²·τ²·ζ²) is the same spring-damper for solref = (τ, ζ), so that is what we write. MuJoCo
  then mixes it with the unconstrained motion through the impedance d (solimp); SOLIMP below puts d
  near 1, where MuJoCo follows the reference acceleration most closely, as ours does. MuJoCo also
  raises τ to 2·h when it is smaller (its `refsafe` flag; kept on for its stability): our default
  contact τ = 0.005 s becomes 0.01–0.02 s there at h = 0.005–0.01 s.
- solver: both projected Gauss–Seidel with our iteration count, but MuJoCo's PGS works on the dual of
  its regularised problem and stops early at `tolerance`; ours runs every iteration.
- contact points: our kernels return a fixed number of rows per pair (capsule–plane 2, box–plane 4);
  MuJoCo's return what they find; no margin in either.
- restitution (ours: a bounce sweep) has no MuJoCo counterpart and is not written.
- mesh colliders: we collide the hull, MuJoCo collides the hull of the same vertices (exact); MuJoCo
  recentres mesh vertices at their centroid internally, which changes nothing we compare.
- height fields: MuJoCo stores elevation normalised to [0, 1] times size_z above a base; we write
  size_z = our max − min and lower the geom by our min, which gives the same surface.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import numpy as np

# MuJoCo's impedance (d0, d_width, width): d close to 1 everywhere, so MuJoCo's constraint force tracks
# the solref spring-damper the way our soft step does (see the module docstring). 0.99 rather than 1
# because MuJoCo needs d < 1 (its regulariser is (1 − d)/d).
SOLIMP = (0.99, 0.99, 0.001)
# MuJoCo's torsional and rolling friction (its defaults); condim 3 ignores them, but a geom's
# `friction` takes (slide, spin, roll) and a pair's (slide, slide, spin, roll, roll).
SPIN, ROLL = 0.005, 0.0001
# Depth below the lowest point of a height field (MuJoCo's hfield base, size[3]); only MuJoCo's
# collision with the sides uses it.
HFIELD_BASE = 0.1

_SHAPE_WORDS = {0: "plane", 1: "hfield", 2: "sphere", 3: "capsule", 4: "box", 5: "mesh"}
_JOINT_WORDS = {0: "hinge", 1: "slide", 2: "ball", 3: "free"}
_NAME_OK = re.compile(r"^[A-Za-z0-9_.:\-]+$")


class ExportError(ValueError):
    """The model uses something that has no MJCF counterpart written here (message says what)."""


def model_of(source):
    """The `runtime.types.Model` of a Compiled, a Model, or a scene source (compiled here)."""
    from scenec.runtime.types import Model

    if isinstance(source, Model):
        return source
    if hasattr(source, "model") and isinstance(source.model, Model):
        return source.model
    from . import api

    return api.compile(source, measure_jit=False).model


def to_mjcf(source, *, solver: str = "PGS", cone: str | None = None, joint_refs: bool = True) -> str:
    """MJCF text equivalent to a compiled scene (see the module docstring for the mapping).

    solver: MuJoCo's constraint solver, "PGS" (ours, the default), "CG" or "Newton" (MJX and Brax
    load only those two). cone: "elliptic" or "pyramidal" instead of the scene's own friction cone
    (Brax accepts only pyramidal); None keeps the scene's. joint_refs=False: no joint `ref`, bodies
    at the zero configuration (Brax accepts no `ref`)."""
    if solver not in ("PGS", "CG", "Newton"):
        raise ValueError(f"solver must be PGS, CG or Newton, not {solver!r}")
    if cone not in (None, "elliptic", "pyramidal"):
        raise ValueError(f"cone must be elliptic or pyramidal, not {cone!r}")
    return _Writer(model_of(source), solver, cone, joint_refs).write()


def _unique_names(names, prefix: str, taken: set | None = None) -> list[str]:
    """Names MuJoCo accepts and that are unique within their kind: ours where they fit, else
    `<prefix><index>`; '/' (our fused-collider names) becomes '.'."""
    taken = set() if taken is None else taken
    out = []
    for i, n in enumerate(names):
        n = (n or "").replace("/", ".")
        if not n or not _NAME_OK.match(n) or n in taken:
            base = f"{prefix}{i}"
            n, k = base, 1
            while n in taken:
                n, k = f"{base}_{k}", k + 1
        taken.add(n)
        out.append(n)
    return out


class _Writer:
    def __init__(self, m, solver: str = "PGS", cone: str | None = None, joint_refs: bool = True):
        self.m = m
        self.solver = solver
        self.cone = cone or m.cone
        self.joint_refs = joint_refs
        self.digits = 17 if m.dtype == "float64" else 9   # enough to round-trip the model's floats
        arr = lambda x: np.asarray(x, np.float64)          # noqa: E731
        self.body_pos, self.body_quat = arr(m.body_pos), arr(m.body_quat)
        self.body_mass, self.body_com, self.body_inertia = arr(m.body_mass), arr(m.body_com), arr(m.body_inertia)
        self.parent = np.asarray(m.body_parent_id.array)
        # MuJoCo's world body is called "world"; ours is body 0 too
        self.body_names = ["world"] + _unique_names(m.body_names[1:], "body", {"world"})
        self.jnt_names = _unique_names(m.jnt_names, "joint")
        self.geom_names = _unique_names(m.geom_names, "geom")
        self.act_names = _unique_names(m.actuator_names, "actuator")
        if not joint_refs:
            self._fold_joint_refs()

    def _fold_joint_refs(self) -> None:
        """Body poses at the zero configuration: body frame = pose ∘ motion_j(q_j − ref_j) ∘ …, so
        each joint's motion by −ref_j moves into the pose, past the body's earlier joints (which must
        commute with it)."""
        m = self.m
        kinds = np.asarray(m.jnt_kind.array)
        refs = np.asarray(m.jnt_reference, np.float64)
        axes, anchors = np.asarray(m.jnt_axis, np.float64), np.asarray(m.jnt_anchor, np.float64)
        for b in range(1, m.nbody):
            adr, num = int(m.body_jnt_adr[b]), int(m.body_jnt_num[b])
            for j in range(adr, adr + num) if adr >= 0 else ():
                if kinds[j] not in (0, 1) or refs[j] == 0.0:
                    continue
                for e in range(adr, j):
                    if not _joints_commute(kinds[e], kinds[j], axes[e], axes[j], anchors[e], anchors[j]):
                        raise ExportError(
                            f"joint '{m.jnt_names[j]}' has ref {refs[j]:g} and follows joint "
                            f"'{m.jnt_names[e]}' in body '{m.body_names[b]}', whose motion does not "
                            "commute with it: this body cannot be written without joint refs")
                pos, quat = self.body_pos[b], self.body_quat[b]
                if kinds[j] == 1:                           # slide: translate by −ref along the axis
                    self.body_pos[b] = pos + _rotate(quat, -refs[j] * axes[j])
                else:                                       # hinge: turn by −ref about the axis line
                    turn = _axis_angle(axes[j], -refs[j])
                    self.body_pos[b] = pos + _rotate(quat, anchors[j] - _rotate(turn, anchors[j]))
                    self.body_quat[b] = _quat_mul(quat, turn)

    # ------------------------------------------------------------------------------ formatting

    def f(self, *values) -> str:
        flat = np.asarray(values, np.float64).reshape(-1)
        return " ".join(_num(x, self.digits) for x in flat)

    # ------------------------------------------------------------------------------ document

    def write(self) -> str:
        m = self.m
        root = ET.Element("mujoco", model=m.name or "scene")
        root.append(ET.Comment(
            " written by `scenec export` from the compiled scene; contacts are the kept pairs below "
            "(every geom has contype = conaffinity = 0); see scenec/compiler/export_mjcf.py for what "
            "differs (contact softness, solver details, restitution) "))
        ET.SubElement(root, "compiler", angle="radian", inertiafromgeom="false", autolimits="false",
                      balanceinertia="true")
        h = float(m.timestep) / m.substeps
        ET.SubElement(root, "option", timestep=_num(h, self.digits), gravity=self.f(m.gravity),
                      iterations=str(int(m.solver_iterations)), cone=self.cone, solver=self.solver,
                      integrator="RK4" if m.integrator == "rk4" else "Euler")
        asset = self._assets()
        if len(asset):
            root.append(asset)
        world = ET.SubElement(root, "worldbody")
        children = self._children()
        for g in np.flatnonzero(np.asarray(m.geom_body_id.array) == 0):   # static colliders fused into the world
            self._geom(world, int(g))
        for b in children[0]:
            self._body(world, b, children)
        pairs = self._pairs()
        if len(pairs):
            root.append(pairs)
        if m.nu:
            root.append(self._actuators())
        keyframe = ET.SubElement(root, "keyframe")
        ET.SubElement(keyframe, "key", name="init", qpos=self.f(m.q0), qvel=self.f(m.qd0))
        ET.indent(root, space="  ")
        return ET.tostring(root, encoding="unicode") + "\n"

    def _children(self) -> dict[int, list[int]]:
        """Each body's children, ordered so that a depth-first walk meets the joints in our qpos
        order (our q follows the bodies depth-first, as MuJoCo's qpos): a subtree's key is the
        smallest qpos address in it; subtrees without joints come last, in body order."""
        m = self.m
        first = np.full(m.nbody, np.inf)
        adr = np.asarray(m.jnt_qpos_adr.array)
        for j, b in enumerate(np.asarray(m.jnt_body_id.array)):
            first[b] = min(first[b], adr[j])
        for b in range(m.nbody - 1, 0, -1):          # parents come before children
            first[self.parent[b]] = min(first[self.parent[b]], first[b])
        children = {b: [] for b in range(m.nbody)}
        for b in range(1, m.nbody):
            children[int(self.parent[b])].append(b)
        for b in children:
            children[b].sort(key=lambda c: (first[c], c))
        return children

    def _body(self, parent_el, b: int, children) -> None:
        m = self.m
        el = ET.SubElement(parent_el, "body", name=self.body_names[b], pos=self.f(self.body_pos[b]),
                           quat=self.f(self.body_quat[b]))
        mass = self.body_mass[b]
        inertia = self.body_inertia[b]
        if mass > 0 or np.any(inertia != 0):
            i = inertia
            ET.SubElement(el, "inertial", pos=self.f(self.body_com[b]), mass=_num(mass, self.digits),
                          fullinertia=self.f(i[0, 0], i[1, 1], i[2, 2], i[0, 1], i[0, 2], i[1, 2]))
        adr, num = int(m.body_jnt_adr[b]), int(m.body_jnt_num[b])
        for j in range(adr, adr + num) if adr >= 0 else ():
            self._joint(el, j)
        for g in np.flatnonzero(np.asarray(m.geom_body_id.array) == b):
            self._geom(el, int(g))
        for c in children[b]:
            self._body(el, c, children)

    def _joint(self, body_el, j: int) -> None:
        m = self.m
        kind = int(m.jnt_kind[j])
        d = int(m.jnt_dof_adr[j])
        attrs = {"name": self.jnt_names[j], "type": _JOINT_WORDS[kind]}
        if kind != 3:
            attrs["pos"] = self.f(m.jnt_anchor[j])
        if kind in (0, 1):
            attrs["axis"] = self.f(m.jnt_axis[j])
            if self.joint_refs:
                attrs["ref"] = _num(m.jnt_reference[j], self.digits)
        if bool(m.jnt_limited[j]):
            attrs["limited"] = "true"
            attrs["range"] = self.f(m.jnt_range[j])
            attrs["solreflimit"] = self.f(m.jnt_limit_solref[j])
        else:
            attrs["limited"] = "false"
        # MuJoCo gives a joint one damping/armature for all its dofs; ours are per dof and equal
        # within a joint (the scene sets them per joint).
        for name, field in (("damping", m.dof_damping), ("armature", m.dof_armature)):
            v = float(field[d])
            if v:
                attrs[name] = _num(v, self.digits)
        if kind in (0, 1) and float(m.dof_stiffness[d]):
            attrs["stiffness"] = _num(m.dof_stiffness[d], self.digits)
            attrs["springref"] = _num(m.dof_spring_ref[d], self.digits)
        ET.SubElement(body_el, "joint", attrs)

    def _geom(self, body_el, g: int) -> None:
        m = self.m
        shape = int(m.geom_shape[g])
        if shape not in _SHAPE_WORDS:
            raise ExportError(f"collider '{m.geom_names[g]}' has a shape ({shape}) with no MJCF "
                              "counterpart here")
        size = np.asarray(m.geom_size[g], np.float64)
        pos = np.asarray(m.geom_pos[g], np.float64)
        attrs = {"name": self.geom_names[g], "type": _SHAPE_WORDS[shape]}
        if shape == 0:       # planes collide as infinite in both engines; the size only draws
            attrs["size"] = self.f(size[0], size[1], 1.0) if size[0] > 0 and size[1] > 0 else "0 0 1"
        elif shape == 1:
            attrs["hfield"] = self._hfield_name(g)
            # MuJoCo's surface starts at the geom's z = 0; ours at our lowest elevation
            pos = pos + _rotate(m.geom_quat[g], [0.0, 0.0, self._hfield_floor(g)])
        elif shape == 2:
            attrs["size"] = self.f(size[0])
        elif shape == 3:
            attrs["size"] = self.f(size[0], size[1])
        elif shape == 4:
            attrs["size"] = self.f(size)
        else:
            attrs["mesh"] = self._mesh_name(g)
        attrs.update(pos=self.f(pos), quat=self.f(m.geom_quat[g]), contype="0", conaffinity="0",
                     friction=self.f(m.geom_friction[g], SPIN, ROLL), margin="0",
                     rgba=self.f(m.geom_rgba[g]))
        ET.SubElement(body_el, "geom", attrs)

    # ------------------------------------------------------------------------------ assets

    def _mesh_name(self, g: int) -> str:
        return f"{self.geom_names[g]}_mesh"

    def _hfield_name(self, g: int) -> str:
        return f"{self.geom_names[g]}_hfield"

    def _hfield_grid(self, g: int) -> np.ndarray:
        data = self.m.geom_hfield[g]
        if data is None:
            raise ExportError(f"height-field collider '{self.m.geom_names[g]}' has no elevation grid")
        return np.asarray(data.padded_elevation, np.float64)[1:-1, 1:-1]   # (nrow, ncol), row 0 at −y

    def _hfield_floor(self, g: int) -> float:
        return float(self._hfield_grid(g).min())

    def _assets(self) -> ET.Element:
        m = self.m
        asset = ET.Element("asset")
        for g in range(m.ngeom):
            shape = int(m.geom_shape[g])
            if shape == 5:
                data = m.geom_mesh[g]
                if data is None:
                    raise ExportError(f"mesh collider '{m.geom_names[g]}' has no hull data")
                # The hull's vertex budget is padded with repeats; MuJoCo wants each point once.
                vert = np.unique(np.asarray(data.vert, np.float64), axis=0)
                ET.SubElement(asset, "mesh", name=self._mesh_name(g), vertex=self.f(vert))
            elif shape == 1:
                grid = self._hfield_grid(g)
                nrow, ncol = grid.shape
                lo, span = grid.min(), grid.max() - grid.min()
                # MuJoCo normalises the elevation to [0, 1] and scales it by size_z; a flat grid gets
                # any positive size_z (its normalised heights are all 0).
                size_z = span if span > 0 else 1.0
                norm = (grid - lo) / span if span > 0 else np.zeros_like(grid)
                size = np.asarray(m.geom_size[g], np.float64)
                # The attribute lists rows from +y down (importers/mjcf.py reads it the same way).
                ET.SubElement(asset, "hfield", name=self._hfield_name(g), nrow=str(nrow), ncol=str(ncol),
                              size=self.f(size[0], size[1], size_z, HFIELD_BASE),
                              elevation=self.f(norm[::-1]))
        return asset

    # ------------------------------------------------------------------------------ contacts, actuators

    def _pairs(self) -> ET.Element:
        m = self.m
        contact = ET.Element("contact")
        friction = np.asarray(m.pair_friction, np.float64)
        solref = np.asarray(m.pair_solref, np.float64)
        i = 0
        for grp in m.pair_groups:
            for g1, g2 in zip(np.asarray(grp.geom1.array), np.asarray(grp.geom2.array)):
                mu = float(friction[i])
                attrs = {"geom1": self.geom_names[int(g1)], "geom2": self.geom_names[int(g2)],
                         "condim": "3" if mu > 0 else "1", "friction": self.f(mu, mu, SPIN, ROLL, ROLL),
                         "solref": self.f(solref[i]), "solimp": self.f(SOLIMP), "margin": "0"}
                ET.SubElement(contact, "pair", attrs)
                i += 1
        return contact

    def _actuators(self) -> ET.Element:
        m = self.m
        section = ET.Element("actuator")
        gain = np.asarray(m.actuator_gain, np.float64)
        bias = np.asarray(m.actuator_bias, np.float64)
        for a in range(m.nu):
            g0 = gain[a, 0]
            b = bias[a]
            if g0 == 1 and not b.any():
                tag, extra = "motor", {}
            elif b[0] == 0 and b[1] == -g0 and g0 > 0:
                tag, extra = "position", {"kp": _num(g0, self.digits), "kv": _num(-b[2], self.digits)}
            elif b[0] == 0 and b[1] == 0 and b[2] == -g0 and g0 > 0:
                tag, extra = "velocity", {"kv": _num(g0, self.digits)}
            else:
                tag, extra = "general", {"gainprm": _num(g0, self.digits), "biastype": "affine",
                                         "biasprm": self.f(b)}
            attrs = {"name": self.act_names[a], "joint": self.jnt_names[int(m.actuator_jnt_id[a])],
                     "gear": _num(m.actuator_gear[a], self.digits)}
            attrs.update(extra)
            ctrl_lim, force_lim = bool(m.actuator_ctrl_limited[a]), bool(m.actuator_force_limited[a])
            attrs["ctrllimited"] = "true" if ctrl_lim else "false"
            if ctrl_lim:
                attrs["ctrlrange"] = self.f(m.actuator_ctrl_range[a])
            attrs["forcelimited"] = "true" if force_lim else "false"
            if force_lim:
                attrs["forcerange"] = self.f(m.actuator_force_range[a])
            ET.SubElement(section, tag, attrs)
        return section


def _num(x, digits: int) -> str:
    v = float(x)
    if v == 0:
        return "0"
    return format(v, f".{digits}g")


def _axis_angle(axis, angle: float) -> np.ndarray:
    """The unit quaternion (w, x, y, z) of a turn by `angle` about `axis`."""
    a = np.asarray(axis, np.float64)
    return np.concatenate([[np.cos(angle / 2)], np.sin(angle / 2) * a / np.linalg.norm(a)])


def _quat_mul(p, q) -> np.ndarray:
    """Hamilton product p·q of quaternions (w, x, y, z)."""
    pw, pv, qw, qv = p[0], np.asarray(p[1:]), q[0], np.asarray(q[1:])
    return np.concatenate([[pw * qw - pv @ qv], pw * qv + qw * pv + np.cross(pv, qv)])


def _joints_commute(kind_a, kind_b, axis_a, axis_b, anchor_a, anchor_b, tol: float = 1e-9) -> bool:
    """Whether two hinge/slide motions commute for every pair of angles/displacements: two slides, or
    two hinges about one line (parallel axes through a common point)."""
    if kind_a == 1 and kind_b == 1:
        return True
    if kind_a == 0 and kind_b == 0:
        u, v = (np.asarray(x, np.float64) / np.linalg.norm(x) for x in (axis_a, axis_b))
        gap = np.asarray(anchor_b, np.float64) - np.asarray(anchor_a, np.float64)
        return bool(np.linalg.norm(np.cross(u, v)) <= tol and np.linalg.norm(np.cross(gap, u)) <= tol)
    return False


def _rotate(quat, v) -> np.ndarray:
    """v rotated by the unit quaternion (w, x, y, z)."""
    w, x, y, z = np.asarray(quat, np.float64)
    r = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                  [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                  [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])
    return r @ np.asarray(v, np.float64)
