"""Analytic checks of the smooth dynamics, each against a closed form or a conservation law.

Tolerances are the issue's; each comment says what separates the discrete simulation from the
exact answer and how large that is.
"""

from __future__ import annotations

import math
import pathlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from scenec.compiler import api

from physics_util import energy, momenta

SCENES = pathlib.Path(__file__).resolve().parent.parent / "scenes"

G = 9.81
DOUBLE_PENDULUM = __import__("pathlib").Path(__file__).resolve().parent.parent / "scenes" / "double_pendulum.yaml"


def rollout(compiled, state, steps, action=None):
    """`steps` control steps in one jitted scan; returns the stacked q and qd (steps, n)."""
    model = compiled.model
    u = jnp.zeros((model.nu,), state.q.dtype) if action is None else action

    def body(s, a):
        s = compiled.step(s, a)
        return s, (s.q, s.qd)

    actions = jnp.broadcast_to(u, (steps,) + u.shape) if u.ndim == 1 else u
    _, (qs, qds) = jax.jit(lambda s, a: jax.lax.scan(body, s, a))(state, actions)
    return np.asarray(qs, np.float64), np.asarray(qds, np.float64)


FREE_BODY = """
options: {timestep: 0.001}
bodies:
  - {name: stone, pos: [0, 0, 10], colliders: [{box: {half_size: [0.1, 0.2, 0.3]}}]}
joints: [{name: fly, kind: free, child: stone}]
"""


def test_free_body_in_gravity_follows_the_parabola():
    # Semi-implicit Euler lags the exact parabola by g·T·h/2 = 4.9 mm after 1 s at h = 1 ms, that is
    # 6e-4 of |x| here; the issue asks for 1e-3 relative.
    REL_TOL = 1e-3
    c = api.compile(FREE_BODY, measure_jit=False)
    v0 = np.array([1.0, 2.0, 3.0])
    s = c.init(qd=jnp.asarray(np.r_[v0, 0.3, -0.2, 0.5], jnp.float32))
    qs, _ = rollout(c, s, 1000)
    t = 1.0
    exact = np.array([0.0, 0.0, 10.0]) + v0 * t + 0.5 * np.array([0.0, 0.0, -G]) * t * t
    assert np.linalg.norm(qs[-1, :3] - exact) <= REL_TOL * np.linalg.norm(exact)


PENDULUM = """
options: {timestep: 0.001}
bodies:
  - {name: bob, pos: [0, 0, -1], mass: 1, colliders: [{sphere: {radius: 0.05}}]}
joints: [{name: swing, kind: hinge, child: bob, anchor: [0, 0, 1], axis: [0, 1, 0]}]
init: [{joint: swing, q: 3 deg}]
"""


def test_pendulum_small_angle_period():
    # Physical pendulum: T = 2π·sqrt(I_pivot / (m·g·L)) with I_pivot = 2/5·m·r² + m·L² (a 5 cm ball
    # on a 1 m massless rod). At 3° the amplitude lengthens T by θ²/16 = 0.017%; the period is read
    # from sign changes interpolated within a step (1 ms of 2 s); the issue allows 0.5%.
    REL_TOL = 0.005
    c = api.compile(PENDULUM, measure_jit=False)
    qs, _ = rollout(c, c.init(), 8000)
    theta = qs[:, 0]
    times = np.arange(1, len(theta) + 1) * 0.001
    crossings = []
    for k in range(len(theta) - 1):
        if theta[k] > 0 >= theta[k + 1] or theta[k] < 0 <= theta[k + 1]:
            frac = theta[k] / (theta[k] - theta[k + 1])
            crossings.append(times[k] + frac * 0.001)
    period = 2 * np.mean(np.diff(crossings))
    r, L = 0.05, 1.0
    expected = 2 * math.pi * math.sqrt((0.4 * r * r + L * L) / (G * L))
    assert abs(period - expected) <= REL_TOL * expected, (period, expected)


def test_double_pendulum_energy_drift():
    # A passive double pendulum released from 90°, 10 s at h = 1 ms: the energy may drift by less
    # than 1% of its scale m·g·L (E itself passes through 0 here). Semi-implicit Euler in joint space
    # is not symplectic for this non-separable system: it drifts by ~4% — exactly as MuJoCo's own
    # Euler integrator does on the same model (test_euler_energy_error_is_mujocos below) — so the
    # scene asks for the RK4 integrator, whose error is ~1e-5 J.
    REL_TOL = 0.01
    text = open(DOUBLE_PENDULUM).read().replace("timestep: 0.001", "timestep: 0.001\n  integrator: rk4")
    c = api.compile(text, measure_jit=False)
    s = c.init()
    e0 = energy(c.model, s.q, s.qd)
    qs, qds = rollout(c, s, 10_000)
    scale = 2 * 1.0 * G * 0.5             # two 1 kg links, 0.5 m each
    worst = max(abs(energy(c.model, qs[k], qds[k]) - e0) for k in range(999, 10_000, 1000))
    assert worst <= REL_TOL * scale, (worst, e0)


