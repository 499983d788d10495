"""The compiler's intermediate representation: frozen, slotted dataclasses, every node with its span.

Where it sits: `frontend.build` turns a validated `Scene` message into a `SceneIR`; the passes in
`pipeline.PASSES` each return a new `SceneIR` (via `dataclasses.replace`, never mutating); `lower`
turns the final IR into a `runtime.Model`. Vectors are tuples of floats in SI units; names are the
author's. The analysis results (`topology`, `pairs`, `groups`) are filled in by their passes.

No jax here (`scenec check` runs the passes without importing it).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from scenec.runtime.collision_table import Shape
from scenec.schema.diagnostics import NO_SPAN, Diagnostic, Span

Vec3 = tuple[float, float, float]
Quat = tuple[float, float, float, float]


class Kind:
    """Joint kinds by name (values match scene.proto's JointKind)."""

    HINGE = 0
    SLIDE = 1
    BALL = 2
    FREE = 3
    FIXED = 4
    NAMES = {0: "hinge", 1: "slide", 2: "ball", 3: "free", 4: "fixed"}
    NQ = {0: 1, 1: 1, 2: 4, 3: 7, 4: 0}
    NV = {0: 1, 1: 1, 2: 3, 3: 6, 4: 0}


def _frozen(cls):
    return dataclass(frozen=True, slots=True)(cls)


@_frozen
class Options:
    timestep: float
    substeps: int
    gravity: Vec3
    solver_iterations: int
    precision: str                      # "float32" | "float64"
    friction: float
    restitution: float
    contact_solref: tuple[float, float]  # time constant s, damping ratio
    limit_solref: tuple[float, float]
    cone: str                           # "elliptic" | "pyramidal"
    density: float
    integrator: str = "euler"           # "euler" | "rk4"
    contact_budget: int = 0             # contact slots per environment (0: one per candidate)
    limit_budget: int = 0               # limit rows per environment (0: one per limited joint)
    span: Span = NO_SPAN


@_frozen
class Mesh:
    name: str
    vertices: tuple      # ((x, y, z), ...) in the mesh frame, scaled, m
    faces: tuple         # ((i, j, k), ...)
    file: str | None     # resolved path when the mesh came from a file
    span: Span = NO_SPAN
    # filled by the geometry pass: the convex hull, and its volume properties for unit density
    hull_vertices: tuple = ()
    hull_faces: tuple = ()
    volume: float = 0.0
    center: Vec3 = (0.0, 0.0, 0.0)          # hull centroid, mesh frame
    inertia_unit: tuple = ()                 # (3, 3) about the centroid for density 1, mesh frame


@_frozen
class HeightField:
    name: str
    nrow: int
    ncol: int
    size_x: float
    size_y: float
    elevation: tuple    # (nrow * ncol,) row-major, m
    span: Span = NO_SPAN


@_frozen
class Collider:
    name: str
    body: str            # the authored body (kept when fusion moves the collider to another body)
    pos: Vec3            # in the owning body's frame (re-expressed by fusion)
    quat: Quat
    shape: Shape
    size: Vec3           # see runtime.collision.Geom
    mesh: str | None
    hfield: str | None
    friction: float
    restitution: float
    solref: tuple[float, float]
    group: int
    mask: int
    density: float
    rgba: tuple          # (4,) or ()
    span: Span = NO_SPAN


@_frozen
class MassProps:
    mass: float          # kg
    com: Vec3            # in the body frame, m
    inertia: tuple       # (3, 3) about the com in the body frame, kg·m²


@_frozen
class Body:
    name: str
    pos: Vec3            # world pose in the reference configuration
    quat: Quat
    colliders: tuple     # tuple[Collider, ...]
    mass: float | None   # as authored
    com: Vec3 | None
    inertia: tuple | None  # (6,) xx yy zz xy xz yz, or None
    span: Span = NO_SPAN
    props: MassProps | None = None   # filled by the geometry pass
    fused: tuple = ()    # names of authored bodies fused into this one (topology pass)


@_frozen
class Joint:
    name: str
    kind: int            # Kind.*
    parent: str
    child: str
    anchor: Vec3         # child frame
    axis: Vec3           # child frame, unit
    range: tuple | None  # (lower, upper) or None when unlimited
    damping: float
    stiffness: float
    armature: float
    reference: float
    spring_reference: float
    limit_solref: tuple[float, float]
    span: Span = NO_SPAN


@_frozen
class Actuator:
    name: str
    kind: int            # scene.proto ActuatorKind
    joint: str
    gear: float
    ctrl_range: tuple | None
    force_range: tuple | None
    gain: tuple          # (3,) affine form, see runtime.dynamics.actuator_forces
    bias: tuple          # (3,)
    span: Span = NO_SPAN


@_frozen
class BodyPattern:
    first: str
    second: str
    span: Span = NO_SPAN


@_frozen
class ColliderPairRule:
    first: str
    second: str
    friction: float | None
    restitution: float | None
    span: Span = NO_SPAN


@_frozen
class ContactRules:
    exclude: tuple = ()   # BodyPattern
    include: tuple = ()   # BodyPattern
    pairs: tuple = ()     # ColliderPairRule
    filter_parent: bool = True
    span: Span = NO_SPAN


@_frozen
class JointValue:
    joint: str
    q: tuple
    qd: tuple
    span: Span = NO_SPAN


@_frozen
class Keyframe:
    name: str
    time: float
    joints: tuple
    span: Span = NO_SPAN


@_frozen
class Topology:
    """The kinematic forest after fusion. Bodies are ordered parents first (by tree level)."""

    bodies: tuple            # body names, index 0 is "world"
    parent: tuple            # parent index per body (-1 for the world)
    root: tuple              # the world's child at the top of each body's tree (0 for the world)
    level: tuple             # depth per body (world 0)
    joints: tuple            # joint names in q order: bodies depth-first, a body's joints in authored order
    jnt_body: tuple          # body index per joint
    jnt_qpos_adr: tuple
    jnt_dof_adr: tuple
    nq: int
    nv: int
    dof_parent: tuple        # per dof, the previous dof toward the root (-1 at a root)
    fused_into: dict = field(default_factory=dict)   # authored body -> body that holds it now


@_frozen
class PairVerdict:
    """One candidate collider pair and what pruning decided, with the reason code."""

    collider1: str
    collider2: str
    body1: str
    body2: str
    kept: bool
    reason: str          # see passes/pruning.REASONS
    detail: str = ""


@_frozen
class PairGroupIR:
    kernel: str
    pairs: tuple         # ((collider1, collider2), ...) in the kernel's argument order
    ncon: int


@_frozen
class SceneIR:
    name: str
    source: str                  # path or "<string>"/"<scene>"
    source_hash: str             # sha256 of the source text (or of the serialized message)
    options: Options
    parameters: tuple            # ((name, value), ...)
    meshes: tuple
    hfields: tuple
    bodies: tuple                # authored bodies (the world is implicit)
    joints: tuple
    actuators: tuple
    contacts: ContactRules
    init: tuple                  # JointValue
    keyframes: tuple
    task: object = None          # scene_pb2.Task as authored (compiled by the task compiler)
    base_dir: str = "."
    topology: Topology | None = None
    pairs: tuple | None = None   # PairVerdict for every candidate pair
    groups: tuple | None = None  # PairGroupIR
    diagnostics: tuple = ()      # collected by the passes
    timings: tuple = ()          # ((pass name, seconds), ...)

    def replace(self, **kw) -> "SceneIR":
        return dataclasses.replace(self, **kw)

    def with_diagnostics(self, diags) -> "SceneIR":
        return dataclasses.replace(self, diagnostics=self.diagnostics + tuple(diags))

    def body(self, name: str) -> Body:
        for b in self.bodies:
            if b.name == name:
                return b
        raise KeyError(name)


def diag(code: str, message: str, span: Span = NO_SPAN, hint: str = "") -> Diagnostic:
    return Diagnostic(code=code, message=message, span=span, hint=hint)
