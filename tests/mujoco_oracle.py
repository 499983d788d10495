"""Helpers of the MuJoCo comparison tests: load a model in MuJoCo the way scenec simulates it, map
scenec's joint coordinates onto MuJoCo's, and roll both engines out.

Used by tests/test_mujoco_parity.py and tests/test_mujoco_contacts.py. MuJoCo (the `mujoco` package
from PyPI) is the oracle; scenec's side only uses the public API (`compile`, `runtime.step`).
"""

from __future__ import annotations

import dataclasses

import numpy as np

import mujoco

# Coordinates per joint kind (scenec's JointKind numbering: hinge, slide, ball, free), as in MuJoCo.
NQ = {0: 1, 1: 1, 2: 4, 3: 7}
NV = {0: 1, 1: 1, 2: 3, 3: 6}


def load_mujoco(xml: str, *, euler: bool = True, zero_margin: bool = False,
                total_mass: float | None = None):
    """An MjModel and MjData for `xml`.

    euler: switch the integrator to Euler (scenec integrates with semi-implicit Euler; MuJoCo's Euler
        is the same scheme, with joint damping treated implicitly in both).
    zero_margin: set every geom margin to 0 (scenec has no contact margin; the importer warns).
    total_mass: scale every body's mass and inertia so that they sum to this (what MJCF's deprecated
        <compiler settotalmass> does).
    """
    model = mujoco.MjModel.from_xml_string(xml)
    if total_mass is not None:
        mujoco.mj_setTotalmass(model, total_mass)
        mujoco.mj_setConst(model, mujoco.MjData(model))
    if euler:
        model.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    if zero_margin:
        model.geom_margin[:] = 0.0
    return model, mujoco.MjData(model)


@dataclasses.dataclass(frozen=True)
class CoordinateMap:
    """scenec q[i] is MuJoCo qpos[qpos[i]], scenec qd[i] is MuJoCo qvel[qvel[i]].

    Joints are matched by name: scenec orders joints by tree level, MuJoCo depth first, so the two
    layouts agree joint by joint but not always in order.
    """

    qpos: np.ndarray   # (nq,) MuJoCo qpos index of each scenec q coordinate
    qvel: np.ndarray   # (nv,)
    ctrl: np.ndarray   # (nu,) MuJoCo actuator index of each scenec actuator (matched by joint)


def coordinate_map(model, mj) -> CoordinateMap:
    """Match a compiled scenec model's joints and actuators with an MjModel's, by name."""
    qpos, qvel = [], []
    for j, name in enumerate(model.jnt_names):
        mj_joint = mj.joint(name)   # KeyError when MuJoCo has no such joint
        kind = int(model.jnt_kind[j])
        assert int(mj_joint.type[0]) == {0: 3, 1: 2, 2: 1, 3: 0}[kind], f"joint {name}: kinds differ"
        qpos += range(int(mj_joint.qposadr[0]), int(mj_joint.qposadr[0]) + NQ[kind])
        qvel += range(int(mj_joint.dofadr[0]), int(mj_joint.dofadr[0]) + NV[kind])
    ctrl = []
    for a in range(model.nu):
        joint = model.jnt_names[int(model.actuator_jnt_id[a])]
        matches = [i for i in range(mj.nu) if mj.actuator_trnid[i, 0] == mj.joint(joint).id]
        assert len(matches) == 1, f"actuator {model.actuator_names[a]}: {len(matches)} MuJoCo actuators"
        ctrl.append(matches[0])
    return CoordinateMap(np.array(qpos, int), np.array(qvel, int), np.array(ctrl, int))


def mujoco_rollout(mj, data, ctrl: np.ndarray, substeps: int = 1, check_free: bool = False,
                   until_constrained: bool = False):
    """Step MuJoCo `substeps` times per row of ctrl ((n, mj.nu)); return qpos after each row.

    check_free: assert that no constraint (contact or joint limit) is ever active, for trajectories
        that are meant to be contact- and limit-free (the comparison would not be like with like).
    until_constrained: stop at the first row during which a constraint becomes active, and return
        the rows before the one that led to it. MuJoCo activates a limit or contact once a step has
        crossed it, while scenec's speculative constraints stop the step that would cross, so the
        row that ends past a limit already differs.
    """
    out = np.zeros((len(ctrl), mj.nq))
    for k, u in enumerate(ctrl):
        data.ctrl[:] = u
        for _ in range(substeps):
            mujoco.mj_step(mj, data)
            if data.nefc and until_constrained:
                return out[:max(k - 1, 0)]
            if check_free:
                assert data.nefc == 0, (f"step {k}: MuJoCo has {data.nefc} active constraint rows "
                                        f"({data.ncon} contacts); the test trajectory must stay free")
        out[k] = data.qpos
    return out


def scenec_rollout(model, q0, qd0, actions):
    """Roll scenec's step over `actions` ((n, nu)) from (q0, qd0); return (q per step, final state)."""
    import jax
    import jax.numpy as jnp

    from scenec.runtime import step as rstep

    dtype = jnp.float64 if model.dtype == "float64" else jnp.float32
    state = rstep.init(model, q=np.asarray(q0), qd=np.asarray(qd0))

    def run(state, actions):
        def body(s, a):
            s = rstep.step(model, s, a)
            return s, s.q
        return jax.lax.scan(body, state, actions)

    final, qs = jax.jit(run)(state, jnp.asarray(actions, dtype))
    return np.asarray(qs, np.float64), final


def body_weight(mj) -> float:
    """The model's total weight, N."""
    return float(np.sum(mj.body_mass) * np.linalg.norm(mj.opt.gravity))


def mujoco_contact_forces(mj, data) -> np.ndarray:
    """(nbody, 3) world contact force on each MuJoCo body (sum over its contacts)."""
    force = np.zeros((mj.nbody, 3))
    wrench = np.zeros(6)
    for i in range(data.ncon):
        c = data.contact[i]
        mujoco.mj_contactForce(mj, data, i, wrench)
        # the wrench is in the contact frame (rows of c.frame are its axes), acting on geom2
        f = c.frame.reshape(3, 3).T @ wrench[:3]
        force[mj.geom_bodyid[c.geom2]] += f
        force[mj.geom_bodyid[c.geom1]] -= f
    return force
