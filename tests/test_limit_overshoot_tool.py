"""tools/limit_overshoot.py: its figure (how far a joint goes past its range's ends in a random-action
rollout) against the same rollout stepped one control step at a time in Python, and against a joint
whose range the rollout never reaches."""

import jax
import jax.numpy as jnp
import numpy as np

from scenec.compiler import api

from conftest import load_tool

# A motor pushes a weightless-world pendulum into one end of a ±10° range (control 0.5–1 N·m, always
# the same sign); the soft limit lets it pass that end by a fraction of a degree.
SCENE = """
options: {timestep: 0.01, gravity: [0, 0, 0]}
bodies:
  - {name: bob, pos: [0, 0, -1], mass: 1 kg, colliders: [{sphere: {radius: 0.05}}]}
  - {name: far, pos: [3, 0, -1], mass: 1 kg, colliders: [{sphere: {radius: 0.05}}]}
joints:
  - {name: swing, kind: hinge, parent: world, child: bob, anchor: [0, 0, 1], axis: [0, 1, 0], range: [-10 deg, 10 deg]}
  - {name: idle, kind: hinge, parent: world, child: far, anchor: [0, 0, 1], axis: [0, 1, 0], range: [-90 deg, 90 deg]}
actuators:
  - {name: push, kind: motor, joint: swing, gear: 1, ctrl_range: [0.5, 1]}
"""
# The same float32 arithmetic either way (a scan of the jitted step against a loop of it): agreement
# to float32 rounding of angles of a few tenths of a radian.
ANGLE_TOL = 1e-6


def test_overshoot_matches_a_step_by_step_rollout():
    tool = load_tool("limit_overshoot")
    c = api.compile(SCENE, measure_jit=False)
    m = c.model
    batch, steps, seed = 4, 100, 3
    names, kinds, past = tool.overshoot(m, c.step, batch, steps, seed)
    assert names == ["swing", "idle"]

    state = c.init(jnp.broadcast_to(m.q0, (batch, m.nq)))
    worst = np.full(2, -np.inf)
    hi, lo = np.radians([10.0, 90.0]), -np.radians([10.0, 90.0])
    for key in jax.random.split(jax.random.PRNGKey(seed), steps):
        action = jax.random.uniform(key, (batch, m.nu), minval=m.actuator_ctrl_range[:, 0],
                                    maxval=m.actuator_ctrl_range[:, 1])
        state = c.step(state, action)
        q = np.asarray(state.q)[:, [m.jnt_qpos_adr.array[0], m.jnt_qpos_adr.array[1]]]
        worst = np.maximum(worst, np.max(np.maximum(q - hi, lo - q), axis=0))
    np.testing.assert_allclose(past, worst, rtol=0, atol=ANGLE_TOL)
    assert past[0] > 0.0, "the motor should push the pendulum past its +10° end"
    assert past[1] <= -np.radians(89.0), "the idle joint stays at 0, 90° from either end"
