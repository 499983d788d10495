"""MJCF (MuJoCo's XML) → scenec Scene.

Where it sits: called by `import_file` for .xml files; returns an ImportResult (a Scene message, the
diagnostics, and notes for the YAML writer). MuJoCo's documented semantics (its XML reference and
"Computation" chapter) decide every conversion; the tests compile the same XML with MuJoCo and
compare poses, axes, masses and the collision filter.

What becomes what
- Bodies are listed flat in MuJoCo's order (depth-first, as written). A body's pos/quat is its world
  pose at qpos0 (every joint at its `ref`), composed down the tree through `<frame>`s.
- Worldbody geoms go to one static body named `world_geoms` (first in the list, no joint): scenec's
  implicit `world` body cannot hold colliders. MuJoCo's "world" in `<exclude>` means that body.
- A body with no joint is welded to its parent: a `fixed` joint (none when the parent is the world,
  since a body that is no joint's child is static anyway). Several joints on one body become several
  scenec joints with the same parent and child, in MJCF order; joint anchor/axis stay in the body
  frame. A free joint's parent is `world`.
- `<inertial>` → mass, com, inertia (6 values in the body frame: R diag R^T). Without it, the
  compiler derives mass from the colliders: a geom's `density`, or `mass` / volume (MuJoCo's volume
  formulas; a mesh's convex hull), goes to the collider's `density`.
- contype/conaffinity → group/mask (same OR rule); filterparent → contacts.filter_parent;
  `<exclude>` → contacts.exclude (names escaped for fnmatch); `<pair>` → contacts.pairs.
- Angles follow `<compiler angle>` (default degrees) for euler/axisangle and hinge/ball range, ref
  and springref; keyframe qpos is always radians, as in MuJoCo.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import pathlib

import numpy as np

from scenec.compiler import frames
from scenec.compiler.importers import ImportResult, Reporter, common
from scenec.compiler.importers.mjcf_schema import (
    ACTUATOR_TAGS, COSMETIC_SECTIONS, DROPPED, ELEMENTS, FLAG_DEFAULTS, IGNORED_ATTRS,
    IGNORED_DEFAULTS, IGNORED_SECTIONS, SUPPORTED_ACTUATORS, UNSUPPORTED,
)
from scenec.compiler.importers.xmltree import Element, XmlError, parse
from scenec.schema import scene_pb2
from scenec.schema.diagnostics import Span

GEOM_TYPES = ("plane", "hfield", "sphere", "capsule", "ellipsoid", "cylinder", "box", "mesh", "sdf")
JOINT_KINDS = {"hinge": scene_pb2.HINGE, "slide": scene_pb2.SLIDE, "ball": scene_pb2.BALL,
               "free": scene_pb2.FREE}
QPOS_SIZE = {scene_pb2.HINGE: 1, scene_pb2.SLIDE: 1, scene_pb2.BALL: 4, scene_pb2.FREE: 7}
QVEL_SIZE = {scene_pb2.HINGE: 1, scene_pb2.SLIDE: 1, scene_pb2.BALL: 3, scene_pb2.FREE: 6}
KIND_WORD = {scene_pb2.HINGE: "hinge", scene_pb2.SLIDE: "slide", scene_pb2.BALL: "ball",
             scene_pb2.FREE: "free", scene_pb2.FIXED: "fixed"}

MJ_DEFAULT_TIMESTEP = 0.002      # MuJoCo's <option timestep> default (scenec's own is 0.01)
MJ_DEFAULT_SOLREF = (0.02, 1.0)  # MuJoCo's solref default (time constant s, damping ratio)
MJ_DEFAULT_DENSITY = 1000.0      # MuJoCo's geom density default, equal to scenec's options.density
WORLD_GEOMS = "world_geoms"


@dataclasses.dataclass
class _Class:
    parent: str | None
    attrs: dict[str, dict[str, tuple[str, Span]]]   # element tag -> attribute -> (value, span)


@dataclasses.dataclass
class _BodyCtx:
    name: str            # scenec body name ("world" for the world itself)
    index: int           # index in scene.bodies, -1 for the world without geoms
    msg: scene_pb2.Body | None
    pose: tuple          # world pose (pos, quat)
    has_inertial: bool = False
    is_world: bool = False  # the MJCF worldbody (its geoms go to the `world_geoms` body)

    @property
    def joint_parent(self) -> str:
        return "world" if self.is_world else self.name


def _same_value(text: str, default: str | None) -> bool:
    """Whether an attribute's text says the same as MuJoCo's default (numbers compared as such)."""
    if default is None:
        return False
    a, b = text.split(), default.split()
    try:
        return len(a) == len(b) and all(float(x) == float(y) for x, y in zip(a, b))
    except ValueError:
        return a == b


def import_mjcf(data: bytes | str, *, file: str = "<string>", base_dir=".", out_dir=None,
                convert_cylinders: bool = False) -> ImportResult:
    base = pathlib.Path(base_dir)
    imp = _Importer(file, base, pathlib.Path(out_dir) if out_dir is not None else base,
                    convert_cylinders)
    return imp.run(data)


class _Importer:
    def __init__(self, file: str, base_dir: pathlib.Path, out_dir: pathlib.Path, convert: bool):
        self.file = file
        self.base_dir = base_dir
        self.out_dir = out_dir
        self.convert = convert
        self.rep = Reporter()
        self.scene = scene_pb2.Scene()
        self.notes: dict[tuple, str] = {}
        self.sources: dict[str, str] = {}
        # <compiler> settings (MuJoCo's defaults)
        self.angle_unit = math.pi / 180.0
        self.eulerseq = "xyz"
        self.autolimits = True
        self.inertiafromgeom = "auto"
        self.meshdir: str | None = None
        self.assetdir: str | None = None
        self.strippath = False
        self.classes: dict[str, _Class] = {"main": _Class(None, {})}
        self._cache: dict[tuple[str, str], dict] = {}
        # name tables filled while walking
        self.body_names = common.Names({"world"})
        self.joint_names = common.Names()
        self.actuator_names = common.Names()
        self.joint_kind: dict[str, int] = {}
        self.joint_order: list[str] = []            # non-fixed joints, MuJoCo's qpos order
        self.geom_names: set[str] = set()
        self.mj_bodies: dict[str, str] = {}           # MJCF body name -> scenec body name
        self.mj_body_count = 0
        self.meshes: dict[str, tuple] = {}            # mesh name -> (file path | None, inline verts, faces, scale)
        self.mesh_span: dict[str, Span] = {}
        self.hfields: set[str] = set()
        self.filter_parent = True
        self.contacts_off = False
        self.limits_off = False

    # ----------------------------------------------------------------------------- driver

    def run(self, data: bytes | str) -> ImportResult:
        text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
        self.sources[self.file] = text
        try:
            root = parse(data, self.file)
        except XmlError as e:
            self.rep.add("E700", e.message, e.span)
            return self._result()
        if root.tag != "mujoco":
            self.rep.add("E701", f"the root element is <{root.tag}>, not <mujoco>: not an MJCF "
                         "model", root.span,
                         "URDF files start with <robot> and are imported from a .urdf file")
            return self._result()
        self._expand_includes(root, [pathlib.Path(self.file).resolve()])
        self._check(root)
        self._prescan_names(root)
        sections = {}
        for c in root.children:
            sections.setdefault(c.tag, []).append(c)
        for el in sections.get("compiler", []):
            self._compiler(el)
        for el in sections.get("default", []):
            self._defaults(el, None)
        self.scene.name = root.get("model") or pathlib.Path(self.file).stem
        self.scene.options.timestep = MJ_DEFAULT_TIMESTEP
        self.scene.options.friction_cone = scene_pb2.PYRAMIDAL  # MuJoCo's default cone
        # MuJoCo's default solref (0.02, 1) for contacts and joint limits, written out because
        # scenec's own defaults differ
        self.scene.options.contact_time_constant = MJ_DEFAULT_SOLREF[0]
        self.scene.options.limit_time_constant = MJ_DEFAULT_SOLREF[0]
        for el in sections.get("option", []):
            self._option(el)
        if not any(el.get("iterations") for el in sections.get("option", [])):
            self.notes[("options",)] = ("MuJoCo's default of 100 solver iterations not copied: "
                                        "scenec's default applies")
        for el in sections.get("asset", []):
            self._assets(el)
        self._worldbody(sections.get("worldbody", []))
        for el in sections.get("contact", []):
            self._contact(el)
        if not self.filter_parent:
            self.scene.contacts.filter_parent = False
        for el in sections.get("actuator", []):
            self._actuators(el)
        for el in sections.get("keyframe", []):
            self._keyframes(el)
        if self.contacts_off:
            self.scene.contacts.ClearField("pairs")
        return self._result()

    def _result(self) -> ImportResult:
        return ImportResult(self.scene, self.rep.diagnostics, self.notes, self.sources)

    # ----------------------------------------------------------------------------- structure

    def _expand_includes(self, el: Element, stack: list) -> None:
        children = []
        for c in el.children:
            if c.tag != "include":
                self._expand_includes(c, stack)
                children.append(c)
                continue
            name = c.get("file")
            if not name:
                self.rep.add("E705", "<include> needs a 'file' attribute", c.span)
                continue
            path = self.base_dir / name
            if path.resolve() in stack:
                self.rep.add("E712", f"'{name}' includes itself", c.attr_span("file"))
                continue
            try:
                data = path.read_bytes()
            except OSError as e:
                self.rep.add("E712", f"cannot read included file '{name}': {e.strerror or e}",
                             c.attr_span("file"))
                continue
            shown = str(path)
            self.sources[shown] = data.decode("utf-8", errors="replace")
            try:
                sub = parse(data, shown)
            except XmlError as e:
                self.rep.add("E700", e.message, e.span)
                continue
            if sub.tag != "mujoco":
                self.rep.add("E701", f"included file '{name}' has root <{sub.tag}>, not <mujoco>",
                             sub.span)
                continue
            self._expand_includes(sub, stack + [path.resolve()])
            for cc in sub.children:
                cc.parent = el
                children.append(cc)
        el.children = children

    def _check(self, el: Element) -> None:
        """Unknown elements and attributes; unsupported and ignored sections."""
        attrs, allowed = ELEMENTS[el.tag]
        if attrs is not None:
            for a in el.attrib:
                if a not in attrs:
                    close = difflib.get_close_matches(a, sorted(attrs), n=1)
                    self.rep.add("E703", f"<{el.tag}> has no attribute '{a}'", el.attr_span(a),
                                 f"did you mean '{close[0]}'?" if close else "")
        if allowed is None:
            return
        in_default = el.tag == "default"
        for c in el.children:
            if c.tag not in allowed:
                if c.tag in ELEMENTS or c.tag in UNSUPPORTED:
                    self.rep.add("E702", f"<{c.tag}> is not allowed inside <{el.tag}>", c.span)
                else:
                    close = difflib.get_close_matches(c.tag, sorted(allowed), n=1)
                    self.rep.add("E702", f"unknown element <{c.tag}> inside <{el.tag}>", c.span,
                                 f"did you mean <{close[0]}>?" if close else "")
                continue
            if in_default and c.tag not in ("default", "geom", "joint", "mesh", "pair") \
                    and c.tag not in ACTUATOR_TAGS:
                continue  # defaults of things scenec drops anyway (sites, tendons, ...)
            if c.tag in UNSUPPORTED:
                self.rep.add("E708", f"<{c.tag}> is not supported by scenec", c.span,
                             UNSUPPORTED[c.tag])
                continue
            if c.tag in IGNORED_SECTIONS:
                self.rep.add("W700", f"<{c.tag}> section ignored", c.span, IGNORED_SECTIONS[c.tag])
                continue
            if c.tag in COSMETIC_SECTIONS:
                continue
            if c.tag == "skin":
                self.rep.add("W701", "<skin> dropped: scenec draws colliders only", c.span)
                continue
            self._check(c)

    def _prescan_names(self, root: Element) -> None:
        for el in root.iter():
            if el.tag == "body" and el.get("name"):
                self.body_names.taken.add(el.get("name"))
            elif el.tag in ("joint", "freejoint") and el.get("name") and el.parent is not None \
                    and el.parent.tag != "default":
                self.joint_names.taken.add(el.get("name"))
            elif el.tag in ACTUATOR_TAGS and el.get("name") and el.parent is not None \
                    and el.parent.tag == "actuator":
                self.actuator_names.taken.add(el.get("name"))

    # ----------------------------------------------------------------------------- attributes

    def _class_of(self, el: Element) -> str:
        cls = el.get("class")
        if cls is not None:
            if cls not in self.classes:
                close = difflib.get_close_matches(cls, sorted(self.classes), n=1)
                self.rep.add("E706", f"default class '{cls}' is not defined", el.attr_span("class"),
                             f"did you mean '{close[0]}'?" if close else "")
                return "main"
            return cls
        p = el.parent
        while p is not None:
            if p.tag in ("body", "frame") and p.get("childclass") is not None:
                cc = p.get("childclass")
                if cc in self.classes:
                    return cc
                self.rep.add("E706", f"default class '{cc}' is not defined",
                             p.attr_span("childclass"))
                return "main"
            p = p.parent
        return "main"

    def _resolved(self, cls: str, tag: str) -> dict:
        key = (cls, tag)
        if key not in self._cache:
            c = self.classes[cls]
            base = dict(self._resolved_or_empty(c.parent, tag))
            base.update(c.attrs.get(tag, {}))
            self._cache[key] = base
        return self._cache[key]

    def _resolved_or_empty(self, cls, tag):
        return {} if cls is None else self._resolved(cls, tag)

    def eff(self, el: Element, name: str, tag: str | None = None):
        """(value text, span) of an attribute given on `el` or by its default class; or None."""
        if name in el.attrib:
            return el.attrib[name], el.attr_span(name)
        tag = tag or el.tag
        if tag in ACTUATOR_TAGS:
            tag = "actuator"
        if tag not in ("geom", "joint", "mesh", "pair", "actuator"):
            return None
        return self._resolved(self._class_of(el), tag).get(name)

    def floats(self, el: Element, name: str, count=None, default=None, tag=None):
        got = self.eff(el, name, tag)
        if got is None:
            return default
        text, span = got
        try:
            vals = [float(t) for t in text.split()]
        except ValueError:
            self.rep.add("E704", f"'{name}' of <{el.tag}> must be numbers, not '{text}'", span)
            return default
        if not all(math.isfinite(v) for v in vals):
            self.rep.add("E704", f"'{name}' of <{el.tag}> must be finite numbers", span)
            return default
        lo, hi = (count, count) if isinstance(count, int) else (count or (0, 1 << 30))
        if not lo <= len(vals) <= hi:
            want = f"{lo}" if lo == hi else f"{lo} to {hi}"
            self.rep.add("E704", f"'{name}' of <{el.tag}> needs {want} numbers, got {len(vals)}",
                         span)
            return default
        return vals

    def number(self, el: Element, name: str, default=None, tag=None):
        v = self.floats(el, name, 1, None, tag)
        return default if v is None else v[0]

    def keyword(self, el: Element, name: str, choices, default: str, tag=None) -> str:
        got = self.eff(el, name, tag)
        if got is None:
            return default
        text, span = got
        if text not in choices:
            close = difflib.get_close_matches(text, list(choices), n=1)
            self.rep.add("E704", f"'{name}' of <{el.tag}> must be one of "
                         f"{', '.join(choices)}, not '{text}'", span,
                         f"did you mean '{close[0]}'?" if close else "")
            return default
        return text

    def limited(self, el: Element, name: str, range_name: str, tag=None) -> bool:
        mode = self.keyword(el, name, ("true", "false", "auto"), "auto", tag)
        if mode == "auto":
            return self.autolimits and self.eff(el, range_name, tag) is not None
        return mode == "true"

    def local_pose(self, el: Element, use_defaults: bool = False) -> tuple:
        """(pos, quat) of an element relative to its parent frame, from pos and one of quat,
        axisangle, xyaxes, zaxis, euler."""
        get = (lambda n, c: self.floats(el, n, c)) if use_defaults else \
            (lambda n, c: self._explicit_floats(el, n, c))
        pos = get("pos", 3) or [0.0, 0.0, 0.0]
        kinds = [k for k in ("quat", "axisangle", "xyaxes", "zaxis", "euler") if k in el.attrib]
        if not kinds and use_defaults:
            kinds = [k for k in ("quat", "axisangle", "xyaxes", "zaxis", "euler")
                     if self.eff(el, k) is not None]
        if len(kinds) > 1:
            self.rep.add("E704", f"<{el.tag}> gives its orientation twice ({', '.join(kinds)})",
                         el.attr_span(kinds[1]), "keep one of them")
        quat = frames.IDENTITY.copy()
        if kinds:
            k = kinds[0]
            n = {"quat": 4, "axisangle": 4, "xyaxes": 6, "zaxis": 3, "euler": 3}[k]
            v = get(k, n)
            if v is not None:
                if k == "quat":
                    if np.linalg.norm(v) < frames.EPS:
                        self.rep.add("E704", f"'quat' of <{el.tag}> is zero", el.attr_span(k))
                    else:
                        quat = frames.normalize(v)
                elif k == "axisangle":
                    quat = frames.axis_angle(v[:3], v[3] * self.angle_unit)
                elif k == "xyaxes":
                    quat = frames.from_xyaxes(v)
                elif k == "zaxis":
                    quat = frames.from_zaxis(v)
                else:
                    quat = frames.euler([a * self.angle_unit for a in v], self.eulerseq)
        return np.asarray(pos, dtype=float), quat

    def _explicit_floats(self, el, name, count):
        if name not in el.attrib:
            return None
        return self.floats(el, name, count)

    def _warn_ignored(self, el: Element, group: str) -> None:
        tag = group if group in ("geom", "joint", "pair", "mesh", "actuator") else None
        for a in sorted(IGNORED_ATTRS.get(group, ())):
            got = self.eff(el, a, tag)
            if got is not None and not _same_value(got[0], IGNORED_DEFAULTS.get(a)):
                self.rep.add("W704", f"'{a}' of <{el.tag}> ignored: scenec has no equivalent",
                             got[1])

    # ----------------------------------------------------------------------------- settings

    def _compiler(self, el: Element) -> None:
        self.angle_unit = {"degree": math.pi / 180.0, "radian": 1.0}[
            self.keyword(el, "angle", ("degree", "radian"),
                         "degree" if self.angle_unit != 1.0 else "radian")]
        if "eulerseq" in el.attrib:
            seq = el.get("eulerseq")
            if len(seq) != 3 or any(ch not in "xyzXYZ" for ch in seq):
                self.rep.add("E704", f"'eulerseq' must be 3 letters from xyzXYZ, not '{seq}'",
                             el.attr_span("eulerseq"))
            else:
                self.eulerseq = seq
        if "autolimits" in el.attrib:
            self.autolimits = self.keyword(el, "autolimits", ("true", "false"), "true") == "true"
        if "inertiafromgeom" in el.attrib:
            self.inertiafromgeom = self.keyword(el, "inertiafromgeom", ("true", "false", "auto"),
                                                "auto")
            if self.inertiafromgeom == "false":
                self.rep.add("W704", "inertiafromgeom=\"false\" ignored: bodies without "
                             "<inertial> get their mass from their colliders in scenec",
                             el.attr_span("inertiafromgeom"))
        if "coordinate" in el.attrib:
            if self.keyword(el, "coordinate", ("local", "global"), "local") == "global":
                self.rep.add("E711", "coordinate=\"global\" is not supported (MuJoCo 2.3.3 "
                             "removed it too)", el.attr_span("coordinate"),
                             "convert the model to local coordinates (MuJoCo 2.3.2 can save it)")
        if "meshdir" in el.attrib:
            self.meshdir = el.get("meshdir")
        if "assetdir" in el.attrib:
            self.assetdir = el.get("assetdir")
        if "strippath" in el.attrib:
            self.strippath = self.keyword(el, "strippath", ("true", "false"), "false") == "true"
        self._warn_ignored(el, "compiler")

    def _defaults(self, el: Element, parent: str | None) -> None:
        name = el.get("class")
        if name is None:
            if parent is not None:
                self.rep.add("E705", "a nested <default> needs a 'class' attribute", el.span)
                return
            name = "main"
        if name in self.classes and not (name == "main" and parent is None):
            self.rep.add("E715", f"default class '{name}' is defined twice", el.attr_span("class"))
            return
        cls = self.classes.setdefault(name, _Class(parent, {}))
        if name != "main":
            cls.parent = parent if parent is not None else "main"
        for c in el.children:
            if c.tag == "default":
                self._defaults(c, name)
                continue
            tag = "actuator" if c.tag in ACTUATOR_TAGS else c.tag
            d = cls.attrs.setdefault(tag, {})
            for a, v in c.attrib.items():
                d[a] = (v, c.attr_span(a))

    def _option(self, el: Element) -> None:
        opts = self.scene.options
        ts = self.number(el, "timestep")
        if ts is not None:
            opts.timestep = ts
        g = self.floats(el, "gravity", 3)
        if g is not None and g != [0.0, 0.0, -9.81]:
            opts.ClearField("gravity")
            opts.gravity.extend(g)
        it = self.number(el, "iterations")
        if it is not None:
            opts.solver_iterations = int(it)
        integ = self.keyword(el, "integrator", ("Euler", "RK4", "implicit", "implicitfast"), "Euler")
        if integ != "Euler":
            self.rep.add("W703", f"integrator \"{integ}\" replaced by scenec's semi-implicit Euler",
                         el.attr_span("integrator"), "a smaller timestep may be needed")
            self.notes[("options",)] = f"MuJoCo integrator \"{integ}\" replaced by semi-implicit Euler"
        cone = self.keyword(el, "cone", ("pyramidal", "elliptic"), "pyramidal")
        opts.friction_cone = scene_pb2.PYRAMIDAL if cone == "pyramidal" else scene_pb2.ELLIPTIC
        defaults = {"wind": [0.0, 0.0, 0.0], "density": [0.0], "viscosity": [0.0], "impratio": [1.0]}
        for a, dflt in defaults.items():
            v = self.floats(el, a)
            if v is not None and v != dflt:
                self.rep.add("W704", f"'{a}' of <option> ignored: scenec has no fluid forces or "
                             "impedance ratio", el.attr_span(a))
        for flag in (c for c in el.children if c.tag == "flag"):
            for a in flag.attrib:
                val = self.keyword(flag, a, ("enable", "disable"), FLAG_DEFAULTS.get(a, "enable"))
                if val == FLAG_DEFAULTS.get(a, "enable"):
                    continue
                span = flag.attr_span(a)
                if a == "filterparent":
                    self.filter_parent = False
                elif a == "contact":
                    self.contacts_off = True
                    self.rep.add("W705", "contacts disabled: every collider gets group 0 and mask 0",
                                 span)
                elif a == "gravity":
                    opts.ClearField("gravity")
                    opts.gravity.extend([0.0, 0.0, 0.0])
                    self.rep.add("W705", "gravity disabled: options.gravity set to zero", span)
                    self.notes[("options",)] = "MuJoCo flag gravity=\"disable\": gravity set to zero"
                elif a == "limit":
                    self.limits_off = True
                    self.rep.add("W705", "joint limits disabled: joint ranges not written", span)
                else:
                    self.rep.add("W704", f"flag {a}=\"{val}\" ignored: scenec has no such switch",
                                 span)

    # ----------------------------------------------------------------------------- assets

    def _asset_path(self, name: str, meshdir: bool = True) -> pathlib.Path:
        if self.strippath:
            name = pathlib.PurePath(name.replace("\\", "/")).name
        p = pathlib.Path(name)
        if p.is_absolute():
            return p
        folder = self.meshdir if meshdir and self.meshdir is not None else self.assetdir
        if folder is not None:
            return self.base_dir / folder / p
        return self.base_dir / p

    def _assets(self, asset: Element) -> None:
        for el in asset.children:
            if el.tag == "mesh":
                self._mesh_asset(el)
            elif el.tag == "hfield":
                self._hfield_asset(el)

    def _mesh_asset(self, el: Element) -> None:
        fname = el.get("file")
        name = el.get("name") or (pathlib.PurePath(fname).stem if fname else None)
        if not name:
            self.rep.add("E705", "<mesh> needs a 'name' or a 'file'", el.span)
            return
        if name in self.meshes:
            self.rep.add("E715", f"mesh '{name}' is defined twice", el.span)
            return
        self._warn_ignored(el, "mesh")
        scale = self.floats(el, "scale", 3, tag="mesh")
        verts = self.floats(el, "vertex")
        faces = self.floats(el, "face")
        path = None
        if fname:
            path = self._asset_path(fname)
            if not path.is_file():
                self.rep.add("E712", f"mesh file '{fname}' not found (looked at '{path}')",
                             el.attr_span("file"), "set <compiler meshdir> or fix the path")
                return
        elif verts is None:
            self.rep.add("E705", f"mesh '{name}' has neither a 'file' nor 'vertex' data", el.span)
            return
        if verts is not None:
            if len(verts) % 3 or len(verts) < 12:
                self.rep.add("E704", f"'vertex' of mesh '{name}' needs 3 numbers per vertex and "
                             "at least 4 vertices", el.attr_span("vertex"))
                return
            v = np.asarray(verts).reshape(-1, 3)
            if faces is None:  # MuJoCo takes the convex hull when no faces are given
                import trimesh

                hull = trimesh.convex.convex_hull(v)
                v, f = np.asarray(hull.vertices), np.asarray(hull.faces)
            else:
                f = np.asarray(faces, dtype=np.int64).reshape(-1, 3)
            msg, _ = common.mesh_message(name, None, self.out_dir, scale, v, f)
            self.meshes[name] = (None, v, f, scale)
        else:
            try:
                msg, inlined = common.mesh_message(name, path, self.out_dir, scale)
            except (OSError, ValueError) as e:
                self.rep.add("E712", f"cannot read mesh file '{fname}': {e}", el.attr_span("file"))
                return
            if inlined:
                self.rep.add("W708", f"mesh file '{fname}' lies outside the output folder: its "
                             "vertices were written inline", el.attr_span("file"),
                             "write the YAML next to the meshes to keep a file reference")
                self.notes[("meshes", len(self.scene.meshes))] = f"inline copy of {fname}"
            self.meshes[name] = (path, None, None, scale)
        self.mesh_span[name] = el.span
        self.scene.meshes.append(msg)

    def _mesh_vertices(self, name: str):
        verts, _, scale = self._mesh_data(name)
        return verts, scale

    def _mesh_data(self, name: str):
        """(vertices (n, 3), faces (m, 3), scale (3,)) of a mesh asset, read on first use."""
        path, verts, faces, scale = self.meshes[name]
        if verts is None:
            verts, faces = common.load_mesh_file(path)
            self.meshes[name] = (path, verts, faces, scale)
        return verts, faces, scale or [1.0, 1.0, 1.0]

    def _hfield_asset(self, el: Element) -> None:
        name = el.get("name") or (pathlib.PurePath(el.get("file")).stem if el.get("file") else "")
        if not name:
            self.rep.add("E705", "<hfield> needs a 'name'", el.span)
            return
        size = self.floats(el, "size", 4)
        if size is None:
            self.rep.add("E705", f"hfield '{name}' needs 'size' (radius_x radius_y elevation_z "
                         "base_z)", el.span)
            return
        nrow = int(self.number(el, "nrow", 0))
        ncol = int(self.number(el, "ncol", 0))
        elevation = self.floats(el, "elevation")
        hf = scene_pb2.HeightField(name=name, size_x=size[0], size_y=size[1])
        index = len(self.scene.heightfields)
        if elevation is not None:
            if nrow < 2 or ncol < 2 or len(elevation) != nrow * ncol:
                self.rep.add("E704", f"hfield '{name}': 'elevation' needs nrow * ncol = "
                             f"{nrow * ncol} values (nrow, ncol >= 2), got {len(elevation)}",
                             el.attr_span("elevation"))
                return
            # MuJoCo normalizes the data to [0, 1] and scales it by size[2]
            e = np.asarray(elevation, dtype=float)
            span_e = float(e.max() - e.min())
            e = (e - e.min()) / span_e * size[2] if span_e > 0 else np.zeros_like(e)
            # the attribute lists rows from +y down (like an image); scenec's row 0 is at -y
            e = e.reshape(nrow, ncol)[::-1].reshape(-1)
            hf.nrow, hf.ncol = nrow, ncol
            hf.elevation.extend(float(x) for x in e)
            if size[3] > 0:
                self.notes[("heightfields", index)] = (f"MuJoCo base thickness {common.fmt(size[3])} "
                                                       "m not represented")
        else:
            what = f"file '{el.get('file')}'" if el.get("file") else "no elevation data"
            self.rep.add("W706", f"hfield '{name}': {what} cannot be read by the importer; a flat "
                         "grid was written", el.span,
                         "write the heights inline in the YAML (heightfields[].elevation)")
            n_r, n_c = max(nrow, 2), max(ncol, 2)
            hf.nrow, hf.ncol = n_r, n_c
            hf.elevation.extend([0.0] * (n_r * n_c))
            self.notes[("heightfields", index)] = (f"FLAT PLACEHOLDER: elevation of {what} not "
                                                   f"imported; heights span 0 to "
                                                   f"{common.fmt(size[2])} m in MuJoCo")
        self.hfields.add(name)
        self.scene.heightfields.append(hf)

    # ----------------------------------------------------------------------------- bodies

    def _items(self, el: Element, pose: tuple):
        """The children of a body (or worldbody), looking through <frame>s: (element, pose of its
        parent frame relative to the body)."""
        for c in el.children:
            if c.tag == "frame":
                yield from self._items(c, frames.compose(pose, self.local_pose(c)))
            else:
                yield c, pose

    def _worldbody(self, worldbodies: list[Element]) -> None:
        ident = (np.zeros(3), frames.IDENTITY.copy())
        world = _BodyCtx("world", -1, None, ident, is_world=True)
        has_geoms = any(c.tag == "geom" for wb in worldbodies for c, _ in self._items(wb, ident))
        if has_geoms:
            name = self.body_names.fresh(WORLD_GEOMS)
            msg = self.scene.bodies.add(name=name)
            world = _BodyCtx(name, 0, msg, ident, is_world=True)
            self.notes[("bodies", 0)] = "MJCF worldbody geoms (static)"
            self.mj_bodies["world"] = name
        for wb in worldbodies:
            self._body_contents(wb, world, "world")

    def _body_contents(self, el: Element, ctx: _BodyCtx, parent_name: str) -> None:
        ident = (np.zeros(3), frames.IDENTITY.copy())
        items = list(self._items(el, ident))
        dropped: list[Element] = []
        joints = 0
        if el.tag == "body":
            for c, fpose in items:
                if c.tag == "inertial":
                    self._inertial(c, ctx)
        for c, fpose in items:
            if c.tag in ("joint", "freejoint"):
                self._joint(c, ctx, fpose, parent_name)
                joints += 1
            elif c.tag == "geom":
                self._geom(c, ctx, fpose)
            elif c.tag in DROPPED:
                dropped.append(c)
        if el.tag == "body" and joints == 0 and parent_name != "world":
            j = self.scene.joints.add(name=self.joint_names.fresh(f"{ctx.name}_weld"),
                                      kind=scene_pb2.FIXED, parent=parent_name, child=ctx.name)
            self.notes[("joints", len(self.scene.joints) - 1)] = \
                "MJCF body without joints: welded to its parent"
            self.joint_kind[j.name] = scene_pb2.FIXED
        if dropped:
            what = ", ".join(f"{c.tag} '{c.get('name')}'" if c.get("name") else c.tag
                             for c in dropped)
            owner = "the worldbody" if ctx.is_world else f"body '{ctx.name}'"
            self.rep.add("W701", f"dropped from {owner}: {what} (scenec has no sites, cameras or "
                         "lights)", dropped[0].span)
            if ctx.index >= 0:
                key = ("bodies", ctx.index)
                self.notes[key] = "; ".join(filter(None, [self.notes.get(key), f"dropped: {what}"]))
        for c, fpose in items:
            if c.tag == "body":
                self._body(c, ctx, fpose)

    def _body(self, el: Element, parent: _BodyCtx, fpose: tuple) -> None:
        local = frames.compose(fpose, self.local_pose(el))
        pose = frames.compose(parent.pose, local)
        self.mj_body_count += 1  # MuJoCo numbers bodies depth-first, the world being 0
        mj_name = el.get("name")
        if mj_name:
            name = mj_name
            self.mj_bodies[mj_name] = name
        else:
            name = self.body_names.fresh(f"body{self.mj_body_count}")
        msg = self.scene.bodies.add(name=name)
        msg.pos.extend(frames.clean(pose[0]))
        if not frames.is_identity(pose[1]):
            msg.quat.extend(frames.clean(frames.canonical(pose[1])))
        ctx = _BodyCtx(name, len(self.scene.bodies) - 1, msg, pose)
        if el.get("mocap") == "true":
            self.rep.add("W704", f"mocap body '{name}' imported as a static body", el.attr_span("mocap"))
        self._warn_ignored(el, "body")
        self._body_contents(el, ctx, parent.joint_parent)

    def _inertial(self, el: Element, ctx: _BodyCtx) -> None:
        if self.inertiafromgeom == "true":
            self.notes[("bodies", ctx.index)] = ("<inertial> ignored (inertiafromgeom=\"true\"): "
                                                 "mass from colliders")
            return
        mass = self.number(el, "mass")
        if mass is None:
            self.rep.add("E705", "<inertial> needs 'mass'", el.span)
            return
        pos, quat = self.local_pose(el)
        diag = self.floats(el, "diaginertia", 3)
        full = self.floats(el, "fullinertia", 6)
        if diag is None and full is None:
            self.rep.add("E705", "<inertial> needs 'diaginertia' or 'fullinertia'", el.span)
            return
        if full is not None:
            t = np.array([[full[0], full[3], full[4]], [full[3], full[1], full[5]],
                          [full[4], full[5], full[2]]])
            r = frames.quat_to_mat(quat)
            t = r @ t @ r.T
        else:
            t = frames.inertia_in_frame(diag, quat)
        ctx.msg.mass = mass
        ctx.msg.com.extend(frames.clean(pos))
        six = frames.inertia_six(t)
        if diag is not None and frames.is_identity(quat):
            ctx.msg.inertia.extend(diag)
        else:
            ctx.msg.inertia.extend(frames.clean(six, 1e-15 * max(abs(x) for x in six[:3])))
        ctx.has_inertial = True

    def _joint(self, el: Element, ctx: _BodyCtx, fpose: tuple, parent_name: str) -> None:
        if ctx.is_world:
            return  # <joint> in <worldbody> was reported by _check
        if el.tag == "freejoint":
            kind_word = "free"
        else:
            kind_word = self.keyword(el, "type", tuple(JOINT_KINDS), "hinge", "joint")
        kind = JOINT_KINDS[kind_word]
        name = el.get("name") or self.joint_names.fresh(f"{ctx.name}_{kind_word}")
        j = scene_pb2.Joint(name=name, kind=kind, child=ctx.name)
        if kind == scene_pb2.FREE:
            if parent_name != "world":
                self.rep.add("E710", f"free joint '{name}' is in body '{ctx.name}', whose parent "
                             f"'{parent_name}' is not the world", el.span,
                             "a free joint belongs to a top-level body")
            j.parent = "world"
            self.scene.joints.append(j)
            self._register_joint(name, kind)
            return
        if parent_name != "world":
            j.parent = parent_name
        rot_unit = self.angle_unit if kind in (scene_pb2.HINGE, scene_pb2.BALL) else 1.0
        pos = self.floats(el, "pos", 3, [0.0, 0.0, 0.0], "joint")
        anchor = frames.compose(fpose, (np.asarray(pos), frames.IDENTITY))[0]
        if any(anchor):
            j.anchor.extend(frames.clean(anchor))
        if kind in (scene_pb2.HINGE, scene_pb2.SLIDE):
            axis = self.floats(el, "axis", 3, [0.0, 0.0, 1.0], "joint")
            if np.linalg.norm(axis) < frames.EPS:
                self.rep.add("E704", f"joint '{name}' has a zero axis", self.eff(el, "axis")[1])
                axis = [0.0, 0.0, 1.0]
            axis = frames.clean(frames.rotate(fpose[1], frames.normalize(axis)))
            if axis != [0.0, 0.0, 1.0]:
                j.axis.extend(axis)
        rng = self.floats(el, "range", 2, None, "joint")
        if self.limited(el, "limited", "range", "joint") and not self.limits_off:
            if rng is None:
                self.rep.add("E705", f"joint '{name}' is limited but has no 'range'", el.span)
            elif kind == scene_pb2.BALL:
                j.range.extend([0.0, rng[1] * rot_unit])
            else:
                j.range.extend([rng[0] * rot_unit, rng[1] * rot_unit])
        for attr, field in (("damping", "damping"), ("stiffness", "stiffness"),
                            ("armature", "armature")):
            v = self.number(el, attr, None, "joint")
            if v:
                setattr(j, field, v)
        if kind in (scene_pb2.HINGE, scene_pb2.SLIDE):
            ref = self.number(el, "ref", 0.0, "joint") * rot_unit
            if ref:
                j.reference = ref
            springref = self.number(el, "springref", None, "joint")
            if springref is not None:
                j.spring_reference = springref * rot_unit
            elif j.stiffness and ref:
                j.spring_reference = 0.0  # MuJoCo's spring rest is springref (0), not ref
        sr = self.floats(el, "solreflimit", 2, None, "joint")
        if sr is not None and tuple(sr) != MJ_DEFAULT_SOLREF:
            if sr[0] > 0 and sr[1] > 0:
                j.limit_time_constant, j.limit_damping_ratio = sr
            else:
                self.rep.add("W704", f"direct solreflimit of joint '{name}' (negative values) "
                             "ignored", self.eff(el, "solreflimit", "joint")[1])
        self._warn_ignored(el, "joint")
        self.scene.joints.append(j)
        self._register_joint(name, kind)

    def _register_joint(self, name: str, kind: int) -> None:
        self.joint_kind[name] = kind
        self.joint_order.append(name)

    def _geom(self, el: Element, ctx: _BodyCtx, fpose: tuple) -> None:
        gtype = self.keyword(el, "type", GEOM_TYPES, "sphere", "geom")
        name = el.get("name")
        if name:
            self.geom_names.add(name)
        owner = "the worldbody" if ctx.is_world else f"'{ctx.name}'"
        where = f"geom '{name}'" if name else f"a {gtype} geom of {owner}"
        errors = len(self.rep.diagnostics)
        size = self.floats(el, "size", (0, 3), [], "geom")
        fromto = self.floats(el, "fromto", 6, None, "geom")
        if len(self.rep.diagnostics) > errors:
            return  # a malformed size or fromto was reported; no second message about it
        col = scene_pb2.Collider()
        if name:
            col.name = name
        pos, quat = self.local_pose(el, use_defaults=True)
        half_axis = None
        if fromto is not None and gtype in ("capsule", "cylinder", "box", "ellipsoid"):
            a, b = np.asarray(fromto[:3]), np.asarray(fromto[3:])
            d = b - a
            if np.linalg.norm(d) < frames.EPS:
                self.rep.add("E704", f"'fromto' of {where} has two equal points",
                             self.eff(el, "fromto", "geom")[1])
                return
            # MuJoCo points the geom's z axis from the second point to the first
            pos, quat = (a + b) / 2, frames.from_zaxis(a - b)
            half_axis = float(np.linalg.norm(d)) / 2
        note = None
        volume = None          # of the imported shape, for a density from `mass`
        mass_volume = None     # of MuJoCo's shape, when it differs (converted cylinders)

        def need(n, what):
            if len(size) < n or any(s <= 0 for s in size[:n]):
                span = (self.eff(el, "size", "geom") or (None, el.span))[1]
                self.rep.add("E705", f"{where} needs {what} in 'size' (positive)", span)
                return False
            return True

        if gtype == "sphere":
            if not need(1, "a radius"):
                return
            col.sphere.radius = size[0]
            volume = common.sphere_volume(size[0])
        elif gtype == "capsule":
            if not need(1 if half_axis is not None else 2, "radius and half-length"):
                return
            half = half_axis if half_axis is not None else size[1]
            col.capsule.radius, col.capsule.half_length = size[0], half
            volume = common.capsule_volume(size[0], half)
        elif gtype == "box":
            if half_axis is not None:
                if not need(1, "half sizes"):
                    return
                hs = [size[0], size[0], half_axis]  # MuJoCo: size[0] is both x and y
            else:
                if not need(3, "three half sizes"):
                    return
                hs = size[:3]
            col.box.half_size.extend(hs)
            volume = common.box_volume(hs)
        elif gtype == "plane":
            if len(size) >= 2 and size[0] > 0 and size[1] > 0:
                col.plane.size.extend(size[:2])
            else:
                col.plane.SetInParent()
        elif gtype == "mesh":
            mref = self.eff(el, "mesh", "geom")
            if mref is None:
                self.rep.add("E705", f"{where} needs a 'mesh'", el.span)
                return
            if mref[0] not in self.meshes:
                close = difflib.get_close_matches(mref[0], sorted(self.meshes), n=1)
                self.rep.add("E706", f"mesh '{mref[0]}' is not defined in <asset>", mref[1],
                             f"did you mean '{close[0]}'?" if close else "")
                return
            col.mesh.mesh = mref[0]
        elif gtype == "hfield":
            href = self.eff(el, "hfield", "geom")
            if href is None or href[0] not in self.hfields:
                self.rep.add("E706" if href else "E705",
                             f"{where} needs an 'hfield' defined in <asset>",
                             href[1] if href else el.span)
                return
            col.heightfield.heightfield = href[0]
        elif gtype == "cylinder" and self.convert:
            if not need(1 if half_axis is not None else 2, "radius and half-height"):
                return
            hh = half_axis if half_axis is not None else size[1]
            half, note = common.cylinder_to_capsule(size[0], hh)
            col.capsule.radius, col.capsule.half_length = size[0], half
            volume = common.capsule_volume(size[0], half)
            mass_volume = common.cylinder_volume(size[0], hh)
            self.rep.add("W705", f"{where}: cylinder converted to a capsule", el.span)
        else:
            span = (self.eff(el, "type", "geom") or (None, el.span))[1]
            hint = common.CYLINDER_HINT if gtype == "cylinder" else (
                "approximate it with capsules, spheres or boxes (or a mesh)")
            self.rep.add("E707", f"{where}: scenec has no {gtype} collider", span, hint)
            return
        pose = frames.compose(fpose, (pos, quat))
        if any(abs(x) > 0 for x in pose[0]):
            col.pos.extend(frames.clean(pose[0]))
        if not frames.is_identity(pose[1], 1e-15):
            col.quat.extend(frames.clean(frames.canonical(pose[1])))
        self._geom_contact(el, col, where)
        rgba = self.floats(el, "rgba", 4, None, "geom")
        if rgba is not None:
            col.rgba.extend(rgba)
        if not ctx.has_inertial or self.inertiafromgeom == "true":
            self._geom_density(el, col, where, volume, mass_volume)
        self._warn_ignored(el, "geom")
        body = ctx.msg
        if body is None:
            return
        body.colliders.append(col)
        if note:
            self.notes[("bodies", ctx.index, "colliders", len(body.colliders) - 1)] = note

    def _geom_contact(self, el: Element, col: scene_pb2.Collider, where: str) -> None:
        fr = self.floats(el, "friction", (1, 3), None, "geom")
        if fr is not None and fr[0] != 1.0:
            col.friction = fr[0]
        contype = self.number(el, "contype", 1.0, "geom")
        conaff = self.number(el, "conaffinity", 1.0, "geom")
        if self.contacts_off:
            contype = conaff = 0.0
        for v, field in ((contype, "group"), (conaff, "mask")):
            iv = int(v)
            if iv != v or not 0 <= iv < 2 ** 32:
                self.rep.add("E704", f"'{'contype' if field == 'group' else 'conaffinity'}' of "
                             f"{where} must be a 32-bit unsigned integer", el.span)
            elif iv != 1:
                setattr(col, field, iv)
        condim = int(self.number(el, "condim", 3, "geom"))
        if condim == 1:
            col.friction = 0.0
            self.rep.add("W705", f"{where}: condim 1 (frictionless) written as friction 0",
                         self.eff(el, "condim", "geom")[1])
        elif condim != 3:
            self.rep.add("W702", f"{where}: condim {condim} (torsional/rolling friction) "
                         "becomes a plain frictional contact", self.eff(el, "condim", "geom")[1])
        sr = self.floats(el, "solref", 2, None, "geom")
        if sr is not None and tuple(sr) != MJ_DEFAULT_SOLREF:
            if sr[0] > 0 and sr[1] > 0:
                col.time_constant, col.damping_ratio = sr
            else:
                self.rep.add("W704", f"direct solref of {where} (negative values) ignored",
                             self.eff(el, "solref", "geom")[1])

    def _geom_density(self, el, col, where, volume, mass_volume) -> None:
        mass = self.number(el, "mass", None, "geom")
        density = self.number(el, "density", None, "geom")
        shape = col.WhichOneof("shape")
        if shape in ("plane", "heightfield"):
            return
        if mass is None and mass_volume is not None:
            # a converted cylinder keeps MuJoCo's mass, which comes from the cylinder's volume
            mass = (MJ_DEFAULT_DENSITY if density is None else density) * mass_volume
        if mass is not None:
            if shape == "mesh":
                try:
                    verts, scale = self._mesh_vertices(col.mesh.mesh)
                    volume = common.hull_volume(verts, scale)
                except (OSError, ValueError) as e:
                    self.rep.add("E712", f"cannot read mesh '{col.mesh.mesh}' for the volume of "
                                 f"{where}: {e}", el.span)
                    return
            if not volume or volume <= 0:
                self.rep.add("E704", f"{where} has zero volume: its 'mass' cannot become a density",
                             el.span)
                return
            col.density = mass / volume
        elif shape == "mesh":
            self._mesh_density(el, col, where, MJ_DEFAULT_DENSITY if density is None else density)
        elif density is not None and density != MJ_DEFAULT_DENSITY:
            col.density = density

    def _mesh_density(self, el, col, where, density: float) -> None:
        """MuJoCo weighs a closed mesh by its own volume, scenec by its convex hull's: for a
        non-convex mesh the density is scaled so that the mass stays MuJoCo's."""
        try:
            verts, faces, scale = self._mesh_data(col.mesh.mesh)
        except (OSError, ValueError) as e:
            self.rep.add("E712", f"cannot read mesh '{col.mesh.mesh}' for the volume of {where}: "
                         f"{e}", el.span)
            return
        hull = common.hull_volume(verts, scale)
        own = common.closed_mesh_volume(verts, faces, scale)
        if own is not None and hull > 0 and abs(own - hull) > 1e-9 * hull:
            col.density = density * own / hull
            self.rep.add("W705", f"{where}: non-convex mesh; density scaled by its volume over its "
                         "convex hull's so that the mass is MuJoCo's", el.span)
        elif density != MJ_DEFAULT_DENSITY:
            col.density = density

    # ----------------------------------------------------------------------------- other sections

    def _contact(self, el: Element) -> None:
        for c in el.children:
            if c.tag == "exclude":
                names = []
                for a in ("body1", "body2"):
                    n = c.get(a)
                    if n is None:
                        self.rep.add("E705", f"<exclude> needs '{a}'", c.span)
                        break
                    if n != "world" and n not in self.mj_bodies:
                        close = difflib.get_close_matches(n, sorted(self.mj_bodies), n=1)
                        self.rep.add("E706", f"<exclude> names body '{n}', which does not exist",
                                     c.attr_span(a), f"did you mean '{close[0]}'?" if close else "")
                        break
                    names.append(self.mj_bodies.get(n))
                else:
                    if None in names:
                        continue  # the world without geoms: nothing to exclude
                    self.scene.contacts.exclude.add(first=common.fnmatch_escape(names[0]),
                                                    second=common.fnmatch_escape(names[1]))
            elif c.tag == "pair":
                names = []
                for a in ("geom1", "geom2"):
                    n = c.get(a)
                    if n is None:
                        self.rep.add("E705", f"<pair> needs '{a}'", c.span)
                        break
                    if n not in self.geom_names:
                        close = difflib.get_close_matches(n, sorted(self.geom_names), n=1)
                        self.rep.add("E706", f"<pair> names geom '{n}', which does not exist",
                                     c.attr_span(a), f"did you mean '{close[0]}'?" if close else "")
                        break
                    names.append(n)
                else:
                    p = self.scene.contacts.pairs.add(first=names[0], second=names[1])
                    fr = self.floats(c, "friction", (1, 5), None, "pair")
                    if fr is not None:
                        p.friction = fr[0]
                    self._warn_ignored(c, "pair")

    def _actuators(self, section: Element) -> None:
        for el in section.children:
            if el.tag not in ACTUATOR_TAGS:
                continue
            self._actuator(el)

    def _actuator(self, el: Element) -> None:
        label = f"<{el.tag}>" + (f" '{el.get('name')}'" if el.get("name") else "")
        if el.tag not in SUPPORTED_ACTUATORS:
            self.rep.add("E709", f"{label}: scenec has no {el.tag} actuators", el.span,
                         "use motor, position, velocity or general (affine gain/bias)")
            return
        for t in ("tendon", "site", "body", "cranksite", "slidersite"):
            got = self.eff(el, t, "actuator")
            if got is not None:
                self.rep.add("E709", f"{label} acts on a {t}: scenec actuators drive joints only",
                             got[1], "drive the joint directly")
                return
        jref = self.eff(el, "joint", "actuator") or self.eff(el, "jointinparent", "actuator")
        if jref is None:
            self.rep.add("E705", f"{label} needs a 'joint'", el.span)
            return
        jname, jspan = jref
        if jname not in self.joint_kind:
            close = difflib.get_close_matches(jname, sorted(self.joint_kind), n=1)
            self.rep.add("E706", f"{label} drives joint '{jname}', which does not exist", jspan,
                         f"did you mean '{close[0]}'?" if close else "")
            return
        jkind = self.joint_kind[jname]
        if jkind not in (scene_pb2.HINGE, scene_pb2.SLIDE):
            self.rep.add("E709", f"{label} drives {KIND_WORD[jkind]} joint '{jname}': scenec "
                         "actuators drive hinge and slide joints", jspan)
            return
        name = el.get("name") or self.actuator_names.fresh(f"{jname}_{el.tag}")
        act = scene_pb2.Actuator(name=name, joint=jname)
        gear = (self.floats(el, "gear", (1, 6), None, "actuator") or [1.0])[0]
        if gear != 1.0:
            act.gear = gear
        # scene.proto's actuators use MuJoCo's length = gear * q, so every kind maps one to one
        if el.tag == "motor":
            act.kind = scene_pb2.MOTOR
        elif el.tag == "position":
            act.kind, act.kp = scene_pb2.POSITION, self.number(el, "kp", 1.0, "actuator")
            kv = self.number(el, "kv", 0.0, "actuator")
            if kv:
                act.kv = kv
        elif el.tag == "velocity":
            act.kind, act.kv = scene_pb2.VELOCITY, self.number(el, "kv", 1.0, "actuator")
        else:
            dyn = self.keyword(el, "dyntype", ("none", "integrator", "filter", "filterexact",
                                               "muscle", "user"), "none", "actuator")
            gt = self.keyword(el, "gaintype", ("fixed", "affine", "muscle", "user"), "fixed",
                              "actuator")
            bt = self.keyword(el, "biastype", ("none", "affine", "muscle", "user"), "none",
                              "actuator")
            gp = (self.floats(el, "gainprm", (1, 10), None, "actuator") or [1.0]) + [0.0] * 10
            bp = (self.floats(el, "biasprm", (1, 10), None, "actuator") or [0.0]) + [0.0] * 10
            problem = ("dyntype" if dyn != "none" else
                       "gaintype" if gt not in ("fixed", "affine") or (gt == "affine" and (gp[1] or gp[2]))
                       else "biastype" if bt not in ("none", "affine") else None)
            if problem:
                got = self.eff(el, problem, "actuator") or self.eff(el, "gainprm", "actuator")
                self.rep.add("E709", f"{label}: {problem} not supported (scenec's general "
                             "actuator is force = gain * ctrl + bias0 + bias1 * length + bias2 * "
                             "velocity)", got[1] if got else el.span)
                return
            act.kind = scene_pb2.GENERAL
            act.gain.append(gp[0])
            if bt == "affine" and any(bp[:3]):
                act.bias.extend(bp[:3])
        for rng, lim, field in (("ctrlrange", "ctrllimited", "ctrl_range"),
                                ("forcerange", "forcelimited", "force_range")):
            if self.limited(el, lim, rng, "actuator"):
                r = self.floats(el, rng, 2, None, "actuator")
                if r is None:
                    self.rep.add("E705", f"{label} is {lim.replace('limited', '')}-limited but has "
                                 f"no '{rng}'", el.span)
                else:
                    getattr(act, field).extend(r)
        self._warn_ignored(el, "actuator")
        self.scene.actuators.append(act)

    def _keyframes(self, section: Element) -> None:
        nq = sum(QPOS_SIZE[self.joint_kind[n]] for n in self.joint_order)
        nv = sum(QVEL_SIZE[self.joint_kind[n]] for n in self.joint_order)
        for el in section.children:
            if el.tag != "key":
                continue
            name = el.get("name") or f"key{len(self.scene.keyframes)}"
            qpos = self.floats(el, "qpos")
            qvel = self.floats(el, "qvel")
            bad = False
            for vals, n, attr in ((qpos, nq, "qpos"), (qvel, nv, "qvel")):
                if vals is not None and len(vals) != n:
                    self.rep.add("E704", f"key '{name}': '{attr}' needs {n} numbers, got {len(vals)}",
                                 el.attr_span(attr))
                    bad = True
            if bad:
                continue
            for a in ("act", "ctrl", "mpos", "mquat"):
                if a in el.attrib:
                    self.rep.add("W704", f"key '{name}': '{a}' ignored (scenec keyframes hold joint "
                                 "values only)", el.attr_span(a))
            kf = self.scene.keyframes.add(name=name)
            t = self.number(el, "time", 0.0)
            if t:
                kf.time = t
            iq = iv = 0
            for jname in self.joint_order:
                kind = self.joint_kind[jname]
                jv = kf.joints.add(joint=jname)
                nq_j, nv_j = QPOS_SIZE[kind], QVEL_SIZE[kind]
                if qpos is not None:
                    q = list(qpos[iq:iq + nq_j])
                    if kind in (scene_pb2.BALL, scene_pb2.FREE):  # MuJoCo normalizes them
                        q[-4:] = frames.normalize(q[-4:]).tolist()
                    jv.q.extend(q)
                else:
                    jv.q.extend(self._qpos0(jname, kind))
                if qvel is not None and any(qvel[iv:iv + nv_j]):
                    jv.qd.extend(qvel[iv:iv + nv_j])
                iq += nq_j
                iv += nv_j

    def _qpos0(self, jname: str, kind: int) -> list[float]:
        j = next(j for j in self.scene.joints if j.name == jname)
        if kind in (scene_pb2.HINGE, scene_pb2.SLIDE):
            return [j.reference]
        if kind == scene_pb2.BALL:
            return [1.0, 0.0, 0.0, 0.0]
        body = next(b for b in self.scene.bodies if b.name == j.child)
        return list(body.pos) + (list(body.quat) or [1.0, 0.0, 0.0, 0.0])
