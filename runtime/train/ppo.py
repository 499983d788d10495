"""Proximal policy optimisation (Schulman et al. 2017) over a batch of environments, fully jitted.

Where it sits: runtime/train, one of the learners the runner drives (`scenec train --algo ppo`).
One `iteration(state)` = a rollout of `unroll_length` steps in each of `num_envs` environments
(lax.scan over the vmapped env step), an update of the observation statistics, generalized
advantage estimation, then `update_epochs` passes of `num_minibatches` clipped-surrogate gradient
steps (optax). The policy is a tanh-squashed Gaussian (networks.py), the critic a separate MLP.

Episodes cut by the episode length (not ended by the task) bootstrap from the value of their last
observation (`info["final_obs"]`), so truncation is not mistaken for failure.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import optax

from . import networks, normalize, rollout


@dataclasses.dataclass(frozen=True)
class PPOConfig:
    num_envs: int = 64
    unroll_length: int = 16          # steps per environment per iteration
    num_minibatches: int = 8
    update_epochs: int = 4
    learning_rate: float = 3e-4
    discount: float = 0.97
    gae_lambda: float = 0.95
    clip_epsilon: float = 0.3
    entropy_cost: float = 1e-2
    value_cost: float = 0.5
    reward_scaling: float = 1.0      # rewards are multiplied by this in the losses only
    max_grad_norm: float = 1.0
    policy_hidden: tuple = (64, 64)
    value_hidden: tuple = (64, 64)
    activation: str = "tanh"


class PPO:
    name = "ppo"
    splits_batch = True   # its environments go through step's batch path (runner._placement)

    def __init__(self, env, config: PPOConfig = PPOConfig()):
        self.env = env
        self.config = config
        self.spec = networks.PolicySpec.for_env(env, "gaussian", config.policy_hidden, config.activation)
        # Adam over the parameters as one vector (optax.flatten): XLA compiles a few fused kernels for
        # the update instead of a few per weight and bias (Ant's iteration: XLA 3.51-3.53 -> 3.28-3.29 s);
        # the same arithmetic, the global norm summed in another order.
        self.optimizer = optax.flatten(optax.chain(optax.clip_by_global_norm(config.max_grad_norm),
                                                   optax.adam(config.learning_rate)))
        if (config.num_envs * config.unroll_length) % config.num_minibatches:
            raise ValueError(f"num_envs × unroll_length ({config.num_envs * config.unroll_length}) must "
                             f"divide into {config.num_minibatches} minibatches")

    @property
    def env_steps_per_iteration(self) -> int:
        return self.config.num_envs * self.config.unroll_length

    def init(self, key) -> dict:
        c = self.config
        k_pol, k_val, k_env, k_run = jax.random.split(key, 4)
        params = {"policy": self.spec.init(k_pol),
                  "value": networks.mlp_init(k_val, (self.spec.observation_size,) + tuple(c.value_hidden)
                                             + (1,))}
        return {
            "params": params,
            "opt_state": self.optimizer.init(params),
            "normalizer": normalize.init(self.spec.observation_size),
            "env_state": jax.vmap(self.env.reset)(jax.random.split(k_env, c.num_envs)),
            "episodes": rollout.episodes_init(c.num_envs),
            "key": k_run,
            "iteration": jnp.zeros((), jnp.int32),
        }

    def policy_of(self, state: dict):
        """(params, normalizer statistics) of the policy, for evaluation and saving."""
        return state["params"]["policy"], state["normalizer"]

    def value(self, params, stats, obs):
        z = normalize.normalize(stats, obs)
        return networks.mlp_apply(params["value"], z, self.config.activation)[..., 0]

    def loss(self, params, stats, batch):
        c = self.config
        z = normalize.normalize(stats, batch["obs"])
        mean, scale = self.spec.distribution(params["policy"], z)
        log_prob = networks.gaussian_log_prob(batch["u"], mean, scale)
        ratio = jnp.exp(log_prob - batch["log_prob"])
        adv = batch["advantage"]
        adv = (adv - jnp.mean(adv)) / (jnp.std(adv) + 1e-8)
        surrogate = jnp.minimum(ratio * adv, jnp.clip(ratio, 1 - c.clip_epsilon, 1 + c.clip_epsilon) * adv)
        policy_loss = -jnp.mean(surrogate)
        value_loss = 0.5 * jnp.mean((self.value(params, stats, batch["obs"]) - batch["target"]) ** 2)
        entropy = jnp.mean(networks.gaussian_entropy(scale))
        total = policy_loss + c.value_cost * value_loss - c.entropy_cost * entropy
        return total, {"policy_loss": policy_loss, "value_loss": value_loss, "entropy": entropy}

    def iteration(self, state: dict) -> tuple[dict, dict]:
        c = self.config
        env, spec = self.env, self.spec
        params, stats = state["params"], state["normalizer"]
        key, k_roll, k_epochs = jax.random.split(state["key"], 3)

        def act(carry, k):
            env_state, episodes = carry
            obs = env_state.obs
            mean, scale = spec.distribution(params["policy"], normalize.normalize(stats, obs))
            u = mean + scale * jax.random.normal(k, mean.shape, mean.dtype)
            nxt = jax.vmap(env.step)(env_state, spec.to_env(jnp.tanh(u)))
            episodes = rollout.episodes_track(episodes, nxt.reward, nxt.done)
            step = {"obs": obs, "u": u, "reward": nxt.reward, "done": nxt.done,
                    "truncation": nxt.info["truncation"], "next_obs": nxt.info["final_obs"],
                    "nonfinite": nxt.metrics["nonfinite"]}
            return (nxt, episodes), step

        (env_state, episodes), traj = jax.lax.scan(
            act, (state["env_state"], state["episodes"]), jax.random.split(k_roll, c.unroll_length))
        stats = normalize.update(stats, traj["obs"])

        # Generalized advantage estimation, backwards over the unroll (T, B).
        value = self.value(params, stats, traj["obs"])
        next_value = self.value(params, stats, traj["next_obs"])
        terminal = traj["done"] * (1.0 - traj["truncation"])
        reward = traj["reward"] * c.reward_scaling
        delta = reward + c.discount * (1.0 - terminal) * next_value - value

        def gae(carry, x):
            d, done = x
            adv = d + c.discount * c.gae_lambda * (1.0 - done) * carry
            return adv, adv

        _, advantage = jax.lax.scan(gae, jnp.zeros_like(delta[0]), (delta, traj["done"]), reverse=True)
        mean, scale = spec.distribution(params["policy"], normalize.normalize(stats, traj["obs"]))
        data = {"obs": traj["obs"], "u": traj["u"], "advantage": advantage, "target": advantage + value,
                "log_prob": networks.gaussian_log_prob(traj["u"], mean, scale)}
        data = jax.tree_util.tree_map(lambda x: x.reshape((-1,) + x.shape[2:]), data)
        data = jax.lax.stop_gradient(data)
        n = data["obs"].shape[0]

        def epoch(carry, k):
            # A shuffle as the order of n random words: one threefry draw and one sort. (jax.random.
            # permutation's rounds of split-and-sort are a loop of their own: XLA 0.20 s against 0.10
            # s for 65,536 rows, and 31 against 20 ms a call; equal words, a chance of n²/2³³, keep
            # their rows' order.)
            perm = jnp.argsort(jax.random.bits(k, (n,)))
            batches = jax.tree_util.tree_map(
                lambda x: x[perm].reshape((c.num_minibatches, n // c.num_minibatches) + x.shape[1:]), data)

            def minibatch(carry, batch):
                p, opt = carry
                (_, aux), grads = jax.value_and_grad(self.loss, has_aux=True)(p, stats, batch)
                updates, opt = self.optimizer.update(grads, opt, p)
                return (optax.apply_updates(p, updates), opt), aux

            return jax.lax.scan(minibatch, carry, batches)

        (params, opt_state), aux = jax.lax.scan(epoch, (params, state["opt_state"]),
                                                jax.random.split(k_epochs, c.update_epochs))
        ep_metrics, episodes = rollout.episodes_flush(episodes)
        metrics = {k: jnp.mean(v) for k, v in aux.items()}
        metrics.update(ep_metrics)
        metrics["nonfinite"] = jnp.sum(traj["nonfinite"])
        new_state = {"params": params, "opt_state": opt_state, "normalizer": stats, "env_state": env_state,
                     "episodes": episodes, "key": key, "iteration": state["iteration"] + 1}
        return new_state, metrics
