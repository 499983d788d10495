"""The front end: a loaded, validated `Scene` message → `SceneIR`.

Where it sits: after `schema.load` and `validate.validate` (which report every format and reference
error), before the passes. This is where defaults are applied, rotations normalised to quaternions,
actuators rewritten in the affine form the runtime uses, and mesh files read (the passes do no I/O).
Every IR node carries the span of the message entry it came from.
"""

from __future__ import annotations

import hashlib
import math
import os
import pathlib

from scenec.runtime.collision_table import Shape
from scenec.schema import scene_pb2

from . import frames, ir
from .ir import diag

DEFAULTS = {
    "timestep": 0.01,
    "substeps": 1,
    "gravity": (0.0, 0.0, -9.81),
    "solver_iterations": 4,
    "friction": 1.0,
    "time_constant": 0.005,  # resting penetration g·τ²·m/m_eff: 0.25 mm for a sphere (constraints.py)
    "damping_ratio": 1.0,
    "density": 1000.0,
    "group": 1,
    "mask": 1,
    "gear": 1.0,
    "plane_size": (10.0, 10.0),
}


def _opt(msg, name, default):
    return getattr(msg, name) if msg.HasField(name) else default


def _vec(values, default):
    return tuple(float(v) for v in values) if len(values) else tuple(default)


def euler_quat(euler) -> ir.Quat:
    """Quaternion of intrinsic x-y'-z'' Euler angles (rad)."""
    return tuple(float(x) for x in frames.euler(euler, "xyz"))


def quat_z_to(d) -> ir.Quat:
    """The shortest rotation taking the z axis onto direction d (non-zero)."""
    n = math.sqrt(sum(x * x for x in d))
    x, y, z = (v / n for v in d)
    if z < -1.0 + 1e-12:  # opposite: half a turn about x
        return (0.0, 1.0, 0.0, 0.0)
    # q = (1 + z, e_z × d) normalised: half the angle between z and d
    return _normalized((1.0 + z, -y, x, 0.0))


def _normalized(v):
    n = math.sqrt(sum(x * x for x in v))
    return tuple(x / n for x in v) if n > 0 else tuple(v)


def _rotation(msg) -> ir.Quat:
    if len(msg.quat):
        return _normalized(tuple(float(x) for x in msg.quat))
    if len(msg.euler):
        return euler_quat(tuple(float(x) for x in msg.euler))
    return (1.0, 0.0, 0.0, 0.0)


def source_hash(loaded) -> str:
    h = hashlib.sha256()
    if loaded.path is not None and str(loaded.path) in loaded.sources:
        h.update(loaded.sources[str(loaded.path)].encode("utf-8"))
    elif loaded.sources:
        for name in sorted(loaded.sources):
            h.update(loaded.sources[name].encode("utf-8"))
    else:
        h.update(loaded.scene.SerializeToString(deterministic=True))
    return h.hexdigest()


