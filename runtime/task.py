"""Tasks at run time: the lowered task of a scene, the quantities it reads, and its evaluator.

Where it sits: `compiler/task` checks a scene's task expressions and lowers each to a small tree of
tuples (names already resolved to indices of the compiled model); `compiler/emit` stores the
`TaskSpec` as JSON inside `<scene>.npz`; `runtime/envs` evaluates it after every control step. The
evaluator walks the tree while jax traces, so each expression becomes a few branch-free jnp
operations; no expression text is ever executed. Python-defined tasks read the same `View`.

Tree format (all tuples; JSON lists when stored):
  ("const", value)                       a float, a bool or a tuple of floats
  ("body", field, prev, body_id, offset) field in BODY_FIELDS; offset None, or (pos (3,), quat (4,)) of
                                         a body fused into `body_id`, in that body's frame
  ("read", source, prev, a, b, scalar)   source in q, qd, action, contact_force (flattened, world first);
                                         entries [a, b), or entry a when scalar
  ("com", "pos"|"vel", prev)             centre of mass of the moving bodies
  ("target", prev, index)                a target's position
  ("time", prev), ("dt",)
  ("neg", a), ("not", a), ("bin", op, a, b), ("call", fn, (args...)), ("index", a, i),
  ("slice", a, i, j), ("vec", (items...))
"""

from __future__ import annotations

import dataclasses
import json

import jax
import jax.numpy as jnp
import numpy as np

from . import step as rstep
from .types import JointKind, Model, State

TASK_FORMAT = 1
BODY_FIELDS = ("pos", "quat", "vel", "angvel", "xaxis", "yaxis", "zaxis", "contact_force")


# --- the lowered task ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Term:
    """One observation, reward or termination term. size: entries it contributes (observations)."""

    name: str
    tree: tuple
    weight: float = 1.0
    size: int = 1


@dataclasses.dataclass(frozen=True)
class Target:
    """A point that moves to a uniform draw from [low, high] when `body_id` comes within `radius`.

    pos, low, high: (3,) m, world; body_id: model body (-1: never moves); offset: (3,) position of the
    watched point in that body's frame (non-zero for a body fused into `body_id`), m; random_start:
    reset draws the starting position uniformly from [low, high] instead of using pos.
    """

    name: str
    pos: tuple
    low: tuple
    high: tuple
    body_id: int
    offset: tuple
    radius: float
    random_start: bool = False   # each reset draws the start from [low, high] instead of pos


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """A compiled task. Hashable (tuples only), so jitted code may close over it."""

    observations: tuple       # Term
    reward: tuple             # Term
    termination: tuple        # Term
    reset_noise_q: float      # half-width of the uniform noise on joint positions, rad or m
    reset_noise_qd: float     # on velocities, rad/s or m/s
    targets: tuple            # Target
    episode_length: int       # control steps
    action_repeat: int

    @property
    def observation_size(self) -> int:
        return sum(t.size for t in self.observations)

    def to_json(self) -> str:
        data = dataclasses.asdict(self)
        data["format"] = TASK_FORMAT
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "TaskSpec":
        data = json.loads(text)
        if data.pop("format", None) != TASK_FORMAT:
            raise ValueError(f"task format is not {TASK_FORMAT}; recompile the scene")
        terms = lambda items: tuple(Term(t["name"], _tuplify(t["tree"]), float(t["weight"]),
                                         int(t["size"])) for t in items)
        targets = tuple(Target(t["name"], tuple(t["pos"]), tuple(t["low"]), tuple(t["high"]),
                               int(t["body_id"]), tuple(t["offset"]), float(t["radius"]),
                               bool(t.get("random_start", False)))
                        for t in data["targets"])
        return cls(terms(data["observations"]), terms(data["reward"]), terms(data["termination"]),
                   float(data["reset_noise_q"]), float(data["reset_noise_qd"]), targets,
                   int(data["episode_length"]), int(data["action_repeat"]))


def _tuplify(x):
    """JSON lists back to the tuples of the tree (hashable, so the spec can be static)."""
    if isinstance(x, list):
        return tuple(_tuplify(v) for v in x)
    return x


# --- quantities ---------------------------------------------------------------------------------


def _quat_mul(p, q):
    w1, x1, y1, z1 = p[..., 0], p[..., 1], p[..., 2], p[..., 3]
    w2, x2, y2, z2 = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    return jnp.stack([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
                      w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                      w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
                      w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2], axis=-1)


def _quat_conj(q):
    return q * jnp.asarray([1.0, -1.0, -1.0, -1.0], q.dtype)


