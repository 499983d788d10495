"""Semantic checks over a loaded scene: names, references, the joint forest, physical values, files.

Where it sits: compiler/, right after `scenec.schema.load` and before the front end. Input: a
`Loaded` (message + source map); output: every problem found, as diagnostics located through the
source map (E114-E119, E2xx, E3xx, E4xx and their warnings). It never raises and never stops at the
first problem. The checks are a table (`RULES`) of functions over one shared context; values the
loader already reported as unreadable (`source_map.failed`) are skipped so that one mistake gives
one message. No jax (trimesh is imported only when a scene names a mesh file).
"""

from __future__ import annotations

import collections
import fnmatch
import math
import pathlib
from typing import Callable, Iterator

import numpy as np
from google.protobuf.descriptor import FieldDescriptor as FD

from scenec.schema import scene_pb2
from scenec.schema.diagnostics import Diagnostic, Severity
from scenec.schema.load import Loaded
from scenec.schema.names import choices, did_you_mean

WORLD = "world"

# |x| above this (in SI units) is an error: no scene has a 10^9 m body or a 10^9 kg mass, and
# such values are typos (missing decimal point, wrong unit) or overflowed expressions.
ABSURD_MAGNITUDE = 1e9

# Principal moments may violate "each <= sum of the other two" by this much, relative to that
# sum: hand-typed values with ~4 significant digits miss the equality of a thin disk by rounding.
INERTIA_TRIANGLE_RTOL = 1e-4

# Mesh vertices whose smallest spread (singular value of the centred vertices) is below this
# fraction of the largest lie in a plane: float32 mesh files round a flat mesh to ~1e-7.
COPLANAR_RTOL = 1e-6

# Vector fields and their allowed lengths (empty always means "not given").
LENGTHS: dict[tuple[str, str], tuple[int, ...]] = {
    ("Options", "gravity"): (3,),
    ("Body", "pos"): (3,), ("Body", "quat"): (4,), ("Body", "euler"): (3,),
    ("Body", "inertia"): (3, 6), ("Body", "com"): (3,),
    ("Collider", "pos"): (3,), ("Collider", "quat"): (4,), ("Collider", "euler"): (3,),
    ("Collider", "rgba"): (4,),
    ("Plane", "size"): (2,), ("Box", "half_size"): (3,), ("Mesh", "scale"): (3,),
    ("Capsule", "fromto"): (6,),
    ("Joint", "anchor"): (3,), ("Joint", "axis"): (3,), ("Joint", "range"): (2,),
    ("Actuator", "ctrl_range"): (2,), ("Actuator", "force_range"): (2,),
    ("Actuator", "gain"): (1, 2, 3), ("Actuator", "bias"): (1, 2, 3),
    ("Target", "pos"): (3,), ("Target", "low"): (3,), ("Target", "high"): (3,),
}

# Fields of one message that exclude each other (E115), as (message, fields).
EXCLUSIVE: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Body", ("quat", "euler")),
    ("Collider", ("quat", "euler")),
    ("Capsule", ("fromto", "half_length")),
)
# A capsule given by `fromto` takes its pose from it: the collider's own pose must be absent.
FROMTO_EXCLUDES = ("pos", "quat", "euler")

# Scalar fields with an allowed interval: (low, high, low_inclusive, high_inclusive). Fields with
# presence are checked only when given; the defaults of the others are inside their interval.
POSITIVE, NON_NEGATIVE, UNIT_INTERVAL = (0, math.inf, False, True), (0, math.inf, True, True), \
    (0, 1, True, True)
INTERVALS: dict[tuple[str, str], tuple] = {
    ("Options", "timestep"): POSITIVE,
    ("Options", "substeps"): (1, math.inf, True, True),
    ("Options", "solver_iterations"): (1, 1000, True, True),
    ("Options", "contact_budget"): (0, 10000, True, True),
    ("Options", "limit_budget"): (0, 10000, True, True),
    ("Options", "friction"): NON_NEGATIVE,
    ("Options", "restitution"): UNIT_INTERVAL,
    ("Options", "contact_time_constant"): POSITIVE,
    ("Options", "contact_damping_ratio"): POSITIVE,
    ("Options", "limit_time_constant"): POSITIVE,
    ("Options", "limit_damping_ratio"): POSITIVE,
    ("Options", "density"): POSITIVE,
    ("Collider", "friction"): NON_NEGATIVE,
    ("Collider", "restitution"): UNIT_INTERVAL,
    ("Collider", "time_constant"): POSITIVE,
    ("Collider", "damping_ratio"): POSITIVE,
    ("Collider", "density"): POSITIVE,
    ("ColliderPair", "friction"): NON_NEGATIVE,
    ("ColliderPair", "restitution"): UNIT_INTERVAL,
    ("Joint", "damping"): NON_NEGATIVE,
    ("Joint", "stiffness"): NON_NEGATIVE,
    ("Joint", "armature"): NON_NEGATIVE,
    ("Joint", "limit_time_constant"): POSITIVE,
    ("Joint", "limit_damping_ratio"): POSITIVE,
    ("Task", "episode_length"): (1, math.inf, True, True),
    ("Task", "action_repeat"): (1, math.inf, True, True),
    ("ResetNoise", "q"): NON_NEGATIVE,
    ("ResetNoise", "qd"): NON_NEGATIVE,
    ("Target", "radius"): NON_NEGATIVE,
}

