"""The compiled model and the simulation state.

Where it sits: `compiler/lower` builds a `Model` from the analysed IR; the step (`runtime/step.py`)
reads it; `runtime/io.py` saves it to and loads it from `<scene>.npz`.

Static or traced follows from the field's type (DESIGN.md, "Static structure, traced values"):
- `int`, `tuple`, `str` and `Static` (a read-only numpy array hashed by content) fields fix the shape of
  the computation: Python code branches on them while tracing, and they are part of the pytree's
  auxiliary data, so two models with equal structure share one compiled step;
- `jax.Array` fields are values (pytree leaves): batching them per environment (domain randomisation)
  or changing them never retraces.

Entities: bodies (index 0 is the world), joints, dofs (velocity coordinates), actuators, geoms
(colliders). Bodies are ordered parents first; joints and dofs follow their bodies.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

import jax
import numpy as np


class JointKind(enum.IntEnum):
    """Numbering matches `scene.proto`'s JointKind (FIXED joints never reach the runtime)."""

    HINGE = 0
    SLIDE = 1
    BALL = 2
    FREE = 3


JOINT_NQ = {JointKind.HINGE: 1, JointKind.SLIDE: 1, JointKind.BALL: 4, JointKind.FREE: 7}
JOINT_NV = {JointKind.HINGE: 1, JointKind.SLIDE: 1, JointKind.BALL: 3, JointKind.FREE: 6}


class ActuatorKind(enum.IntEnum):
    """Numbering matches `scene.proto`'s ActuatorKind. All kinds lower to MuJoCo's affine form
    force = gain·ctrl + bias₀ + bias₁·q + bias₂·qd, so the kind is documentation at run time."""

    MOTOR = 0
    POSITION = 1
    VELOCITY = 2
    GENERAL = 3


class Static:
    """A read-only numpy array that hashes and compares by content (usable as pytree aux data)."""

    __slots__ = ("array", "_key", "_hash")

    def __init__(self, array):
        a = np.array(array)
        a.setflags(write=False)
        self.array = a
        self._key = (a.dtype.str, a.shape, a.tobytes())
        self._hash = hash(self._key)

    def __hash__(self):
        return self._hash

    def __eq__(self, other):
        return isinstance(other, Static) and self._key == other._key

    def __repr__(self):
        return f"Static({self.array.tolist()!r})"

    def __len__(self):
        return len(self.array)

    def __getitem__(self, i):
        return self.array[i]

    def __iter__(self):
        return iter(self.array.tolist())


def _is_static_field(f: dataclasses.Field) -> bool:
    return f.metadata.get("static", False)


def static(**kw):
    return dataclasses.field(metadata={"static": True}, **kw)


def _register(cls):
    """Register a frozen dataclass as a pytree: static fields go to aux data, the rest are leaves."""
    fields = dataclasses.fields(cls)
    leaf_names = tuple(f.name for f in fields if not _is_static_field(f))
    static_names = tuple(f.name for f in fields if _is_static_field(f))

    def flatten(obj):
        return (tuple(getattr(obj, n) for n in leaf_names),
                tuple(getattr(obj, n) for n in static_names))

    def flatten_with_keys(obj):
        return (tuple((jax.tree_util.GetAttrKey(n), getattr(obj, n)) for n in leaf_names),
                tuple(getattr(obj, n) for n in static_names))

    def unflatten(aux, leaves):
        obj = object.__new__(cls)
        for n, v in zip(leaf_names, leaves):
            object.__setattr__(obj, n, v)
        for n, v in zip(static_names, aux):
            object.__setattr__(obj, n, v)
        return obj

    jax.tree_util.register_pytree_with_keys(cls, flatten_with_keys, unflatten, flatten)
    cls.leaf_fields = leaf_names
    cls.static_fields = static_names
    return cls


@dataclasses.dataclass(frozen=True, slots=True)
class PairGroup:
    """Collider pairs that share a kernel, checked together (vmapped over the pairs).

    kernel: kernel name in `collision_table.PAIRS` (`plane_sphere`, ...)
    geom1, geom2: (npair,) geom ids in the kernel's argument order
    ncon: contact rows the kernel returns per pair
    """

    kernel: str
    geom1: Static
    geom2: Static
    ncon: int

    def __hash__(self):
        return hash((self.kernel, self.geom1, self.geom2, self.ncon))


