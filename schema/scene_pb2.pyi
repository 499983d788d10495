from google.protobuf import descriptor_pb2 as _descriptor_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Integrator(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EULER: _ClassVar[Integrator]
    RK4: _ClassVar[Integrator]

class Precision(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FLOAT32: _ClassVar[Precision]
    FLOAT64: _ClassVar[Precision]

class FrictionCone(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ELLIPTIC: _ClassVar[FrictionCone]
    PYRAMIDAL: _ClassVar[FrictionCone]

class JointKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    HINGE: _ClassVar[JointKind]
    SLIDE: _ClassVar[JointKind]
    BALL: _ClassVar[JointKind]
    FREE: _ClassVar[JointKind]
    FIXED: _ClassVar[JointKind]

class ActuatorKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MOTOR: _ClassVar[ActuatorKind]
    POSITION: _ClassVar[ActuatorKind]
    VELOCITY: _ClassVar[ActuatorKind]
    GENERAL: _ClassVar[ActuatorKind]
EULER: Integrator
RK4: Integrator
FLOAT32: Precision
FLOAT64: Precision
ELLIPTIC: FrictionCone
PYRAMIDAL: FrictionCone
HINGE: JointKind
SLIDE: JointKind
BALL: JointKind
FREE: JointKind
FIXED: JointKind
MOTOR: ActuatorKind
POSITION: ActuatorKind
VELOCITY: ActuatorKind
GENERAL: ActuatorKind
UNIT_FIELD_NUMBER: _ClassVar[int]
unit: _descriptor.FieldDescriptor

class Scene(_message.Message):
    __slots__ = ("name", "options", "parameters", "meshes", "bodies", "joints", "actuators", "contacts", "init", "keyframes", "task", "heightfields")
    NAME_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    MESHES_FIELD_NUMBER: _ClassVar[int]
    BODIES_FIELD_NUMBER: _ClassVar[int]
    JOINTS_FIELD_NUMBER: _ClassVar[int]
    ACTUATORS_FIELD_NUMBER: _ClassVar[int]
    CONTACTS_FIELD_NUMBER: _ClassVar[int]
    INIT_FIELD_NUMBER: _ClassVar[int]
    KEYFRAMES_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    HEIGHTFIELDS_FIELD_NUMBER: _ClassVar[int]
    name: str
    options: Options
    parameters: _containers.RepeatedCompositeFieldContainer[Parameter]
    meshes: _containers.RepeatedCompositeFieldContainer[Mesh]
    bodies: _containers.RepeatedCompositeFieldContainer[Body]
    joints: _containers.RepeatedCompositeFieldContainer[Joint]
    actuators: _containers.RepeatedCompositeFieldContainer[Actuator]
    contacts: ContactRules
    init: _containers.RepeatedCompositeFieldContainer[JointValue]
    keyframes: _containers.RepeatedCompositeFieldContainer[Keyframe]
    task: Task
    heightfields: _containers.RepeatedCompositeFieldContainer[HeightField]
    def __init__(self, name: _Optional[str] = ..., options: _Optional[_Union[Options, _Mapping]] = ..., parameters: _Optional[_Iterable[_Union[Parameter, _Mapping]]] = ..., meshes: _Optional[_Iterable[_Union[Mesh, _Mapping]]] = ..., bodies: _Optional[_Iterable[_Union[Body, _Mapping]]] = ..., joints: _Optional[_Iterable[_Union[Joint, _Mapping]]] = ..., actuators: _Optional[_Iterable[_Union[Actuator, _Mapping]]] = ..., contacts: _Optional[_Union[ContactRules, _Mapping]] = ..., init: _Optional[_Iterable[_Union[JointValue, _Mapping]]] = ..., keyframes: _Optional[_Iterable[_Union[Keyframe, _Mapping]]] = ..., task: _Optional[_Union[Task, _Mapping]] = ..., heightfields: _Optional[_Iterable[_Union[HeightField, _Mapping]]] = ...) -> None: ...

class Options(_message.Message):
    __slots__ = ("timestep", "substeps", "gravity", "solver_iterations", "precision", "friction", "restitution", "contact_time_constant", "contact_damping_ratio", "limit_time_constant", "limit_damping_ratio", "friction_cone", "density", "integrator", "contact_budget", "limit_budget")
    TIMESTEP_FIELD_NUMBER: _ClassVar[int]
    SUBSTEPS_FIELD_NUMBER: _ClassVar[int]
    GRAVITY_FIELD_NUMBER: _ClassVar[int]
    SOLVER_ITERATIONS_FIELD_NUMBER: _ClassVar[int]
    PRECISION_FIELD_NUMBER: _ClassVar[int]
    FRICTION_FIELD_NUMBER: _ClassVar[int]
    RESTITUTION_FIELD_NUMBER: _ClassVar[int]
    CONTACT_TIME_CONSTANT_FIELD_NUMBER: _ClassVar[int]
    CONTACT_DAMPING_RATIO_FIELD_NUMBER: _ClassVar[int]
    LIMIT_TIME_CONSTANT_FIELD_NUMBER: _ClassVar[int]
    LIMIT_DAMPING_RATIO_FIELD_NUMBER: _ClassVar[int]
    FRICTION_CONE_FIELD_NUMBER: _ClassVar[int]
    DENSITY_FIELD_NUMBER: _ClassVar[int]
    INTEGRATOR_FIELD_NUMBER: _ClassVar[int]
    CONTACT_BUDGET_FIELD_NUMBER: _ClassVar[int]
    LIMIT_BUDGET_FIELD_NUMBER: _ClassVar[int]
    timestep: float
    substeps: int
    gravity: _containers.RepeatedScalarFieldContainer[float]
    solver_iterations: int
    precision: Precision
    friction: float
    restitution: float
    contact_time_constant: float
    contact_damping_ratio: float
    limit_time_constant: float
    limit_damping_ratio: float
    friction_cone: FrictionCone
    density: float
    integrator: Integrator
    contact_budget: int
    limit_budget: int
    def __init__(self, timestep: _Optional[float] = ..., substeps: _Optional[int] = ..., gravity: _Optional[_Iterable[float]] = ..., solver_iterations: _Optional[int] = ..., precision: _Optional[_Union[Precision, str]] = ..., friction: _Optional[float] = ..., restitution: _Optional[float] = ..., contact_time_constant: _Optional[float] = ..., contact_damping_ratio: _Optional[float] = ..., limit_time_constant: _Optional[float] = ..., limit_damping_ratio: _Optional[float] = ..., friction_cone: _Optional[_Union[FrictionCone, str]] = ..., density: _Optional[float] = ..., integrator: _Optional[_Union[Integrator, str]] = ..., contact_budget: _Optional[int] = ..., limit_budget: _Optional[int] = ...) -> None: ...

class Parameter(_message.Message):
    __slots__ = ("name", "value", "expression", "unit", "doc")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    EXPRESSION_FIELD_NUMBER: _ClassVar[int]
    UNIT_FIELD_NUMBER: _ClassVar[int]
    DOC_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: float
    expression: str
    unit: str
    doc: str
    def __init__(self, name: _Optional[str] = ..., value: _Optional[float] = ..., expression: _Optional[str] = ..., unit: _Optional[str] = ..., doc: _Optional[str] = ...) -> None: ...

class Mesh(_message.Message):
    __slots__ = ("name", "file", "vertices", "faces", "scale")
    NAME_FIELD_NUMBER: _ClassVar[int]
    FILE_FIELD_NUMBER: _ClassVar[int]
    VERTICES_FIELD_NUMBER: _ClassVar[int]
    FACES_FIELD_NUMBER: _ClassVar[int]
    SCALE_FIELD_NUMBER: _ClassVar[int]
    name: str
    file: str
    vertices: _containers.RepeatedScalarFieldContainer[float]
    faces: _containers.RepeatedScalarFieldContainer[int]
    scale: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, name: _Optional[str] = ..., file: _Optional[str] = ..., vertices: _Optional[_Iterable[float]] = ..., faces: _Optional[_Iterable[int]] = ..., scale: _Optional[_Iterable[float]] = ...) -> None: ...

class HeightField(_message.Message):
    __slots__ = ("name", "nrow", "ncol", "size_x", "size_y", "elevation")
    NAME_FIELD_NUMBER: _ClassVar[int]
    NROW_FIELD_NUMBER: _ClassVar[int]
    NCOL_FIELD_NUMBER: _ClassVar[int]
    SIZE_X_FIELD_NUMBER: _ClassVar[int]
    SIZE_Y_FIELD_NUMBER: _ClassVar[int]
    ELEVATION_FIELD_NUMBER: _ClassVar[int]
    name: str
    nrow: int
    ncol: int
    size_x: float
    size_y: float
    elevation: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, name: _Optional[str] = ..., nrow: _Optional[int] = ..., ncol: _Optional[int] = ..., size_x: _Optional[float] = ..., size_y: _Optional[float] = ..., elevation: _Optional[_Iterable[float]] = ...) -> None: ...

class Body(_message.Message):
    __slots__ = ("name", "pos", "quat", "euler", "mass", "inertia", "com", "colliders", "doc")
    NAME_FIELD_NUMBER: _ClassVar[int]
    POS_FIELD_NUMBER: _ClassVar[int]
    QUAT_FIELD_NUMBER: _ClassVar[int]
    EULER_FIELD_NUMBER: _ClassVar[int]
    MASS_FIELD_NUMBER: _ClassVar[int]
    INERTIA_FIELD_NUMBER: _ClassVar[int]
    COM_FIELD_NUMBER: _ClassVar[int]
    COLLIDERS_FIELD_NUMBER: _ClassVar[int]
    DOC_FIELD_NUMBER: _ClassVar[int]
    name: str
    pos: _containers.RepeatedScalarFieldContainer[float]
    quat: _containers.RepeatedScalarFieldContainer[float]
    euler: _containers.RepeatedScalarFieldContainer[float]
    mass: float
    inertia: _containers.RepeatedScalarFieldContainer[float]
    com: _containers.RepeatedScalarFieldContainer[float]
    colliders: _containers.RepeatedCompositeFieldContainer[Collider]
    doc: str
    def __init__(self, name: _Optional[str] = ..., pos: _Optional[_Iterable[float]] = ..., quat: _Optional[_Iterable[float]] = ..., euler: _Optional[_Iterable[float]] = ..., mass: _Optional[float] = ..., inertia: _Optional[_Iterable[float]] = ..., com: _Optional[_Iterable[float]] = ..., colliders: _Optional[_Iterable[_Union[Collider, _Mapping]]] = ..., doc: _Optional[str] = ...) -> None: ...

class Collider(_message.Message):
    __slots__ = ("name", "pos", "quat", "euler", "plane", "sphere", "capsule", "box", "mesh", "heightfield", "friction", "restitution", "time_constant", "damping_ratio", "group", "mask", "density", "rgba")
    NAME_FIELD_NUMBER: _ClassVar[int]
    POS_FIELD_NUMBER: _ClassVar[int]
    QUAT_FIELD_NUMBER: _ClassVar[int]
    EULER_FIELD_NUMBER: _ClassVar[int]
    PLANE_FIELD_NUMBER: _ClassVar[int]
    SPHERE_FIELD_NUMBER: _ClassVar[int]
    CAPSULE_FIELD_NUMBER: _ClassVar[int]
    BOX_FIELD_NUMBER: _ClassVar[int]
    MESH_FIELD_NUMBER: _ClassVar[int]
    HEIGHTFIELD_FIELD_NUMBER: _ClassVar[int]
    FRICTION_FIELD_NUMBER: _ClassVar[int]
    RESTITUTION_FIELD_NUMBER: _ClassVar[int]
    TIME_CONSTANT_FIELD_NUMBER: _ClassVar[int]
    DAMPING_RATIO_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    MASK_FIELD_NUMBER: _ClassVar[int]
    DENSITY_FIELD_NUMBER: _ClassVar[int]
    RGBA_FIELD_NUMBER: _ClassVar[int]
    name: str
    pos: _containers.RepeatedScalarFieldContainer[float]
    quat: _containers.RepeatedScalarFieldContainer[float]
    euler: _containers.RepeatedScalarFieldContainer[float]
    plane: Plane
    sphere: Sphere
    capsule: Capsule
    box: Box
    mesh: MeshShape
    heightfield: HeightFieldShape
    friction: float
    restitution: float
    time_constant: float
    damping_ratio: float
    group: int
    mask: int
    density: float
    rgba: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, name: _Optional[str] = ..., pos: _Optional[_Iterable[float]] = ..., quat: _Optional[_Iterable[float]] = ..., euler: _Optional[_Iterable[float]] = ..., plane: _Optional[_Union[Plane, _Mapping]] = ..., sphere: _Optional[_Union[Sphere, _Mapping]] = ..., capsule: _Optional[_Union[Capsule, _Mapping]] = ..., box: _Optional[_Union[Box, _Mapping]] = ..., mesh: _Optional[_Union[MeshShape, _Mapping]] = ..., heightfield: _Optional[_Union[HeightFieldShape, _Mapping]] = ..., friction: _Optional[float] = ..., restitution: _Optional[float] = ..., time_constant: _Optional[float] = ..., damping_ratio: _Optional[float] = ..., group: _Optional[int] = ..., mask: _Optional[int] = ..., density: _Optional[float] = ..., rgba: _Optional[_Iterable[float]] = ...) -> None: ...