# Coordinates per joint kind: (nq, nv). The runtime has its own table; these are the counts a
# joint value in `init`/`keyframes` must have.
JOINT_COORDS = {
    scene_pb2.HINGE: (1, 1), scene_pb2.SLIDE: (1, 1), scene_pb2.BALL: (4, 3),
    scene_pb2.FREE: (7, 6), scene_pb2.FIXED: (0, 0),
}
DRIVABLE = (scene_pb2.HINGE, scene_pb2.SLIDE)

# Entities that must be named, as (Scene field, what to call one).
NAMED = (("bodies", "body"), ("joints", "joint"), ("actuators", "actuator"), ("meshes", "mesh"),
         ("heightfields", "height field"), ("keyframes", "keyframe"), ("parameters", "parameter"))


def _kind_name(kind: int) -> str:
    return scene_pb2.JointKind.Name(kind).lower()


class Context:
    """The scene, its source map, name tables shared by the rules, and the diagnostics so far."""

    def __init__(self, loaded: Loaded):
        self.loaded = loaded
        self.scene = loaded.scene
        self.smap = loaded.source_map
        self.out: list[Diagnostic] = []
        scene = self.scene
        self.bodies: dict[str, int] = {}
        for i, body in enumerate(scene.bodies):
            if body.name and body.name != WORLD:
                self.bodies.setdefault(body.name, i)
        self.joints: dict[str, int] = {}
        for i, joint in enumerate(scene.joints):
            if joint.name:
                self.joints.setdefault(joint.name, i)
        self.colliders: dict[str, tuple] = {}   # effective name -> path of the collider
        for b, body in enumerate(scene.bodies):
            for c, collider in enumerate(body.colliders):
                name = collider.name or f"{body.name}/{c}"
                self.colliders.setdefault(name, ("bodies", b, "colliders", c))

    def report(self, code: str, message: str, path: tuple, hint: str = "",
               severity: Severity = Severity.ERROR):
        self.out.append(Diagnostic(code, message, self.smap.span(path), hint, severity))

    def ok(self, path: tuple) -> bool:
        """False when the loader could not read the value at `path` (already reported)."""
        return not self.smap.failed(path)

    def where(self, path: tuple) -> str:
        """`line 12`, or the dotted path for messages built in Python."""
        span = self.smap.span(path)
        return f"line {span.line}" if span.line > 0 else span.file

    def joint_kind(self, name: str) -> int | None:
        index = self.joints.get(name)
        return None if index is None else self.scene.joints[index].kind


def walk(message, path: tuple = ()) -> Iterator[tuple[tuple, object]]:
    """Every message inside `message` (itself first), with its field path."""
    yield path, message
    for field, value in message.ListFields():
        if field.type != FD.TYPE_MESSAGE:
            continue
        if field.is_repeated:
            for i, item in enumerate(value):
                yield from walk(item, path + (field.name, i))
        else:
            yield from walk(value, path + (field.name,))


# ---------------------------------------------------------------------------------------------
# Format: numbers, vectors, required fields


def check_numbers(ctx: Context):
    """E117/E118: every floating-point value is finite and of a sane magnitude."""
    for path, msg in walk(ctx.scene):
        for field, value in msg.ListFields():
            if field.type not in (FD.TYPE_DOUBLE, FD.TYPE_FLOAT):
                continue
            values = list(value) if field.is_repeated else [value]
            for i, x in enumerate(values):
                here = path + (field.name, i) if field.is_repeated else path + (field.name,)
                if not ctx.ok(here):
                    continue
                if not math.isfinite(x):
                    ctx.report("E117", f"'{field.name}' is {x}; values must be finite numbers", here)
                elif abs(x) > ABSURD_MAGNITUDE:
                    ctx.report("E118", f"'{field.name}' is {x:g}, beyond +-{ABSURD_MAGNITUDE:g} "
                               "(SI units)", here, "check the unit and the decimal point")


def listed_fields(ctx: Context, table: dict) -> Iterator[tuple]:
    """(field, value, path, entry) for every field that is set, readable, and keyed in `table`
    by (message name, field name)."""
    for path, msg in walk(ctx.scene):
        owner = msg.DESCRIPTOR.name
        for field, value in msg.ListFields():
            entry = table.get((owner, field.name))
            here = path + (field.name,)
            if entry is not None and ctx.ok(here):
                yield field, value, here, entry


