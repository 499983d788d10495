"""The step: state, action → next state, as a short straight list of stages.

Where it sits: the end of the pipeline. A generated `<scene>_step.py` binds a `Model` to `step` and
`init`; users `jit`, `vmap` and `grad` through them. Each stage runs under `jax.named_scope` so that a
profile maps back to it. The model's static structure decides which stages exist and how they unroll;
nothing in here branches on a traced value.

Per substep of length h = timestep / substeps (semi-implicit Euler, as MuJoCo's Euler integrator):
  1. kinematics: body poses, centres of mass, motion subspaces from q
  2. velocities: body spatial velocities and the derivatives of the motion subspaces from qd
  3. inertia: composite rigid-body inertias, the mass matrix (the tree's sparsity pattern) with armature
     and h·damping on its diagonal (damping is integrated implicitly, as MuJoCo does), and its inverse
  4. forces: actuators + joint springs and damping − bias (Coriolis, centrifugal, gravity)
  5. smooth acceleration qacc = M⁻¹ τ
  6. constraints: contacts and joint limits correct the new velocity (constraints.py)
  7. integration: qd ← qd + h·qacc (+ constraint impulse); q ← q ⊕ h·qd (quaternions on the sphere)
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from . import constraints, dynamics, kinematics
from . import math as sm
from .types import JointKind, Model, State


def init(m: Model, q=None, qd=None) -> State:
    """The initial state (the model's q0/qd0 unless given), with body poses filled in."""
    q = m.q0 if q is None else jnp.asarray(q, m.q0.dtype)
    qd = m.qd0 if qd is None else jnp.asarray(qd, m.qd0.dtype)
    f = kinematics.forward_kinematics(m, q)
    return State(q=q, qd=qd, time=jnp.zeros((), q.dtype), xpos=f.xpos, xquat=f.xquat,
                 contact_force=jnp.zeros((m.nbody, 3), q.dtype))


def step(m: Model, state: State, action) -> State:
    """Advance one control step (`m.substeps` physics substeps) with `action` (nu,) held constant."""
    dtype = state.q.dtype
    action = jnp.asarray(action, dtype).reshape((m.nu,))
    h = m.timestep / m.substeps

    def substep(carry, _):
        q, qd, _ = carry
        with jax.named_scope("kinematics"):
            f = kinematics.forward_kinematics(m, q)
        with jax.named_scope("velocities"):
            cvel, cdof_dot = dynamics.com_velocities(m, f, qd)
        with jax.named_scope("inertia"):
            cinert = dynamics.body_inertias(m, f)
            mass = dynamics.mass_matrix(m, f, cinert, m.dof_armature + h * m.dof_damping)
            minv = dynamics.inverse_spd(mass)
        with jax.named_scope("forces"):
            tau = (dynamics.actuator_forces(m, q, qd, action) + dynamics.passive_forces(m, q, qd)
                   - dynamics.bias_forces(m, f, cvel, cdof_dot, cinert, m.gravity, qd))
        with jax.named_scope("acceleration"):
            qd_free = qd + h * (minv @ tau)
        with jax.named_scope("constraints"):
            qd_new, cforce = constraints.solve_velocity(m, f, minv, q, qd, qd_free, h)
        with jax.named_scope("integration"):
            q_new = integrate_positions(m, q, qd_new, h)
        return (q_new, qd_new, cforce), None

    cforce0 = jnp.zeros((m.nbody, 3), dtype)
    (q, qd, cforce), _ = jax.lax.scan(substep, (state.q, state.qd, cforce0), None,
                                      length=m.substeps)
    with jax.named_scope("outputs"):
        f = kinematics.forward_kinematics(m, q)
    return State(q=q, qd=qd, time=state.time + m.timestep, xpos=f.xpos, xquat=f.xquat,
                 contact_force=cforce)


def integrate_positions(m: Model, q, qd, h):
    """q ⊕ h·qd joint by joint: quaternions of ball and free joints turn by the body-frame angular
    velocity (exact rotation for a constant velocity over h)."""
    if m.njnt == 0:
        return q
    parts = []
    for j in range(m.njnt):
        a, d = m.jnt_qpos_adr[j], m.jnt_dof_adr[j]
        kind = JointKind(m.jnt_kind[j])
        if kind is JointKind.FREE:
            parts.append(q[a:a + 3] + h * qd[d:d + 3])
            parts.append(sm.quat_integrate(q[a + 3:a + 7], qd[d + 3:d + 6], h))
        elif kind is JointKind.BALL:
            parts.append(sm.quat_integrate(q[a:a + 4], qd[d:d + 3], h))
        else:
            parts.append(q[a:a + 1] + h * qd[d:d + 1])
    return jnp.concatenate(parts)