class Plane(_message.Message):
    __slots__ = ("size",)
    SIZE_FIELD_NUMBER: _ClassVar[int]
    size: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, size: _Optional[_Iterable[float]] = ...) -> None: ...

class Sphere(_message.Message):
    __slots__ = ("radius",)
    RADIUS_FIELD_NUMBER: _ClassVar[int]
    radius: float
    def __init__(self, radius: _Optional[float] = ...) -> None: ...

class Capsule(_message.Message):
    __slots__ = ("radius", "half_length", "fromto")
    RADIUS_FIELD_NUMBER: _ClassVar[int]
    HALF_LENGTH_FIELD_NUMBER: _ClassVar[int]
    FROMTO_FIELD_NUMBER: _ClassVar[int]
    radius: float
    half_length: float
    fromto: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, radius: _Optional[float] = ..., half_length: _Optional[float] = ..., fromto: _Optional[_Iterable[float]] = ...) -> None: ...

class Box(_message.Message):
    __slots__ = ("half_size",)
    HALF_SIZE_FIELD_NUMBER: _ClassVar[int]
    half_size: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, half_size: _Optional[_Iterable[float]] = ...) -> None: ...

class MeshShape(_message.Message):
    __slots__ = ("mesh",)
    MESH_FIELD_NUMBER: _ClassVar[int]
    mesh: str
    def __init__(self, mesh: _Optional[str] = ...) -> None: ...