def check_vectors(ctx: Context):
    """E114 lengths, E115 fields that exclude each other, E116 zero quaternions and axes."""
    for field, value, here, allowed in listed_fields(ctx, LENGTHS):
        if len(value) not in allowed:
            want = " or ".join(map(str, allowed)) if len(allowed) < 3 else f"at most {allowed[-1]}"
            ctx.report("E114", f"'{field.name}' needs {want} values, got {len(value)}", here)
    for path, msg in walk(ctx.scene):
        owner = msg.DESCRIPTOR.name
        given = {field.name for field, _ in msg.ListFields()}
        for message, group in EXCLUSIVE:
            both = [name for name in group if name in given]
            if message == owner and len(both) > 1:
                ctx.report("E115", f"'{both[0]}' and '{both[1]}' are both given; give one of them",
                           path + (both[1],))
        if owner == "Collider" and msg.WhichOneof("shape") == "capsule":
            capsule = {field.name for field, _ in msg.capsule.ListFields()}
            pose = [name for name in FROMTO_EXCLUDES if name in given]
            if "fromto" in capsule and pose:
                ctx.report("E115", f"a capsule given by 'fromto' takes its pose from it; drop "
                           f"'{pose[0]}'", path + (pose[0],))
        if owner in ("Body", "Collider"):
            if len(msg.quat) == 4 and ctx.ok(path + ("quat",)) and not any(msg.quat):
                ctx.report("E116", "'quat' is all zeros; the identity is [1, 0, 0, 0]", path + ("quat",))
        if owner == "Joint" and len(msg.axis) == 3 and ctx.ok(path + ("axis",)) and not any(msg.axis):
            ctx.report("E116", "'axis' is all zeros; give a direction such as [0, 0, 1]",
                       path + ("axis",))


def check_required(ctx: Context):
    """E119: names of referable entities, references that must be given, collider shapes."""
    scene = ctx.scene
    for field, what in NAMED:
        for i, item in enumerate(getattr(scene, field)):
            if not item.name and ctx.ok((field, i, "name")):
                ctx.report("E119", f"{what} #{i + 1} has no name", (field, i))
    for i, joint in enumerate(scene.joints):
        if not joint.child and ctx.ok(("joints", i, "child")):
            ctx.report("E119", f"joint '{joint.name}' has no child body", ("joints", i))
    for i, actuator in enumerate(scene.actuators):
        if not actuator.joint and ctx.ok(("actuators", i, "joint")):
            ctx.report("E119", f"actuator '{actuator.name}' names no joint", ("actuators", i))
    for b, body in enumerate(scene.bodies):
        for c, collider in enumerate(body.colliders):
            here = ("bodies", b, "colliders", c)
            shape = collider.WhichOneof("shape")
            if shape is None:
                ctx.report("E119", f"collider {c} of body '{body.name}' has no shape", here,
                           "add one of plane, sphere, capsule, box, mesh, heightfield")
            elif shape == "box" and not collider.box.half_size and ctx.ok(here + ("box",)):
                ctx.report("E119", "box has no 'half_size'", here + ("box",))
            elif shape == "mesh" and not collider.mesh.mesh and ctx.ok(here + ("mesh",)):
                ctx.report("E119", "mesh collider names no mesh", here + ("mesh",))
            elif shape == "heightfield" and not collider.heightfield.heightfield \
                    and ctx.ok(here + ("heightfield",)):
                ctx.report("E119", "height-field collider names no height field", here + ("heightfield",))
    for path, values in _joint_value_lists(scene):
        for i, value in enumerate(values):
            if not value.joint and ctx.ok(path + (i, "joint")):
                ctx.report("E119", "joint value names no joint", path + (i,))
    for field in ("exclude", "include", "pairs"):
        for i, pair in enumerate(getattr(scene.contacts, field)):
            here = ("contacts", field, i)
            for side in ("first", "second"):
                if not getattr(pair, side) and ctx.ok(here + (side,)):
                    ctx.report("E119", f"contact rule has no '{side}'", here)


# ---------------------------------------------------------------------------------------------
# Names and references


def check_names(ctx: Context):
    """E201 duplicates per kind (colliders by effective name), E202 a declared world."""
    scene = ctx.scene
    kinds = list(NAMED) + [(("task", "targets"), "target")]
    for field, what in kinds:
        path = field if isinstance(field, tuple) else (field,)
        items = scene.task.targets if path == ("task", "targets") else getattr(scene, field)
        first: dict[str, int] = {}
        for i, item in enumerate(items):
            name = item.name
            here = path + (i, "name")
            if not name or not ctx.ok(here):
                continue
            if field == "bodies" and name == WORLD:
                ctx.report("E202", "'world' is the implicit static body and cannot be declared",
                           here, "rename this body, or drop it and attach things to 'world'")
                continue
            if name in first:
                ctx.report("E201", f"{what} name '{name}' is used twice", here,
                           f"the first is at {ctx.where(path + (first[name], 'name'))}")
            else:
                first[name] = i
    seen: dict[str, tuple] = {}
    for b, body in enumerate(scene.bodies):
        for c, collider in enumerate(body.colliders):
            name = collider.name or f"{body.name}/{c}"
            here = ("bodies", b, "colliders", c) + (("name",) if collider.name else ())
            if name in seen:
                ctx.report("E201", f"collider name '{name}' is used twice", here,
                           f"the first is at {ctx.where(seen[name])}")
            else:
                seen[name] = here


