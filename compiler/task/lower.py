"""Task lowering: checked task + compiled model → `runtime.task.TaskSpec` (names → indices).

Where it sits: compiler/task, last step (parse.py → check.py → here), called by `compile` after the
model is lowered. Every entity name in a typed tree becomes an index of the compiled model: bodies by
the model's body order (a body fused into another becomes that body plus a fixed offset), joints by
their coordinate addresses, actuators by their position in the action. The result holds only
tuples of ints, floats, bools and fixed keywords; the runtime evaluates it (runtime/task.py).
"""

from __future__ import annotations

import numpy as np

from scenec.runtime.task import Target, TaskSpec, Term

from ..frontend import euler_quat
from ..passes.topology import relative_pose
from .check import KIND_NQ, KIND_NV, CheckedTask

DEFAULT_EPISODE_LENGTH = 1000
DEFAULT_ACTION_REPEAT = 1


def _authored_pose(body_msg):
    pos = tuple(body_msg.pos) if len(body_msg.pos) == 3 else (0.0, 0.0, 0.0)
    if len(body_msg.quat) == 4:
        q = np.asarray(body_msg.quat, float)
        quat = tuple(q / np.linalg.norm(q))
    elif len(body_msg.euler) == 3:
        quat = euler_quat(tuple(body_msg.euler))
    else:
        quat = (1.0, 0.0, 0.0, 0.0)
    return pos, quat


class _Resolver:
    def __init__(self, scene_msg, scene_ir, model):
        self.model = model
        self.body_index = {name: i for i, name in enumerate(model.body_names)}
        self.fused_into = dict(scene_ir.topology.fused_into) if scene_ir.topology else {}
        self.ir_bodies = {b.name: b for b in scene_ir.bodies}
        self.msg_bodies = {b.name: b for b in scene_msg.bodies}
        self.joint_index = {name: j for j, name in enumerate(model.jnt_names)}
        self.actuator_index = {name: i for i, name in enumerate(model.actuator_names)}
        self.target_index = {t.name: i for i, t in enumerate(scene_msg.task.targets)}

    def body(self, name: str):
        """(model body index, offset or None) of an authored body."""
        if name in self.body_index:
            return self.body_index[name], None
        holder = self.fused_into.get(name, "world")
        host = self.body_index[holder]
        if holder == "world":
            host_pos, host_quat = (0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0)
        else:
            b = self.ir_bodies[holder]
            host_pos, host_quat = b.pos, b.quat
        pos, quat = _authored_pose(self.msg_bodies[name])
        rel_pos, rel_quat = relative_pose(host_pos, host_quat, pos, quat)
        return host, (tuple(float(x) for x in rel_pos), tuple(float(x) for x in rel_quat))

    def tree(self, t: tuple) -> tuple:
        kind = t[0]
        m = self.model
        if kind == "const":
            v = t[1]
            return ("const", v if isinstance(v, bool) else
                    tuple(float(x) for x in v) if isinstance(v, tuple) else float(v))
        if kind == "body":
            _, field, prev, name = t
            index, offset = self.body(name)
            return ("body", field, bool(prev), index, offset)
        if kind == "joint":
            _, which, prev, name = t
            j = self.joint_index[name]
            kind_j = int(m.jnt_kind[j])
            if which == "q":
                a, n = int(m.jnt_qpos_adr[j]), KIND_NQ[kind_j]
            else:
                a, n = int(m.jnt_dof_adr[j]), KIND_NV[kind_j]
            return ("read", which, bool(prev), a, a + n, n == 1)
        if kind == "all":
            _, which, prev = t
            return ("read", which, bool(prev), 0, m.nq if which == "q" else m.nv, False)
        if kind == "action":
            return ("read", "action", False, 0, m.nu, False)
        if kind == "actuator":
            i = self.actuator_index[t[1]]
            return ("read", "action", False, i, i + 1, True)
        if kind == "contact_force_all":
            return ("read", "contact_force", bool(t[1]), 3, 3 * m.nbody, False)
        if kind == "com":
            return ("com", t[1], bool(t[2]))
        if kind == "target":
            return ("target", bool(t[1]), self.target_index[t[2]])
        if kind == "time":
            return ("time", bool(t[1]))
        if kind == "dt":
            return ("dt",)
        if kind in ("neg", "not"):
            return (kind, self.tree(t[1]))
        if kind == "bin":
            return ("bin", t[1], self.tree(t[2]), self.tree(t[3]))
        if kind == "call":
            return ("call", t[1], tuple(self.tree(a) for a in t[2]))
        if kind == "index":
            return ("index", self.tree(t[1]), int(t[2]))
        if kind == "slice":
            return ("slice", self.tree(t[1]), int(t[2]), int(t[3]))
        if kind == "vec":
            return ("vec", tuple(self.tree(a) for a in t[1]))
        raise AssertionError(f"unknown typed node {kind!r}")

    def target(self, msg) -> Target:
        pos = tuple(float(x) for x in msg.pos) if len(msg.pos) == 3 else (0.0, 0.0, 0.0)
        low = tuple(float(x) for x in msg.low) if len(msg.low) == 3 else pos
        high = tuple(float(x) for x in msg.high) if len(msg.high) == 3 else pos
        body_id, offset = -1, (0.0, 0.0, 0.0)
        if msg.body:
            body_id, off = self.body(msg.body)
            if off is not None:
                offset = off[0]
        return Target(msg.name, pos, low, high, body_id, offset, float(msg.radius), bool(msg.random_start))


def lower_task(checked: CheckedTask, scene_msg, scene_ir, model) -> TaskSpec:
    """The runtime form of a checked task (every term must have checked cleanly)."""
    r = _Resolver(scene_msg, scene_ir, model)
    task = scene_msg.task

    def terms(items):
        out = []
        for t in items:
            if t is None:
                raise ValueError("lower_task needs a task without errors")
            out.append(Term(t.name, r.tree(t.typed.tree), float(t.weight), t.typed.type.size))
        return tuple(out)

    return TaskSpec(
        observations=terms(checked.observations),
        reward=terms(checked.reward),
        termination=terms(checked.termination),
        reset_noise_q=float(task.reset_noise.q),
        reset_noise_qd=float(task.reset_noise.qd),
        targets=tuple(r.target(t) for t in task.targets),
        episode_length=int(task.episode_length) if task.HasField("episode_length") else DEFAULT_EPISODE_LENGTH,
        action_repeat=int(task.action_repeat) if task.HasField("action_repeat") else DEFAULT_ACTION_REPEAT,
    )
