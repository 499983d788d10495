"""The environment layer: reset/step, wrappers, clipping, non-finite isolation, targets, reset noise,
Python tasks, generated modules, batching and gradients.

References are independent of the code under test: the physics step called directly, the task's
formulas written out in NumPy, stepping environments one by one instead of in a batch, and finite
differences for gradients. A tiny slide-joint point mass keeps compilation short.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from scenec.compiler.api import compile
from scenec.runtime import envs
from scenec.runtime import step as rstep
from scenec.runtime.envs.core import TaskEnv
from scenec.runtime.task import View

from jaxpr_util import data_dependent_branches

# float32 quantities recomputed in float64 NumPy from the same state
F32_TOL = 1e-5

POINT = """
name: point
options: {timestep: 0.05, gravity: [0, 0, 0]}
parameters:
  goal: 0.5 m
bodies:
  - name: mass
    mass: 1
    inertia: [0.01, 0.01, 0.01]
    colliders: [{sphere: {radius: 0.05}, mask: 0}]
joints:
  - {name: x, kind: slide, child: mass, axis: [1, 0, 0], damping: 1}
actuators:
  - {name: push, joint: x, gear: 5, ctrl_range: [-1, 1]}
task:
  episode_length: 7
  reset_noise: {q: 0.3, qd: 0.2}
  targets:
    - {name: flag, pos: [0.2, 0, 0], low: [-1, -1, 0], high: [1, 1, 0], body: mass, radius: 0.1}
  observations:
    - {name: offset, expr: "joint.x.q - goal"}
    - {name: velocity, expr: joint.x.qd}
    - {name: flag, expr: "target.flag.pos.x"}
  reward:
    - {name: distance, expr: "-abs(joint.x.q - goal)"}
    - {name: control, expr: "sum(action ^ 2)", weight: -0.1}
  termination:
    - {name: away, expr: "abs(joint.x.q) > 2"}
"""


@pytest.fixture(scope="module")
def compiled():
    return compile(POINT, measure_jit=False)


@pytest.fixture(scope="module")
def base(compiled):
    return TaskEnv(compiled.model, compiled.task)


@pytest.fixture(scope="module")
def env(compiled):
    return envs.load(compiled)


@pytest.fixture(scope="module")
def fns(base, env):
    return {"base_reset": jax.jit(base.reset), "base_step": jax.jit(base.step),
            "reset": jax.jit(env.reset), "step": jax.jit(env.step),
            "batch_step": jax.jit(jax.vmap(env.step)), "batch_reset": jax.jit(jax.vmap(env.reset))}


@pytest.mark.parametrize("seed", [1, 2])   # the mass reaches the flag from seed 1's start, not from 2's
def test_shapes_and_task_values(base, fns, compiled, seed):
    s = fns["base_reset"](jax.random.PRNGKey(seed))
    assert s.obs.shape == (3,) and base.observation_size == 3 and base.action_size == 1
    action = jnp.array([0.4])
    n = fns["base_step"](s, action)
    # the task written out in NumPy on the stepped state
    x, v = float(n.pipeline_state.q[0]), float(n.pipeline_state.qd[0])
    # the flag (at x = 0.2, radius 0.1) stays unless the mass arrived: then it moves within its box
    arrived = abs(x - 0.2) < 0.1
    assert float(n.metrics["target/flag"]) == float(arrived)
    flag = float(n.obs[2])
    assert (-1 <= flag <= 1 and flag != 0.2) if arrived else flag == pytest.approx(0.2, abs=F32_TOL)
    np.testing.assert_allclose(np.asarray(n.obs), [x - 0.5, v, flag], atol=F32_TOL)
    want = -abs(x - 0.5) - 0.1 * 0.4 ** 2
    assert float(n.reward) == pytest.approx(want, abs=F32_TOL)
    assert float(n.metrics["reward/distance"]) + float(n.metrics["reward/control"]) == pytest.approx(want, abs=F32_TOL)
    # the physics is the compiled step itself
    direct = jax.jit(rstep.step)(compiled.model, s.pipeline_state, action)
    np.testing.assert_array_equal(np.asarray(n.pipeline_state.q), np.asarray(direct.q))


def test_actions_are_clipped(base, fns):
    s = fns["base_reset"](jax.random.PRNGKey(1))
    a = fns["base_step"](s, jnp.array([7.0]))
    b = fns["base_step"](s, jnp.array([1.0]))
    np.testing.assert_array_equal(np.asarray(a.pipeline_state.qd), np.asarray(b.pipeline_state.qd))
    assert float(a.reward) == float(b.reward)  # the control cost sees the clipped action


def test_reset_noise(fns, compiled):
    keys = jax.random.split(jax.random.PRNGKey(2), 256)
    s = fns["batch_reset"](keys)
    q = np.asarray(s.pipeline_state.q[:, 0]) - float(compiled.model.q0[0])
    qd = np.asarray(s.pipeline_state.qd[:, 0])
    assert np.all(np.abs(q) <= 0.3) and np.all(np.abs(qd) <= 0.2)
    assert q.std() > 0.1 and qd.std() > 0.05  # uniform on ±0.3 has std 0.17, on ±0.2 0.12
    again = fns["batch_reset"](keys)
    np.testing.assert_array_equal(np.asarray(again.obs), np.asarray(s.obs))


def test_quaternion_reset_noise_stays_unit():
    text = """