def check_forest(ctx: Context):
    """E203-E211: joints form a forest rooted at the world."""
    scene = ctx.scene
    bodies = list(ctx.bodies)
    by_child: dict[str, list[int]] = collections.defaultdict(list)
    for i, joint in enumerate(scene.joints):
        parent = joint.parent or WORLD
        child_ok = parent_ok = True
        if joint.child and ctx.ok(("joints", i, "child")):
            if joint.child == WORLD:
                ctx.report("E205", f"joint '{joint.name}' has the world as its child",
                           ("joints", i, "child"), "the world is static; swap parent and child")
                child_ok = False
            elif joint.child not in ctx.bodies:
                ctx.report("E203", f"joint '{joint.name}' names child '{joint.child}', which is "
                           "not a body", ("joints", i, "child"),
                           did_you_mean(joint.child, bodies) or choices(bodies))
                child_ok = False
        else:
            child_ok = False
        if parent != WORLD and parent not in ctx.bodies and ctx.ok(("joints", i, "parent")):
            ctx.report("E204", f"joint '{joint.name}' names parent '{parent}', which is not a body",
                       ("joints", i, "parent"), did_you_mean(parent, bodies + [WORLD]) or
                       choices([WORLD] + bodies))
            parent_ok = False
        if child_ok and parent == joint.child:
            ctx.report("E206", f"joint '{joint.name}' joins body '{parent}' to itself",
                       ("joints", i, "parent"))
            continue
        if child_ok and parent_ok:
            by_child[joint.child].append(i)

    parent_of: dict[str, str] = {}
    first_joint: dict[str, int] = {}
    for child, indices in by_child.items():
        first = scene.joints[indices[0]]
        parent_of[child] = first.parent or WORLD
        first_joint[child] = indices[0]
        for i in indices[1:]:
            joint = scene.joints[i]
            if (joint.parent or WORLD) != parent_of[child]:
                ctx.report("E207", f"joints '{first.name}' and '{joint.name}' both move body "
                           f"'{child}' but from different parents ('{parent_of[child]}' and "
                           f"'{joint.parent or WORLD}')", ("joints", i, "parent"),
                           "joints that share a child must share its parent")
        for i in indices:
            joint = scene.joints[i]
            if joint.kind == scene_pb2.FREE:
                if len(indices) > 1:
                    ctx.report("E209", f"free joint '{joint.name}' must be the only joint of body "
                               f"'{child}', which has {len(indices)}", ("joints", i, "kind"))
                if (joint.parent or WORLD) != WORLD:
                    ctx.report("E210", f"free joint '{joint.name}' has parent '{joint.parent}'; a "
                               "free joint moves its body relative to the world",
                               ("joints", i, "parent"), "drop 'parent', or use a ball joint")
            elif joint.kind == scene_pb2.FIXED and len(indices) > 1:
                ctx.report("E211", f"fixed joint '{joint.name}' must be the only joint of body "
                           f"'{child}', which has {len(indices)}", ("joints", i, "kind"))

    # Cycles: follow parents from each body; a body met twice on one walk closes a loop.
    state: dict[str, int] = {}  # 1 on the current walk, 2 done
    for start in parent_of:
        trail = []
        body = start
        while body in parent_of and state.get(body) is None:
            state[body] = 1
            trail.append(body)
            body = parent_of[body]
        if state.get(body) == 1:  # back on this walk: the loop is the trail from `body` on
            loop = trail[trail.index(body):]
            index = min(first_joint[b] for b in loop)
            names = " -> ".join(loop + [loop[0]])
            ctx.report("E208", f"joints make body '{loop[0]}' its own ancestor (parents: {names})",
                       ("joints", index),
                       "every body needs a path of parents down to 'world'")
        for b in trail:
            state[b] = 2


def _joint_value_lists(scene) -> Iterator[tuple[tuple, object]]:
    yield ("init",), scene.init
    for k, keyframe in enumerate(scene.keyframes):
        yield ("keyframes", k, "joints"), keyframe.joints