def test_euler_energy_error_is_mujocos():
    # The Euler drift above is the integrator's, not a modelling error: MuJoCo's Euler on the same
    # double pendulum makes the same energy error at every second (to float32 rounding of our run).
    mujoco = pytest.importorskip("mujoco")
    TOL = 2e-3   # J: float32 vs float64 over 10 s of a chaotic motion
    xml = """<mujoco><compiler angle="radian"/><option timestep="0.001" integrator="Euler">
<flag contact="disable" energy="enable"/></option><worldbody>
<body pos="0 0 -0.25"><joint type="hinge" pos="0 0 0.25" axis="0 1 0"/><geom type="capsule" size="0.02 0.23" mass="1"/>
<body pos="0 0 -0.5"><joint type="hinge" pos="0 0 0.25" axis="0 1 0"/><geom type="capsule" size="0.02 0.23" mass="1"/>
</body></body></worldbody></mujoco>"""
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    data.qpos[0] = math.pi / 2
    mujoco.mj_forward(model, data)
    e0 = data.energy.sum()
    theirs = []
    for k in range(3000):
        mujoco.mj_step(model, data)
        if k % 1000 == 999:
            theirs.append(data.energy.sum() - e0)
    c = api.compile(DOUBLE_PENDULUM, measure_jit=False)
    s = c.init()
    mine_e0 = energy(c.model, s.q, s.qd)
    qs, qds = rollout(c, s, 3000)
    mine = [energy(c.model, qs[k], qds[k]) - mine_e0 for k in (999, 1999, 2999)]
    assert np.max(np.abs(np.asarray(mine) - np.asarray(theirs))) <= TOL, (mine, theirs)


CHAIN = """
options: {timestep: 0.001, gravity: [0, 0, 0]}
bodies:
  - {name: base, pos: [0, 0, 0], colliders: [{box: {half_size: [0.2, 0.1, 0.1]}}]}
  - {name: arm1, pos: [0.4, 0, 0], colliders: [{capsule: {radius: 0.04, fromto: [-0.2, 0, 0, 0.2, 0, 0]}}]}
  - {name: arm2, pos: [0.8, 0, 0], colliders: [{capsule: {radius: 0.04, fromto: [-0.2, 0, 0, 0.2, 0, 0]}}]}
  - {name: arm3, pos: [-0.4, 0, 0], colliders: [{capsule: {radius: 0.04, fromto: [-0.2, 0, 0, 0.2, 0, 0]}}]}
joints:
  - {name: float, kind: free, child: base}
  - {name: j1, parent: base, child: arm1, anchor: [-0.2, 0, 0], axis: [0, 0, 1]}
  - {name: j2, parent: arm1, child: arm2, anchor: [-0.2, 0, 0], axis: [0, 1, 0]}
  - {name: j3, parent: base, child: arm3, anchor: [0.2, 0, 0], axis: [1, 0, 1]}
actuators:
  - {name: m1, joint: j1}
  - {name: m2, joint: j2}
  - {name: m3, joint: j3}
contacts: {exclude: [{first: "*", second: "*"}]}
"""


def test_internal_torques_conserve_momentum():
    # Joint torques are internal: with no gravity and no contact the total momentum must not change
    # except by the integrator's error, which for Euler in joint space is O(h·v²) (MuJoCo's Euler has
    # the same). From rest under random torques (speeds up to 0.4 m/s) the linear momentum stays
    # within 1e-4 kg·m/s (we see 4e-6). With the base spinning (|L| = 2.3 kg·m²/s), the angular
    # momentum drifts under 1e-3 relative over 1 s (we see 2e-4).
    LIN_TOL = 1e-4
    ANG_REL_TOL = 1e-3
    c = api.compile(CHAIN, measure_jit=False)
    rng = np.random.default_rng(0)
    torques = jnp.asarray(rng.uniform(-0.5, 0.5, (1000, 3)), jnp.float32)

    s = c.init()
    p0, _ = momenta(c.model, s.q, s.qd)
    qs, qds = rollout(c, s, 1000, torques)
    p1, _ = momenta(c.model, qs[-1], qds[-1])
    assert np.max(np.abs(p1 - p0)) <= LIN_TOL, (p0, p1)

    spin = np.r_[0.0, 0.0, 0.0, 0.5, -0.4, 0.8, 0.0, 0.0, 0.0].astype(np.float32)
    s = c.init(qd=jnp.asarray(spin))
    _, l0 = momenta(c.model, s.q, s.qd)
    qs, qds = rollout(c, s, 1000, torques)
    _, l1 = momenta(c.model, qs[-1], qds[-1])
    assert np.linalg.norm(l1 - l0) <= ANG_REL_TOL * np.linalg.norm(l0), (l0, l1)


