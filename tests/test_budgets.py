"""Contact and limit budgets (`options.contact_budget`, `limit_budget`): the solver visits each
environment's closest contact candidates and the limits nearest their ends, and nothing else.

Independent references: a candidate that cannot act (a ball high above the floor, a joint far from
its range's ends) gets no impulse in the full solve, so leaving it out must change nothing; where
more contacts touch than the budget allows, the shallowest gets no force (checked against the
scene's geometry and weights), and the bodies' contact forces still balance what they rest with."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from scenec.compiler import api
from scenec.runtime import constraints
from scenec.runtime import step as rstep

# Same arithmetic on the rows that act, in another order only where rows cannot act: float32 rounding
# of positions after 100 steps (m) and velocities (m/s).
TOL = 2e-5


def _balls(budget: int, heights) -> str:
    bodies = "\n".join(f"""  - name: b{i}
    pos: [{i} , 0, {z}]
    colliders: [{{sphere: {{radius: 0.1 m}}, density: 1000 kg/m^3}}]""" for i, z in enumerate(heights))
    joints = "\n".join(f"  - {{name: j{i}, kind: free, child: b{i}}}" for i in range(len(heights)))
    return f"""name: balls
options: {{timestep: 0.002, contact_budget: {budget}}}
bodies:
  - name: ground
    colliders: [{{plane: {{}}}}]
{bodies}
joints:
{joints}
"""


def _rollout(c, steps=100, batch=4):
    s = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape), c.init())
    f = jax.jit(lambda s: jax.lax.scan(lambda s, _: (rstep.step(c.model, s, jnp.zeros((batch, c.model.nu))), None),
                                       s, None, length=steps)[0])
    return f(s)


def test_left_out_candidates_change_nothing(tmp_path):
    # One ball resting on the floor, two falling from 2 m and 3 m (they land after 0.64 s, the rollout
    # lasts 0.2 s): with a budget of one contact the resting ball's is the one solved.
    heights = [0.1, 2.0, 3.0]
    full, one = (api.compile(_balls(k, heights), measure_jit=False) for k in (0, 1))
    assert one.model.contact_budget == 1 and full.model.contact_budget == 0
    a, b = _rollout(full), _rollout(one)
    np.testing.assert_allclose(np.asarray(b.q), np.asarray(a.q), atol=TOL)
    np.testing.assert_allclose(np.asarray(b.qd), np.asarray(a.qd), atol=TOL)
    np.testing.assert_allclose(np.asarray(b.contact_force), np.asarray(a.contact_force), rtol=1e-4, atol=1e-3)
    weight = 1000 * 4 / 3 * np.pi * 0.1 ** 3 * 9.81                      # N, the resting ball
    np.testing.assert_allclose(np.asarray(b.contact_force)[:, 1, 2], weight, rtol=0.02)


def test_the_closest_contacts_are_the_ones_solved(tmp_path):
    # Three balls on the floor sunk 3, 2 and 1 mm into it; a budget of two solves the deepest two: the
    # third gets no contact force and sinks, the other two are held (a force near their weight).
    heights = [0.097, 0.098, 0.099]
    c = api.compile(_balls(2, heights), measure_jit=False)
    s = _rollout(c, steps=1, batch=1)
    force = np.asarray(s.contact_force)[0, 1:, 2]                       # vertical, bodies b0 b1 b2
    assert force[2] == 0.0
    assert np.all(force[:2] > 0.0)
    assert float(s.qd[0, 2 * 6 + 2]) < float(s.qd[0, 2])                # b2 falls faster than b0


@pytest.mark.parametrize("budget", [0, 5])
def test_an_odd_number_of_contact_blocks_sweeps_as_the_plain_loop(monkeypatch, budget):
    # From a batch of UNROLL_FROM up the sweep visits two contact blocks per loop iteration on a CPU,
    # and an odd count of slots is padded with an empty one (constraints._padded); one block per
    # iteration needs no padding, nor does the whole sweep unrolled (a TPU's default). Seven balls,
    # four resting and three falling onto the floor (7 static blocks, or a budget of 5 chosen per
    # environment; all have landed after 0.6 s): the same arithmetic in the same order each way, so
    # the states agree to float32 rounding (TOL).
    c = api.compile(_balls(budget, [0.1, 0.099, 0.3, 0.098, 0.5, 0.1, 0.2]), measure_jit=False)
    batch = constraints.UNROLL_FROM
    assert constraints._sweep_unroll(batch, 7) == 2 and constraints._UNROLLED_UP_TO < 5
    padded = _rollout(c, steps=300, batch=batch)
    monkeypatch.setattr(constraints, "_UNROLL", constraints.TPU_UNROLL)
    whole = _rollout(c, steps=300, batch=batch)
    monkeypatch.setattr(constraints, "_UNROLL", 1)
    plain = _rollout(c, steps=300, batch=batch)
    held = np.count_nonzero(np.asarray(plain.contact_force)[:, 1:, 2] > 0.0, axis=1)
    assert np.all(held == (budget or 7))                                 # as many balls held as solved
    for other in (padded, whole):
        np.testing.assert_allclose(np.asarray(other.q), np.asarray(plain.q), atol=TOL)
        np.testing.assert_allclose(np.asarray(other.qd), np.asarray(plain.qd), atol=TOL)
        np.testing.assert_allclose(np.asarray(other.contact_force), np.asarray(plain.contact_force),
                                   rtol=1e-4, atol=1e-3)


def test_the_sweeps_unroll_fully_on_a_tpu_and_by_two_elsewhere(monkeypatch):
    # constraints._sweep_unroll: on a TPU the sweep ran faster with no loop at all, so sweeps of up
    # to TPU_UNROLL blocks unroll fully (Humanoid's 16 contact blocks, grasp's 36 limit rows), and
    # an odd count then needs no padding slot; longer ones visit two blocks per iteration, as a CPU
    # (and a GPU) does from UNROLL_FROM environments up (one below); a number set in _UNROLL
    # (tools/ablate.py unroll=N) applies on any backend.
    big, small, long = constraints.UNROLL_FROM, constraints.UNROLL_FROM - 1, constraints.TPU_UNROLL + 1
    unroll = constraints._sweep_unroll
    assert (unroll(big, 16), unroll(small, 16), unroll(big, long)) == (2, 1, 2)
    assert constraints._padded(15, unroll(big, 15)) == 16
    monkeypatch.setattr(constraints.jax, "default_backend", lambda: "tpu")
    assert (unroll(big, 16), unroll(small, 36), unroll(big, long), unroll(small, long)) == (16, 36, 2, 1)
    assert constraints._padded(15, unroll(big, 15)) == 15
    monkeypatch.setattr(constraints, "_UNROLL", 4)
    assert (unroll(big, 16), unroll(small, 16)) == (4, 1)


def test_run_reports_environments_beyond_the_budget():
    # `scenec run` counts the final states with more penetrating candidates than the budget solves:
    # the three sunk balls (3 penetrating, budget 2) are one such state; raised 5 cm, none is.
    from scenec.compiler.cmd_run import budget_overflow

    c = api.compile(_balls(2, [0.097, 0.098, 0.099]), measure_jit=False)
    s = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (2,) + x.shape), c.init())
    assert budget_overflow(c.model, s) == (2, 3)
    raised = s.replace(q=s.q.at[:, 2::7].add(0.05))
    assert budget_overflow(c.model, raised) == (0, 0)


LIMITED_CHAIN = """name: chain
options: {{timestep: 0.002, limit_budget: {budget}}}
bodies:
  - name: a
    pos: [0, 0, 1]
    colliders: [{{capsule: {{radius: 0.05 m, half_length: 0.2 m}}, euler: [0, 1.5708, 0], pos: [0.25, 0, 0]}}]
  - name: b
    pos: [0.5, 0, 1]
    colliders: [{{capsule: {{radius: 0.05 m, half_length: 0.2 m}}, euler: [0, 1.5708, 0], pos: [0.25, 0, 0]}}]
  - name: c
    pos: [1.0, 0, 1]
    colliders: [{{capsule: {{radius: 0.05 m, half_length: 0.2 m}}, euler: [0, 1.5708, 0], pos: [0.25, 0, 0]}}]