bodies:
  - name: ball
    mass: 1
    inertia: [0.1, 0.1, 0.1]
    colliders: [{sphere: {radius: 0.1}, mask: 0}]
joints:
  - {name: free, kind: free, child: ball}
task:
  reset_noise: {q: 0.5}
  observations:
    - {expr: body.ball.quat}
"""
    env = TaskEnv(*_model_task(text))
    s = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.PRNGKey(0), 64))
    quat = np.asarray(s.pipeline_state.q[:, 3:7], np.float64)
    np.testing.assert_allclose(np.linalg.norm(quat, axis=1), 1.0, atol=1e-6)
    # a rotation of at most 0.5 rad about each axis: angle ≤ 0.5·√3
    angle = 2 * np.arccos(np.clip(np.abs(quat[:, 0]), 0, 1))
    assert angle.max() <= 0.5 * np.sqrt(3) + 1e-5 and angle.max() > 0.2


def _model_task(text):
    c = compile(text, measure_jit=False)
    return c.model, c.task


def test_episode_length_truncates_and_auto_reset(env, fns):
    s = fns["reset"](jax.random.PRNGKey(3))
    for i in range(7):
        s = fns["step"](s, jnp.array([0.0]))
        if i < 6:
            assert float(s.done) == 0.0
    assert float(s.done) == 1.0 and float(s.info["truncation"]) == 1.0
    assert int(s.info["steps"]) == 0 and float(s.pipeline_state.time) == 0.0  # a fresh episode
    assert not np.array_equal(np.asarray(s.obs), np.asarray(s.info["final_obs"]))


def test_without_auto_reset_keeps_the_rest_of_the_stack(env, fns):
    def stack(e):
        kinds = []
        while isinstance(e, envs.Wrapper):
            kinds.append(type(e))
            e = e.env
        return kinds + [type(e)]

    before = stack(env)
    plain = envs.without_auto_reset(env)
    assert envs.AutoReset in before
    assert stack(plain) == [k for k in before if k is not envs.AutoReset]
    assert stack(env) == before                                          # a copy: env is as it was
    # past the episode's end (7 steps here) it steps on: no fresh episode, the step count goes on
    s = jax.jit(plain.reset)(jax.random.PRNGKey(3))
    step = jax.jit(plain.step)
    for _ in range(8):
        s = step(s, jnp.array([0.0]))
    assert int(s.info["steps"]) == 8 and float(s.pipeline_state.time) > 0.0


def test_termination_is_not_truncation(fns, base, compiled):
    s = fns["reset"](jax.random.PRNGKey(4))
    far = s.pipeline_state.replace(q=jnp.array([1.99]), qd=jnp.array([5.0]))
    s = s.replace(pipeline_state=far)
    s = fns["step"](s, jnp.array([1.0]))
    assert float(s.done) == 1.0 and float(s.info["truncation"]) == 0.0


def test_a_non_finite_environment_is_isolated(env, fns):
    keys = jax.random.split(jax.random.PRNGKey(5), 4)
    s = fns["batch_reset"](keys)
    q = s.pipeline_state.q.at[2, 0].set(jnp.nan)
    s = s.replace(pipeline_state=s.pipeline_state.replace(q=q))
    actions = jnp.full((4, 1), 0.3)
    n = fns["batch_step"](s, actions)
    done, reward = np.asarray(n.done), np.asarray(n.reward)
    assert done[2] == 1.0 and reward[2] == 0.0 and float(n.metrics["nonfinite"][2]) == 1.0
    assert np.all(np.isfinite(np.asarray(n.obs))) and np.all(np.isfinite(np.asarray(n.pipeline_state.q)))
    assert np.asarray(n.metrics["nonfinite"])[[0, 1, 3]].sum() == 0.0
    # the healthy environments are exactly what stepping them alone gives
    for i in (0, 1, 3):
        alone = fns["step"](jax.tree_util.tree_map(lambda x: x[i], s), actions[i])
        np.testing.assert_array_equal(np.asarray(alone.obs), np.asarray(n.obs[i]))
        assert float(alone.reward) == float(n.reward[i])


def test_action_repeat_equals_repeated_steps(base, fns):
    repeat = envs.ActionRepeat(base, 3)
    s = fns["base_reset"](jax.random.PRNGKey(6))
    r = jax.jit(repeat.step)(s, jnp.array([0.5]))
    t, total = s, 0.0
    for _ in range(3):
        t = fns["base_step"](t, jnp.array([0.5]))
        total += float(t.reward)
    np.testing.assert_allclose(np.asarray(r.pipeline_state.q), np.asarray(t.pipeline_state.q), atol=0)
    assert float(r.reward) == pytest.approx(total, abs=F32_TOL)
    assert int(r.info["steps"]) == 3


def test_targets_move_when_reached(fns):
    s = fns["base_reset"](jax.random.PRNGKey(7))
    # put the mass on the flag (x = 0.2 ± 0.1) and step once
    on = s.pipeline_state.replace(q=jnp.array([0.2]), qd=jnp.array([0.0]))
    n = fns["base_step"](s.replace(pipeline_state=on), jnp.array([0.0]))
    assert float(n.metrics["target/flag"]) == 1.0
    flag = np.asarray(n.info["targets"][0])
    assert -1 <= flag[0] <= 1 and -1 <= flag[1] <= 1 and flag[2] == 0 and flag[0] != 0.2
    assert float(n.obs[2]) == pytest.approx(flag[0])  # the observation sees the new position
    off = s.pipeline_state.replace(q=jnp.array([-0.5]), qd=jnp.array([0.0]))
    m = fns["base_step"](s.replace(pipeline_state=off), jnp.array([0.0]))
    assert float(m.metrics["target/flag"]) == 0.0 and float(m.info["targets"][0, 0]) == pytest.approx(0.2)


def test_python_task_matches_the_scene_task(compiled, fns):
    def observe(view: View):
        x = view.joint_q("x")
        return jnp.stack([x - 0.5, view.joint_qd("x"), view.target_pos(0)[0]])

    def reward(view: View):
        return {"distance": -jnp.abs(view.joint_q("x") - 0.5), "control": -0.1 * jnp.sum(view.action ** 2)}

    task = envs.PythonTask(observe, reward, done=lambda v: jnp.abs(v.joint_q("x")) > 2,
                           reset_noise_q=0.3, reset_noise_qd=0.2, episode_length=7,
                           targets=compiled.task.targets)
    py = TaskEnv(compiled.model, task)
    s1 = jax.jit(py.reset)(jax.random.PRNGKey(8))
    s2 = fns["base_reset"](jax.random.PRNGKey(8))
    for _ in range(3):
        s1 = jax.jit(py.step)(s1, jnp.array([0.7]))
        s2 = fns["base_step"](s2, jnp.array([0.7]))
        np.testing.assert_allclose(np.asarray(s1.obs), np.asarray(s2.obs), atol=F32_TOL)
        assert float(s1.reward) == pytest.approx(float(s2.reward), abs=F32_TOL)


def test_thousands_of_environments(env):
    n = 4096
    reset = jax.jit(lambda k: jax.vmap(env.reset)(jax.random.split(k, n)))
    s = reset(jax.random.PRNGKey(9))

    @jax.jit
    def roll(s, key):
        def one(s, k):
            a = jax.random.uniform(k, (n, 1), minval=-1, maxval=1)
            s = jax.vmap(env.step)(s, a)
            return s, s.reward
        return jax.lax.scan(one, s, jax.random.split(key, 10))

    s, rewards = roll(s, jax.random.PRNGKey(10))
    assert rewards.shape == (10, n) and np.all(np.isfinite(np.asarray(rewards)))


def test_gradient_through_the_step_matches_finite_differences(base, fns):
    s = fns["base_reset"](jax.random.PRNGKey(11))

    def ret(a):
        t, total = s, 0.0
        for _ in range(2):
            t = base.step(t, a)
            total = total + t.reward
        return total

    a = jnp.array([0.3])
    g = float(jax.jit(jax.grad(ret))(a)[0])
    h = 1e-2
    fd = (float(jax.jit(ret)(a + h)) - float(jax.jit(ret)(a - h))) / (2 * h)
    # central differences in float32 with h = 1e-2: the reward is smooth here (no kink of |x - goal|
    # within reach), so they agree to about 1e-3 relative
    assert g == pytest.approx(fd, rel=2e-2, abs=1e-3)


@pytest.mark.parametrize("split", [False, True])
def test_batched_gradients_match_the_per_environment_ones(env, fns, split, monkeypatch):
    # envs.differentiable(env, batched=True) (APG's form) runs the vmapped batch through the step's
    # batch path inside jax.grad; envs.differentiable(env) vmaps the plain step. The same gradient
    # of a batch's return over three steps up to float32 rounding of the same arithmetic in another
    # layout (rtol 1e-5), and nonzero (the actions move the masses); with `split` the step splits
    # the batch over the host's devices (where there are two), so the gradient goes back through
    # that split too.
    if split:
        if len(jax.devices()) < 2:
            pytest.skip("needs two XLA host devices")
        monkeypatch.setitem(rstep.SPLIT_FROM_US, "scan", 0.0)
        monkeypatch.setitem(rstep.SPLIT_FROM_US, "call", 0.0)
    s = fns["batch_reset"](jax.random.split(jax.random.PRNGKey(14), 8))

    def objective(e):
        def ret(a):
            t, total = s, 0.0
            for _ in range(3):
                t = jax.vmap(e.step)(t, a)
                total = total + jnp.sum(t.reward)
            return total
        return jax.jit(jax.grad(ret))

    a = jnp.linspace(-0.6, 0.6, 8)[:, None]
    plain = np.asarray(objective(envs.differentiable(env))(a))
    grad = objective(envs.differentiable(env, batched=True))
    if split:
        assert "shard_map" in str(jax.make_jaxpr(grad)(a))
    batched = np.asarray(grad(a))
    assert np.all(np.abs(plain) > 1e-3)
    np.testing.assert_allclose(batched, plain, rtol=1e-5, atol=1e-7)


def test_generated_module_exposes_the_environment(tmp_path, compiled, fns):
    from scenec.compiler.emit import emit
    from scenec.runtime.io import load_module

    paths = emit(compiled, tmp_path)
    module = load_module(paths["module"])
    assert module.task == compiled.task
    s = module.reset(jax.random.PRNGKey(12))
    ref = fns["reset"](jax.random.PRNGKey(12))
    np.testing.assert_array_equal(np.asarray(s.obs), np.asarray(ref.obs))
    s = module.env_step(s, jnp.array([0.2]))
    assert s.obs.shape == (3,)
    for source in (tmp_path, paths["module"], paths["model"]):
        assert envs.load(source).observation_size == 3
    text = paths["module"].read_text()
    assert "mass" not in text and "flag" not in text and "goal" not in text  # no user strings


def test_scene_without_task(tmp_path):
    c = compile("""