def check_references(ctx: Context):
    """E212-E219: actuators, meshes, height fields, contact rules, joint values, targets."""
    scene = ctx.scene
    joints = list(ctx.joints)
    for i, actuator in enumerate(scene.actuators):
        here = ("actuators", i, "joint")
        if actuator.joint and ctx.ok(here) and actuator.joint not in ctx.joints:
            ctx.report("E212", f"actuator '{actuator.name}' names joint '{actuator.joint}', which "
                       "does not exist", here, did_you_mean(actuator.joint, joints) or choices(joints))
    meshes = [m.name for m in scene.meshes if m.name]
    fields = [h.name for h in scene.heightfields if h.name]
    for b, body in enumerate(scene.bodies):
        for c, collider in enumerate(body.colliders):
            shape = collider.WhichOneof("shape")
            if shape == "mesh" and collider.mesh.mesh and collider.mesh.mesh not in meshes:
                here = ("bodies", b, "colliders", c, "mesh", "mesh")
                ctx.report("E213", f"collider names mesh '{collider.mesh.mesh}', which is not "
                           "declared in 'meshes'", here,
                           did_you_mean(collider.mesh.mesh, meshes) or choices(meshes))
            elif shape == "heightfield" and collider.heightfield.heightfield \
                    and collider.heightfield.heightfield not in fields:
                name = collider.heightfield.heightfield
                here = ("bodies", b, "colliders", c, "heightfield", "heightfield")
                ctx.report("E214", f"collider names height field '{name}', which is not declared "
                           "in 'heightfields'", here, did_you_mean(name, fields) or choices(fields))

    bodies = [WORLD] + list(ctx.bodies)
    for field in ("exclude", "include"):
        for i, pair in enumerate(getattr(scene.contacts, field)):
            for side in ("first", "second"):
                pattern = getattr(pair, side)
                here = ("contacts", field, i, side)
                if pattern and ctx.ok(here) and not fnmatch.filter(bodies, pattern):
                    ctx.report("E215", f"contact {field} pattern '{pattern}' matches no body", here,
                               did_you_mean(pattern, bodies) or choices(bodies))
    colliders = list(ctx.colliders)
    for i, pair in enumerate(scene.contacts.pairs):
        for side in ("first", "second"):
            name = getattr(pair, side)
            here = ("contacts", "pairs", i, side)
            if name and ctx.ok(here) and name not in ctx.colliders:
                ctx.report("E216", f"contact pair names collider '{name}', which does not exist",
                           here, (did_you_mean(name, colliders) or choices(colliders)) +
                           " (unnamed colliders are '<body>/<index>')")

    for path, values in _joint_value_lists(scene):
        given: dict[str, int] = {}
        for i, value in enumerate(values):
            here = path + (i, "joint")
            if not value.joint or not ctx.ok(here):
                continue
            if value.joint not in ctx.joints:
                ctx.report("E217", f"joint value names joint '{value.joint}', which does not exist",
                           here, did_you_mean(value.joint, joints) or choices(joints))
            elif value.joint in given:
                ctx.report("E218", f"joint '{value.joint}' is given twice", here,
                           f"the first is at {ctx.where(path + (given[value.joint], 'joint'))}")
            else:
                given[value.joint] = i

    for i, target in enumerate(scene.task.targets):
        here = ("task", "targets", i, "body")
        if target.body and ctx.ok(here) and target.body not in ctx.bodies:
            ctx.report("E219", f"target '{target.name}' names body '{target.body}', which does not "
                       "exist", here, did_you_mean(target.body, list(ctx.bodies)) or
                       choices(list(ctx.bodies)))


# ---------------------------------------------------------------------------------------------
# Physical values


def check_bodies(ctx: Context):
    """E301 mass, E302/E303 inertia."""
    for b, body in enumerate(ctx.scene.bodies):
        here = ("bodies", b)
        if body.HasField("mass") and ctx.ok(here + ("mass",)) and math.isfinite(body.mass) \
                and body.mass <= 0:
            ctx.report("E301", f"body '{body.name}' has mass {body.mass:g}; a mass must be > 0",
                       here + ("mass",), "leave 'mass' out to derive it from the colliders")
        inertia = list(body.inertia)
        path = here + ("inertia",)
        if len(inertia) not in (3, 6) or not ctx.ok(path) or not all(map(math.isfinite, inertia)):
            continue
        if len(inertia) == 3:
            moments = np.array(inertia)
        else:
            xx, yy, zz, xy, xz, yz = inertia
            moments = np.linalg.eigvalsh(np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]]))
        if np.any(moments <= 0):
            ctx.report("E302", f"inertia of body '{body.name}' is not positive definite (principal "
                       f"moments {', '.join(f'{m:.4g}' for m in moments)})", path)
            continue
        total = moments.sum()
        for m in moments:
            rest = total - m
            if m > rest * (1 + INERTIA_TRIANGLE_RTOL):
                ctx.report("E303", f"inertia of body '{body.name}' is not physical: principal "
                           f"moment {m:.4g} exceeds the sum of the other two ({rest:.4g})", path,
                           "no rigid body has such moments; check the values and their order")
                break


