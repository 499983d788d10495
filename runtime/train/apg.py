"""Analytic policy gradients: the gradient of the return through the differentiable step.

Where it sits: runtime/train, one of the learners the runner drives (`scenec train --algo apg`).
One `iteration(state)`: from the environments' current states, roll the deterministic policy for
`horizon` steps (lax.scan over the vmapped env step), take the mean discounted return as the
objective, differentiate it with respect to the policy parameters through the physics (jax.grad
through env.step), clip and apply the gradient with Adam. The environments continue from where the
rollout ended (the gradient is cut at the iteration boundary: truncated backpropagation through time).

A gradient with a NaN or infinite entry (an environment that blew up inside the horizon) is
replaced by zero for that iteration and counted in `metrics["skipped_updates"]`.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import optax

from . import networks, normalize, rollout


@dataclasses.dataclass(frozen=True)
class APGConfig:
    num_envs: int = 32
    horizon: int = 32                # steps differentiated through per iteration
    learning_rate: float = 1e-3
    discount: float = 0.99
    max_grad_norm: float = 1.0
    hidden: tuple = (64, 64)
    activation: str = "tanh"


class APG:
    name = "apg"
    splits_batch = True   # its environments go through step's batch path (runner._placement)

    def __init__(self, env, config: APGConfig = APGConfig()):
        from ..envs import differentiable

        # The vmapped batch through the step's batch path inside jax.grad (the gradient is taken
        # outside the vmap here). Against the plain step vmapped per environment, Ant's iteration
        # (32 environments, 32 steps; fresh process, 5 rounds of 3 iterations, 2-core Intel Xeon,
        # 2026-12-07): 579 → 435–447 ms a run, but trace + lowering 4.8 → 5.1–5.4 s and XLA 20.0 →
        # 24.2–25.1 s: even after about 45 iterations, where a default run (`scenec train --algo
        # apg`, 1e6 steps) has 977. Humanoid: 2,587 → 2,415 ms, trace + lowering 10.5 → 11.4 s, XLA
        # 38.7 → 42.2 s (even after about 30). Gradients the same at one step (Ant 3.7e-7 relative);
        # over 32 steps of Ant they part as any two roundings of a chaotic rollout do (0.14 relative,
        # a gradient norm of 1.3e3; Humanoid 2.1e-6).
        self.env = differentiable(env, batched=True)
        self.config = config
        self.spec = networks.PolicySpec.for_env(env, "deterministic", config.hidden, config.activation)
        # over the parameters as one vector: a few fused kernels, not a few per layer (see ppo.py)
        self.optimizer = optax.flatten(optax.chain(optax.clip_by_global_norm(config.max_grad_norm),
                                                   optax.adam(config.learning_rate)))

    @property
    def env_steps_per_iteration(self) -> int:
        return self.config.num_envs * self.config.horizon

    def init(self, key) -> dict:
        c = self.config
        k_pol, k_env = jax.random.split(key)
        params = self.spec.init(k_pol)
        return {"params": params, "opt_state": self.optimizer.init(params),
                "normalizer": normalize.init(self.spec.observation_size),
                "env_state": jax.vmap(self.env.reset)(jax.random.split(k_env, c.num_envs)),
                "episodes": rollout.episodes_init(c.num_envs),
                "iteration": jnp.zeros((), jnp.int32)}

    def policy_of(self, state: dict):
        return state["params"], state["normalizer"]

    def objective(self, params, stats, env_state, episodes):
        c = self.config
        env, spec = self.env, self.spec

        def one(carry, t):
            s, eps = carry
            action = spec.deterministic(params, normalize.normalize(stats, s.obs))
            nxt = jax.vmap(env.step)(s, action)
            eps = rollout.episodes_track(eps, jax.lax.stop_gradient(nxt.reward),
                                         jax.lax.stop_gradient(nxt.done))
            return (nxt, eps), (nxt.reward * c.discount ** t, s.obs, nxt.metrics["nonfinite"])

        (env_state, episodes), (rewards, obs, nonfinite) = jax.lax.scan(
            one, (env_state, episodes), jnp.arange(c.horizon, dtype=jnp.float32))
        value = jnp.mean(jnp.sum(rewards, axis=0))
        return -value, (env_state, episodes, obs, jnp.sum(nonfinite))

    def iteration(self, state: dict) -> tuple[dict, dict]:
        stats = state["normalizer"]
        (loss, (env_state, episodes, obs, nonfinite)), grads = jax.value_and_grad(
            self.objective, has_aux=True)(state["params"], stats, state["env_state"], state["episodes"])
        finite = jnp.all(jnp.asarray([jnp.all(jnp.isfinite(g)) for g in jax.tree_util.tree_leaves(grads)]))
        grads = jax.tree_util.tree_map(lambda g: jnp.where(finite, g, 0.0), grads)
        grad_norm = optax.tree.norm(grads)
        updates, opt_state = self.optimizer.update(grads, state["opt_state"], state["params"])
        params = optax.apply_updates(state["params"], updates)
        stats = normalize.update(stats, obs)
        env_state = jax.lax.stop_gradient(env_state)
        ep_metrics, episodes = rollout.episodes_flush(episodes)
        metrics = {"objective": -loss, "grad_norm": grad_norm,
                   "skipped_updates": 1.0 - finite.astype(jnp.float32), "nonfinite": nonfinite}
        metrics.update(ep_metrics)
        new = {"params": params, "opt_state": opt_state, "normalizer": stats, "env_state": env_state,
               "episodes": episodes, "iteration": state["iteration"] + 1}
        return new, metrics
