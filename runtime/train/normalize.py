"""Running observation statistics and the normalization they give.

Where it sits: runtime/train; every learner updates a `Normalizer` from the observations of its
rollouts and feeds its networks `normalize(stats, obs)`. The statistics are a pytree (saved with the
policy and in checkpoints). Batches are merged with Chan et al.'s parallel update of the mean and the
sum of squared deviations, which stays accurate over millions of samples in float32 (a running sum of
squares does not).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

CLIP = 5.0       # normalized observations are clipped to ±CLIP standard deviations
MIN_STD = 1e-3   # keeps constant observations (a target that never moves) from dividing by zero


def init(size: int) -> dict:
    """count (), mean (size,), m2 (size,): the sum of squared deviations from the mean."""
    return {"count": jnp.zeros((), jnp.float32), "mean": jnp.zeros((size,), jnp.float32),
            "m2": jnp.zeros((size,), jnp.float32)}


def update(stats: dict, batch, mask=None) -> dict:
    """Merge observations `batch` (..., size) into the statistics; `mask` (...) leaves some out
    (entries of finished episodes). Non-finite rows are always left out."""
    size = stats["mean"].shape[0]
    x = jnp.asarray(batch, jnp.float32).reshape(-1, size)
    w = jnp.ones((x.shape[0],), jnp.float32) if mask is None else \
        jnp.asarray(mask, jnp.float32).reshape(-1)
    w = jnp.where(jnp.all(jnp.isfinite(x), axis=-1), w, 0.0)
    x = jnp.where(w[:, None] > 0, x, 0.0)
    n_b = jnp.sum(w)
    mean_b = jnp.sum(w[:, None] * x, axis=0) / jnp.maximum(n_b, 1.0)
    m2_b = jnp.sum(w[:, None] * (x - mean_b) ** 2, axis=0)
    n_a = stats["count"]
    n = n_a + n_b
    delta = mean_b - stats["mean"]
    frac = n_b / jnp.maximum(n, 1.0)
    mean = stats["mean"] + delta * frac
    m2 = stats["m2"] + m2_b + delta ** 2 * n_a * frac
    return {"count": n, "mean": mean, "m2": m2}


def std(stats: dict):
    # before any data the normalization is the identity
    var = jnp.where(stats["count"] > 0, stats["m2"] / jnp.maximum(stats["count"], 1.0), 1.0)
    return jnp.maximum(jnp.sqrt(var), MIN_STD)


def normalize(stats: dict, obs):
    """(obs − mean) / std, clipped to ±CLIP; the statistics are constants for gradients."""
    stats = jax.lax.stop_gradient(stats)
    z = (obs - stats["mean"]) / std(stats)
    return jnp.clip(z, -CLIP, CLIP)
