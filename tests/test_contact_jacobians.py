"""The contact rows' Jacobians against the contact point's velocity on each body, by finite differences.

Independent reference: a slot's three rows times qd are the velocity of body 2's material point at the
contact point relative to body 1's, along the slot's normal and tangents. Here that velocity comes from
the kinematics alone: the point is fixed in each body's frame, the joints move by ±ε·qd
(`integrate_positions`), and the point's two positions give its velocity by a central difference. No
Jacobian, no motion subspace, no tree centre of mass enters the reference.

Scenes: Humanoid (its pairs within one tree and with the floor: one Jacobian per slot, masked by
moves₂ − moves₁), Ant (the floor against the legs) and grasp (hand against object, two moving trees:
each body's rows on their own), each with its contact budget choosing the slots per environment, and
box_on_plane without a budget (static slots)."""

from __future__ import annotations

import pathlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from scenec.compiler import api
from scenec.runtime import constraints
from scenec.runtime import step as rstep
from scenec.runtime.kinematics import forward_kinematics
from scenec.runtime.types import JointKind

SCENES = pathlib.Path(__file__).resolve().parents[1] / "scenes"
EPS = 1e-3       # rad or m of joint motion per unit of qd in the central difference
# float32 positions of order 1 m differenced over 2·EPS: ~1e-7 / 2e-3 = 5e-5 m/s of rounding each,
# and the difference's curvature error (EPS·|qd|)²·|x″| ~ 1e-5; relative to the velocities' size
# (a few m/s with qd ~ N(0, 1) on a tree of 1 m limbs). A wrong mask or reference point is off by O(1).
TOL = 2e-3
BATCH = 4


def _state(m, key):
    s = rstep.init(m)
    kq, kd = jax.random.split(key)
    q = jnp.broadcast_to(s.q, (BATCH,) + s.q.shape)
    # hinge and slide coordinates moved a little; free and ball joints' positions and unit
    # quaternions left as they are
    scalar = np.ones(m.nq, bool)
    qadr = np.asarray(m.jnt_qpos_adr.array)
    for j, kind in enumerate(np.asarray(m.jnt_kind.array)):
        size = {JointKind.FREE: 7, JointKind.BALL: 4}.get(JointKind(kind), 1)
        scalar[qadr[j]:qadr[j] + size] = size == 1
    q = q + jnp.where(scalar, 0.2, 0.0) * jax.random.normal(kq, q.shape)
    qd = jax.random.normal(kd, (BATCH, m.nv))
    return q.T, qd.T                                                     # batch last: (nq, B), (nv, B)


def _poses(m, q):
    """Every body's position (nbody, 3, B) and rotation (nbody, 3, 3, B) at q, as numpy."""
    f = jax.jit(lambda q: forward_kinematics(m, q))(q)
    return np.asarray(f.xpos), np.asarray(f.xmat)


def _point_velocity(m, q, qd, bodies, point):
    """Velocity (s, 3, B) of the material point of each slot's body (s, B) that lies at `point`."""
    env = np.arange(q.shape[-1])[None, :]
    pick = lambda x: np.moveaxis(x[bodies, ..., env], 1, -1)               # noqa: E731  (s, ..., B)
    xpos, xmat = _poses(m, q)
    local = np.einsum("sjib,sjb->sib", pick(xmat), point - pick(xpos))  # Rᵀ (p − x), (s, 3, B)
    ends = []
    for sign in (1.0, -1.0):
        xpos, xmat = _poses(m, rstep.integrate_positions(m, q, sign * qd, EPS))
        ends.append(pick(xpos) + np.einsum("sijb,sjb->sib", pick(xmat), local))
    return (ends[0] - ends[1]) / (2 * EPS)


def _slot_rows(m, q):
    """The slots the step solves at q (its budget's choice, if any) and their rows J, as numpy."""
    f = forward_kinematics(m, q)
    slots = constraints._candidates(m, f)
    if 0 < m.contact_budget < len(slots.pair):
        slots = constraints._closest(slots, m.contact_budget)
    J, frame = constraints._slot_jacobians(m, f, slots)                  # (s, 3, nv, B), (s, 3, 3, B)
    per_env = lambda b: jnp.broadcast_to(jnp.asarray(b).reshape(len(b), -1), (len(b), q.shape[-1]))  # noqa: E731
    return J, frame, slots.pos, per_env(slots.body1), per_env(slots.body2)


@pytest.mark.parametrize("name, one_reference", [("humanoid", True), ("ant", True), ("grasp", False),
                                                 ("box_on_plane", True)])
def test_slot_rows_give_the_contact_points_relative_velocity(name, one_reference):
    m = api.compile(str(SCENES / f"{name}.yaml"), measure_jit=False).model
    assert (constraints._one_reference(m) is not None) == one_reference
    q, qd = _state(m, jax.random.PRNGKey(3))
    J, frame, pos, b1, b2 = (np.asarray(x) for x in jax.jit(lambda q: _slot_rows(m, q))(q))
    rows_times_qd = np.einsum("srdb,db->srb", J, np.asarray(qd))
    relative = _point_velocity(m, q, qd, b2, pos) - _point_velocity(m, q, qd, b1, pos)
    expected = np.einsum("srib,sib->srb", np.asarray(frame), relative)
    scale = max(1.0, float(np.abs(expected).max()))
    assert np.abs(expected).max() > 0.1                                  # the slots do move
    np.testing.assert_allclose(rows_times_qd, expected, atol=TOL * scale, rtol=0)
