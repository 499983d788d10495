"""The functional environment: `reset(key) -> EnvState`, `step(state, action) -> EnvState`.

Where it sits: runtime/envs, on top of the compiled step (runtime/step.py) and a task (a lowered
`runtime.task.TaskSpec` from the scene file, or a `PythonTask`). `TaskEnv` is one environment and one
control step; episode length, action repeat, auto-reset and batching are wrappers (wrappers.py), and
`load` (loading.py) composes them. Everything here is jax-traceable, branch-free, and works under
`jax.jit`, `jax.vmap` and `jax.grad`.

Per step: the action is clipped to the actuators' control ranges, the physics advances one control
step, targets whose body arrived move, and the task gives the observation, reward (a sum of named
terms, each also in `metrics`) and done. A step whose physics state, observation or reward is NaN or
infinite is marked done with reward 0 and a zero observation, and counted in `metrics["nonfinite"]`,
so that one bad environment never poisons a batch (auto-reset then replaces it).
"""

from __future__ import annotations

import abc
import dataclasses
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_batching import custom_vmap

from .. import step as rstep
from .. import task as rtask
from ..types import JointKind, Model, State, _register


@_register
@dataclasses.dataclass(frozen=True, slots=True)
class EnvState:
    """The state of one environment (leading batch axes under vmap).

    pipeline_state: the physics State; obs: (observation_size,); reward: () this step's reward;
    done: () 1.0 when the episode ended at this step, else 0.0; metrics: {name: ()} per-step values
    (reward terms, `nonfinite`, target arrivals); info: {name: array} bookkeeping: `key` (the
    environment's random key), `targets` (ntarget, 3) m, `steps` () control steps since reset,
    `truncation` () 1.0 when the episode was cut by its length, `final_obs` (observation_size,) the
    observation before an auto-reset.
    """

    pipeline_state: State
    obs: jax.Array
    reward: jax.Array
    done: jax.Array
    metrics: dict
    info: dict

    def replace(self, **kw) -> "EnvState":
        return dataclasses.replace(self, **kw)


class Env(abc.ABC):
    """What every environment and wrapper offers."""

    model: Model
    observation_size: int
    action_size: int

    @abc.abstractmethod
    def reset(self, key) -> EnvState:
        """The first state of an episode, drawn with the jax.random `key`."""

    @abc.abstractmethod
    def step(self, state: EnvState, action) -> EnvState:
        """The state after one step with `action` (nu,)."""

    @property
    def unwrapped(self) -> "Env":
        return self

    @property
    def action_low(self) -> np.ndarray:
        """(nu,) lower control bounds (-inf where unclamped)."""
        m = self.model
        return np.where(np.asarray(m.actuator_ctrl_limited.array, bool),
                        np.asarray(m.actuator_ctrl_range)[:, 0], -np.inf)

    @property
    def action_high(self) -> np.ndarray:
        m = self.model
        return np.where(np.asarray(m.actuator_ctrl_limited.array, bool),
                        np.asarray(m.actuator_ctrl_range)[:, 1], np.inf)


@dataclasses.dataclass(frozen=True)
class PythonTask:
    """A task written in Python against the same `View` the scene language reads.

    observe(view) -> (observation_size,) array; reward(view) -> a scalar, or {term name: scalar}
    (summed; each term reported in metrics); done(view) -> bool scalar (None: never). The other
    fields mean what they mean in a scene's task (docs/tasks.md).
    """

    observe: Callable
    reward: Callable
    done: Callable | None = None
    reset_noise_q: float = 0.0
    reset_noise_qd: float = 0.0
    episode_length: int = 1000
    action_repeat: int = 1
    targets: tuple = ()          # runtime.task.Target


class _SpecTask:
    """A lowered scene task behind the PythonTask interface."""

    def __init__(self, spec: rtask.TaskSpec):
        self.spec = spec
        self.reset_noise_q = spec.reset_noise_q
        self.reset_noise_qd = spec.reset_noise_qd
        self.episode_length = spec.episode_length
        self.action_repeat = spec.action_repeat
        self.targets = spec.targets

    def observe(self, view):
        return rtask.observe(self.spec, view)

    def reward(self, view):
        return rtask.reward_terms(self.spec, view)

    def done(self, view):
        return rtask.terminated(self.spec, view)


def _rotvec_quat(r):
    """The unit quaternion of rotation vector r (3,) (angle |r| about r/|r|), smooth at 0."""
    theta = rtask._safe_norm(r)
    # sin(θ/2)/θ = ½·sinc(θ/2π) (numpy's sinc(x) = sin(πx)/(πx)) has no 0/0 at θ = 0
    return jnp.concatenate([jnp.cos(theta / 2)[None], 0.5 * jnp.sinc(theta / (2 * jnp.pi)) * r])