def check_joints(ctx: Context):
    """E304-E306 joint ranges."""
    for i, joint in enumerate(ctx.scene.joints):
        here = ("joints", i, "range")
        if len(joint.range) != 2 or not ctx.ok(here):
            if joint.range and joint.kind in (scene_pb2.FREE, scene_pb2.FIXED) and ctx.ok(here):
                ctx.report("E306", f"{_kind_name(joint.kind)} joint '{joint.name}' cannot have a "
                           "range", here)
            continue
        low, high = joint.range
        if joint.kind in (scene_pb2.FREE, scene_pb2.FIXED):
            ctx.report("E306", f"{_kind_name(joint.kind)} joint '{joint.name}' cannot have a range",
                       here)
        elif joint.kind == scene_pb2.BALL:
            if low != 0 or not high > 0:
                ctx.report("E305", f"ball joint '{joint.name}' has range [{low:g}, {high:g}]; a ball "
                           "joint's range is [0, max angle] with max angle > 0", here)
        elif not low < high:
            ctx.report("E304", f"joint '{joint.name}' has range [{low:g}, {high:g}]; the lower limit "
                       "must be below the upper", here)


def check_actuators(ctx: Context):
    """E307 ordered ranges, E308 drivable joints, E309 gains."""
    for i, actuator in enumerate(ctx.scene.actuators):
        here = ("actuators", i)
        for field in ("ctrl_range", "force_range"):
            values = getattr(actuator, field)
            if len(values) == 2 and ctx.ok(here + (field,)) and not values[0] < values[1]:
                ctx.report("E307", f"actuator '{actuator.name}' has {field} [{values[0]:g}, "
                           f"{values[1]:g}]; the lower limit must be below the upper",
                           here + (field,))
        kind = ctx.joint_kind(actuator.joint)
        if kind is not None and kind not in DRIVABLE:
            ctx.report("E308", f"actuator '{actuator.name}' drives {_kind_name(kind)} joint "
                       f"'{actuator.joint}'; actuators drive hinge and slide joints only",
                       here + ("joint",))
        if actuator.kind == scene_pb2.POSITION:
            if not actuator.kp > 0 and ctx.ok(here + ("kp",)):
                ctx.report("E309", f"position actuator '{actuator.name}' needs kp > 0, got "
                           f"{actuator.kp:g}", here + ("kp",))
            if actuator.kv < 0 and ctx.ok(here + ("kv",)):
                ctx.report("E311", f"actuator '{actuator.name}' has kv {actuator.kv:g}; it must be "
                           ">= 0", here + ("kv",))
        elif actuator.kind == scene_pb2.VELOCITY and not actuator.kv > 0 and ctx.ok(here + ("kv",)):
            ctx.report("E309", f"velocity actuator '{actuator.name}' needs kv > 0, got "
                       f"{actuator.kv:g}", here + ("kv",))


def check_sizes(ctx: Context):
    """E310: shapes, mesh scales and height fields have positive sizes."""
    scene = ctx.scene

    def positive(values, path, what, allow_zero=False):
        if not ctx.ok(path):
            return
        for x in values:
            if math.isfinite(x) and (x < 0 or (x == 0 and not allow_zero)):
                bound = ">= 0" if allow_zero else "> 0"
                ctx.report("E310", f"{what} is {x:g}; it must be {bound}", path)
                return

    for b, body in enumerate(scene.bodies):
        for c, collider in enumerate(body.colliders):
            here = ("bodies", b, "colliders", c)
            shape = collider.WhichOneof("shape")
            if shape == "sphere":
                positive([collider.sphere.radius], here + ("sphere", "radius"), "sphere radius")
            elif shape == "capsule":
                positive([collider.capsule.radius], here + ("capsule", "radius"), "capsule radius")
                positive([collider.capsule.half_length], here + ("capsule", "half_length"),
                         "capsule half_length", allow_zero=True)
            elif shape == "box" and len(collider.box.half_size) == 3:
                positive(collider.box.half_size, here + ("box", "half_size"), "a box half size")
            elif shape == "plane" and len(collider.plane.size) == 2:
                positive(collider.plane.size, here + ("plane", "size"), "a plane size")
    for m, mesh in enumerate(scene.meshes):
        if len(mesh.scale) == 3:
            positive(mesh.scale, ("meshes", m, "scale"), f"a scale of mesh '{mesh.name}'")
    for h, field in enumerate(scene.heightfields):
        positive([field.size_x], ("heightfields", h, "size_x"), f"size_x of '{field.name}'")
        positive([field.size_y], ("heightfields", h, "size_y"), f"size_y of '{field.name}'")