class HeightFieldShape(_message.Message):
    __slots__ = ("heightfield",)
    HEIGHTFIELD_FIELD_NUMBER: _ClassVar[int]
    heightfield: str
    def __init__(self, heightfield: _Optional[str] = ...) -> None: ...

class Joint(_message.Message):
    __slots__ = ("name", "kind", "parent", "child", "anchor", "axis", "range", "damping", "stiffness", "armature", "reference", "spring_reference", "limit_time_constant", "limit_damping_ratio", "doc")
    NAME_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    PARENT_FIELD_NUMBER: _ClassVar[int]
    CHILD_FIELD_NUMBER: _ClassVar[int]
    ANCHOR_FIELD_NUMBER: _ClassVar[int]
    AXIS_FIELD_NUMBER: _ClassVar[int]
    RANGE_FIELD_NUMBER: _ClassVar[int]
    DAMPING_FIELD_NUMBER: _ClassVar[int]
    STIFFNESS_FIELD_NUMBER: _ClassVar[int]
    ARMATURE_FIELD_NUMBER: _ClassVar[int]
    REFERENCE_FIELD_NUMBER: _ClassVar[int]
    SPRING_REFERENCE_FIELD_NUMBER: _ClassVar[int]
    LIMIT_TIME_CONSTANT_FIELD_NUMBER: _ClassVar[int]
    LIMIT_DAMPING_RATIO_FIELD_NUMBER: _ClassVar[int]
    DOC_FIELD_NUMBER: _ClassVar[int]
    name: str
    kind: JointKind
    parent: str
    child: str
    anchor: _containers.RepeatedScalarFieldContainer[float]
    axis: _containers.RepeatedScalarFieldContainer[float]
    range: _containers.RepeatedScalarFieldContainer[float]
    damping: float
    stiffness: float
    armature: float
    reference: float
    spring_reference: float
    limit_time_constant: float
    limit_damping_ratio: float
    doc: str
    def __init__(self, name: _Optional[str] = ..., kind: _Optional[_Union[JointKind, str]] = ..., parent: _Optional[str] = ..., child: _Optional[str] = ..., anchor: _Optional[_Iterable[float]] = ..., axis: _Optional[_Iterable[float]] = ..., range: _Optional[_Iterable[float]] = ..., damping: _Optional[float] = ..., stiffness: _Optional[float] = ..., armature: _Optional[float] = ..., reference: _Optional[float] = ..., spring_reference: _Optional[float] = ..., limit_time_constant: _Optional[float] = ..., limit_damping_ratio: _Optional[float] = ..., doc: _Optional[str] = ...) -> None: ...

