"""Pieces every learner shares: episode bookkeeping inside jitted rollouts, and evaluation.

Where it sits: runtime/train, under ppo.py, es.py, apg.py and the runner. All of it is traced: a
rollout is a `lax.scan` over a vmapped environment step, never a Python loop over steps.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ..envs.wrappers import without_auto_reset
from . import normalize


def episodes_init(batch: int) -> dict:
    """Per-environment running return and length, and totals over episodes finished since the last
    `episodes_flush` (sum of returns, sum of lengths, count)."""
    z = jnp.zeros((), jnp.float32)
    return {"return": jnp.zeros((batch,), jnp.float32), "length": jnp.zeros((batch,), jnp.float32),
            "return_sum": z, "length_sum": z, "count": z}


def episodes_track(ep: dict, reward, done) -> dict:
    ret = ep["return"] + reward
    length = ep["length"] + 1.0
    finished = done > 0
    return {
        "return": jnp.where(finished, 0.0, ret),
        "length": jnp.where(finished, 0.0, length),
        "return_sum": ep["return_sum"] + jnp.sum(jnp.where(finished, ret, 0.0)),
        "length_sum": ep["length_sum"] + jnp.sum(jnp.where(finished, length, 0.0)),
        "count": ep["count"] + jnp.sum(finished.astype(jnp.float32)),
    }


def episodes_flush(ep: dict) -> tuple[dict, dict]:
    """(episode metrics of this period, the tracker with its totals cleared)."""
    metrics = {"episodes": ep["count"], "episode_return_sum": ep["return_sum"],
               "episode_length_sum": ep["length_sum"]}
    z = jnp.zeros((), jnp.float32)
    return metrics, dict(ep, return_sum=z, length_sum=z, count=z)


def evaluate(env, spec, params, stats, key, num_envs: int, length: int) -> dict:
    """Mean return of the deterministic policy over `num_envs` episodes of at most `length` steps
    (rewards after an environment's first `done` are not counted, so no step resets one). Traced;
    jit the caller."""
    env = without_auto_reset(env)
    states = jax.vmap(env.reset)(jax.random.split(key, num_envs))

    def one(carry, _):
        s, total, alive, steps = carry
        action = spec.deterministic(params, normalize.normalize(stats, s.obs))
        s = jax.vmap(env.step)(s, action)
        total = total + jnp.where(alive, s.reward, 0.0)
        steps = steps + alive.astype(jnp.float32)
        alive = jnp.logical_and(alive, s.done == 0)
        return (s, total, alive, steps), None

    zeros = jnp.zeros((num_envs,), jnp.float32)
    start = (states, zeros, jnp.ones((num_envs,), bool), zeros)
    (_, total, _, steps), _ = jax.lax.scan(one, start, None, length=length)
    return {"eval_return": jnp.mean(total), "eval_return_std": jnp.std(total),
            "eval_length": jnp.mean(steps)}
