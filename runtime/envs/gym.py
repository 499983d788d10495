"""Gymnasium adapters (optional extra `scenec[gym]`): `GymEnv` (gymnasium.Env) and `GymVectorEnv`
(gymnasium.vector.VectorEnv) over a scenec environment.

Where it sits: runtime/envs, for code written against Gymnasium's API (numpy in, numpy out). The
functional environment underneath is jitted once; `GymVectorEnv.step` is one jitted call for the whole
batch, auto-resetting inside it (Gymnasium's "same step" autoreset mode: the returned observation of
an environment whose episode ended is its new first observation, and the last one of the ended
episode is in `info["final_obs"]`, with `info["_final_obs"]` marking which entries are set).

Terminated vs truncated: an episode cut by its length is truncated; one ended by the task's
termination (or by a non-finite state) is terminated.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode

from .. import replicas
from ..step import calls_from_python, carry_sharding, on_one_device, put_split
from .core import Env, TaskEnv
from .loading import _model_and_task
from .wrappers import AutoReset, wrap


def _spaces(env: Env):
    obs = spaces.Box(-np.inf, np.inf, (env.observation_size,), np.float32)
    low = np.asarray(env.action_low, np.float32)
    high = np.asarray(env.action_high, np.float32)
    return obs, spaces.Box(low, high, (env.action_size,), np.float32)


class _Replicated:
    """A vector env's reset and step as XLA replicas of one device's share of the batch
    (runtime/replicas.py): traced and compiled once for the share, without XLA's partitioner, and
    run on every device the batch is split over (`split`). The environments do not interact (the
    functions are vmapped), and the reset draws the whole batch's keys on each device and takes its
    rows, so each environment gets the key the jitted reset gives it: the same numbers, bit for bit
    (tests/test_envs_gym.py). The compiled Ant's env at 256 environments, fresh processes in turn
    (2026-12-07): first reset 1.37–1.50 s → 1.29–1.36 s, first step (its compile) 4.44–4.45 s →
    3.89–4.12 s; a step after that as fast (×0.99 and ×1.00 at 256 and 64, 8 interleaved rounds)."""

    def __init__(self, env, num_envs: int, split):
        devices = tuple(split.mesh.devices.flat)
        share = num_envs // len(devices)

        def reset(key, first):
            keys = jax.lax.dynamic_slice_in_dim(jax.random.split(key, num_envs), first[0], share)
            with on_one_device(), calls_from_python():
                return jax.vmap(env.reset)(keys)

        def step(state, actions):
            with on_one_device(), calls_from_python():
                return jax.vmap(env.step)(state, actions)

        self.runs = {"reset": replicas.Replicas(reset, devices), "step": replicas.Replicas(step, devices)}
        self.first = self.runs["reset"].first_rows(num_envs)
        self.whole = self.runs["reset"].whole

    def call(self, name: str, *args):
        if name == "reset":
            args = (jax.device_put(args[0], self.whole), self.first)
        return self.runs[name](*args)


def _key_from(rng: np.random.Generator):
    return jax.random.PRNGKey(int(rng.integers(0, 2**31 - 1)))


def _env_without_autoreset(source, **options) -> Env:
    if isinstance(source, Env):
        env = source
        while isinstance(env, AutoReset):
            env = env.env
        return env
    model, task = _model_and_task(source)
    return wrap(TaskEnv(model, task), auto_reset=False, **options)


class GymEnv(gymnasium.Env):
    """One environment with Gymnasium's API. `source` is anything `scenec.runtime.envs.load` takes,
    or an Env (its auto-reset, if any, is removed: Gymnasium callers reset themselves)."""

    metadata = {"render_modes": []}

    def __init__(self, source, **options):
        self.env = _env_without_autoreset(source, **options)
        self.observation_space, self.action_space = _spaces(self.env)
        self._reset = jax.jit(self.env.reset)
        self._step = jax.jit(self.env.step)
        self._state = None

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self._state = self._reset(_key_from(self.np_random))
        return np.asarray(self._state.obs, np.float32), {}

    def step(self, action):
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        self._state = self._step(self._state, jnp.asarray(action, jnp.float32))
        s = self._state
        done = bool(s.done > 0)
        truncated = bool(s.info["truncation"] > 0)
        info = {k: float(v) for k, v in s.metrics.items()}
        return (np.asarray(s.obs, np.float32), float(s.reward), done and not truncated, truncated, info)


class GymVectorEnv(gymnasium.vector.VectorEnv):
    """`num_envs` environments stepped together by one jitted call (same-step autoreset)."""

    metadata = {"render_modes": [], "autoreset_mode": AutoresetMode.SAME_STEP}

    def __init__(self, source, num_envs: int, **options):
        base = _env_without_autoreset(source, **options)
        self.env = AutoReset(base)
        self.num_envs = int(num_envs)
        self.single_observation_space, self.single_action_space = _spaces(base)
        self.observation_space = gymnasium.vector.utils.batch_space(self.single_observation_space,
                                                                    self.num_envs)
        self.action_space = gymnasium.vector.utils.batch_space(self.single_action_space, self.num_envs)
        # Called once per step from Python, the step splits the batch only where a call's work pays
        # for it (step.calls_from_python, entered while the two functions are traced); the state
        # stays where the step leaves it, reset included, or the second step compiles again. Every
        # leaf of the state has the batch first, so it stays split along it: kept replicated, each
        # call gathered every leaf across the devices (Ant, 256 environments: 4.9 ms a step against
        # 3.5 ms split; Ant at 64 3.0 ms against 1.7 ms).
        with calls_from_python():
            where = carry_sharding(base.model, self.num_envs, split=True)
        placed = {} if where is None else {"out_shardings": where}
        self._where = where

        def reset(key):
            with calls_from_python():
                return jax.vmap(self.env.reset)(jax.random.split(key, self.num_envs))

        def step(state, actions):
            with calls_from_python():
                return jax.vmap(self.env.step)(state, actions)

        self._reset = jax.jit(reset, **placed)
        self._step = jax.jit(step, **placed)
        self._replicas = (_Replicated(self.env, self.num_envs, where)
                          if where is not None and replicas.enabled() else None)
        self._state = None

    def _run(self, name: str, *args):
        """reset or step: as replicas where the batch is split (the jit once they are unavailable)."""
        if self._replicas is not None:
            try:
                return self._replicas.call(name, *args)
            except replicas.Unavailable as e:
                self._replicas = None
                replicas.say_unavailable("the vector env", e, stacklevel=4)
        return (self._reset if name == "reset" else self._step)(*args)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            self._np_random, self._np_random_seed = gymnasium.utils.seeding.np_random(seed)
        self._state = self._run("reset", _key_from(self.np_random))
        return np.asarray(self._state.obs, np.float32), {}

    def step(self, actions):
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        actions = np.asarray(actions, np.float32).reshape(self.num_envs, -1)
        # from the host straight to where the step runs (not to one device, then across)
        actions = jnp.asarray(actions) if self._where is None else put_split(actions, self._where)
        self._state = self._run("step", self._state, actions)
        s = self._state
        done = np.asarray(s.done) > 0
        truncated = np.asarray(s.info["truncation"]) > 0
        terminated = done & ~truncated
        infos: dict[str, Any] = {k: np.asarray(v) for k, v in s.metrics.items()}
        if done.any():
            final = np.full(self.num_envs, None, dtype=object)
            last = np.asarray(s.info["final_obs"], np.float32)
            for i in np.flatnonzero(done):
                final[i] = last[i]
            infos["final_obs"] = final
            infos["_final_obs"] = done.copy()
        return (np.asarray(s.obs, np.float32), np.asarray(s.reward, np.float32), terminated, truncated,
                infos)