class Actuator(_message.Message):
    __slots__ = ("name", "kind", "joint", "gear", "ctrl_range", "force_range", "kp", "kv", "gain", "bias", "doc")
    NAME_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    JOINT_FIELD_NUMBER: _ClassVar[int]
    GEAR_FIELD_NUMBER: _ClassVar[int]
    CTRL_RANGE_FIELD_NUMBER: _ClassVar[int]
    FORCE_RANGE_FIELD_NUMBER: _ClassVar[int]
    KP_FIELD_NUMBER: _ClassVar[int]
    KV_FIELD_NUMBER: _ClassVar[int]
    GAIN_FIELD_NUMBER: _ClassVar[int]
    BIAS_FIELD_NUMBER: _ClassVar[int]
    DOC_FIELD_NUMBER: _ClassVar[int]
    name: str
    kind: ActuatorKind
    joint: str
    gear: float
    ctrl_range: _containers.RepeatedScalarFieldContainer[float]
    force_range: _containers.RepeatedScalarFieldContainer[float]
    kp: float
    kv: float
    gain: _containers.RepeatedScalarFieldContainer[float]
    bias: _containers.RepeatedScalarFieldContainer[float]
    doc: str
    def __init__(self, name: _Optional[str] = ..., kind: _Optional[_Union[ActuatorKind, str]] = ..., joint: _Optional[str] = ..., gear: _Optional[float] = ..., ctrl_range: _Optional[_Iterable[float]] = ..., force_range: _Optional[_Iterable[float]] = ..., kp: _Optional[float] = ..., kv: _Optional[float] = ..., gain: _Optional[_Iterable[float]] = ..., bias: _Optional[_Iterable[float]] = ..., doc: _Optional[str] = ...) -> None: ...