@_register
@dataclasses.dataclass(frozen=True, slots=True)
class Model:
    """A compiled scene. Shapes use nbody (world included), njnt, nq, nv, nu, ngeom."""

    # --- structure (static) -------------------------------------------------------------------
    name: str = static()
    nbody: int = static()
    njnt: int = static()
    nq: int = static()
    nv: int = static()
    nu: int = static()
    ngeom: int = static()
    body_parent_id: Static = static()   # (nbody,) parent body; -1 for the world
    body_root_id: Static = static()     # (nbody,) the world's child whose tree holds the body (0 for world)
    body_jnt_adr: Static = static()     # (nbody,) first joint of the body; -1 when it has none
    body_jnt_num: Static = static()     # (nbody,)
    body_dof_adr: Static = static()     # (nbody,) first dof of the body; -1 when it has none
    body_dof_num: Static = static()     # (nbody,)
    jnt_kind: Static = static()         # (njnt,) JointKind
    jnt_body_id: Static = static()      # (njnt,)
    jnt_qpos_adr: Static = static()     # (njnt,)
    jnt_dof_adr: Static = static()      # (njnt,)
    jnt_limited: Static = static()      # (njnt,) bool: the joint has a range (a soft limit constraint)
    dof_body_id: Static = static()      # (nv,)
    dof_jnt_id: Static = static()       # (nv,)
    dof_parent_id: Static = static()    # (nv,) previous dof on the path to the world; -1 at a root
    actuator_jnt_id: Static = static()  # (nu,)
    actuator_kind: Static = static()    # (nu,) ActuatorKind
    actuator_ctrl_limited: Static = static()   # (nu,) bool
    actuator_force_limited: Static = static()  # (nu,) bool
    geom_body_id: Static = static()     # (ngeom,)
    geom_shape: Static = static()       # (ngeom,) collision_table.Shape
    pair_groups: tuple = static()       # tuple[PairGroup, ...]
    pair_bounce: Static = static()      # (npair,) bool: restitution > 0 at compile time (only these bounce)
    substeps: int = static()
    solver_iterations: int = static()
    contact_budget: int = static()      # contact slots per environment, the closest candidates (0: all)
    limit_budget: int = static()        # limit rows per environment, the nearest limits (0: all)
    cone: str = static()                # "elliptic" | "pyramidal"
    integrator: str = static()          # "euler" | "rk4"
    dtype: str = static()               # "float32" | "float64"
    body_names: tuple = static()        # (nbody,) "world" first
    jnt_names: tuple = static()         # (njnt,)
    actuator_names: tuple = static()    # (nu,)
    geom_names: tuple = static()        # (ngeom,)

    # --- values (traced) -----------------------------------------------------------------------
    timestep: jax.Array                 # () control step, s (each substep is timestep / substeps)
    gravity: jax.Array                  # (3,) m/s²
    body_pos: jax.Array                 # (nbody, 3) position in the parent frame at the reference q, m
    body_quat: jax.Array                # (nbody, 4) orientation in the parent frame at the reference q
    body_mass: jax.Array                # (nbody,) kg
    body_com: jax.Array                 # (nbody, 3) centre of mass in the body frame, m
    body_inertia: jax.Array             # (nbody, 3, 3) about the com, in the body frame, kg·m²
    jnt_anchor: jax.Array               # (njnt, 3) in the body frame (after the preceding joints), m
    jnt_axis: jax.Array                 # (njnt, 3) unit, in the body frame
    jnt_reference: jax.Array            # (njnt,) q at the authored pose (hinge/slide), rad or m
    jnt_range: jax.Array                # (njnt, 2) rad or m; ball: (0, max angle)
    jnt_limit_solref: jax.Array         # (njnt, 2) time constant s, damping ratio
    dof_damping: jax.Array              # (nv,) N·m·s/rad or N·s/m
    dof_armature: jax.Array             # (nv,) kg·m² or kg
    dof_stiffness: jax.Array            # (nv,) N·m/rad or N/m (hinge/slide)
    dof_spring_ref: jax.Array           # (nv,) spring rest value (hinge/slide), rad or m
    actuator_gear: jax.Array            # (nu,)
    actuator_ctrl_range: jax.Array      # (nu, 2)
    actuator_force_range: jax.Array     # (nu, 2) N·m or N (before the gear)
    actuator_gain: jax.Array            # (nu, 3) force = gain₀·ctrl + bias₀ + bias₁·q + bias₂·qd
    actuator_bias: jax.Array            # (nu, 3)
    geom_pos: jax.Array                 # (ngeom, 3) in the body frame, m
    geom_quat: jax.Array                # (ngeom, 4) in the body frame
    geom_size: jax.Array                # (ngeom, 3) shape parameters, m (see collision.Geom)
    geom_friction: jax.Array            # (ngeom,)
    geom_restitution: jax.Array         # (ngeom,)
    geom_solref: jax.Array              # (ngeom, 2) contact time constant s, damping ratio
    geom_rgba: jax.Array                # (ngeom, 4) display colour
    geom_mesh: Any                      # tuple of collision_data.ConvexData per geom (None where unused)
    geom_hfield: Any                    # tuple of collision_data.HeightFieldData per geom (None where unused)
    pair_friction: jax.Array            # (npair,) combined friction of each kept pair, group order
    pair_restitution: jax.Array         # (npair,)
    pair_solref: jax.Array              # (npair, 2)
    q0: jax.Array                       # (nq,) initial joint positions
    qd0: jax.Array                      # (nv,) initial joint velocities


@_register
@dataclasses.dataclass(frozen=True, slots=True)
class State:
    """The state of one environment (leading batch axes under vmap).

    q: (nq,) joint positions (free: position then quaternion w, x, y, z; ball: quaternion)
    qd: (nv,) joint velocities (free: world linear velocity then body-frame angular velocity; ball: body
        frame angular velocity), as MuJoCo's qpos/qvel
    time: () s
    xpos: (nbody, 3) body world positions after the step, m
    xquat: (nbody, 4) body world orientations after the step
    contact_force: (nbody, 3) world contact force on each body in the last substep, N
    """

    q: jax.Array
    qd: jax.Array
    time: jax.Array
    xpos: jax.Array
    xquat: jax.Array
    contact_force: jax.Array

    def replace(self, **kw) -> "State":
        return dataclasses.replace(self, **kw)