bodies:
  - name: b
    mass: 1
    inertia: [1, 1, 1]
    colliders: [{sphere: {radius: 0.1}, mask: 0}]
joints:
  - {name: j, kind: slide, child: b}
""", measure_jit=False)
    assert c.task is None
    with pytest.raises(envs.NoTaskError):
        envs.load(c)


def test_random_start_targets():
    text = POINT.replace("  observations:", """    - {name: goal2, pos: [9, 9, 9], low: [-1, -2, 0], high: [1, 2, 0.5], random_start: true}
  observations:""")
    env = TaskEnv(*_model_task(text))
    s = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.PRNGKey(13), 128))
    first, second = np.asarray(s.info["targets"][:, 0]), np.asarray(s.info["targets"][:, 1])
    np.testing.assert_allclose(first, np.tile([0.2, 0.0, 0.0], (128, 1)), atol=F32_TOL)  # starts at pos
    assert np.all(second >= [-1, -2, 0]) and np.all(second <= [1, 2, 0.5])
    assert second.std(axis=0).min() > 0.1  # uniform on [0, 0.5] has std 0.14


def _primitives(jaxpr) -> set:
    """Names of every primitive in a jaxpr, sub-jaxprs (scan bodies, custom rules, pjit) included."""
    names = set()
    for eqn in jaxpr.eqns:
        names.add(eqn.primitive.name)
        for value in eqn.params.values():
            for v in value if isinstance(value, (tuple, list)) else (value,):
                inner = getattr(v, "jaxpr", v)
                if hasattr(inner, "eqns"):
                    names |= _primitives(inner)
    return names


def test_environment_step_is_branch_free(env, base):
    """No data-dependent cond or while in the traced environment step (DESIGN.md: branch-free, like
    the step)."""
    s = jax.eval_shape(env.reset, jax.random.PRNGKey(0))
    batch = jax.tree_util.tree_map(lambda x: jnp.zeros((3,) + x.shape, x.dtype), s)
    jaxpr = jax.make_jaxpr(jax.vmap(env.step))(batch, jnp.zeros((3, 1)))
    found = _primitives(jaxpr.jaxpr)
    assert "scan" in found or "add" in found  # the walk sees inside the step
    assert not data_dependent_branches(jaxpr), data_dependent_branches(jaxpr)
    repeat = envs.ActionRepeat(base, 2)
    jaxpr = jax.make_jaxpr(repeat.step)(jax.eval_shape(base.reset, jax.random.PRNGKey(0)), jnp.zeros(1))
    assert "scan" in _primitives(jaxpr.jaxpr) and not data_dependent_branches(jaxpr)