joints:
  - {{name: ja, kind: hinge, child: a, axis: [0, 1, 0], range: [-10 deg, 10 deg]}}
  - {{name: jb, kind: hinge, parent: a, child: b, axis: [0, 1, 0], range: [-170 deg, 170 deg]}}
  - {{name: jc, kind: hinge, parent: b, child: c, axis: [0, 1, 0], range: [-170 deg, 170 deg]}}
"""


def test_limit_budget_solves_the_limit_that_acts():
    # A three-link arm falls onto the first joint's ±10° stop; the other two joints swing freely far
    # from their ±170° ends over the rollout. One limit row (the nearest) reproduces the full solve.
    full, one = (api.compile(LIMITED_CHAIN.format(budget=k), measure_jit=False) for k in (0, 1))
    a, b = _rollout(full, steps=150), _rollout(one, steps=150)
    assert float(a.q[0, 0]) > np.radians(9.0)                           # it did reach the stop
    np.testing.assert_allclose(np.asarray(b.q), np.asarray(a.q), atol=TOL)
    np.testing.assert_allclose(np.asarray(b.qd), np.asarray(a.qd), atol=10 * TOL)


def test_the_grouped_limit_sweep_equals_the_straight_line_one(monkeypatch):
    # From constraints._LIMIT_SCAN_FROM groups of rows up, the row-space limit sweep is a loop over the
    # groups instead of straight-line code: the same updates in the same order. A chain of 13 links
    # under gravity, every hinge limited to ±10°: most of its stops engage and push on each other
    # through M⁻¹ (13 rows: four groups, the last padded); straight-line (threshold raised) and looped
    # give the same motion to float32 rounding.
    n = 13
    bodies = "\n".join(f"""  - name: l{i}
    pos: [{0.2 * i + 0.1}, 0, 2]
    colliders: [{{capsule: {{radius: 0.03 m, half_length: 0.07 m}}, euler: [0, 90 deg, 0]}}]""" for i in range(n))
    joints = "\n".join(f"  - {{name: j{i}, kind: hinge, {'parent: l%d, ' % (i - 1) if i else ''}child: l{i}, "
                        f"anchor: [{0.2 * i}, 0, 2], axis: [0, 1, 0], range: [-10 deg, 10 deg]}}" for i in range(n))
    c = api.compile(f"name: chain\noptions: {{timestep: 0.01}}\nbodies:\n{bodies}\njoints:\n{joints}\n",
                    measure_jit=False)
    assert int(np.sum(np.asarray(c.model.jnt_limited.array))) >= constraints._LIMIT_SCAN_FROM * constraints._LIMIT_GROUP
    looped = _rollout(c, steps=100)
    monkeypatch.setattr(constraints, "_LIMIT_SCAN_FROM", 1000)
    straight = _rollout(c, steps=100)
    assert np.sum(np.abs(np.degrees(np.asarray(straight.q[0]))) > 9.0) >= 10   # at their stops
    np.testing.assert_allclose(np.asarray(looped.q), np.asarray(straight.q), atol=TOL)
    np.testing.assert_allclose(np.asarray(looped.qd), np.asarray(straight.qd), atol=10 * TOL)


# A pendulum on a ball joint far from the chain (its own tree), hanging at rest inside a 90° cone.
HANGING_BALL = """  - name: d
    pos: [3, 0, 1]
    colliders: [{capsule: {radius: 0.05 m, half_length: 0.2 m}, pos: [0, 0, -0.25]}]