def _step_for_gradients(model: Model):
    """`step(state, action)` of `model` traced in the form that differentiates fastest
    (`step.for_gradients`)."""

    def physics(state, action):
        with rstep.for_gradients():
            return rstep.step(model, state, action)
    return physics


def batched_physics(model: Model, gradients_outside: bool = False):
    """`step(state, action)` of `model` whose vmap calls the step once on the whole batch.

    The step takes leading batch axes itself and is about twice as fast that way as under
    `jax.vmap` (runtime/step.py moves the batch to the last axis inside); environments are written
    for one copy and vmapped, so this rule hands the batch straight to the step.

    By default derivatives go through the plain step per environment (a rule of their own), so
    `jax.grad` of one environment works, and `jax.vmap` of it. With `gradients_outside` there is no
    such rule: the step runs batched in the derivatives too, traced under `step.for_gradients`, but
    only where `jax.grad` is taken outside the vmap (`jax.grad` of a function that calls
    `jax.vmap(env.step)`, as APG's objective does); jax cannot linearize a `custom_vmap` it meets
    before the vmap has handed it the batch ("Linearization failed")."""

    if gradients_outside:
        plain = _step_for_gradients(model)
    else:
        def plain(state, action):
            return rstep.step(model, state, action)

    @custom_vmap
    def fast(state, action):
        return plain(state, action)

    @fast.def_vmap
    def _rule(axis_size, in_batched, state, action):
        state_batched, action_batched = in_batched
        state = jax.tree_util.tree_map(
            lambda x, b: x if b else jnp.broadcast_to(x, (axis_size,) + x.shape), state, state_batched)
        if not action_batched:
            action = jnp.broadcast_to(action, (axis_size,) + action.shape)
        out = plain(state, action)
        return out, jax.tree_util.tree_map(lambda _: True, out)

    if gradients_outside:
        return fast

    # Derivatives go through the plain step (a custom_vmap alone cannot be linearized), so jax.grad
    # works with or without vmap; only the primal rollout takes the fast path.
    @jax.custom_jvp
    def physics(state, action):
        return fast(state, action)

    @physics.defjvp
    def _jvp(primals, tangents):
        with rstep.for_gradients():
            return jax.jvp(plain, primals, tangents)

    return physics


def _all_finite(*arrays):
    ok = jnp.asarray(True)
    for a in arrays:
        ok = jnp.logical_and(ok, jnp.all(jnp.isfinite(a)))
    return ok


