"""Reference quantities computed from a state with the runtime's own kinematics (test helpers).

Energy and momenta are sums over bodies written here from their definitions (½mv² + ½ωᵀIω, m·g·z,
Σ m·v, Σ (x × m·v + I·ω)); they use the runtime only for body poses and body velocities, which the
MuJoCo differential tests check independently.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from scenec.runtime import dynamics, kinematics


def body_motion(model, q, qd):
    """Per body (world excluded): mass (n,), com (n, 3), com velocity (n, 3), ω (n, 3), world inertia (n, 3, 3)."""
    q = jnp.asarray(q)[:, None]
    qd = jnp.asarray(qd)[:, None]
    f = kinematics.forward_kinematics(model, q)
    cvel, _ = dynamics.com_velocities(model, f, qd)
    cvel = np.asarray(cvel[..., 0], np.float64)          # (nbody, 6) at each tree's reference point
    com = np.asarray(f.xipos[..., 0], np.float64)
    ref = np.asarray(f.root_com[..., 0], np.float64)
    rot = np.asarray(f.xmat[..., 0], np.float64)
    omega = cvel[:, :3]
    v_com = cvel[:, 3:] + np.cross(omega, com - ref)
    inertia = np.einsum("bij,bjk,blk->bil", rot, np.asarray(model.body_inertia, np.float64), rot)
    mass = np.asarray(model.body_mass, np.float64)
    return mass[1:], com[1:], v_com[1:], omega[1:], inertia[1:]


def energy(model, q, qd):
    mass, com, v, omega, inertia = body_motion(model, q, qd)
    g = np.asarray(model.gravity, np.float64)
    kinetic = 0.5 * np.sum(mass * np.sum(v * v, -1)) + 0.5 * np.einsum("bi,bij,bj->", omega, inertia, omega)
    potential = -np.sum(mass * (com @ g))
    return kinetic + potential


def momenta(model, q, qd):
    """(linear (3,), angular about the world origin (3,))."""
    mass, com, v, omega, inertia = body_motion(model, q, qd)
    linear = np.sum(mass[:, None] * v, 0)
    angular = np.sum(np.cross(com, mass[:, None] * v) + np.einsum("bij,bj->bi", inertia, omega), 0)
    return linear, angular