"""
BALL_JOINT = "  - {name: jd, kind: ball, child: d, range: [0, 90 deg]}\n"


@pytest.mark.parametrize("budget, wide", [(0, True), (1, True), (0, False), (2, False)])
def test_hinge_limit_rows_equal_the_dense_rows(budget, wide):
    # Hinge and slide limits are swept in row space (A_ij = s_i·s_j·M⁻¹[d_i, d_j]); a scene with a
    # limited ball joint keeps every limit as a dense row, swept row by row (constraints._limit_system).
    # The same Gauss–Seidel in exact arithmetic, so the chain's motion must not depend on which: the
    # ball's pendulum is a separate tree that never nears its cone, so its row gets no impulse and M⁻¹
    # couples nothing across the trees. With narrow ranges all three joints reach their stops together
    # and their rows push on each other through M⁻¹ (the off-diagonal A_ij); with a budget of 2 each
    # environment keeps the two nearest of the three rows.
    chain = LIMITED_CHAIN.format(budget=budget)
    if not wide:
        chain = chain.replace("-170 deg, 170 deg", "-10 deg, 10 deg")
    with_ball = chain.replace("joints:\n", HANGING_BALL + "joints:\n") + BALL_JOINT
    a, b = (_rollout(api.compile(src, measure_jit=False), steps=150) for src in (chain, with_ball))
    assert float(a.q[0, 0]) > np.radians(9.0)                           # it did reach the stop
    if not wide:
        assert np.all(np.abs(np.degrees(np.asarray(a.q[0]))) > 9.0)     # all three did
    np.testing.assert_allclose(np.asarray(b.q[:, :3]), np.asarray(a.q), atol=TOL)
    np.testing.assert_allclose(np.asarray(b.qd[:, :3]), np.asarray(a.qd), atol=10 * TOL)
    np.testing.assert_allclose(np.asarray(b.q[:, 3:]), [[1, 0, 0, 0]] * 4, atol=TOL)   # still hanging


BALL_IN_CONE = """name: cone
options: {timestep: 0.002}
bodies:
  - name: d
    pos: [0, 0, 1]
    colliders: [{capsule: {radius: 0.05 m, half_length: 0.2 m}, pos: [0, 0, -0.25]}]