def quat_rotate(q, v):
    """Rotate 3-vectors `v` by unit quaternions `q` (w, x, y, z); broadcasts over leading axes."""
    w, u = q[..., :1], q[..., 1:]
    t = 2.0 * jnp.cross(u, v)
    return v + w * t + jnp.cross(u, t)


def quat_rotate_inverse(q, v):
    return quat_rotate(_quat_conj(q), v)


def _qdot(m: Model, q, qd):
    """dq/dt from the velocities: hinge/slide and free positions move at qd; quaternions of ball and
    free joints at ½·q⊗(0, ω) with ω the body-frame angular velocity (MuJoCo's convention)."""
    parts = []
    for j in range(m.njnt):
        a, d = int(m.jnt_qpos_adr[j]), int(m.jnt_dof_adr[j])
        kind = JointKind(int(m.jnt_kind[j]))
        if kind is JointKind.FREE:
            parts.append(qd[d:d + 3])
            quat, omega = q[a + 3:a + 7], qd[d + 3:d + 6]
        elif kind is JointKind.BALL:
            quat, omega = q[a:a + 4], qd[d:d + 3]
        else:
            parts.append(qd[d:d + 1])
            continue
        pure = jnp.concatenate([jnp.zeros((1,), qd.dtype), omega])
        parts.append(0.5 * _quat_mul(quat, pure))
    return jnp.concatenate(parts) if parts else jnp.zeros((0,), q.dtype)


def kinematics_and_velocities(m: Model, q, qd):
    """Body poses, velocities and the centre of mass, from the public `init` (forward kinematics)
    differentiated along dq/dt with a jvp, so no internal of the step is relied on.

    Returns xpos (nbody, 3), xquat (nbody, 4), vel (nbody, 3) world linear velocity of each body
    origin, angvel (nbody, 3) world angular velocity, com (3,), com_vel (3,).
    """
    mass = m.body_mass.at[0].set(0.0)
    total = jnp.maximum(jnp.sum(mass), jnp.finfo(q.dtype).tiny)

    def poses(qq):
        s = rstep.init(m, qq)
        xipos = s.xpos + quat_rotate(s.xquat, m.body_com.astype(qq.dtype))
        com = jnp.sum(mass[:, None] * xipos, axis=0) / total
        return s.xpos, s.xquat, com

    (xpos, xquat, com), (dpos, dquat, dcom) = jax.jvp(poses, (q,), (_qdot(m, q, qd),))
    angvel = 2.0 * _quat_mul(dquat, _quat_conj(xquat))[:, 1:]
    return xpos, xquat, dpos, angvel, com, dcom


class View:
    """The quantities of one environment at one instant (after a step, or at reset), computed lazily
    while tracing. Python tasks use it by name (`view.body_pos("torso")`); the evaluator by index.

    state: the physics State; action: (nu,) after clipping; targets: (ntarget, 3) positions, m;
    prev: the View at the start of the step (itself at reset).
    """

    def __init__(self, model: Model, state: State, action, targets, prev: "View | None" = None):
        self.model = model
        self.state = state
        self.action = action
        self.targets = targets
        self.prev = self if prev is None else prev
        self._kin = None

    # -- raw state --
    @property
    def q(self):
        return self.state.q

    @property
    def qd(self):
        return self.state.qd

    @property
    def time(self):
        return self.state.time

    @property
    def dt(self):
        return self.model.timestep.astype(self.state.q.dtype)

    @property
    def contact_force(self):
        """(nbody, 3) world contact force on each body (world row first), N."""
        return self.state.contact_force

    def _kinematics(self):
        if self._kin is None:
            self._kin = kinematics_and_velocities(self.model, self.state.q, self.state.qd)
        return self._kin

    # -- by index (the evaluator) --
    def body(self, field: str, body_id: int, offset=None):
        """A body quantity (see BODY_FIELDS); `offset` places a fused body within `body_id`."""
        s = self.state
        if field == "contact_force":
            return s.contact_force[body_id]
        dtype = s.q.dtype
        if field in ("pos", "quat", "xaxis", "yaxis", "zaxis") and offset is None:
            pos, quat = s.xpos[body_id], s.xquat[body_id]
        else:
            xpos, xquat, vel, angvel, _, _ = self._kinematics()
            pos, quat = xpos[body_id], xquat[body_id]
        if offset is not None:
            off_pos = jnp.asarray(offset[0], dtype)
            off_quat = jnp.asarray(offset[1], dtype)
            arm = quat_rotate(quat, off_pos)
            pos, quat = pos + arm, _quat_mul(quat, off_quat)
        if field == "pos":
            return pos
        if field == "quat":
            return quat
        if field in ("xaxis", "yaxis", "zaxis"):
            axis = jnp.zeros((3,), dtype).at["xyz".index(field[0])].set(1.0)
            return quat_rotate(quat, axis)
        if field == "angvel":
            return angvel[body_id]
        if field == "vel":
            v = vel[body_id]
            return v if offset is None else v + jnp.cross(angvel[body_id], arm)
        raise KeyError(field)

    def com(self, field: str):
        _, _, _, _, com, com_vel = self._kinematics()
        return com if field == "pos" else com_vel

    # -- by name (Python tasks) --
    def body_id(self, name: str) -> int:
        return self.model.body_names.index(name)

    def body_pos(self, name):
        return self.body("pos", self.body_id(name))

    def body_quat(self, name):
        return self.body("quat", self.body_id(name))

    def body_vel(self, name):
        return self.body("vel", self.body_id(name))

    def body_angvel(self, name):
        return self.body("angvel", self.body_id(name))

    def body_axis(self, name, axis: str = "z"):
        return self.body(axis + "axis", self.body_id(name))

    def body_contact_force(self, name):
        return self.body("contact_force", self.body_id(name))

    def joint_q(self, name):
        m = self.model
        j = m.jnt_names.index(name)
        a = int(m.jnt_qpos_adr[j])
        n = {0: 1, 1: 1, 2: 4, 3: 7}[int(m.jnt_kind[j])]
        return self.q[a] if n == 1 else self.q[a:a + n]

    def joint_qd(self, name):
        m = self.model
        j = m.jnt_names.index(name)
        d = int(m.jnt_dof_adr[j])
        n = {0: 1, 1: 1, 2: 3, 3: 6}[int(m.jnt_kind[j])]
        return self.qd[d] if n == 1 else self.qd[d:d + n]

    def target_pos(self, index: int):
        return self.targets[index]


