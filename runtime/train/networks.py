"""Small networks and the policies built on them: MLPs, a tanh-squashed Gaussian, a deterministic head.

Where it sits: runtime/train, used by every learner (ppo.py, es.py, apg.py) and by `scenec play`.
Parameters are plain pytrees (a list of {"w": (n_in, n_out), "b": (n_out,)} layers), so they save to
.npz, flatten for ES and differentiate for APG without any framework.

Actions: a policy's raw output u lives in R^nu; the environment receives `to_env(tanh(u))`, which maps
[-1, 1] onto each actuator's control range (and leaves unlimited actuators at tanh(u)).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

ACTIVATIONS = {"tanh": jnp.tanh, "relu": jax.nn.relu, "swish": jax.nn.swish, "elu": jax.nn.elu}
LOG_2PI = float(np.log(2 * np.pi))
MIN_SCALE = 1e-3   # smallest standard deviation of the Gaussian policy (keeps log-probs finite)
TANH_EPS = 1e-6    # in log(1 - tanh² + eps): the squashing correction stays finite at saturation


def mlp_init(key, sizes, final_scale: float = 1.0):
    """Layers for `sizes` = (n_in, hidden..., n_out): weights ~ N(0, 1/n_in) (LeCun normal), zero
    biases; the last layer's weights are scaled by `final_scale` (small for policy outputs, so early
    actions stay near the centre of the control range)."""
    layers = []
    keys = jax.random.split(key, len(sizes) - 1)
    for i, (k, n_in, n_out) in enumerate(zip(keys, sizes[:-1], sizes[1:])):
        w = jax.random.normal(k, (n_in, n_out), jnp.float32) / np.sqrt(n_in)
        if i == len(sizes) - 2:
            w = w * final_scale
        layers.append({"w": w, "b": jnp.zeros((n_out,), jnp.float32)})
    return layers


def mlp_apply(layers, x, activation: str = "tanh"):
    act = ACTIVATIONS[activation]
    for i, layer in enumerate(layers):
        x = x @ layer["w"] + layer["b"]
        if i < len(layers) - 1:
            x = act(x)
    return x


@dataclasses.dataclass(frozen=True)
class PolicySpec:
    """What a saved policy is: enough to rebuild and run it (stored as JSON with its parameters).

    kind: "gaussian" (PPO: the network outputs mean and scale of u) or "deterministic" (ES, APG:
    the network outputs u); hidden: hidden layer sizes; action_low/high: (nu,) control bounds,
    ±inf where unclamped.
    """

    kind: str
    observation_size: int
    action_size: int
    hidden: tuple
    activation: str
    action_low: tuple
    action_high: tuple

    @property
    def output_size(self) -> int:
        return 2 * self.action_size if self.kind == "gaussian" else self.action_size

    def init(self, key):
        sizes = (self.observation_size,) + tuple(self.hidden) + (self.output_size,)
        return mlp_init(key, sizes, final_scale=0.01)

    def to_json(self) -> dict:
        return {"kind": self.kind, "observation_size": self.observation_size,
                "action_size": self.action_size, "hidden": list(self.hidden),
                "activation": self.activation,
                "action_low": [None if not np.isfinite(v) else float(v) for v in self.action_low],
                "action_high": [None if not np.isfinite(v) else float(v) for v in self.action_high]}

    @classmethod
    def from_json(cls, data: dict) -> "PolicySpec":
        low = tuple(-np.inf if v is None else float(v) for v in data["action_low"])
        high = tuple(np.inf if v is None else float(v) for v in data["action_high"])
        return cls(data["kind"], int(data["observation_size"]), int(data["action_size"]),
                   tuple(int(h) for h in data["hidden"]), data["activation"], low, high)

    @classmethod
    def for_env(cls, env, kind: str, hidden=(64, 64), activation: str = "tanh") -> "PolicySpec":
        return cls(kind, int(env.observation_size), int(env.action_size), tuple(hidden), activation,
                   tuple(float(v) for v in env.action_low), tuple(float(v) for v in env.action_high))

    # -- actions --

    def to_env(self, squashed):
        """[-1, 1] → the control range (unlimited actuators keep the squashed value)."""
        low = np.asarray(self.action_low, np.float64)
        high = np.asarray(self.action_high, np.float64)
        limited = np.isfinite(low) & np.isfinite(high)
        centre = np.where(limited, (low + high) / 2, 0.0).astype(np.float32)
        half = np.where(limited, (high - low) / 2, 1.0).astype(np.float32)
        return centre + half * squashed

    def distribution(self, params, obs):
        """Gaussian policies: (mean, scale) of u for normalized observations."""
        out = mlp_apply(params, obs, self.activation)
        mean, raw = jnp.split(out, 2, axis=-1)
        return mean, jax.nn.softplus(raw) + MIN_SCALE

    def deterministic(self, params, obs):
        """The action the policy takes without exploration: tanh of the mean (or of the output)."""
        out = mlp_apply(params, obs, self.activation)
        if self.kind == "gaussian":
            out = jnp.split(out, 2, axis=-1)[0]
        return self.to_env(jnp.tanh(out))


def gaussian_log_prob(u, mean, scale):
    """log π(a) of a = tanh(u), u ~ N(mean, scale): the Gaussian's log-density of u minus the log
    of the tanh Jacobian, summed over action dimensions."""
    z = (u - mean) / scale
    log_normal = -0.5 * z * z - jnp.log(scale) - 0.5 * LOG_2PI
    log_jac = jnp.log(1.0 - jnp.tanh(u) ** 2 + TANH_EPS)
    return jnp.sum(log_normal - log_jac, axis=-1)


def gaussian_entropy(scale):
    """Entropy of the Gaussian over u (the squashing is left out, as an exploration bonus)."""
    return jnp.sum(0.5 + 0.5 * LOG_2PI + jnp.log(scale), axis=-1)