def _interval_text(low, high, low_in, high_in) -> str:
    if high == math.inf:
        return f"{'>=' if low_in else '>'} {low:g}"
    return f"in {'[' if low_in else '('}{low:g}, {high:g}{']' if high_in else ')'}"


def check_intervals(ctx: Context):
    """E311: options and per-entity settings inside their allowed intervals."""
    for field, value, here, interval in listed_fields(ctx, INTERVALS):
        if not math.isfinite(value):
            continue  # E117 already
        low, high, low_in, high_in = interval
        inside = (value >= low if low_in else value > low) and \
            (value <= high if high_in else value < high)
        if not inside:
            ctx.report("E311", f"'{field.name}' is {value:g}; it must be "
                       f"{_interval_text(*interval)}", here)


def check_joint_values(ctx: Context):
    """E312 coordinate counts, E116 zero quaternions, W301 values outside the joint's range."""
    for path, values in _joint_value_lists(ctx.scene):
        for i, value in enumerate(values):
            kind = ctx.joint_kind(value.joint)
            if kind is None:
                continue
            joint = ctx.scene.joints[ctx.joints[value.joint]]
            nq, nv = JOINT_COORDS[kind]
            here = path + (i,)
            for field, count in (("q", nq), ("qd", nv)):
                got = len(getattr(value, field))
                if got and got != count and ctx.ok(here + (field,)):
                    want = f"{count} value{'s' if count != 1 else ''}" if count else "no values"
                    ctx.report("E312", f"'{field}' of {_kind_name(kind)} joint '{value.joint}' needs "
                               f"{want}, got {got}", here + (field,))
            q = list(value.q)
            if len(q) != nq or not q or not ctx.ok(here + ("q",)) or not all(map(math.isfinite, q)):
                continue
            quat = q[-4:] if kind in (scene_pb2.BALL, scene_pb2.FREE) else None
            if quat is not None and not any(quat):
                ctx.report("E116", f"the quaternion of joint '{value.joint}' is all zeros",
                           here + ("q",))
                continue
            if len(joint.range) != 2:
                continue
            low, high = joint.range
            if kind in DRIVABLE and not low <= q[0] <= high:
                ctx.report("W301", f"joint '{value.joint}' starts at {q[0]:g}, outside its range "
                           f"[{low:g}, {high:g}]", here + ("q",), severity=Severity.WARNING)
            elif kind == scene_pb2.BALL:
                angle = 2 * math.acos(min(1.0, abs(quat[0]) / math.sqrt(sum(x * x for x in quat))))
                if angle > high:
                    ctx.report("W301", f"joint '{value.joint}' starts rotated by {angle:.4g} rad, "
                               f"beyond its range {high:g}", here + ("q",), severity=Severity.WARNING)


def check_targets(ctx: Context):
    """E313: a target's resampling box has low <= high."""
    for i, target in enumerate(ctx.scene.task.targets):
        here = ("task", "targets", i)
        if len(target.low) == 3 == len(target.high) and ctx.ok(here + ("low",)) \
                and ctx.ok(here + ("high",)):
            if any(lo > hi for lo, hi in zip(target.low, target.high)):
                ctx.report("E313", f"target '{target.name}' has low {list(target.low)} above high "
                           f"{list(target.high)}", here + ("high",))


# ---------------------------------------------------------------------------------------------
# Meshes and height fields


def _spread_is_3d(vertices: np.ndarray) -> bool:
    if len(vertices) < 4:
        return False
    centred = vertices - vertices.mean(axis=0)
    spread = np.linalg.svd(centred, compute_uv=False)
    return bool(spread[0] > 0 and spread[-1] > COPLANAR_RTOL * spread[0])


def _load_mesh_file(path: pathlib.Path) -> np.ndarray:
    """Vertices of a mesh file, via trimesh (imported here: only scenes with mesh files pay)."""
    import trimesh
    mesh = trimesh.load(str(path), force="mesh", process=False)
    return np.asarray(mesh.vertices, dtype=np.float64).reshape(-1, 3)