def build(loaded) -> ir.SceneIR:
    """Build the IR. Problems found here (unreadable mesh files) go to `SceneIR.diagnostics`."""
    scene: scene_pb2.Scene = loaded.scene
    span = loaded.source_map.span
    diags = []

    o = scene.options
    options = ir.Options(
        timestep=float(_opt(o, "timestep", DEFAULTS["timestep"])),
        substeps=int(_opt(o, "substeps", DEFAULTS["substeps"])),
        gravity=_vec(o.gravity, DEFAULTS["gravity"]),
        solver_iterations=int(_opt(o, "solver_iterations", DEFAULTS["solver_iterations"])),
        precision="float64" if o.precision == scene_pb2.FLOAT64 else "float32",
        friction=float(_opt(o, "friction", DEFAULTS["friction"])),
        restitution=float(o.restitution),
        contact_solref=(float(_opt(o, "contact_time_constant", DEFAULTS["time_constant"])),
                        float(_opt(o, "contact_damping_ratio", DEFAULTS["damping_ratio"]))),
        limit_solref=(float(_opt(o, "limit_time_constant", DEFAULTS["time_constant"])),
                      float(_opt(o, "limit_damping_ratio", DEFAULTS["damping_ratio"]))),
        cone="pyramidal" if o.friction_cone == scene_pb2.PYRAMIDAL else "elliptic",
        density=float(_opt(o, "density", DEFAULTS["density"])),
        integrator="rk4" if o.integrator == scene_pb2.RK4 else "euler",
        contact_budget=int(_opt(o, "contact_budget", 0)),
        limit_budget=int(_opt(o, "limit_budget", 0)),
        span=span(("options",)),
    )

    base_dir = pathlib.Path(getattr(loaded, "base_dir", None) or ".")
    meshes = []
    for i, me in enumerate(scene.meshes):
        scale = _vec(me.scale, (1.0, 1.0, 1.0))
        vertices, faces, file = (), (), None
        if me.file:
            file = str((base_dir / me.file).resolve())
            try:
                vertices, faces = _read_mesh(file)
            except Exception as e:  # trimesh raises many kinds; all mean "cannot read it"
                diags.append(diag("E404", f"mesh '{me.name}': cannot read '{me.file}': {e}",
                                  span(("meshes", i, "file")), "check the file's format (.stl, .obj, .ply, .off)"))
        else:
            vertices = tuple(tuple(float(x) for x in me.vertices[k:k + 3])
                             for k in range(0, len(me.vertices) - 2, 3))
            faces = tuple(tuple(int(x) for x in me.faces[k:k + 3])
                          for k in range(0, len(me.faces) - 2, 3))
        vertices = tuple(tuple(v[k] * scale[k] for k in range(3)) for v in vertices)
        meshes.append(ir.Mesh(name=me.name, vertices=vertices, faces=faces, file=file,
                              span=span(("meshes", i))))

    hfields = tuple(
        ir.HeightField(name=h.name, nrow=h.nrow, ncol=h.ncol, size_x=h.size_x, size_y=h.size_y,
                       elevation=tuple(h.elevation), span=span(("heightfields", i)))
        for i, h in enumerate(scene.heightfields))

    hfield_sizes = {h.name: (h.size_x, h.size_y, 0.0) for h in hfields}
    bodies = []
    for bi, b in enumerate(scene.bodies):
        colliders = []
        for ci, c in enumerate(b.colliders):
            colliders.append(_collider(c, b.name, ci, options, span(("bodies", bi, "colliders", ci)),
                                       hfield_sizes))
        inertia = None
        if len(b.inertia) == 3:
            inertia = tuple(float(x) for x in b.inertia) + (0.0, 0.0, 0.0)
        elif len(b.inertia) == 6:
            inertia = tuple(float(x) for x in b.inertia)
        bodies.append(ir.Body(
            name=b.name, pos=_vec(b.pos, (0.0, 0.0, 0.0)), quat=_rotation(b),
            colliders=tuple(colliders), mass=float(b.mass) if b.HasField("mass") else None,
            com=_vec(b.com, ()) or None, inertia=inertia, span=span(("bodies", bi))))

    joints = []
    for ji, j in enumerate(scene.joints):
        reference = float(j.reference)
        joints.append(ir.Joint(
            name=j.name, kind=int(j.kind), parent=j.parent or "world", child=j.child,
            anchor=_vec(j.anchor, (0.0, 0.0, 0.0)), axis=_normalized(_vec(j.axis, (0.0, 0.0, 1.0))),
            range=tuple(float(x) for x in j.range) if len(j.range) == 2 else None,
            damping=float(j.damping), stiffness=float(j.stiffness), armature=float(j.armature),
            reference=reference, spring_reference=float(_opt(j, "spring_reference", reference)),
            limit_solref=(float(_opt(j, "limit_time_constant", options.limit_solref[0])),
                          float(_opt(j, "limit_damping_ratio", options.limit_solref[1]))),
            span=span(("joints", ji))))

    actuators = [_actuator(a, span(("actuators", ai))) for ai, a in enumerate(scene.actuators)]

    cr = scene.contacts
    contacts = ir.ContactRules(
        exclude=tuple(ir.BodyPattern(p.first, p.second, span(("contacts", "exclude", k)))
                      for k, p in enumerate(cr.exclude)),
        include=tuple(ir.BodyPattern(p.first, p.second, span(("contacts", "include", k)))
                      for k, p in enumerate(cr.include)),
        pairs=tuple(ir.ColliderPairRule(
            p.first, p.second, float(p.friction) if p.HasField("friction") else None,
            float(p.restitution) if p.HasField("restitution") else None,
            span(("contacts", "pairs", k))) for k, p in enumerate(cr.pairs)),
        filter_parent=bool(_opt(cr, "filter_parent", True)),
        span=span(("contacts",)))

    def joint_values(values, path):
        return tuple(ir.JointValue(v.joint, tuple(v.q), tuple(v.qd), span(path + (k,)))
                     for k, v in enumerate(values))

    name = scene.name or (loaded.path.stem if loaded.path is not None else "scene")
    return ir.SceneIR(
        name=name,
        source=str(loaded.path) if loaded.path is not None else "<scene>",
        source_hash=source_hash(loaded),
        options=options,
        parameters=tuple((p.name, p.value) for p in scene.parameters),
        meshes=tuple(meshes), hfields=hfields, bodies=tuple(bodies), joints=tuple(joints),
        actuators=tuple(actuators), contacts=contacts,
        init=joint_values(scene.init, ("init",)),
        keyframes=tuple(ir.Keyframe(k.name, float(k.time), joint_values(k.joints, ("keyframes", i, "joints")),
                                    span(("keyframes", i))) for i, k in enumerate(scene.keyframes)),
        task=scene.task if scene.HasField("task") else None,
        base_dir=str(base_dir),
        diagnostics=tuple(diags),
    )