class TaskEnv(Env):
    """One environment: a compiled model and a task. `step` is one control step."""

    def __init__(self, model: Model, task):
        self.model = model
        self.task = _SpecTask(task) if isinstance(task, rtask.TaskSpec) else task
        self.spec = task if isinstance(task, rtask.TaskSpec) else None
        self._targets = tuple(self.task.targets)
        self._target_spec = rtask.TaskSpec((), (), (), 0.0, 0.0, self._targets, 1, 1)
        self.action_size = model.nu
        self._physics = batched_physics(model)
        dtype = jnp.dtype(model.dtype)
        probe = jax.eval_shape(self.reset, jax.random.PRNGKey(0))
        self.observation_size = int(probe.obs.shape[0]) if probe.obs.ndim else 1
        self.metric_names = tuple(probe.metrics)
        self._dtype = dtype

    def with_plain_physics(self, batched: bool = False) -> "TaskEnv":
        """A copy whose step calls the physics per environment, or with `batched` on the whole
        vmapped batch for gradients taken outside the vmap (see wrappers.differentiable)."""
        import copy

        new = copy.copy(self)
        new._physics = (batched_physics(self.model, gradients_outside=True) if batched
                        else _step_for_gradients(self.model))
        return new

    # -- helpers --

    def _clip(self, action):
        m = self.model
        action = jnp.asarray(action, m.q0.dtype).reshape((m.nu,))
        limited = np.asarray(m.actuator_ctrl_limited.array, bool)
        if not limited.any():
            return action
        lo = jnp.where(limited, m.actuator_ctrl_range[:, 0], -jnp.inf).astype(action.dtype)
        hi = jnp.where(limited, m.actuator_ctrl_range[:, 1], jnp.inf).astype(action.dtype)
        return jnp.clip(action, lo, hi)

    def _noisy_init(self, key):
        """q0/qd0 plus the task's uniform reset noise (see docs/tasks.md).

        All of it comes from one uniform draw, sliced: each `jax.random` draw is a threefry hash of
        its own in the compiled program, and XLA compiles each for about 0.15 s (Ant's reset as
        three draws from three split keys: XLA 0.54 s for this function, 0.23 s as one draw)."""
        m = self.model
        q, qd = m.q0, m.qd0
        a, b = self.task.reset_noise_q, self.task.reset_noise_qd
        kinds = [JointKind(int(k)) for k in m.jnt_kind]
        nturn = sum(k in (JointKind.FREE, JointKind.BALL) for k in kinds)   # joints turned by a rotation
        nq = m.nq if a > 0 and m.nq else 0
        nrot = 3 * nturn if nq else 0
        nv = m.nv if b > 0 and m.nv else 0
        if nq + nrot + nv == 0:
            return q, qd
        u = jax.random.uniform(key, (nq + nrot + nv,), q.dtype, -1.0, 1.0)
        if nq:
            noise = a * u[:nq]
            rots = iter(a * u[nq:nq + nrot].reshape((nturn, 3)))     # one per turned joint, in order
            parts = []
            for j, kind in enumerate(kinds):
                adr = int(m.jnt_qpos_adr[j])
                if kind is JointKind.FREE:
                    parts.append(q[adr:adr + 3] + noise[adr:adr + 3])
                    parts.append(rtask._quat_mul(q[adr + 3:adr + 7], _rotvec_quat(next(rots))))
                elif kind is JointKind.BALL:
                    parts.append(rtask._quat_mul(q[adr:adr + 4], _rotvec_quat(next(rots))))
                else:
                    parts.append(q[adr:adr + 1] + noise[adr:adr + 1])
            q = jnp.concatenate(parts)
        if nv:
            qd = qd + b * u[nq + nrot:]
        return q, qd

    def _reward(self, view):
        r = self.task.reward(view)
        dtype = view.state.q.dtype
        if isinstance(r, dict):
            terms = {k: jnp.asarray(v, dtype).reshape(()) for k, v in r.items()}
        else:
            terms = {"reward": jnp.asarray(r, dtype).reshape(())}
        total = sum(terms.values()) if terms else jnp.zeros((), dtype)
        return total, terms

    def _done(self, view):
        if self.task.done is None:
            return jnp.asarray(False)
        return jnp.asarray(self.task.done(view)).reshape(())

    # -- the API --

    def reset(self, key) -> EnvState:
        m = self.model
        k_init, k_targets, k_next = jax.random.split(key, 3)
        q, qd = self._noisy_init(k_init)
        ps = rstep.init(m, q, qd)
        dtype = ps.q.dtype
        targets = rtask.initial_targets(self._target_spec, dtype, k_targets)
        action = jnp.zeros((m.nu,), dtype)
        view = rtask.View(m, ps, action, targets)
        obs = jnp.atleast_1d(jnp.asarray(self.task.observe(view), dtype))
        _, terms = self._reward(view)
        zero = jnp.zeros((), dtype)
        metrics = {f"reward/{k}": zero for k in terms}
        metrics["nonfinite"] = zero
        for t in self._targets:
            metrics[f"target/{t.name}"] = zero
        info = {"key": k_next, "targets": targets, "steps": jnp.zeros((), jnp.int32),
                "truncation": zero, "final_obs": obs}
        return EnvState(ps, obs, zero, zero, metrics, info)

    def step(self, state: EnvState, action) -> EnvState:
        m = self.model
        action = self._clip(action)
        before = state.pipeline_state
        ps = self._physics(before, action)
        targets = state.info["targets"]
        key, k_targets = state.info["key"], None
        if self._targets:   # a draw only where targets may move (each draw compiles for ~0.15 s)
            key, k_targets = jax.random.split(key)
        prev = rtask.View(m, before, action, targets)
        view = rtask.View(m, ps, action, targets, prev)
        reward, terms = self._reward(view)
        done = self._done(view)
        new_targets, arrived = rtask.move_targets(self._target_spec, view, targets, k_targets)
        obs_view = rtask.View(m, ps, action, new_targets, prev)
        dtype = ps.q.dtype
        obs = jnp.atleast_1d(jnp.asarray(self.task.observe(obs_view), dtype))
        finite = _all_finite(ps.q, ps.qd, obs, reward)
        # One non-finite environment must not poison the batch: report it, end it, zero its outputs.
        reward = jnp.where(finite, reward, 0.0).astype(dtype)
        obs = jnp.where(finite, obs, 0.0).astype(dtype)
        done = jnp.logical_or(done, jnp.logical_not(finite))
        metrics = {f"reward/{k}": jnp.where(finite, v, 0.0).astype(dtype) for k, v in terms.items()}
        metrics["nonfinite"] = jnp.logical_not(finite).astype(dtype)
        for i, t in enumerate(self._targets):
            metrics[f"target/{t.name}"] = arrived[i].astype(dtype)
        info = dict(state.info, key=key, targets=new_targets, steps=state.info["steps"] + 1,
                    final_obs=obs)
        return EnvState(ps, obs, reward, done.astype(dtype), metrics, info)
