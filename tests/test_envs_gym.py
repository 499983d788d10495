"""The Gymnasium adapters (optional extra `scenec[gym]`): Gymnasium's own env checker on `GymEnv`,
and `GymVectorEnv`'s spaces, same-step autoreset and agreement with the functional environment."""

from __future__ import annotations

import warnings

import jax
import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")

from gymnasium.utils.env_checker import check_env  # noqa: E402

from scenec.compiler.api import compile  # noqa: E402
from scenec.runtime import envs  # noqa: E402
from scenec.runtime import step as rstep  # noqa: E402
from scenec.runtime.envs.gym import GymEnv, GymVectorEnv  # noqa: E402

POINT = """
name: point
options: {timestep: 0.05, gravity: [0, 0, 0]}
bodies:
  - name: mass
    mass: 1
    inertia: [0.01, 0.01, 0.01]
    colliders: [{sphere: {radius: 0.05}, mask: 0}]
joints:
  - {name: x, kind: slide, child: mass, axis: [1, 0, 0], damping: 1}
actuators:
  - {name: push, joint: x, gear: 5, ctrl_range: [-2, 1]}
task:
  episode_length: 5
  reset_noise: {q: 0.5}
  observations:
    - {name: x, expr: joint.x.q}
    - {name: v, expr: joint.x.qd}
  reward:
    - {expr: "-abs(joint.x.q)"}
  termination:
    - {expr: "joint.x.q > 0.45"}
"""


@pytest.fixture(scope="module")
def compiled():
    return compile(POINT, measure_jit=False)


def test_gymnasium_env_checker(compiled):
    env = GymEnv(compiled)
    assert env.action_space.low.tolist() == [-2.0] and env.action_space.high.tolist() == [1.0]
    with warnings.catch_warnings():
        # the checker warns that unbounded observation boxes are "probably" too wide; ours are
        warnings.filterwarnings("ignore", message=".*infinity.*")
        check_env(env, skip_render_check=True)


def test_gym_env_episode(compiled):
    env = GymEnv(compiled)
    obs, info = env.reset(seed=0)
    assert obs.dtype == np.float32 and obs.shape == (2,)
    for t in range(5):
        obs, reward, terminated, truncated, info = env.step(np.array([0.0], np.float32))
        if terminated:
            break
    # either the termination (x > 0.45) or the 5-step limit ended it, never both
    assert terminated != truncated and (truncated == (t == 4))
    assert "reward/reward_0" in info and "nonfinite" in info


def test_vector_env_same_step_autoreset(compiled):
    vec = GymVectorEnv(compiled, 6)
    assert vec.metadata["autoreset_mode"] == gymnasium.vector.AutoresetMode.SAME_STEP
    assert vec.observation_space.shape == (6, 2) and vec.action_space.shape == (6, 1)
    obs, _ = vec.reset(seed=3)
    first = obs.copy()
    for _ in range(5):
        obs, reward, terminated, truncated, infos = vec.step(np.zeros((6, 1), np.float32))
    ended = terminated | truncated
    assert ended.all() and truncated.any()  # the 5-step limit ended every episode still running
    assert infos["_final_obs"].all()
    final = np.stack(infos["final_obs"])
    assert final.shape == (6, 2) and not np.allclose(final, obs)
    assert reward.dtype == np.float32 and obs.shape == first.shape


# With `split`, the step splits the 64 environments over two host devices (where there are two:
# step.SPLIT_FROM_US set to 0, since this scene's batch is far too light to pay for a split), and the
# vector env keeps its state there between steps, so its step compiles once: split, as replicas of one
# device's share (runtime/replicas.py), else the jit. Either way exactly the functional env's numbers.
@pytest.mark.parametrize("n,split", [(4, False), (64, False), (64, True)])
def test_vector_env_matches_the_functional_env(compiled, n, split, monkeypatch):
    if split:
        monkeypatch.setitem(rstep.SPLIT_FROM_US, "call", 0.0)
        monkeypatch.setitem(rstep.SPLIT_FROM_US, "scan", 0.0)
    vec = GymVectorEnv(compiled, n)
    obs, _ = vec.reset(seed=11)
    env = envs.load(compiled)
    # GymVectorEnv draws its key from its seeded generator; replay the same key
    rng = np.random.default_rng(11)
    key = jax.random.PRNGKey(int(rng.integers(0, 2**31 - 1)))
    ref = jax.jit(jax.vmap(env.reset))(jax.random.split(key, n))
    np.testing.assert_array_equal(obs, np.asarray(ref.obs))
    ref_step = jax.jit(jax.vmap(env.step))
    for k in range(3):
        action = np.full((n, 1), 0.5 - 0.25 * k, np.float32)
        obs, reward, *_ = vec.step(action)
        ref = ref_step(ref, action)
        np.testing.assert_array_equal(obs, np.asarray(ref.obs))
        np.testing.assert_array_equal(reward, np.asarray(ref.reward))
    spread = len(vec._state.obs.sharding.device_set) > 1
    assert spread == (split and len(jax.devices()) > 1 and jax.devices()[0].platform == "cpu")
    if spread:
        assert vec._step._cache_size() == 0
        assert {k: len(r._programs) for k, r in vec._replicas.runs.items()} == {"reset": 1, "step": 1}
    else:
        assert vec._step._cache_size() == 1 and vec._replicas is None


def test_vector_env_falls_back_to_the_jit_without_replicas(compiled, monkeypatch):
    # Where this jax builds no replicas (runtime/replicas.py), the split vector env says so once and
    # runs its jitted reset and step: the same numbers.
    if len(jax.devices()) < 2 or jax.devices()[0].platform != "cpu":
        pytest.skip("needs two XLA host devices")
    from scenec.runtime import replicas

    def refuse(self, lowered):
        raise replicas.Unavailable("no replicas in this test")

    monkeypatch.setitem(rstep.SPLIT_FROM_US, "call", 0.0)
    monkeypatch.setattr(replicas.Replicas, "compile", refuse)
    vec = GymVectorEnv(compiled, 8)
    with pytest.warns(UserWarning, match="no replicas in this test"):
        obs, _ = vec.reset(seed=5)
    assert vec._replicas is None
    obs2, *_ = vec.step(np.zeros((8, 1), np.float32))
    monkeypatch.undo()
    ref = GymVectorEnv(compiled, 8)
    ref_obs, _ = ref.reset(seed=5)
    np.testing.assert_array_equal(obs, ref_obs)