def check_meshes(ctx: Context):
    """E401-E407: one source per mesh; files exist, stay inside the folder, load, have volume."""
    base = ctx.loaded.base_dir.resolve()
    for m, mesh in enumerate(ctx.scene.meshes):
        here = ("meshes", m)
        inline = bool(mesh.vertices) or bool(mesh.faces)
        if bool(mesh.file) == inline:
            ctx.report("E401", f"mesh '{mesh.name}' needs exactly one of 'file' or "
                       "'vertices' + 'faces'", here + (("file",) if mesh.file else ()))
            continue
        if mesh.file:
            if not ctx.ok(here + ("file",)):
                continue
            _check_mesh_file(ctx, mesh, here + ("file",), base)
            continue
        if not ctx.ok(here + ("vertices",)) or not ctx.ok(here + ("faces",)):
            continue
        if not mesh.vertices or not mesh.faces:
            ctx.report("E401", f"mesh '{mesh.name}' gives inline "
                       f"{'vertices' if mesh.vertices else 'faces'} without "
                       f"{'faces' if mesh.vertices else 'vertices'}", here)
            continue
        bad_count = False
        for field in ("vertices", "faces"):
            n = len(getattr(mesh, field))
            if n % 3:
                ctx.report("E406", f"mesh '{mesh.name}' has {n} {field} values, not a multiple of 3",
                           here + (field,))
                bad_count = True
        if bad_count:
            continue
        nvert = len(mesh.vertices) // 3
        for k, index in enumerate(mesh.faces):
            if not 0 <= index < nvert:
                ctx.report("E407", f"mesh '{mesh.name}' face index {index} is outside [0, {nvert})",
                           here + ("faces", k))
                break
        vertices = np.asarray(mesh.vertices, dtype=np.float64).reshape(-1, 3)
        if np.all(np.isfinite(vertices)) and not _spread_is_3d(vertices):
            ctx.report("E405", f"mesh '{mesh.name}' has no volume: it needs at least 4 vertices "
                       "not in one plane", here + ("vertices",))


def _check_mesh_file(ctx: Context, mesh, here: tuple, base: pathlib.Path):
    given = pathlib.Path(mesh.file)
    path = (given if given.is_absolute() else base / given).resolve()
    if not ctx.loaded.allow_outside and not path.is_relative_to(base):
        ctx.report("E403", f"mesh file '{mesh.file}' is outside the scene's folder ({base})", here,
                   "move the file next to the scene, or pass --allow-outside "
                   "(allow_outside=True)")
        return
    if not path.is_file():
        try:
            siblings = [p.name for p in path.parent.iterdir()] if path.parent.is_dir() else []
        except OSError:
            siblings = []
        ctx.report("E402", f"mesh file '{mesh.file}' not found", here,
                   did_you_mean(path.name, siblings))
        return
    try:
        vertices = _load_mesh_file(path)
    except Exception as e:  # trimesh raises many kinds for unreadable files
        ctx.report("E404", f"mesh file '{mesh.file}' cannot be loaded: "
                   f"{type(e).__name__}: {str(e)[:200]}", here)
        return
    if len(vertices) == 0:
        ctx.report("E404", f"mesh file '{mesh.file}' holds no vertices", here)
    elif not _spread_is_3d(vertices):
        ctx.report("E405", f"mesh file '{mesh.file}' has no volume: it needs at least 4 vertices "
                   "not in one plane", here)


def check_heightfields(ctx: Context):
    """E408/E409: at least a 2 x 2 grid, and one elevation per sample."""
    for h, field in enumerate(ctx.scene.heightfields):
        here = ("heightfields", h)
        if field.nrow < 2 or field.ncol < 2:
            path = here + ("nrow" if field.nrow < 2 else "ncol",)
            if ctx.ok(path):
                ctx.report("E408", f"height field '{field.name}' is {field.nrow} x {field.ncol}; "
                           "it needs at least 2 rows and 2 columns", path)
            continue
        if len(field.elevation) != field.nrow * field.ncol and ctx.ok(here + ("elevation",)):
            ctx.report("E409", f"height field '{field.name}' has {len(field.elevation)} elevations; "
                       f"a {field.nrow} x {field.ncol} grid needs {field.nrow * field.ncol}",
                       here + ("elevation",))


def check_unused(ctx: Context):
    """W201: meshes and height fields that no collider uses."""
    used_meshes, used_fields = set(), set()
    for body in ctx.scene.bodies:
        for collider in body.colliders:
            shape = collider.WhichOneof("shape")
            if shape == "mesh":
                used_meshes.add(collider.mesh.mesh)
            elif shape == "heightfield":
                used_fields.add(collider.heightfield.heightfield)
    for field, used, what in (("meshes", used_meshes, "mesh"),
                              ("heightfields", used_fields, "height field")):
        for i, item in enumerate(getattr(ctx.scene, field)):
            if item.name and item.name not in used:
                ctx.report("W201", f"{what} '{item.name}' is not used by any collider",
                           (field, i, "name"), severity=Severity.WARNING)


RULES: tuple[Callable[[Context], None], ...] = (
    check_numbers,
    check_vectors,
    check_required,
    check_names,
    check_forest,
    check_references,
    check_bodies,
    check_joints,
    check_actuators,
    check_sizes,
    check_intervals,
    check_joint_values,
    check_targets,
    check_meshes,
    check_heightfields,
    check_unused,
)


def validate(loaded: Loaded) -> list[Diagnostic]:
    """Every semantic problem of `loaded`, in rule order. Never raises for user errors; returns
    nothing when the document could not be read at all (its reading errors say why)."""
    if loaded.source_map.fatal:
        return []
    ctx = Context(loaded)
    for rule in RULES:
        rule(ctx)
    return ctx.out
