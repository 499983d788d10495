"""URDF (ROS robot description) → scenec Scene.

Where it sits: called by `import_file` for .urdf files; returns an ImportResult like the MJCF
importer. URDF semantics as in the ROS urdf/XML specification: a joint's `origin` is the child
link's frame in the parent link's frame (at q = 0), the joint axis is in that frame, inertials and
collisions have their own origins in the link frame.

What becomes what
- Links → bodies (tree order from the root), posed in world at q = 0. The root link is static
  (URDF has no world joint); a note says how to make it mobile.
- Joints: revolute → hinge with its limits, continuous → unlimited hinge, prismatic → slide,
  fixed → fixed, floating → free (only on a child of the root), planar → an error. The joint frame
  is the child frame, so anchors are the child origin and axes are written in the child frame.
  `dynamics damping` → damping; effort and velocity limits are recorded in the joint's `doc`.
- `<inertial>` → mass, com and the 6-value inertia rotated into the link frame.
- `<collision>` → colliders (box, sphere, mesh with scale, cylinder by the cylinder rule);
  `<visual>`, `<transmission>`, `<gazebo>` and MuJoCo's `<mujoco>` block are dropped with a note.
"""

from __future__ import annotations

import difflib
import math
import pathlib

import numpy as np

from scenec.compiler import frames
from scenec.compiler.importers import ImportResult, Reporter, common
from scenec.compiler.importers.xmltree import Element, XmlError, parse
from scenec.schema import scene_pb2

JOINT_TYPES = {"revolute": scene_pb2.HINGE, "continuous": scene_pb2.HINGE,
               "prismatic": scene_pb2.SLIDE, "fixed": scene_pb2.FIXED, "floating": scene_pb2.FREE,
               "planar": None}
DROPPED_TOP = ("transmission", "gazebo", "mujoco")
KNOWN_TOP = ("link", "joint", "material") + DROPPED_TOP


def import_urdf(data: bytes | str, *, file: str = "<string>", base_dir=".", out_dir=None,
                convert_cylinders: bool = False) -> ImportResult:
    base = pathlib.Path(base_dir)
    return _Importer(file, base, pathlib.Path(out_dir) if out_dir is not None else base,
                     convert_cylinders).run(data)