class ContactRules(_message.Message):
    __slots__ = ("exclude", "include", "pairs", "filter_parent")
    EXCLUDE_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_FIELD_NUMBER: _ClassVar[int]
    PAIRS_FIELD_NUMBER: _ClassVar[int]
    FILTER_PARENT_FIELD_NUMBER: _ClassVar[int]
    exclude: _containers.RepeatedCompositeFieldContainer[BodyPair]
    include: _containers.RepeatedCompositeFieldContainer[BodyPair]
    pairs: _containers.RepeatedCompositeFieldContainer[ColliderPair]
    filter_parent: bool
    def __init__(self, exclude: _Optional[_Iterable[_Union[BodyPair, _Mapping]]] = ..., include: _Optional[_Iterable[_Union[BodyPair, _Mapping]]] = ..., pairs: _Optional[_Iterable[_Union[ColliderPair, _Mapping]]] = ..., filter_parent: _Optional[bool] = ...) -> None: ...

class BodyPair(_message.Message):
    __slots__ = ("first", "second")
    FIRST_FIELD_NUMBER: _ClassVar[int]
    SECOND_FIELD_NUMBER: _ClassVar[int]
    first: str
    second: str
    def __init__(self, first: _Optional[str] = ..., second: _Optional[str] = ...) -> None: ...

class ColliderPair(_message.Message):
    __slots__ = ("first", "second", "friction", "restitution")
    FIRST_FIELD_NUMBER: _ClassVar[int]
    SECOND_FIELD_NUMBER: _ClassVar[int]
    FRICTION_FIELD_NUMBER: _ClassVar[int]
    RESTITUTION_FIELD_NUMBER: _ClassVar[int]
    first: str
    second: str
    friction: float
    restitution: float
    def __init__(self, first: _Optional[str] = ..., second: _Optional[str] = ..., friction: _Optional[float] = ..., restitution: _Optional[float] = ...) -> None: ...

