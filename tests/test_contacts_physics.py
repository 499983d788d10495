"""Contacts and joint limits against analytic answers (issue: "Contacts"). Each test runs a scene
from tests/contact_scenes/ (some with a parameter or collider swapped in) and compares with a closed
form; tolerances are the issue's, and each comment says what the soft-contact model adds to the error.

A soft contact carrying a load F rests F/(m_eff·ω²) deep (runtime/constraints.py): 0.25 mm for a
sphere at the default τ = 0.005 s, ζ = 1, about 1 mm at each end of a capsule lying on its ends
(m_eff = m/4), inside the 2 mm the rest-height tests allow.
"""

from __future__ import annotations

import math
import pathlib
import shutil

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from scenec.compiler import api

from jaxpr_util import data_dependent_branches

HERE = pathlib.Path(__file__).resolve().parent / "contact_scenes"
G = 9.81


def compile_scene(tmp_path, name, replace=()):
    text = (HERE / f"{name}.yaml").read_text()
    for old, new in replace:
        assert old in text, old
        text = text.replace(old, new)
    for helper in HERE.glob("*.obj"):
        shutil.copy(helper, tmp_path / helper.name)
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return api.compile(path, measure_jit=False)


def rollout(c, steps, state=None, actions=None):
    """Stacked q, qd and contact forces over `steps` control steps (one jitted scan)."""
    state = c.init() if state is None else state
    if actions is None:
        actions = jnp.zeros((steps, c.model.nu), jnp.float32)

    def body(s, a):
        s = c.step(s, a)
        return s, (s.q, s.qd)

    _, (qs, qds) = jax.jit(lambda s, a: jax.lax.scan(body, s, a))(state, actions)
    return np.asarray(qs, np.float64), np.asarray(qds, np.float64)


REST_TOL = 0.002   # m, the issue's; soft contact sinks 0.25–1 mm


@pytest.mark.parametrize("collider,pose,height", [
    ("{sphere: {radius: 0.1}}", "", 0.1),
    ("{box: {half_size: [0.1, 0.15, 0.05]}}", "", 0.05),
    ("{capsule: {radius: 0.05, half_length: 0.2}}", "euler: [0, 90 deg, 0]", 0.05),   # lying
    ("{capsule: {radius: 0.05, half_length: 0.2}}", "", 0.25),                        # standing on a cap
    ("{mesh: {mesh: prism}}", "", 0.06),                                              # hull from a file
])
def test_rest_height(tmp_path, collider, pose, height):
    replace = [("colliders: [{sphere: {radius: 0.1}}]", f"colliders: [{collider}]")]
    if pose:
        replace.append(("quat: [1, 0, 0, 0]", pose))
    c = compile_scene(tmp_path, "drop", replace)
    qs, qds = rollout(c, 1000)                       # 2 s: dropped from 0.3 m, settled
    assert abs(qs[-1, 2] - height) <= REST_TOL, qs[-1, 2]
    assert np.max(np.abs(qds[-1])) < 0.01          # at rest
    if "box" in collider or "mesh" in collider:      # flat: the body's z axis still points up
        w, x, y, _ = qs[-1, 3:7]
        up = 1 - 2 * (x * x + y * y)                 # z component of the rotated z axis
        assert math.acos(min(1.0, up)) < 1e-3


def test_sliding_box_stops_after_v2_over_2mu_g(tmp_path):
    # Coulomb friction decelerates at μ·g: the box stops after v²/(2μg) = 0.408 m for v = 2 m/s and
    # μ = 0.5. The issue allows 5%; the contact's softness and the first step's speculative contact
    # cost under 1 mm.
    REL_TOL = 0.05
    v, mu = 2.0, 0.5
    c = compile_scene(tmp_path, "slide")
    s = c.init(qd=jnp.asarray([v, 0, 0, 0, 0, 0], jnp.float32))
    qs, qds = rollout(c, 500, s)
    expected = v * v / (2 * mu * G)
    assert abs(qs[-1, 0] - expected) <= REL_TOL * expected, qs[-1, 0]
    assert abs(qds[-1, 0]) < 1e-3


def test_frictionless_box_keeps_its_speed(tmp_path):
    REL_TOL = 0.01
    c = compile_scene(tmp_path, "slide", [("mu: 0.5", "mu: 0")])
    s = c.init(qd=jnp.asarray([2.0, 0, 0, 0, 0, 0], jnp.float32))
    _, qds = rollout(c, 500, s)
    assert abs(qds[-1, 0] - 2.0) <= REL_TOL * 2.0, qds[-1, 0]


def test_sphere_rolls_down_an_incline_at_five_sevenths_g_sin(tmp_path):
    # Rolling without slipping: a = 5/7·g·sin θ along the slope (a solid sphere, I = 2/5 m r²).
    REL_TOL = 0.05
    theta = math.radians(20)
    c = compile_scene(tmp_path, "incline")
    # Start the ball resting on the slope: its centre one radius along the slope's normal.
    normal = np.array([math.sin(theta), 0.0, math.cos(theta)])
    q0 = np.r_[0.1 * normal, 1.0, 0, 0, 0].astype(np.float32)
    qs, qds = rollout(c, 500, c.init(q=jnp.asarray(q0)))
    downhill = np.array([math.cos(theta), 0.0, -math.sin(theta)])      # the slope's x axis points down
    t = 1.0
    travelled = (qs[-1, :3] - q0[:3]) @ downhill
    accel = 2 * travelled / (t * t)
    expected = 5.0 / 7.0 * G * math.sin(theta)
    assert abs(accel - expected) <= REL_TOL * expected, (accel, expected)