# --- the evaluator ------------------------------------------------------------------------------


def _safe_norm(x):
    """‖x‖ with a zero (not NaN) gradient at 0: the double-where keeps sqrt away from 0."""
    sq = jnp.sum(x * x, axis=-1)
    pos = sq > 0
    return jnp.where(pos, jnp.sqrt(jnp.where(pos, sq, 1.0)), 0.0)


_UNARY = {"abs": jnp.abs, "sqrt": jnp.sqrt, "exp": jnp.exp, "log": jnp.log, "sin": jnp.sin,
          "cos": jnp.cos, "tan": jnp.tan, "tanh": jnp.tanh, "square": jnp.square, "sign": jnp.sign}

_BINARY = {"+": jnp.add, "-": jnp.subtract, "*": jnp.multiply, "/": jnp.divide,
           "<": jnp.less, "<=": jnp.less_equal, ">": jnp.greater, ">=": jnp.greater_equal,
           "==": jnp.equal, "!=": jnp.not_equal, "and": jnp.logical_and, "or": jnp.logical_or}


def _reduce_min(x):
    return jnp.min(x) if x.ndim else x


def _reduce_max(x):
    return jnp.max(x) if x.ndim else x


_CALLS = {
    "atan2": jnp.arctan2,
    "sum": jnp.sum, "mean": jnp.mean, "norm": _safe_norm,
    "dot": lambda a, b: jnp.sum(a * b),
    "cross": jnp.cross,
    "any": jnp.any, "all": jnp.all,
    "clip": lambda x, lo, hi: jnp.minimum(jnp.maximum(x, lo), hi),
    "where": jnp.where,
    "to_local": quat_rotate_inverse,
    "to_world": quat_rotate,
}