class JointValue(_message.Message):
    __slots__ = ("joint", "q", "qd")
    JOINT_FIELD_NUMBER: _ClassVar[int]
    Q_FIELD_NUMBER: _ClassVar[int]
    QD_FIELD_NUMBER: _ClassVar[int]
    joint: str
    q: _containers.RepeatedScalarFieldContainer[float]
    qd: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, joint: _Optional[str] = ..., q: _Optional[_Iterable[float]] = ..., qd: _Optional[_Iterable[float]] = ...) -> None: ...

class Keyframe(_message.Message):
    __slots__ = ("name", "time", "joints")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    JOINTS_FIELD_NUMBER: _ClassVar[int]
    name: str
    time: float
    joints: _containers.RepeatedCompositeFieldContainer[JointValue]
    def __init__(self, name: _Optional[str] = ..., time: _Optional[float] = ..., joints: _Optional[_Iterable[_Union[JointValue, _Mapping]]] = ...) -> None: ...

class Task(_message.Message):
    __slots__ = ("observations", "reward", "termination", "reset_noise", "targets", "episode_length", "action_repeat")
    OBSERVATIONS_FIELD_NUMBER: _ClassVar[int]
    REWARD_FIELD_NUMBER: _ClassVar[int]
    TERMINATION_FIELD_NUMBER: _ClassVar[int]
    RESET_NOISE_FIELD_NUMBER: _ClassVar[int]
    TARGETS_FIELD_NUMBER: _ClassVar[int]
    EPISODE_LENGTH_FIELD_NUMBER: _ClassVar[int]
    ACTION_REPEAT_FIELD_NUMBER: _ClassVar[int]
    observations: _containers.RepeatedCompositeFieldContainer[Term]
    reward: _containers.RepeatedCompositeFieldContainer[Term]
    termination: _containers.RepeatedCompositeFieldContainer[Term]
    reset_noise: ResetNoise
    targets: _containers.RepeatedCompositeFieldContainer[Target]
    episode_length: int
    action_repeat: int
    def __init__(self, observations: _Optional[_Iterable[_Union[Term, _Mapping]]] = ..., reward: _Optional[_Iterable[_Union[Term, _Mapping]]] = ..., termination: _Optional[_Iterable[_Union[Term, _Mapping]]] = ..., reset_noise: _Optional[_Union[ResetNoise, _Mapping]] = ..., targets: _Optional[_Iterable[_Union[Target, _Mapping]]] = ..., episode_length: _Optional[int] = ..., action_repeat: _Optional[int] = ...) -> None: ...

class Term(_message.Message):
    __slots__ = ("name", "expr", "weight")
    NAME_FIELD_NUMBER: _ClassVar[int]
    EXPR_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    name: str
    expr: str
    weight: float
    def __init__(self, name: _Optional[str] = ..., expr: _Optional[str] = ..., weight: _Optional[float] = ...) -> None: ...

class ResetNoise(_message.Message):
    __slots__ = ("q", "qd")
    Q_FIELD_NUMBER: _ClassVar[int]
    QD_FIELD_NUMBER: _ClassVar[int]
    q: float
    qd: float
    def __init__(self, q: _Optional[float] = ..., qd: _Optional[float] = ...) -> None: ...

class Target(_message.Message):
    __slots__ = ("name", "pos", "low", "high", "body", "radius", "random_start")
    NAME_FIELD_NUMBER: _ClassVar[int]
    POS_FIELD_NUMBER: _ClassVar[int]
    LOW_FIELD_NUMBER: _ClassVar[int]
    HIGH_FIELD_NUMBER: _ClassVar[int]
    BODY_FIELD_NUMBER: _ClassVar[int]
    RADIUS_FIELD_NUMBER: _ClassVar[int]
    RANDOM_START_FIELD_NUMBER: _ClassVar[int]
    name: str
    pos: _containers.RepeatedScalarFieldContainer[float]
    low: _containers.RepeatedScalarFieldContainer[float]
    high: _containers.RepeatedScalarFieldContainer[float]
    body: str
    radius: float
    random_start: bool
    def __init__(self, name: _Optional[str] = ..., pos: _Optional[_Iterable[float]] = ..., low: _Optional[_Iterable[float]] = ..., high: _Optional[_Iterable[float]] = ..., body: _Optional[str] = ..., radius: _Optional[float] = ..., random_start: _Optional[bool] = ...) -> None: ...