@pytest.mark.parametrize("e", [0.0, 0.5, 1.0])
def test_restitution_rebound_height(tmp_path, e):
    # A ball dropped from h = 1 m (its lowest point) rebounds to e²·h; the issue allows 0.05·h.
    TOL = 0.05
    c = compile_scene(tmp_path, "bounce", [("e: 0.5 ", f"e: {e} ")])
    qs, _ = rollout(c, 1500)                          # 1.5 s: one fall (0.45 s) and one rebound
    z = qs[:, 2] - 0.1                                # height of the ball's lowest point
    impact = int(np.argmin(z[:700]))
    rebound = z[impact:].max()
    assert abs(rebound - e * e * 1.0) <= TOL * 1.0, (rebound, e * e)


# A 10 s creep that depends on the last bits of rounding: it runs with the slow checks, at XLA's
# default LLVM level (tests/conftest.py: the default run compiles at level 0, where it drifts 12 mm).
@pytest.mark.slow
def test_stack_of_three_boxes_stands_for_ten_seconds(tmp_path):
    DRIFT = 0.01   # m: the top box may settle by the three contacts' sinking, not slide or fall
    c = compile_scene(tmp_path, "stack")
    qs, _ = rollout(c, 5000)
    top = qs[:, 14:17]                                # box3's position (free joints 0..6, 7..13, 14..20)
    assert np.all(np.abs(top[:, :2]) < DRIFT)
    assert np.all(np.abs(top[:, 2] - 0.5) < DRIFT)


def test_capsule_rests_across_another(tmp_path):
    # The issue allows 5 mm; two soft contacts in series sink about 1.3 mm (the lower capsule's ends
    # and the crossing).
    TOL = 0.005
    c = compile_scene(tmp_path, "crossed_capsules")
    qs, _ = rollout(c, 1000)
    assert abs(qs[-1, 9] - 0.15) <= TOL, qs[-1, 9]      # upper's z: two radii above the lower's axis
    assert abs(qs[-1, 2] - 0.05) <= TOL


def test_hinge_limit_holds_a_constant_torque(tmp_path):
    # A soft limit behaves like a stiff spring: τ/(m_eff·ω²) = 1 N·m / (0.083 kg·m² · 200² /s²) = 0.02°
    # past the limit at rest; the issue allows 1°.
    TOL = math.radians(1.0)
    c = compile_scene(tmp_path, "limit")
    qs, _ = rollout(c, 1500, actions=jnp.ones((1500, 1), jnp.float32))
    assert abs(qs[-1, 0] - math.radians(30)) <= TOL, math.degrees(qs[-1, 0])


@pytest.mark.slow   # 10,000 steps each: minutes on 2 cores; CI runs `pytest -m slow`
@pytest.mark.parametrize("name", ["stack", "terrain"])
def test_contact_rich_scenes_stay_finite_and_branch_free(tmp_path, name):
    STEPS, BATCH = 10_000, 4
    c = compile_scene(tmp_path, name)
    rng = np.random.default_rng(0)
    s = jax.tree_util.tree_map(lambda x: jnp.stack([x] * BATCH), c.init())
    actions = jnp.asarray(rng.uniform(-1, 1, (STEPS, BATCH, c.model.nu)), jnp.float32)
    from scenec.runtime import step as rstep

    def body(s, a):
        s = rstep.step(c.model, s, a)
        return s, jnp.all(jnp.isfinite(s.q))

    final, finite = jax.jit(lambda s, a: jax.lax.scan(body, s, a))(s, actions)
    assert bool(jnp.all(finite)) and np.all(np.isfinite(np.asarray(final.qd)))
    assert not data_dependent_branches(jax.make_jaxpr(lambda s, a: rstep.step(c.model, s, a))(s, actions[0]))


@pytest.mark.slow   # 45 s on 2 cores (compiling a 500-step scan's gradient); the default run takes
# a gradient through one step in contact (test_step_properties.py)
def test_gradients_through_contact_are_finite(tmp_path):
    c = compile_scene(tmp_path, "bounce")
    from scenec.runtime import step as rstep

    def height_after(vz):
        s = c.init(qd=jnp.asarray([0.0, 0.0, 1.0, 0.0, 0.0, 0.0], jnp.float32) * vz)

        def body(s, _):
            return rstep.step(c.model, s, jnp.zeros(0)), None

        s, _ = jax.lax.scan(body, s, None, length=500)     # through the impact at ~0.45 s
        return s.q[2] + s.qd[2]

    g = jax.jit(jax.grad(height_after))(jnp.float32(-1.0))
    assert np.isfinite(float(g)) and float(g) != 0.0


def test_bodies_rest_on_a_height_field(tmp_path):
    # Flat at z = 0.2 for x < −0.5: the ball rests at 0.2 + r. The ramp z = 0.25 + 0.1·x beyond: the
    # box rests tilted by α = atan(0.1), its centre 0.1/cos α above the surface at its x. Tolerances
    # as for planes.
    c = compile_scene(tmp_path, "hfield_drop")
    qs, qds = rollout(c, 1500)
    assert abs(qs[-1, 2] - 0.3) <= REST_TOL, qs[-1, :3]
    alpha = math.atan(0.1)
    x, z = qs[-1, 7], qs[-1, 9]
    assert abs(z - (0.25 + 0.1 * x + 0.1 / math.cos(alpha))) <= REST_TOL, (x, z)
    assert np.max(np.abs(qds[-1])) < 0.02
    w, qx, qy, _ = qs[-1, 10:14]
    tilt = math.acos(min(1.0, 1 - 2 * (qx * qx + qy * qy)))
    assert abs(tilt - alpha) < 0.01
