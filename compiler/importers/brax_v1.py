"""Brax v1 `Config` (protobuf text) → scenec Scene.

Where it sits: called by `import_file` for .pbtxt files. The format is read with pbtxt.py against
`SCHEMA` below, written from the field list in /work/shared/data/brax-v1/README.md (no Brax code).

Reading of the format (README + the published brax 0.0.x semantics), and the conversion:
- Bodies are placed as Brax's default state places them: every body starts at the origin
  (or at its `defaults.qps` pose); joints in order of their parent's depth place each child so that
  the child point `child_offset` meets the parent point `parent_offset`, with the child rotated
  relative to the parent by  ref * R(a1, t1) * R(a2, t2) * R(a3, t3), where ref is
  `reference_rotation`, a_i is the i-th axis of the joint frame (`rotation`, Euler degrees
  x-y'-z''), and t_i the joint angles: `defaults.angles` when given, else the midpoint of each
  `angle_limit`. Then each tree with no `defaults.qps` placement of its own is lifted so that its
  lowest collider point is at z = 0 (Brax's rule: capsules count both caps, boxes their corners,
  spheres their bottom; planes, meshes and bodies without colliders count as z = 0).
- A joint with k angle limits becomes k hinges on the same parent and child (named `<joint>` when
  k = 1, else `<joint>_x`, `_y`, `_z` after the frame axis), anchored at `child_offset`, ranges
  from the limits, `reference` = the default angle, damping = `angular_damping`. Hinge i's axis
  is a_i expressed in the child frame *at the reference pose*, i.e. a_i rotated back through the
  later hinges' reference angles; with that, scenec's chain rule (each joint turns the child about
  its axis, in order, from the reference pose) gives exactly Brax's rotation for every angle.
- `stiffness`/`limit_strength`/`spring_damping`: in Brax v1 `stiffness` is the strength of the
  spring that holds a joint together in the legacy spring mode (and the default limit strength);
  scenec's joints are exact and its limits use the options' limit softness, so these are recorded
  in the joint's `doc`, not turned into a spring toward an angle.
- Bodies: mass and diagonal inertia as given (com at the body origin, as in Brax). `frozen {all}`
  bodies (or all six flags) are static: no joint. A body that is no joint's child and not frozen
  gets a free joint from the world; when some of its `frozen` flags (its own or the config's) are
  set, it gets instead one slide joint per free world axis and one hinge per free rotation axis.
- Colliders: position, rotation (Euler degrees x-y'-z''); capsule `length` is end to end, so
  half_length = length / 2 - radius; `end: +-1` (only that cap collides) becomes a sphere at that
  end; box halfsize; plane; sphere; clipped_plane → a plane (noted); heightMap → a height field;
  mesh → Scene.meshes from `mesh_geometries` (inline vertices and faces, or the file path);
  material friction/elasticity → friction/restitution; no_contact → group 0 / mask 0.
- Actuators: `torque` → a motor per hinge, gear = strength, ctrl_range [-1, 1]; `angle` → a
  position actuator per hinge, kp = strength, ctrl_range = the hinge's range (radians; Brax's
  action is in degrees). Forces: when every force pushes a body that moves on slide joints
  from the world (thruster) or turns on hinges from the world (twister), each becomes a motor per
  such joint (the pendulums' cart thrusters); otherwise they are inputs the environment code
  drives (the swimmer's drag) and all are dropped (W707).
- Options: dt → timestep, substeps, gravity (zero unless given), friction, elasticity → restitution.
  `collide_include` → contacts.include (exact names); present but naming no body → nothing collides
  (every collider gets group 0 and mask 0).
"""

from __future__ import annotations

import math
import pathlib

import numpy as np

from scenec.compiler import frames
from scenec.compiler.importers import ImportResult, Reporter, common
from scenec.compiler.importers.pbtxt import Message, PbtxtError, parse
from scenec.schema import scene_pb2