def test_the_inverse_is_taken_tree_by_tree():
    # grasp: a 6-dof object and a 39-dof hand share no entry of M, so M⁻¹ is block diagonal and each
    # block is the inverse of the tree's own block; compared with numpy's float64 inverse of the whole.
    from scenec.runtime import dynamics
    from scenec.runtime.plan import plan_of

    grasp = api.compile(SCENES / "grasp.yaml", measure_jit=False).model
    assert plan_of(grasp).tree_blocks == ((0, 6), (6, 45))
    ant = api.compile(SCENES / "ant.yaml", measure_jit=False).model
    assert plan_of(ant).tree_blocks == ((0, 14),)
    # a random SPD matrix with grasp's sparsity; the hand's 39 dofs go branch by branch (BRANCHES_FROM)
    assert dynamics.branches(np.asarray(grasp.dof_parent_id.array)[6:] - 6) == (3, ((3, 12), (12, 21), (21, 30), (30, 39)))
    mass, ref = _tree_spd(plan_of(grasp).ancestor, np.random.default_rng(7))
    tau = np.random.default_rng(8).normal(size=(grasp.nv, 3))
    minv, qacc = dynamics.inverse_by_tree(grasp, jnp.asarray(mass, jnp.float32), jnp.asarray(tau, jnp.float32))
    # float32 elimination of a well-conditioned matrix (entries of D in [0.5, 2]): relative 1e-4
    REL_TOL = 1e-4
    scale = np.abs(ref).max()
    assert np.abs(np.asarray(minv, np.float64) - ref).max() <= REL_TOL * scale
    assert np.abs(np.asarray(qacc, np.float64) - np.einsum("ijb,jb->ib", ref, tau)).max() <= REL_TOL * scale * np.abs(tau).max() * grasp.nv
    assert np.all(np.asarray(minv)[:6, 6:] == 0) and np.all(np.asarray(minv)[6:, :6] == 0)


def _tree_spd(pattern, rng, batch=3):
    """A random SPD matrix with a tree's sparsity: Lᵀ·D·L, L unit lower triangular on the ancestor
    pattern, D in [0.5, 2] (well conditioned), and its float64 inverse."""
    n = len(pattern)
    L = np.where(pattern[:, :, None] > 0, rng.normal(scale=0.3, size=(n, n, batch)), 0.0)
    L[np.arange(n), np.arange(n)] = 1.0
    mass = np.einsum("kib,kb,kjb->ijb", L, rng.uniform(0.5, 2.0, size=(n, batch)), L)
    return mass, np.moveaxis(np.linalg.inv(np.moveaxis(mass, -1, 0)), 0, -1)


@pytest.mark.parametrize("scene, split", [
    ("humanoid", (6, ((6, 17), (17, 20), (20, 23)))),     # free root; abdomen and legs, two arms
    ("ant", (6, ((6, 8), (8, 10), (10, 12), (12, 14)))),  # free root; four legs of two hinges
    ("half_cheetah", (3, ((3, 6), (6, 9)))),              # planar root; back and front leg
    ("ur5e", None),                                       # a chain: nothing to split
])
def test_branch_by_branch_inverse_matches_the_whole(scene, split):
    # Block elimination on the root chain's Schur complement (dynamics._inverse_by_branches) against
    # numpy's float64 inverse, on each scene's own tree pattern; the branches of one size are
    # eliminated side by side in the batch axis (Ant's four legs, Humanoid's two arms).
    from scenec.runtime import dynamics
    from scenec.runtime.plan import plan_of

    m = api.compile(SCENES / f"{scene}.yaml", measure_jit=False).model
    assert dynamics.branches(np.asarray(m.dof_parent_id.array)) == split
    if split is None:
        return
    mass, ref = _tree_spd(plan_of(m).ancestor, np.random.default_rng(11))
    tau = np.random.default_rng(12).normal(size=(m.nv, 3))
    minv, qacc = dynamics._inverse_by_branches(jnp.asarray(mass, jnp.float32), jnp.asarray(tau, jnp.float32),
                                               *split)
    REL_TOL = 1e-4                     # float32 elimination of a well-conditioned matrix, as above
    scale = np.abs(ref).max()
    assert np.abs(np.asarray(minv, np.float64) - ref).max() <= REL_TOL * scale
    assert (np.abs(np.asarray(qacc, np.float64) - np.einsum("ijb,jb->ib", ref, tau)).max()
            <= REL_TOL * scale * np.abs(tau).max() * m.nv)