class _Importer:
    def __init__(self, file, base_dir, out_dir, convert):
        self.file = file
        self.base_dir = base_dir
        self.out_dir = out_dir
        self.convert = convert
        self.rep = Reporter()
        self.scene = scene_pb2.Scene()
        self.notes: dict[tuple, str] = {}
        self.sources: dict[str, str] = {}
        self.mesh_names = common.Names()
        self.mesh_by_key: dict[tuple, str] = {}
        self.collider_names: dict[str, int] = {}

    def _result(self):
        return ImportResult(self.scene, self.rep.diagnostics, self.notes, self.sources)

    # ---------------------------------------------------------------------------- values

    def nums(self, el: Element, name: str, n: int, default=None):
        text = el.get(name)
        if text is None:
            return default
        try:
            vals = [float(t) for t in text.split()]
        except ValueError:
            self.rep.add("E704", f"'{name}' of <{el.tag}> must be numbers, not '{text}'",
                         el.attr_span(name))
            return default
        if len(vals) != n or not all(math.isfinite(v) for v in vals):
            self.rep.add("E704", f"'{name}' of <{el.tag}> needs {n} finite numbers", el.attr_span(name))
            return default
        return vals

    def num(self, el, name, default=None):
        v = self.nums(el, name, 1)
        return default if v is None else v[0]

    def origin(self, el: Element) -> tuple:
        """The pose given by an element's <origin xyz rpy> child (identity when absent)."""
        o = next((c for c in el.children if c.tag == "origin"), None)
        if o is None:
            return np.zeros(3), frames.IDENTITY.copy()
        xyz = self.nums(o, "xyz", 3, [0.0, 0.0, 0.0])
        rpy = self.nums(o, "rpy", 3, [0.0, 0.0, 0.0])
        return np.asarray(xyz), frames.rpy(*rpy)

    # ---------------------------------------------------------------------------- driver

    def run(self, data):
        text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
        self.sources[self.file] = text
        try:
            root = parse(data, self.file)
        except XmlError as e:
            self.rep.add("E700", e.message, e.span)
            return self._result()
        if root.tag != "robot":
            self.rep.add("E701", f"the root element is <{root.tag}>, not <robot>: not a URDF model",
                         root.span, "MJCF files start with <mujoco> and are imported from .xml")
            return self._result()
        self.scene.name = root.get("name") or pathlib.Path(self.file).stem
        links: dict[str, Element] = {}
        joints: list[Element] = []
        dropped: dict[str, list[Element]] = {}
        for c in root.children:
            if c.tag == "link":
                name = c.get("name")
                if not name:
                    self.rep.add("E705", "<link> needs a 'name'", c.span)
                elif name in links:
                    self.rep.add("E715", f"link '{name}' is defined twice", c.attr_span("name"))
                else:
                    links[name] = c
            elif c.tag == "joint":
                joints.append(c)
            elif c.tag == "material":
                continue  # colours only
            else:
                dropped.setdefault(c.tag, []).append(c)
        for tag, els in dropped.items():
            why = ("scenec has no transmissions; add actuators in the YAML" if tag == "transmission"
                   else "simulator-specific settings" if tag in ("gazebo", "mujoco")
                   else "not part of the URDF specification")
            self.rep.add("W701", f"{len(els)} <{tag}> element(s) dropped: {why}", els[0].span)
        # the tree
        child_joint: dict[str, Element] = {}
        children: dict[str, list[Element]] = {n: [] for n in links}
        joint_names = set()
        for j in joints:
            name, parent, child = j.get("name"), self._link_ref(j, "parent"), self._link_ref(j, "child")
            if not name:
                self.rep.add("E705", "<joint> needs a 'name'", j.span)
                continue
            if name in joint_names:
                self.rep.add("E715", f"joint '{name}' is defined twice", j.attr_span("name"))
                continue
            joint_names.add(name)
            if parent is None or child is None:
                continue
            for ref, what in ((parent, "parent"), (child, "child")):
                if ref[0] not in links:
                    close = difflib.get_close_matches(ref[0], sorted(links), n=1)
                    self.rep.add("E706", f"joint '{name}' names {what} link '{ref[0]}', which does "
                                 "not exist", ref[1], f"did you mean '{close[0]}'?" if close else "")
            if parent[0] not in links or child[0] not in links:
                continue
            if child[0] in child_joint:
                self.rep.add("E716", f"link '{child[0]}' is the child of two joints "
                             f"('{child_joint[child[0]].get('name')}' and '{name}')", ref[1])
                continue
            child_joint[child[0]] = j
            children[parent[0]].append(j)
        roots = [n for n in links if n not in child_joint]
        self.roots = set(roots)
        if links and not roots:
            self.rep.add("E716", "the joints form a cycle: no link is the root", root.span)
            return self._result()
        visited: set[str] = set()
        visual = [v for link in links.values() for v in link.children if v.tag == "visual"]
        if visual:
            self.rep.add("W701", f"{len(visual)} <visual> element(s) dropped: scenec draws the "
                         "colliders", visual[0].span)
        for r in roots:
            self._link(links[r], (np.zeros(3), frames.IDENTITY.copy()), None, links, children,
                       visited, root_link=True)
        unvisited = [n for n in links if n not in visited]
        if unvisited:
            self.rep.add("E716", f"links {', '.join(repr(n) for n in unvisited)} are on a joint "
                         "cycle", links[unvisited[0]].span)
        return self._result()

    def _link_ref(self, j: Element, what: str):
        el = next((c for c in j.children if c.tag == what), None)
        if el is None or not el.get("link"):
            self.rep.add("E705", f"joint '{j.get('name')}' needs <{what} link=\"...\"/>", j.span)
            return None
        return el.get("link"), el.attr_span("link")

    # ---------------------------------------------------------------------------- links

    def _link(self, link: Element, pose, joint: Element | None, links, children, visited,
              root_link=False):
        name = link.get("name")
        visited.add(name)
        if name == "world":
            # ROS's convention (and MuJoCo's reading): a link named "world" is the world itself
            if any(c.tag in ("collision", "inertial") for c in link.children):
                self.rep.add("W704", "collisions and inertia of link 'world' dropped: the world "
                             "does not move and has no colliders of its own", link.span)
            for j in children[name]:
                child = next(c.get("link") for c in j.children if c.tag == "child")
                if child not in visited:
                    self._link(links[child], frames.compose(pose, self.origin(j)), j, links,
                               children, visited)
            return
        body = self.scene.bodies.add(name=name)
        index = len(self.scene.bodies) - 1
        if any(pose[0]):
            body.pos.extend(frames.clean(pose[0]))
        if not frames.is_identity(pose[1]):
            body.quat.extend(frames.clean(frames.canonical(pose[1])))
        if root_link or (joint is not None and self._parent_link(joint) == "world"
                         and joint.get("type") == "fixed"):
            self.notes[("bodies", index)] = ("URDF root link: static (welded to the world); add a "
                                             "free joint with this body as child to let it move")
        inertial = next((c for c in link.children if c.tag == "inertial"), None)
        if inertial is not None:
            self._inertial(inertial, body)
        for c in link.children:
            if c.tag == "collision":
                self._collision(c, body, index)
        if joint is not None:
            self._joint(joint, name)
        for j in children[name]:
            child = next(c.get("link") for c in j.children if c.tag == "child")
            if child in visited:
                continue
            self._link(links[child], frames.compose(pose, self.origin(j)), j, links, children,
                       visited)

    def _inertial(self, el: Element, body: scene_pb2.Body) -> None:
        m = next((c for c in el.children if c.tag == "mass"), None)
        i = next((c for c in el.children if c.tag == "inertia"), None)
        if m is None or i is None:
            self.rep.add("E705", "<inertial> needs <mass value> and <inertia ixx ... izz>", el.span)
            return
        mass = self.num(m, "value")
        vals = [self.num(i, k) for k in ("ixx", "iyy", "izz", "ixy", "ixz", "iyz")]
        if mass is None or any(v is None for v in vals):
            self.rep.add("E705", "<inertial> needs <mass value> and all six of ixx iyy izz ixy ixz "
                         "iyz", el.span)
            return
        pos, quat = self.origin(el)
        xx, yy, zz, xy, xz, yz = vals
        t = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
        r = frames.quat_to_mat(quat)
        six = frames.inertia_six(r @ t @ r.T)
        body.mass = mass
        if any(pos):
            body.com.extend(frames.clean(pos))
        scale = max(abs(x) for x in six[:3]) or 1.0
        six = frames.clean(six, 1e-15 * scale)
        body.inertia.extend(six[:3] if not any(six[3:]) else six)

    def _collision(self, el: Element, body: scene_pb2.Body, index: int) -> None:
        geom = next((c for c in el.children if c.tag == "geometry"), None)
        shape = next((c for c in geom.children), None) if geom is not None else None
        if shape is None:
            self.rep.add("E705", "<collision> needs <geometry> with a shape", el.span)
            return
        col = scene_pb2.Collider()
        cname = el.get("name")
        note = None
        if shape.tag == "box":
            size = self.nums(shape, "size", 3)
            if size is None:
                self.rep.add("E705", "<box> needs 'size' (three full lengths)", shape.span)
                return
            col.box.half_size.extend(s / 2 for s in size)
        elif shape.tag == "sphere":
            r = self.num(shape, "radius")
            if r is None:
                self.rep.add("E705", "<sphere> needs 'radius'", shape.span)
                return
            col.sphere.radius = r
        elif shape.tag in ("cylinder", "capsule"):
            r, length = self.num(shape, "radius"), self.num(shape, "length")
            if r is None or length is None:
                self.rep.add("E705", f"<{shape.tag}> needs 'radius' and 'length'", shape.span)
                return
            if shape.tag == "capsule":
                col.capsule.radius, col.capsule.half_length = r, length / 2
            elif not self.convert:
                self.rep.add("E707", f"link '{body.name}': scenec has no cylinder collider",
                             shape.span, common.CYLINDER_HINT)
                return
            else:
                half, note = common.cylinder_to_capsule(r, length / 2)
                col.capsule.radius, col.capsule.half_length = r, half
                # URDF links with <inertial> ignore collider masses; without one, keep the
                # cylinder's mass at the default density
                col.density = 1000.0 * common.cylinder_volume(r, length / 2) / \
                    common.capsule_volume(r, half)
                self.rep.add("W705", f"link '{body.name}': cylinder converted to a capsule",
                             shape.span)
        elif shape.tag == "mesh":
            mesh = self._mesh(shape)
            if mesh is None:
                return
            col.mesh.mesh = mesh
        else:
            self.rep.add("E707", f"link '{body.name}': unknown collision shape <{shape.tag}>",
                         shape.span, "use box, sphere, cylinder or mesh")
            return
        pos, quat = self.origin(el)
        if any(pos):
            col.pos.extend(frames.clean(pos))
        if not frames.is_identity(quat):
            col.quat.extend(frames.clean(frames.canonical(quat)))
        if cname:
            # URDF collision names need not be unique; scenec collider names must be
            if cname in self.collider_names:
                self.collider_names[cname] += 1
            else:
                self.collider_names[cname] = 1
                col.name = cname
        body.colliders.append(col)
        if note:
            self.notes[("bodies", index, "colliders", len(body.colliders) - 1)] = note

    def _mesh(self, el: Element) -> str | None:
        fname = el.get("filename")
        if not fname:
            self.rep.add("E705", "<mesh> needs 'filename'", el.span)
            return None
        path = self._resolve(fname)
        if path is None:
            self.rep.add("E712", f"mesh file '{fname}' not found", el.attr_span("filename"),
                         "package:// paths are searched in the URDF's folder and its parents")
            return None
        scale = self.nums(el, "scale", 3)
        key = (str(path), tuple(scale or ()))
        if key in self.mesh_by_key:
            return self.mesh_by_key[key]
        name = self.mesh_names.fresh(path.stem)
        try:
            msg, inlined = common.mesh_message(name, path, self.out_dir, scale)
        except (OSError, ValueError) as e:
            self.rep.add("E712", f"cannot read mesh file '{fname}': {e}", el.attr_span("filename"))
            return None
        if inlined:
            self.rep.add("W708", f"mesh file '{fname}' lies outside the output folder: its "
                         "vertices were written inline", el.attr_span("filename"))
            self.notes[("meshes", len(self.scene.meshes))] = f"inline copy of {fname}"
        self.scene.meshes.append(msg)
        self.mesh_by_key[key] = name
        return name

    def _resolve(self, fname: str) -> pathlib.Path | None:
        if fname.startswith("file://"):
            p = pathlib.Path(fname[len("file://"):])
            return p if p.is_file() else None
        if fname.startswith("package://"):
            pkg, _, rest = fname[len("package://"):].partition("/")
            candidates = []
            for folder in [self.base_dir.resolve(), *self.base_dir.resolve().parents]:
                if folder.name == pkg:
                    candidates.append(folder / rest)
                candidates.append(folder / pkg / rest)
            candidates.append(self.base_dir / rest)
            return next((c for c in candidates if c.is_file()), None)
        p = pathlib.Path(fname)
        p = p if p.is_absolute() else self.base_dir / p
        return p if p.is_file() else None

    # ---------------------------------------------------------------------------- joints

    @staticmethod
    def _parent_link(j: Element) -> str | None:
        return next((c.get("link") for c in j.children if c.tag == "parent"), None)

    def _joint(self, el: Element, child: str) -> None:
        name = el.get("name")
        jtype = el.get("type")
        if jtype == "fixed" and self._parent_link(el) == "world":
            return  # welded to the world: a body that is no joint's child is exactly that
        if jtype not in JOINT_TYPES:
            close = difflib.get_close_matches(jtype or "", list(JOINT_TYPES), n=1)
            self.rep.add("E704", f"joint '{name}' has type '{jtype}'", el.attr_span("type"),
                         f"did you mean '{close[0]}'?" if close else
                         "revolute, continuous, prismatic, fixed, floating or planar")
            return
        kind = JOINT_TYPES[jtype]
        if kind is None:
            self.rep.add("E710", f"planar joint '{name}' is not supported", el.attr_span("type"),
                         "replace it by two slide joints and a hinge on the same child")
            return
        parent = next(c.get("link") for c in el.children if c.tag == "parent")
        j = self.scene.joints.add(name=name, kind=kind, child=child)
        if kind == scene_pb2.FREE:
            if parent not in self.roots:
                self.rep.add("E710", f"floating joint '{name}' hangs from link '{parent}', which "
                             "moves: scenec's free joints start at the world", el.span)
            j.parent = "world"
            return
        j.parent = parent
        if kind == scene_pb2.FIXED:
            return
        axis_el = next((c for c in el.children if c.tag == "axis"), None)
        axis = self.nums(axis_el, "xyz", 3, [1.0, 0.0, 0.0]) if axis_el is not None else [1.0, 0.0, 0.0]
        if np.linalg.norm(axis) < frames.EPS:
            self.rep.add("E704", f"joint '{name}' has a zero axis", axis_el.attr_span("xyz"))
            axis = [1.0, 0.0, 0.0]
        axis = frames.clean(frames.normalize(axis))
        if axis != [0.0, 0.0, 1.0]:
            j.axis.extend(axis)
        limit = next((c for c in el.children if c.tag == "limit"), None)
        doc = []
        if limit is not None:
            effort, velocity = self.num(limit, "effort"), self.num(limit, "velocity")
            unit = "N*m" if kind == scene_pb2.HINGE else "N"
            vunit = "rad/s" if kind == scene_pb2.HINGE else "m/s"
            if effort is not None:
                doc.append(f"URDF effort limit {common.fmt(effort)} {unit}")
            if velocity is not None:
                doc.append(f"velocity limit {common.fmt(velocity)} {vunit}")
            if jtype != "continuous":
                lo, hi = self.num(limit, "lower", 0.0), self.num(limit, "upper", 0.0)
                if lo < hi:
                    j.range.extend([lo, hi])
        elif jtype in ("revolute", "prismatic"):
            self.rep.add("E705", f"{jtype} joint '{name}' needs <limit>", el.span)
        dyn = next((c for c in el.children if c.tag == "dynamics"), None)
        if dyn is not None:
            d = self.num(dyn, "damping", 0.0)
            if d:
                j.damping = d
            f = self.num(dyn, "friction", 0.0)
            if f:
                self.rep.add("W704", f"joint '{name}': dry friction {common.fmt(f)} ignored "
                             "(scenec has no joint friction)", dyn.attr_span("friction"))
                doc.append(f"URDF dry friction {common.fmt(f)} not simulated")
        if any(c.tag == "mimic" for c in el.children):
            mimic = next(c for c in el.children if c.tag == "mimic")
            self.rep.add("W704", f"joint '{name}': <mimic> ignored (scenec has no joint coupling)",
                         mimic.span)
        if doc:
            j.doc = "; ".join(doc)