D, I, B, S = "double", "int", "bool", "string"
SCHEMA = {
    "Config": {
        "bodies": ("Body", True), "joints": ("Joint", True), "actuators": ("Actuator", True),
        "forces": ("Force", True), "friction": (D, False), "gravity": ("Vector3", False),
        "angular_damping": (D, False), "velocity_damping": (D, False),
        "baumgarte_erp": (D, False), "spring_baumgarte_erp": (D, False), "dt": (D, False),
        "substeps": (I, False), "collide_include": ("BodyPair", True), "frozen": ("Frozen", False),
        "elasticity": (D, False), "defaults": ("Defaults", True),
        "mesh_geometries": ("MeshGeometry", True), "collider_cutoff": (I, False),
        "dynamics_mode": (S, False), "solver_scale_pos": (D, False),
        "solver_scale_ang": (D, False), "solver_scale_collide": (D, False),
    },
    "Vector3": {"x": (D, False), "y": (D, False), "z": (D, False)},
    "Body": {"name": (S, False), "colliders": ("Collider", True), "inertia": ("Vector3", False),
             "mass": (D, False), "frozen": ("Frozen", False)},
    "Frozen": {"position": ("Vector3", False), "rotation": ("Vector3", False), "all": (B, False)},
    "Collider": {"position": ("Vector3", False), "rotation": ("Vector3", False),
                 "box": ("Box", False), "plane": ("Plane", False), "sphere": ("Sphere", False),
                 "capsule": ("Capsule", False), "heightMap": ("HeightMap", False),
                 "mesh": ("MeshRef", False), "clipped_plane": ("ClippedPlane", False),
                 "material": ("Material", False), "color": (S, False), "hidden": (B, False),
                 "no_contact": (B, False)},
    "Box": {"halfsize": ("Vector3", False)},
    "Plane": {},
    "Sphere": {"radius": (D, False)},
    "Capsule": {"radius": (D, False), "length": (D, False), "end": (I, False)},
    "HeightMap": {"size": (D, False), "data": (D, True)},
    "MeshRef": {"name": (S, False), "scale": (D, False)},
    "ClippedPlane": {"halfsize_x": (D, False), "halfsize_y": (D, False)},
    "Material": {"elasticity": (D, False), "friction": (D, False)},
    "Joint": {"name": (S, False), "stiffness": (D, False), "parent": (S, False),
              "child": (S, False), "parent_offset": ("Vector3", False),
              "child_offset": ("Vector3", False), "rotation": ("Vector3", False),
              "angular_damping": (D, False), "angle_limit": ("Range", True),
              "limit_strength": (D, False), "spring_damping": (D, False),
              "reference_rotation": ("Vector3", False)},
    "Range": {"min": (D, False), "max": (D, False)},
    "Actuator": {"name": (S, False), "joint": (S, False), "strength": (D, False),
                 "torque": ("Empty", False), "angle": ("Empty", False)},
    "Force": {"name": (S, False), "body": (S, False), "strength": (D, False),
              "thruster": ("Empty", False), "twister": ("Empty", False)},
    "Empty": {},
    "BodyPair": {"first": (S, False), "second": (S, False)},
    "Defaults": {"angles": ("JointAngle", True), "qps": ("BodyQP", True)},
    "JointAngle": {"name": (S, False), "angle": ("Vector3", False)},
    "BodyQP": {"name": (S, False), "pos": ("Vector3", False), "rot": ("Vector3", False),
               "vel": ("Vector3", False), "ang": ("Vector3", False)},
    "MeshGeometry": {"name": (S, False), "path": (S, False), "vertices": ("Vector3", True),
                     "faces": (I, True), "vertex_normals": ("Vector3", True),
                     "face_normals": ("Vector3", True), "normals": ("Vector3", True)},
}

AXES = "xyz"
DEG = math.pi / 180.0
IGNORED_SETTINGS = ("velocity_damping", "angular_damping", "baumgarte_erp", "spring_baumgarte_erp",
                    "collider_cutoff", "dynamics_mode", "solver_scale_pos", "solver_scale_ang",
                    "solver_scale_collide")


def vec(msg: Message | None) -> np.ndarray:
    if msg is None:
        return np.zeros(3)
    return np.array([msg.get("x", 0.0), msg.get("y", 0.0), msg.get("z", 0.0)], dtype=float)


def euler_deg(msg: Message | None) -> np.ndarray:
    """Brax's Euler angles (degrees, intrinsic x-y'-z'') as a quaternion."""
    return frames.euler(vec(msg) * DEG, "xyz")