def _read_mesh(path):
    import trimesh  # imported here: only scenes with mesh files pay for it

    if not os.path.isfile(path):
        raise FileNotFoundError("no such file")
    mesh = trimesh.load(path, force="mesh", process=False)
    vertices = tuple(tuple(float(x) for x in v) for v in mesh.vertices)
    faces = tuple(tuple(int(x) for x in f) for f in mesh.faces)
    return vertices, faces


def _collider(c, body_name, index, options, span, hfield_sizes) -> ir.Collider:
    kind = c.WhichOneof("shape")
    size = (0.0, 0.0, 0.0)
    mesh = hfield = None
    pos, quat = _vec(c.pos, (0.0, 0.0, 0.0)), _rotation(c)
    if kind == "plane":
        sx, sy = _vec(c.plane.size, DEFAULTS["plane_size"])
        shape, size = Shape.PLANE, (sx, sy, 0.0)
    elif kind == "sphere":
        shape, size = Shape.SPHERE, (float(c.sphere.radius), 0.0, 0.0)
    elif kind == "capsule" and len(c.capsule.fromto) == 6:
        a, b = c.capsule.fromto[:3], c.capsule.fromto[3:]
        d = [b[k] - a[k] for k in range(3)]
        length = math.sqrt(sum(x * x for x in d))
        shape, size = Shape.CAPSULE, (float(c.capsule.radius), 0.5 * length, 0.0)
        pos = tuple(0.5 * (a[k] + b[k]) for k in range(3))
        quat = quat_z_to(d) if length > 0 else (1.0, 0.0, 0.0, 0.0)
    elif kind == "capsule":
        shape, size = Shape.CAPSULE, (float(c.capsule.radius), float(c.capsule.half_length), 0.0)
    elif kind == "box":
        shape, size = Shape.BOX, _vec(c.box.half_size, (0.0, 0.0, 0.0))
    elif kind == "mesh":
        shape, mesh = Shape.MESH, c.mesh.mesh
    elif kind == "heightfield":  # its half extents are the grid's (collision.Geom.size)
        shape, hfield = Shape.HEIGHTFIELD, c.heightfield.heightfield
        size = tuple(float(x) for x in hfield_sizes.get(hfield, (0.0, 0.0, 0.0)))
    else:  # validate reports a collider without a shape; keep the IR total
        shape = Shape.SPHERE
    return ir.Collider(
        name=c.name or f"{body_name}/{index}", body=body_name,
        pos=pos, quat=quat, shape=shape, size=size,
        mesh=mesh, hfield=hfield,
        friction=float(_opt(c, "friction", options.friction)),
        restitution=float(_opt(c, "restitution", options.restitution)),
        solref=(float(_opt(c, "time_constant", options.contact_solref[0])),
                float(_opt(c, "damping_ratio", options.contact_solref[1]))),
        group=int(_opt(c, "group", DEFAULTS["group"])), mask=int(_opt(c, "mask", DEFAULTS["mask"])),
        density=float(_opt(c, "density", options.density)),
        rgba=tuple(float(x) for x in c.rgba), span=span)


def _actuator(a, span) -> ir.Actuator:
    kind = int(a.kind)
    if kind == scene_pb2.MOTOR:
        gain, bias = (1.0, 0.0, 0.0), (0.0, 0.0, 0.0)
    elif kind == scene_pb2.POSITION:
        gain, bias = (a.kp, 0.0, 0.0), (0.0, -a.kp, -a.kv)
    elif kind == scene_pb2.VELOCITY:
        gain, bias = (a.kv, 0.0, 0.0), (0.0, 0.0, -a.kv)
    else:
        gain = tuple(float(x) for x in a.gain) + (0.0,) * (3 - len(a.gain))
        bias = tuple(float(x) for x in a.bias) + (0.0,) * (3 - len(a.bias))
    return ir.Actuator(
        name=a.name, kind=kind, joint=a.joint, gear=float(_opt(a, "gear", DEFAULTS["gear"])),
        ctrl_range=tuple(a.ctrl_range) if len(a.ctrl_range) == 2 else None,
        force_range=tuple(a.force_range) if len(a.force_range) == 2 else None,
        gain=tuple(float(x) for x in gain), bias=tuple(float(x) for x in bias), span=span)
