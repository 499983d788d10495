"""Composable environment wrappers: action repeat, episode length, auto-reset, batching.

Where it sits: runtime/envs, between `TaskEnv` (core.py) and the learners (runtime/train) or the
Gymnasium adapter (gym.py). Each wrapper is an `Env` around another and changes one thing; `load`
composes them as AutoReset(EpisodeLength(ActionRepeat(TaskEnv))). All are branch-free (choices are
`jnp.where` over whole states), so they stay jit-, vmap- and grad-able.
"""

from __future__ import annotations

import copy

import jax
import jax.numpy as jnp

from .core import Env, EnvState, TaskEnv


def _select(cond, a, b):
    """Per-leaf jnp.where(cond, a, b) over two pytrees of the same structure (cond a scalar)."""
    return jax.tree_util.tree_map(lambda x, y: jnp.where(cond, x, y), a, b)


class Wrapper(Env):
    def __init__(self, env: Env):
        self.env = env

    def __getattr__(self, name):
        # attributes that a wrapper does not define come from the environment inside it
        if name == "env":
            raise AttributeError(name)
        return getattr(self.env, name)

    @property
    def unwrapped(self) -> Env:
        return self.env.unwrapped

    @property
    def action_low(self):
        return self.env.action_low

    @property
    def action_high(self):
        return self.env.action_high

    def reset(self, key) -> EnvState:
        return self.env.reset(key)

    def step(self, state: EnvState, action) -> EnvState:
        return self.env.step(state, action)


class ActionRepeat(Wrapper):
    """Each step applies the action for `repeat` control steps and sums their rewards (and metrics).
    Steps after the episode ended inside the repeat leave the state unchanged and add nothing."""

    def __init__(self, env: Env, repeat: int):
        super().__init__(env)
        if repeat < 1:
            raise ValueError(f"action repeat must be at least 1, got {repeat}")
        self.repeat = int(repeat)

    def step(self, state: EnvState, action) -> EnvState:
        if self.repeat == 1:
            return self.env.step(state, action)

        def one(carry, _):
            s, total, metrics, ended = carry
            new = self.env.step(s, action)
            live = jnp.logical_not(ended)
            total = total + jnp.where(live, new.reward, 0.0)
            metrics = jax.tree_util.tree_map(lambda acc, v: acc + jnp.where(live, v, 0.0), metrics,
                                             new.metrics)
            s = _select(ended, s, new)
            return (s, total, metrics, jnp.logical_or(ended, new.done > 0)), None

        zero_metrics = jax.tree_util.tree_map(jnp.zeros_like, state.metrics)
        start = (state.replace(done=jnp.zeros_like(state.done)), jnp.zeros_like(state.reward),
                 zero_metrics, jnp.asarray(False))
        (s, total, metrics, _), _ = jax.lax.scan(one, start, None, length=self.repeat)
        return s.replace(reward=total, metrics=metrics)


class EpisodeLength(Wrapper):
    """Ends the episode after `length` control steps (counted in `info["steps"]`, so it composes with
    ActionRepeat), setting `info["truncation"]` when the cut, not the task, ended it."""

    def __init__(self, env: Env, length: int):
        super().__init__(env)
        if length < 1:
            raise ValueError(f"episode length must be at least 1, got {length}")
        self.length = int(length)

    def step(self, state: EnvState, action) -> EnvState:
        s = self.env.step(state, action)
        out_of_time = s.info["steps"] >= self.length
        truncation = jnp.logical_and(out_of_time, s.done == 0).astype(s.done.dtype)
        done = jnp.maximum(s.done, out_of_time.astype(s.done.dtype))
        return s.replace(done=done, info=dict(s.info, truncation=truncation))


class AutoReset(Wrapper):
    """When a step ends the episode, the returned state is a fresh reset (drawn with the
    environment's own key) carrying that step's reward, done, metrics and truncation; the last
    observation of the ended episode is kept in `info["final_obs"]`."""

    def step(self, state: EnvState, action) -> EnvState:
        s = self.env.step(state, action)
        # The reset splits the key it is given (TaskEnv.reset: one key for its draws, one it returns
        # in info); every environment, ended or not, goes on with that returned key. Splitting here
        # first, as before, cost a threefry hash more in the compiled step (about 0.1 s of XLA
        # compile each).
        fresh = self.env.reset(s.info["key"])
        ended = s.done > 0
        info = _select(ended, fresh.info, dict(s.info, key=fresh.info["key"]))
        info = dict(info, truncation=s.info["truncation"], final_obs=s.obs)
        return EnvState(
            pipeline_state=_select(ended, fresh.pipeline_state, s.pipeline_state),
            obs=jnp.where(ended, fresh.obs, s.obs),
            reward=s.reward, done=s.done, metrics=s.metrics, info=info)


class Batched(Wrapper):
    """`batch` copies at once: reset(key) splits the key; step takes (batch, nu) actions."""

    def __init__(self, env: Env, batch: int):
        super().__init__(env)
        self.batch = int(batch)

    def reset(self, key) -> EnvState:
        return jax.vmap(self.env.reset)(jax.random.split(key, self.batch))

    def step(self, state: EnvState, action) -> EnvState:
        return jax.vmap(self.env.step)(state, action)


def wrap(env: Env, *, episode_length: int | None = None, action_repeat: int | None = None,
         auto_reset: bool = True, batch: int | None = None) -> Env:
    """The standard stack around a TaskEnv. Lengths default to the task's own (docs/tasks.md)."""
    task = env.unwrapped.task
    repeat = task.action_repeat if action_repeat is None else action_repeat
    length = task.episode_length if episode_length is None else episode_length
    env = ActionRepeat(env, repeat) if repeat != 1 else env
    env = EpisodeLength(env, length)
    if auto_reset:
        env = AutoReset(env)
    if batch is not None:
        env = Batched(env, batch)
    return env


def differentiable(env: Env, batched: bool = False) -> Env:
    """The same stack of wrappers over a TaskEnv whose physics is the plain step, for `jax.grad`
    through `jax.vmap(env.step)`. The default physics hands a vmapped
    batch to the step's fast path (a custom_vmap rule), which jax 0.10 cannot differentiate under
    vmap; a single environment differentiates either way.

    With `batched` the vmapped batch goes to the step's fast path in the derivatives too, where
    `jax.grad` is taken outside the vmap (APG's objective: the gradient of a scan over
    `jax.vmap(env.step)`); `jax.grad` of one environment, or `jax.vmap(jax.grad(...))`, then fails
    ("Linearization failed"). Ant's APG iteration (32 environments, 32 steps): see apg.py."""
    if isinstance(env, Wrapper):
        new = copy.copy(env)
        new.env = differentiable(env.env, batched)
        return new
    if isinstance(env, TaskEnv):
        return env.with_plain_physics(batched)
    return env


def without_auto_reset(env: Env) -> Env:
    """The same stack with AutoReset left out, for a rollout that stops counting each environment at
    its first `done` (evaluation, ES's episodes): the reset inside every step is work nothing uses.
    Ant's evaluation of 16 episodes of 1000 steps: trace and lowering 0.79 s instead of 1.28 s, XLA
    2.33 s instead of 3.16 s, a run 428 ms instead of 476 ms. After its `done`, an environment steps
    on from where it ended (a non-finite state stays non-finite; the rollout masks it)."""
    if isinstance(env, AutoReset):
        return without_auto_reset(env.env)
    if isinstance(env, Wrapper):
        new = copy.copy(env)
        new.env = without_auto_reset(env.env)
        return new
    return env