def import_brax(data: bytes | str, *, file: str = "<string>", base_dir=".", out_dir=None,
                convert_cylinders: bool = False) -> ImportResult:
    del convert_cylinders  # Brax v1 has no cylinders
    base = pathlib.Path(base_dir)
    return _Importer(file, base, pathlib.Path(out_dir) if out_dir is not None else base).run(data)


class _Importer:
    def __init__(self, file, base_dir, out_dir):
        self.file, self.base_dir, self.out_dir = file, base_dir, out_dir
        self.rep = Reporter()
        self.scene = scene_pb2.Scene()
        self.notes: dict[tuple, str] = {}
        self.sources: dict[str, str] = {}

    def _result(self):
        return ImportResult(self.scene, self.rep.diagnostics, self.notes, self.sources)

    def run(self, data):
        if isinstance(data, bytes):
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                self.rep.add("E713", "the file is not UTF-8 text", common.Span(self.file, 1, 1))
                return self._result()
        else:
            text = data
        self.sources[self.file] = text
        try:
            cfg = parse(text, self.file, SCHEMA, "Config")
        except PbtxtError as e:
            self.rep.add(e.code, e.message, e.span, e.hint)
            return self._result()
        self.cfg = cfg
        self.scene.name = pathlib.Path(self.file).stem
        bodies = self._check_names(cfg)
        if bodies is None:
            return self._result()
        self.bodies = bodies
        self._options(cfg)
        poses, angles = self._reference_pose(cfg)
        if self.rep.has_errors:
            return self._result()
        self._meshes(cfg)
        joint_hinges = self._bodies_and_joints(cfg, poses, angles)
        self._actuators(cfg, joint_hinges)
        self._forces(cfg)
        self._contacts(cfg)
        return self._result()

    # ----------------------------------------------------------------------------- checks

    def _check_names(self, cfg: Message):
        bodies: dict[str, Message] = {}
        for b in cfg.get("bodies", []):
            name = b.get("name", "")
            if not name:
                self.rep.add("E705", "a body has no name", b.span)
            elif name in bodies:
                self.rep.add("E715", f"body '{name}' is defined twice", b.span_of("name"))
            else:
                bodies[name] = b
        children: dict[str, Message] = {}
        names = set()
        for j in cfg.get("joints", []):
            jn = j.get("name", "")
            if jn in names:
                self.rep.add("E715", f"joint '{jn}' is defined twice", j.span_of("name"))
            names.add(jn)
            for end in ("parent", "child"):
                ref = j.get(end, "")
                if ref not in bodies:
                    import difflib

                    close = difflib.get_close_matches(ref, sorted(bodies), n=1)
                    self.rep.add("E706", f"joint '{jn}' names {end} body '{ref}', which does not "
                                 "exist", j.span_of(end), f"did you mean '{close[0]}'?" if close else "")
            if len(j.get("angle_limit", [])) > 3:
                self.rep.add("E714", f"joint '{jn}' has {len(j.get('angle_limit'))} angle limits; "
                             "a joint has at most 3 (about its x, y, z axes)",
                             j.span_of("angle_limit"))
            child = j.get("child", "")
            if child in children:
                self.rep.add("E716", f"body '{child}' is the child of two joints "
                             f"('{children[child].get('name')}' and '{jn}')", j.span_of("child"))
            children[child] = j
        # cycles
        lineage = {c: j.get("parent", "") for c, j in children.items()}
        for start in lineage:
            seen, b = {start}, lineage[start]
            while b in lineage:
                if b in seen:
                    self.rep.add("E716", f"joints form a cycle through body '{start}'",
                                 children[start].span_of("child"))
                    return None
                seen.add(b)
                b = lineage[b]
        self.child_joint = children
        return None if self.rep.has_errors else bodies

    # ----------------------------------------------------------------------------- options

    def _options(self, cfg: Message) -> None:
        o = self.scene.options
        if cfg.has("dt"):
            o.timestep = cfg.get("dt")
        if cfg.has("substeps"):
            o.substeps = cfg.get("substeps")
        o.gravity.extend(frames.clean(vec(cfg.get("gravity"))))  # zero unless given, in Brax
        o.friction = cfg.get("friction", 0.0)
        if cfg.get("elasticity", 0.0):
            o.restitution = cfg.get("elasticity")
        ignored = [k for k in IGNORED_SETTINGS if cfg.has(k)]
        if ignored:
            self.rep.add("W707", "settings with no scenec equivalent ignored: " + ", ".join(ignored),
                         cfg.span_of(ignored[0]),
                         "scenec integrates exact joints with its own solver; tune "
                         "options.solver_iterations and the contact softness instead")
            self.notes[("options",)] = "Brax v1 settings not converted: " + ", ".join(
                f"{k} {cfg.get(k)}" if not isinstance(cfg.get(k), str) else f"{k} \"{cfg.get(k)}\""
                for k in ignored)

    # ----------------------------------------------------------------------------- reference pose

    def _default_angles(self, cfg: Message) -> dict[str, list[float]]:
        """Joint name -> default angles in radians, one per angle limit."""
        given = {}
        defaults = cfg.get("defaults", [])
        if defaults:
            for ja in defaults[0].get("angles", []):
                given[ja.get("name", "")] = vec(ja.get("angle")) * DEG
        out = {}
        for j in cfg.get("joints", []):
            limits = j.get("angle_limit", [])
            name = j.get("name", "")
            if name in given:
                out[name] = [float(a) for a in given[name][:len(limits)]]
            else:
                out[name] = [(lim.get("min", 0.0) + lim.get("max", 0.0)) / 2 * DEG for lim in limits]
        return out

    @staticmethod
    def _local_rot(j: Message, angles) -> np.ndarray:
        q = euler_deg(j.get("reference_rotation"))
        rot = euler_deg(j.get("rotation"))
        for i, ang in enumerate(angles):
            axis = frames.rotate(rot, np.eye(3)[i])
            q = frames.quat_mul(q, frames.axis_angle(axis, ang))
        return q

    def _reference_pose(self, cfg: Message):
        poses = {name: (np.zeros(3), frames.IDENTITY.copy()) for name in self.bodies}
        placed = set()
        defaults = cfg.get("defaults", [])
        if defaults:
            for qp in defaults[0].get("qps", []):
                name = qp.get("name", "")
                if name not in self.bodies:
                    self.rep.add("E706", f"defaults.qps names body '{name}', which does not exist",
                                 qp.span_of("name"))
                    continue
                poses[name] = (vec(qp.get("pos")), euler_deg(qp.get("rot")))
                placed.add(name)
        angles = self._default_angles(cfg)
        lineage = {j.get("child"): j.get("parent") for j in cfg.get("joints", [])}

        def depth(body):
            d = 0
            while body in lineage:
                body = lineage[body]
                d += 1
            return d

        for j in sorted(cfg.get("joints", []), key=lambda j: depth(j.get("parent"))):
            parent, child = j.get("parent"), j.get("child")
            ppos, pquat = poses[parent]
            local = self._local_rot(j, angles[j.get("name", "")])
            rel = vec(j.get("parent_offset")) - frames.rotate(local, vec(j.get("child_offset")))
            poses[child] = (ppos + frames.rotate(pquat, rel), frames.normalize(frames.quat_mul(pquat, local)))
        # lift every tree that has no placement of its own
        roots = [n for n in self.bodies if n not in lineage and n not in placed]
        for r in roots:
            tree = [n for n in self.bodies if self._root_of(n, lineage) == r]
            min_z = min(self._min_z(self.bodies[n], poses[n]) for n in tree)
            for n in tree:
                pos, quat = poses[n]
                poses[n] = (pos - np.array([0.0, 0.0, min_z]), quat)
        return poses, angles

    @staticmethod
    def _root_of(body, lineage):
        while body in lineage:
            body = lineage[body]
        return body

    @staticmethod
    def _min_z(body: Message, pose) -> float:
        """Brax v1's lowest collider point of a body (see the module docstring)."""
        pos, quat = pose
        cols = body.get("colliders", [])
        if not cols:
            return 0.0
        result = math.inf
        for c in cols:
            cpos, crot = vec(c.get("position")), euler_deg(c.get("rotation"))
            if c.has("sphere"):
                z = pos[2] + frames.rotate(quat, cpos)[2] - c.get("sphere").get("radius", 0.0)
                result = min(result, z)
            elif c.has("capsule"):
                cap = c.get("capsule")
                axis = frames.rotate(crot, [0.0, 0.0, 1.0])
                half = cap.get("length", 0.0) / 2 - cap.get("radius", 0.0)
                for end in (-1, 1):
                    p = frames.rotate(quat, cpos + end * axis * half)
                    result = min(result, pos[2] + p[2] - cap.get("radius", 0.0))
            elif c.has("box"):
                hs = vec(c.get("box").get("halfsize"))
                for sx in (-1, 1):
                    for sy in (-1, 1):
                        for sz in (-1, 1):
                            corner = frames.rotate(crot, hs * [sx, sy, sz]) + cpos
                            result = min(result, (frames.rotate(quat, corner) + pos)[2])
            else:
                result = min(result, 0.0)
        return result

    # ----------------------------------------------------------------------------- meshes

    def _meshes(self, cfg: Message) -> None:
        self.mesh_geoms = {}
        for mg in cfg.get("mesh_geometries", []):
            self.mesh_geoms[mg.get("name", "")] = mg
        self.mesh_entries: dict[tuple, str] = {}
        self.mesh_names = common.Names()

    def _mesh_entry(self, name: str, scale: float, span) -> str | None:
        key = (name, scale)
        if key in self.mesh_entries:
            return self.mesh_entries[key]
        mg = self.mesh_geoms.get(name)
        if mg is None:
            self.rep.add("E706", f"mesh '{name}' is not in mesh_geometries", span)
            return None
        entry = self.mesh_names.fresh(name if scale == 1.0 else f"{name}_x{common.fmt(scale)}")
        verts = [vec(v) for v in mg.get("vertices", [])]
        faces = mg.get("faces", [])
        scl = [scale] * 3
        if verts and faces:
            msg, _ = common.mesh_message(entry, None, self.out_dir, scl, np.array(verts),
                                         np.array(faces).reshape(-1, 3))
        elif mg.get("path"):
            path = self.base_dir / mg.get("path")
            if not path.is_file():
                self.rep.add("E712", f"mesh file '{mg.get('path')}' not found", mg.span_of("path"))
                return None
            try:
                msg, inlined = common.mesh_message(entry, path, self.out_dir, scl)
            except (OSError, ValueError) as e:
                self.rep.add("E712", f"cannot read mesh file '{mg.get('path')}': {e}",
                             mg.span_of("path"))
                return None
            if inlined:
                self.rep.add("W708", f"mesh file '{mg.get('path')}' lies outside the output folder: "
                             "its vertices were written inline", mg.span_of("path"))
        else:
            self.rep.add("E705", f"mesh geometry '{name}' has neither vertices and faces nor a path",
                         mg.span)
            return None
        self.scene.meshes.append(msg)
        self.mesh_entries[key] = entry
        return entry

    # ----------------------------------------------------------------------------- bodies, joints

    def _frozen_flags(self, body: Message):
        """(all frozen, 3 position flags, 3 rotation flags) of a body, config flags included."""
        flags_p, flags_r = np.zeros(3, bool), np.zeros(3, bool)
        everything = False
        for fr in (body.get("frozen"), self.cfg.get("frozen")):
            if fr is None:
                continue
            everything |= bool(fr.get("all", False))
            flags_p |= vec(fr.get("position")) != 0
            flags_r |= vec(fr.get("rotation")) != 0
        return everything or (flags_p.all() and flags_r.all()), flags_p, flags_r

    def _bodies_and_joints(self, cfg: Message, poses, angles) -> dict[str, list[str]]:
        body_index = {}
        no_collide = self._nothing_collides(cfg)
        for name, b in self.bodies.items():
            msg = self.scene.bodies.add(name=name)
            body_index[name] = len(self.scene.bodies) - 1
            pos, quat = poses[name]
            if any(abs(x) > 0 for x in pos):
                msg.pos.extend(frames.clean(pos))
            if not frames.is_identity(quat, 1e-15):
                msg.quat.extend(frames.clean(frames.canonical(quat)))
            static, _, _ = self._frozen_flags(b)
            jointed = name in self.child_joint
            if not static or jointed:
                if b.has("mass"):
                    msg.mass = b.get("mass")
                if b.has("inertia"):
                    msg.inertia.extend(vec(b.get("inertia")).tolist())
            for k, c in enumerate(b.get("colliders", [])):
                self._collider(c, msg, body_index[name], no_collide)
        joint_names = common.Names({j.get("name", "") for j in cfg.get("joints", [])})
        hinges: dict[str, list[str]] = {}
        partial = []
        for name, b in self.bodies.items():
            static, fp, fr = self._frozen_flags(b)
            if name in self.child_joint:
                if static or fp.any() or fr.any():
                    partial.append(name)
                continue
            if not static:
                self._root_joints(name, fp, fr, poses[name], joint_names)
        if partial:
            self.rep.add("W707", "frozen flags of jointed bodies not converted ("
                         + ", ".join(repr(p) for p in partial[:5])
                         + (", ..." if len(partial) > 5 else "") + "): their joints constrain them",
                         self.bodies[partial[0]].span_of("frozen"))
        for j in cfg.get("joints", []):
            hinges[j.get("name", "")] = self._joint(j, angles[j.get("name", "")])
        return hinges

    def _root_joints(self, name, fp, fr, pose, names: common.Names) -> None:
        if not fp.any() and not fr.any():
            self.scene.joints.add(name=names.fresh(f"{name}_free"), kind=scene_pb2.FREE,
                                  parent="world", child=name)
            return
        inv = frames.quat_conj(pose[1])
        first = len(self.scene.joints)
        for kind, flags, word in ((scene_pb2.SLIDE, fp, "slide"), (scene_pb2.HINGE, fr, "hinge")):
            for i in range(3):
                if flags[i]:
                    continue
                j = self.scene.joints.add(name=names.fresh(f"{name}_{word}_{AXES[i]}"), kind=kind,
                                          parent="world", child=name)
                axis = frames.clean(frames.rotate(inv, np.eye(3)[i]))
                if axis != [0.0, 0.0, 1.0]:
                    j.axis.extend(axis)
        free_p = "".join(AXES[i] for i in range(3) if not fp[i])
        free_r = "".join(AXES[i] for i in range(3) if not fr[i])
        if len(self.scene.joints) > first:
            self.notes[("joints", first)] = (
                f"Brax frozen flags: '{name}' moves along world {free_p or '-'} and turns about "
                f"world {free_r or '-'} only")
            if len(free_r) > 1:
                self.notes[("joints", first)] += (" (several turning axes become a chain of "
                                                  "hinges: exact for small rotations)")

    def _joint(self, j: Message, angles) -> list[str]:
        name = j.get("name", "")
        limits = j.get("angle_limit", [])
        rot = euler_deg(j.get("rotation"))
        axes = [frames.rotate(rot, np.eye(3)[i]) for i in range(len(limits))]
        # axis i in the child frame at the reference pose: back through the later hinges
        child_axes = []
        for i, a in enumerate(axes):
            later = frames.IDENTITY.copy()
            for k in range(i + 1, len(axes)):
                later = frames.quat_mul(later, frames.axis_angle(axes[k], angles[k]))
            child_axes.append(frames.rotate(frames.quat_conj(later), a))
        out = []
        first = len(self.scene.joints)
        doc = []
        for field in ("stiffness", "limit_strength", "spring_damping"):
            if j.get(field):
                doc.append(f"Brax {field} {common.fmt(j.get(field))} (joint spring strength in "
                           "Brax's spring mode; not converted)")
                self.rep.add("W707", f"joint '{name}': {field} not converted (scenec joints are "
                             "exact; their limits use the options' limit softness)", j.span_of(field),
                             "set limit_time_constant on the hinges to soften their limits")
        for i, lim in enumerate(limits):
            lo, hi = lim.get("min", 0.0) * DEG, lim.get("max", 0.0) * DEG
            if lo == hi:
                self.rep.add("W705", f"joint '{name}': angle limit {i + 1} is [{common.fmt(lo)}, "
                             f"{common.fmt(hi)}]: that axis is locked, no hinge written",
                             j.span_of("angle_limit"))
                continue
            hname = name if len(limits) == 1 else f"{name}_{AXES[i]}"
            h = self.scene.joints.add(name=hname, kind=scene_pb2.HINGE, parent=j.get("parent"),
                                      child=j.get("child"))
            anchor = frames.clean(vec(j.get("child_offset")))
            if any(anchor):
                h.anchor.extend(anchor)
            axis = frames.clean(frames.normalize(child_axes[i]))
            if axis != [0.0, 0.0, 1.0]:
                h.axis.extend(axis)
            h.range.extend([min(lo, hi), max(lo, hi)])
            if angles[i]:
                h.reference = float(angles[i])
            if j.get("angular_damping"):
                h.damping = j.get("angular_damping")
            if doc:
                h.doc = "; ".join(doc)
            out.append(hname)
        if len(out) > 1:
            self.notes[("joints", first)] = (f"Brax joint '{name}': {len(out)} rotational dofs "
                                             "about the joint frame's x, y, z axes, in order "
                                             "(axes in the child frame at the reference pose)")
        return out

    # ----------------------------------------------------------------------------- colliders

    def _nothing_collides(self, cfg: Message) -> bool:
        pairs = cfg.get("collide_include", [])
        return bool(pairs) and not any(p.get("first") and p.get("second") for p in pairs)

    def _collider(self, c: Message, body: scene_pb2.Body, index: int, no_collide: bool) -> None:
        col = scene_pb2.Collider()
        pos, quat = vec(c.get("position")), euler_deg(c.get("rotation"))
        note = None
        if c.has("capsule"):
            cap = c.get("capsule")
            r, length, end = cap.get("radius", 0.0), cap.get("length", 0.0), cap.get("end", 0)
            half = length / 2 - r
            if half < 0:
                self.rep.add("W705", f"body '{body.name}': capsule length {common.fmt(length)} is "
                             f"shorter than its diameter: written as a sphere-like capsule",
                             c.span_of("capsule"))
                half = 0.0
            if end:
                center = pos + frames.rotate(quat, [0.0, 0.0, end * half])
                col.sphere.radius = r
                pos, quat = center, frames.IDENTITY.copy()
                note = (f"Brax capsule (radius {common.fmt(r)}, length {common.fmt(length)}) with "
                        f"end {end:+d}: only that cap collides, written as a sphere there")
            else:
                col.capsule.radius, col.capsule.half_length = r, half
        elif c.has("sphere"):
            col.sphere.radius = c.get("sphere").get("radius", 0.0)
        elif c.has("box"):
            col.box.half_size.extend(vec(c.get("box").get("halfsize")).tolist())
        elif c.has("plane"):
            col.plane.SetInParent()
        elif c.has("clipped_plane"):
            cp = c.get("clipped_plane")
            col.plane.size.extend([cp.get("halfsize_x", 0.0), cp.get("halfsize_y", 0.0)])
            note = "Brax clipped_plane: scenec planes are infinite for contacts (size is drawn)"
            self.rep.add("W705", f"body '{body.name}': clipped plane written as an infinite plane",
                         c.span_of("clipped_plane"))
        elif c.has("heightMap"):
            if not self._heightmap(c, col, body, len(self.scene.heightfields)):
                return
            size = c.get("heightMap").get("size", 0.0)
            # Brax's grid starts at the collider origin; scenec's is centred on it
            pos = pos + frames.rotate(quat, [size / 2, size / 2, 0.0])
            note = "Brax heightMap: grid re-centred on the collider frame"
        elif c.has("mesh"):
            m = c.get("mesh")
            entry = self._mesh_entry(m.get("name", ""), m.get("scale", 1.0) or 1.0, c.span_of("mesh"))
            if entry is None:
                return
            col.mesh.mesh = entry
        else:
            self.rep.add("E705", f"a collider of body '{body.name}' has no shape", c.span)
            return
        if any(abs(x) > 0 for x in pos):
            col.pos.extend(frames.clean(pos))
        if not frames.is_identity(quat, 1e-15):
            col.quat.extend(frames.clean(frames.canonical(quat)))
        mat = c.get("material")
        if mat is not None:
            if mat.has("friction"):
                col.friction = mat.get("friction")
            if mat.has("elasticity"):
                col.restitution = mat.get("elasticity")
        if c.get("no_contact", False) or no_collide:
            col.group, col.mask = 0, 0
        body.colliders.append(col)
        if note:
            self.notes[("bodies", index, "colliders", len(body.colliders) - 1)] = note

    def _heightmap(self, c: Message, col, body, hf_index: int) -> bool:
        hm = c.get("heightMap")
        data = hm.get("data", [])
        n = int(round(math.sqrt(len(data))))
        if n < 2 or n * n != len(data):
            self.rep.add("E714", f"body '{body.name}': heightMap data needs n * n values (n >= 2), "
                         f"got {len(data)}", c.span_of("heightMap"))
            return False
        size = hm.get("size", 0.0)
        name = f"{body.name}_heightmap{hf_index}"
        hf = self.scene.heightfields.add(name=name, nrow=n, ncol=n, size_x=size / 2, size_y=size / 2)
        hf.elevation.extend(float(x) for x in data)
        col.heightfield.heightfield = name
        return True

    # ----------------------------------------------------------------------------- actuators

    def _actuators(self, cfg: Message, hinges: dict[str, list[str]]) -> None:
        hinge_range = {j.name: list(j.range) for j in self.scene.joints}
        for a in cfg.get("actuators", []):
            name, joint = a.get("name", ""), a.get("joint", "")
            if joint not in hinges:
                self.rep.add("E706", f"actuator '{name}' drives joint '{joint}', which does not "
                             "exist", a.span_of("joint"))
                continue
            strength = a.get("strength", 0.0)
            targets = hinges[joint]
            for h in targets:
                aname = name if len(targets) == 1 else f"{name}_{h[-1]}"
                if a.has("angle"):
                    act = self.scene.actuators.add(name=aname, kind=scene_pb2.POSITION, joint=h,
                                                   kp=strength)
                    act.ctrl_range.extend(hinge_range[h])
                    self.notes[("actuators", len(self.scene.actuators) - 1)] = (
                        "Brax angle actuator: target in radians within the joint range (Brax "
                        "takes degrees)")
                else:
                    act = self.scene.actuators.add(name=aname, kind=scene_pb2.MOTOR, joint=h,
                                                   gear=strength)
                    act.ctrl_range.extend([-1.0, 1.0])

    def _forces(self, cfg: Message) -> None:
        """Forces become motors only when every one of them can: each pushes a body that moves
        on slide joints (thruster) or hinges (twister) from the world. Otherwise they are extra
        inputs the environment code drives (Brax's swimmer uses them for drag), and all are
        dropped, so the action vector does not change meaning halfway."""
        forces = cfg.get("forces", [])
        plans = []
        for f in forces:
            body = f.get("body", "")
            want = scene_pb2.SLIDE if f.has("thruster") else scene_pb2.HINGE
            plans.append([j for j in self.scene.joints if j.child == body
                          and j.parent == "world" and j.kind == want])
        if not forces:
            return
        if not all(plans):
            names = ", ".join(repr(f.get("name", "")) for f in forces)
            self.rep.add("W707", f"forces {names} dropped: scenec actuators drive joints, and not "
                         "every force acts on a body that slides (thruster) or turns (twister) "
                         "from the world", forces[0].span,
                         "model these forces in the task, or give the bodies slide joints")
            return
        for f, root in zip(forces, plans):
            name, body = f.get("name", ""), f.get("body", "")
            kind = "thruster" if f.has("thruster") else "twister"
            word = "slide" if kind == "thruster" else "hinge"
            for j in root:
                act = self.scene.actuators.add(
                    name=name if len(root) == 1 else f"{name}_{j.name[-1]}",
                    kind=scene_pb2.MOTOR, joint=j.name, gear=f.get("strength", 0.0))
                act.ctrl_range.extend([-1.0, 1.0])
                self.notes[("actuators", len(self.scene.actuators) - 1)] = (
                    f"Brax {kind} '{name}' on '{body}': a motor on its {word} joint")
            self.rep.add("W705", f"{kind} '{name}' converted to motor(s) on the {word} joints of "
                         f"'{body}'", f.span)

    # ----------------------------------------------------------------------------- contacts

    def _contacts(self, cfg: Message) -> None:
        pairs = cfg.get("collide_include", [])
        if not pairs:
            return
        if self._nothing_collides(cfg):
            self.rep.add("W705", "collide_include names no bodies: nothing collides (every collider "
                         "has group 0 and mask 0)", cfg.span_of("collide_include"))
            self.notes[("bodies",)] = ("Brax collide_include names no bodies: all colliders have "
                                       "group 0 and mask 0")
            return
        for p in pairs:
            first, second = p.get("first", ""), p.get("second", "")
            if not first or not second:
                continue
            for n in (first, second):
                if n not in self.bodies:
                    self.rep.add("E706", f"collide_include names body '{n}', which does not exist",
                                 p.span)
            self.scene.contacts.include.add(first=common.fnmatch_escape(first),
                                            second=common.fnmatch_escape(second))