def evaluate(tree: tuple, view: View):
    """The value of a lowered expression on `view` (a jnp scalar or vector)."""
    kind = tree[0]
    dtype = view.state.q.dtype
    if kind == "const":
        v = tree[1]
        if isinstance(v, bool):
            return jnp.asarray(v)
        return jnp.asarray(v, dtype)
    if kind == "body":
        _, field, prev, body_id, offset = tree
        return (view.prev if prev else view).body(field, body_id, offset)
    if kind == "read":
        _, source, prev, a, b, scalar = tree
        v = view.prev if prev else view
        if source == "action":
            x = view.action
        elif source == "contact_force":
            x = v.contact_force.reshape(-1)
        else:
            x = getattr(v, source)
        return x[a] if scalar else x[a:b]
    if kind == "com":
        return (view.prev if tree[2] else view).com(tree[1])
    if kind == "target":
        return (view.prev if tree[1] else view).target_pos(tree[2])
    if kind == "time":
        return (view.prev if tree[1] else view).time
    if kind == "dt":
        return view.dt
    if kind == "neg":
        return -evaluate(tree[1], view)
    if kind == "not":
        return jnp.logical_not(evaluate(tree[1], view))
    if kind == "bin":
        _, op, a, b = tree
        x = evaluate(a, view)
        if op == "^":
            if b[0] == "const" and float(b[1]).is_integer() and abs(b[1]) <= 16:
                return jnp.power(x, int(b[1]))  # integer_pow: exact, and fine for negative x
            return jnp.power(x, evaluate(b, view))
        return _BINARY[op](x, evaluate(b, view))
    if kind == "call":
        _, fn, args = tree
        values = [evaluate(a, view) for a in args]
        if fn in _UNARY:
            return _UNARY[fn](values[0])
        if fn in ("min", "max"):
            if len(values) == 1:
                return (_reduce_min if fn == "min" else _reduce_max)(values[0])
            out = values[0]
            for v in values[1:]:
                out = (jnp.minimum if fn == "min" else jnp.maximum)(out, v)
            return out
        return _CALLS[fn](*values)
    if kind == "index":
        return evaluate(tree[1], view)[tree[2]]
    if kind == "slice":
        return evaluate(tree[1], view)[tree[2]:tree[3]]
    if kind == "vec":
        parts = [jnp.atleast_1d(evaluate(t, view)) for t in tree[1]]
        if parts[0].dtype == jnp.bool_:
            return jnp.concatenate(parts)
        return jnp.concatenate([p.astype(dtype) for p in parts])
    raise ValueError(f"unknown task expression node {kind!r}")


# --- the task as the environment uses it ----------------------------------------------------------


def observe(spec: TaskSpec, view: View):
    """The observation vector (observation_size,)."""
    dtype = view.state.q.dtype
    parts = [jnp.atleast_1d(evaluate(t.tree, view)).astype(dtype) for t in spec.observations]
    return jnp.concatenate(parts) if parts else jnp.zeros((0,), dtype)


def reward_terms(spec: TaskSpec, view: View) -> dict:
    """{term name: weight × value} (scalars)."""
    dtype = view.state.q.dtype
    return {t.name: jnp.asarray(t.weight, dtype) * evaluate(t.tree, view).astype(dtype)
            for t in spec.reward}


def terminated(spec: TaskSpec, view: View):
    """True when any termination term holds."""
    out = jnp.asarray(False)
    for t in spec.termination:
        out = jnp.logical_or(out, evaluate(t.tree, view))
    return out


def initial_targets(spec: TaskSpec, dtype, key=None) -> jax.Array:
    """(ntarget, 3) the targets' starting positions: `pos`, or a uniform draw from [low, high] for
    targets with `random_start` (needs `key`)."""
    if not spec.targets:
        return jnp.zeros((0, 3), dtype)
    start = jnp.asarray(np.array([t.pos for t in spec.targets], float), dtype)
    random = np.array([t.random_start for t in spec.targets], bool)
    if key is None or not random.any():
        return start
    low = jnp.asarray(np.array([t.low for t in spec.targets], float), dtype)
    high = jnp.asarray(np.array([t.high for t in spec.targets], float), dtype)
    drawn = jax.random.uniform(key, start.shape, dtype, low, high)
    return jnp.where(random[:, None], drawn, start)


def move_targets(spec: TaskSpec, view: View, targets, key):
    """Targets whose body arrived move to a fresh uniform draw in their box.
    Returns (targets (ntarget, 3), arrived (ntarget,) bool)."""
    if not spec.targets:
        return targets, jnp.zeros((0,), bool)
    dtype = targets.dtype
    watched = []
    for t in spec.targets:
        if t.body_id < 0:
            watched.append(jnp.full((3,), jnp.inf, dtype))
            continue
        s = view.state
        watched.append(s.xpos[t.body_id] + quat_rotate(s.xquat[t.body_id], jnp.asarray(t.offset, dtype)))
    watched = jnp.stack(watched)
    radius = jnp.asarray([t.radius for t in spec.targets], dtype)
    dist = _safe_norm(watched - targets)
    arrived = jnp.logical_and(radius > 0, dist < radius)
    low = jnp.asarray(np.array([t.low for t in spec.targets], float), dtype)
    high = jnp.asarray(np.array([t.high for t in spec.targets], float), dtype)
    fresh = jax.random.uniform(key, targets.shape, dtype, low, high)
    return jnp.where(arrived[:, None], fresh, targets), arrived