joints:
  - {name: jd, kind: ball, child: d%s}
"""


def test_a_ball_joint_stays_inside_its_cone():
    # A hanging pendulum kicked sideways at 6 rad/s swings out to about 65° (energy: ½Iω² = mgl(1-cos θ)
    # with I/m ≈ 0.078 m² about the pivot and l = 0.25 m; checked on the unlimited joint below); a 30°
    # cone stops it there. The limit is soft (time constant 0.02 s by default), so it may pass the cone
    # by a little; 3° is well short of the 35° it would otherwise overshoot by.
    def max_angle(range_):
        c = api.compile(BALL_IN_CONE % range_, measure_jit=False)
        s = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (1,) + x.shape), c.init())
        s = s.replace(qd=s.qd.at[:, 0].set(6.0))
        run = jax.jit(lambda s: jax.lax.scan(lambda s, _: (rstep.step(c.model, s, jnp.zeros((1, 0))), s.q),
                                             s, None, length=250)[1])
        w = np.abs(np.asarray(run(s))[:, 0, 0])                          # |cos(θ/2)|
        return np.degrees(2 * np.arccos(np.clip(w, 0.0, 1.0))).max()

    assert max_angle("") > 60.0
    assert 28.0 < max_angle(", range: [0, 30 deg]") < 33.0


def test_a_budget_is_validated():
    from scenec.compiler.check import check

    bad = check("options: {contact_budget: -1, limit_budget: -2}\n")
    assert sorted(d.code for d in bad.diagnostics) == ["E311", "E311"]      # outside the interval
    assert check("options: {contact_budget: 0, limit_budget: 3}\n").diagnostics == ()


@pytest.mark.parametrize("name, budget", [("ant", 8), ("fetch", 8), ("grasp", 4), ("humanoid", 12)])
def test_shipped_scenes_use_their_budgets(name, budget):
    from conftest import SCENES_DIR

    c = api.compile(SCENES_DIR / f"{name}.yaml", measure_jit=False)
    assert c.model.contact_budget == budget
    assert sum(len(g.geom1) * g.ncon for g in c.model.pair_groups) > budget
    assert c.report["contacts_solved"] == budget < c.report["contacts_per_step"]
    # what `scenec bench` prints beside the peers: the same two counts, from the model alone
    assert constraints.solved_contacts(c.model) == (budget, c.report["contacts_per_step"])


def test_without_a_budget_every_candidate_is_solved(tmp_path):
    # three free balls over a plane: one contact candidate for each ball with the plane and one for
    # each pair of balls (3 + 3); a budget below that solves the budget, one above it all six
    for budget, solved in ((0, 6), (2, 2), (9, 6)):
        path = tmp_path / f"balls{budget}.yaml"
        path.write_text(_balls(budget, [0.5, 1.0, 1.5]))
        assert constraints.solved_contacts(api.compile(path, measure_jit=False).model) == (solved, 6)


# fetch (11 s on 2 cores) with the slow checks
@pytest.mark.parametrize("name", ["ant", pytest.param("fetch", marks=pytest.mark.slow)])
def test_shipped_budgets_cover_every_penetrating_contact_under_random_actions(name):
    # How the shipped budgets were chosen: along random-action rollouts no environment ever has more
    # penetrating candidates than the solver visits (the budget only leaves out contacts still apart).
    import jax
    import jax.numpy as jnp
    from conftest import SCENES_DIR

    from scenec.runtime import constraints, kinematics, step

    m = api.compile(SCENES_DIR / f"{name}.yaml", measure_jit=False).model
    batch, steps = 32, 60
    lo = jnp.where(m.actuator_ctrl_limited.array, m.actuator_ctrl_range[:, 0], -1.0)
    hi = jnp.where(m.actuator_ctrl_limited.array, m.actuator_ctrl_range[:, 1], 1.0)

    @jax.jit
    def most(key):
        s = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape), step.init(m))

        def body(s, k):
            s = step.step(m, s, jax.random.uniform(k, (batch, m.nu), minval=lo, maxval=hi))
            f = kinematics.forward_kinematics(m, s.q.T)
            return s, jnp.max(constraints.penetrating_candidates(m, f))

        s, counts = jax.lax.scan(body, s, jax.random.split(key, steps))
        return jnp.max(counts), jnp.all(jnp.isfinite(s.q))

    deepest, finite = most(jax.random.PRNGKey(3))
    assert bool(finite)
    assert 0 < int(deepest) <= m.contact_budget


@pytest.mark.parametrize("n", [40, 189])
def test_smallest_orders_rows_as_a_stable_sort(n):
    # The budgets' choice (constraints._smallest; from 100 rows up in groups of about √n rows) against
    # numpy's stable sort of each environment's keys: ascending, ties to the lower row. Keys drawn from
    # a few values make many ties; +inf is an inactive candidate, and a NaN ranks with it, by row.
    rng = np.random.default_rng(3)
    key = rng.choice([-0.02, -0.01, 0.0, 0.01, np.inf], size=(n, 64), p=[0.1, 0.1, 0.1, 0.1, 0.6])
    key = key.astype(np.float32)
    key[7, :5] = np.nan
    key[:, 5] = np.inf                                                  # nothing active
    key[:-3, 6] = np.inf                                                # all active rows in the last group
    order = np.argsort(np.where(np.isnan(key), np.inf, key), axis=0, kind="stable")
    for k in (1, 8, 16, 39):
        got = np.asarray(constraints._smallest(jnp.asarray(key), k))
        assert got.dtype == np.int32
        np.testing.assert_array_equal(got, order[:k])
