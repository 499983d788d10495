"""Direct trajectory optimisation: an open-loop action sequence improved by gradients through the
rollout.

Where it sits: runtime/train, behind `scenec optimize`. The decision variables are raw actions
u (horizon, nu); the scene sees `squash(u)`, which maps u into each actuator's control range with a
tanh (unlimited actuators take u as it is). The objective is either
  - a target pose: ‖position of a body at the last step − target‖² + control_cost · mean(action²)
    (physics only; the scene needs no task), or
  - a reward: −Σ rewards of the scene's task over the horizon (rewards after the episode ends are
    not counted),
and Adam (optax) minimises it. Each call of the jitted `improve` runs `chunk` Adam steps, each a full
rollout (lax.scan over the step) and its gradient; nothing steps the physics from Python.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import optax

from .. import step as rstep


@dataclasses.dataclass(frozen=True)
class TrajOptConfig:
    horizon: int = 50
    iterations: int = 200
    learning_rate: float = 0.05
    control_cost: float = 1e-3       # target mode: weight of mean(action²)
    max_grad_norm: float = 10.0


def squash_function(model):
    """u (…, nu) → actions inside the control ranges."""
    limited = np.asarray(model.actuator_ctrl_limited.array, bool)
    rng = np.asarray(model.actuator_ctrl_range, np.float64)
    centre = np.where(limited, (rng[:, 0] + rng[:, 1]) / 2, 0.0)
    half = np.where(limited, (rng[:, 1] - rng[:, 0]) / 2, 1.0)

    def squash(u):
        dtype = u.dtype
        return jnp.where(limited, jnp.asarray(centre, dtype) + jnp.asarray(half, dtype) * jnp.tanh(u), u)
    return squash


def target_objective(model, body_id: int, target, control_cost: float, init_state=None):
    """loss(u) and rollout(u) for reaching `target` (3,) with body `body_id` at the last step."""
    squash = squash_function(model)
    start = rstep.init(model) if init_state is None else init_state
    goal = jnp.asarray(target, start.q.dtype)

    def rollout(u):
        def one(s, a):
            with rstep.for_gradients():    # the step's form that differentiates fastest
                s = rstep.step(model, s, a)
            return s, s
        _, states = jax.lax.scan(one, start, squash(u))
        return states

    def loss(u):
        states = rollout(u)
        miss = states.xpos[-1, body_id] - goal
        return jnp.sum(miss * miss) + control_cost * jnp.mean(squash(u) ** 2)
    return loss, rollout


def reward_objective(env, key):
    """loss(u) and rollout(u) for the return of an environment (a TaskEnv, no auto-reset)."""
    start = env.reset(key)
    squash = squash_function(env.model)

    def run(u):
        def one(carry, a):
            s, alive = carry
            s = env.step(s, a)
            r = jnp.where(alive, s.reward, 0.0)
            return (s, jnp.logical_and(alive, s.done == 0)), (s.pipeline_state, r)
        _, (states, rewards) = jax.lax.scan(one, (start, jnp.asarray(True)), squash(u))
        return states, rewards

    def loss(u):
        return -jnp.sum(run(u)[1])

    def rollout(u):
        return run(u)[0]
    return loss, rollout


def optimize(loss, nu: int, config: TrajOptConfig, init_u=None, on_progress=None, chunk: int = 10):
    """Minimise loss(u) over u (horizon, nu). Returns (u, history of (iteration, loss))."""
    u = jnp.zeros((config.horizon, nu), jnp.float32) if init_u is None else jnp.asarray(init_u, jnp.float32)
    opt = optax.chain(optax.clip_by_global_norm(config.max_grad_norm), optax.adam(config.learning_rate))
    opt_state = opt.init(u)

    def one(carry, _):
        u, opt_state = carry
        value, grad = jax.value_and_grad(loss)(u)
        # a rollout that blew up gives a NaN gradient: skip that update rather than corrupt u
        ok = jnp.all(jnp.isfinite(grad))
        grad = jnp.where(ok, grad, 0.0)
        updates, opt_state = opt.update(grad, opt_state, u)
        return (optax.apply_updates(u, updates), opt_state), value

    @jax.jit
    def improve(u, opt_state):
        (u, opt_state), values = jax.lax.scan(one, (u, opt_state), None, length=chunk)
        return u, opt_state, values

    chunk = max(d for d in range(1, min(chunk, config.iterations) + 1) if config.iterations % d == 0)
    history = []
    done = 0
    while done < config.iterations:
        u, opt_state, values = improve(u, opt_state)
        values = np.asarray(values)
        history.extend((done + i, float(v)) for i, v in enumerate(values))
        done += chunk
        if on_progress is not None:
            on_progress(done, float(values[-1]))
    return u, history
