"""The scene library (scenes/*.yaml): every shipped scene checks clean, says where it comes from,
compiles, has a branch-free step, and runs random actions without a non-finite number.

The default run keeps each scene small (RANDOM_BATCH environments × RANDOM_STEPS control steps); the
issue's full check, 1000 steps at batch 256 for every scene, is marked `slow` and runs on its own
(`pytest -m slow`). The random rollout is `scenec run`'s own (compiler/cmd_run.rollout_fn): uniform
controls inside each actuator's range, one jitted `lax.scan` over the vmapped step.
Scenes with a task also run their environment (reset, random steps) and must give finite
observations and rewards.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from scenec.compiler import api
from scenec.compiler.cmd_run import rollout_fn
from scenec.runtime import step as rstep

from conftest import SCENE_PATHS
from jaxpr_util import BRANCHING, primitives

RANDOM_BATCH, RANDOM_STEPS = 16, 100          # default run
FULL_BATCH, FULL_STEPS = 256, 1000            # the check (slow)
TASK_BATCH, TASK_STEPS = 4, 20                # environment smoke run for scenes with a task

IDS = [p.stem for p in SCENE_PATHS]
_COMPILED: dict = {}
_TRACED: dict = {}


def compiled(path):
    """Each scene compiled once per test session (the IR and model do not change between tests)."""
    if path not in _COMPILED:
        _COMPILED[path] = api.compile(path, measure_jit=False)
    return _COMPILED[path]


def traced_rollout(path, batch, steps):
    """The random rollout of `scenec run`, traced once: the branch-free test reads its jaxpr (the
    vmapped step inside a scan), the run test lowers and compiles the same trace."""
    key = (path, batch, steps)
    if key not in _TRACED:
        _TRACED[key] = rollout_fn(compiled(path).model, batch, steps).trace(jax.random.PRNGKey(0))
    return _TRACED[key]


def test_the_library_is_complete():
    names = set(IDS)
    library = {"ant", "half_cheetah", "humanoid", "reacher", "hopper", "walker2d", "grasp", "fetch",
               "ur5e", "cartpole", "pendulum", "double_pendulum", "ball", "box_on_plane"}
    assert library <= names, sorted(library - names)


@pytest.mark.parametrize("path", SCENE_PATHS, ids=IDS)
def test_scene_checks_clean_and_says_where_it_comes_from(path):
    analysis = api.analyse(path)
    assert not analysis.diagnostics, [f"{d.code}: {d.message}" for d in analysis.diagnostics]
    # a header comment opens every file (where the parameters come from, what differs)
    head = path.read_text(encoding="utf-8").splitlines()
    assert head and head[0].startswith("# "), "the file should open with a comment saying what it is"
    assert analysis.ir.name == path.stem


@pytest.mark.parametrize("path", SCENE_PATHS, ids=IDS)
def test_scene_step_is_branch_free(path):
    """No cond, switch or while anywhere in the step, for one environment and under vmap (the
    batched step takes its own path through the runtime)."""
    model = compiled(path).model
    state = rstep.init(model)
    single = jax.make_jaxpr(lambda s, a: rstep.step(model, s, a))(state, jnp.zeros((model.nu,), state.q.dtype))
    batched = traced_rollout(path, RANDOM_BATCH, RANDOM_STEPS).jaxpr
    for jaxpr in (single, batched):
        found = primitives(jaxpr) & BRANCHING
        assert not found, f"data-dependent control flow in the step: {sorted(found)}"


def run_random(path, batch, steps):
    model = compiled(path).model
    states, bad = traced_rollout(path, batch, steps).lower().compile()(jax.random.PRNGKey(0))
    _TRACED.pop((path, batch, steps), None)
    for field in ("q", "qd", "xpos", "xquat", "contact_force"):
        value = np.asarray(getattr(states, field))
        assert np.all(np.isfinite(value)), f"{field} is not finite in {np.sum(~np.isfinite(value))} entries"
    assert int(bad) == 0
    # something moved: a rollout that does nothing proves nothing
    q0 = np.asarray(rstep.init(model).q)
    assert np.max(np.abs(np.asarray(states.q) - q0)) > 1e-3


@pytest.mark.parametrize("path", SCENE_PATHS, ids=IDS)
def test_scene_runs_random_actions(path):
    run_random(path, RANDOM_BATCH, RANDOM_STEPS)


@pytest.mark.slow
@pytest.mark.parametrize("path", SCENE_PATHS, ids=IDS)
def test_scene_runs_1000_steps_at_batch_256(path):
    run_random(path, FULL_BATCH, FULL_STEPS)


TASK_PATHS = [p for p in SCENE_PATHS if "\ntask:" in p.read_text(encoding="utf-8")]


@pytest.mark.parametrize("path", TASK_PATHS, ids=[p.stem for p in TASK_PATHS])
def test_scene_task_runs(path):
    from scenec.runtime.envs import load

    c = compiled(path)
    assert c.task is not None
    env = load(c, batch=TASK_BATCH)
    lo, hi = env.action_low, env.action_high

    def run(key):
        k_reset, k_act = jax.random.split(key)
        state = env.reset(k_reset)

        def body(s, k):
            u = jax.random.uniform(k, (TASK_BATCH, env.action_size), jnp.float32, lo, hi)
            s = env.step(s, u)
            return s, (s.obs, s.reward)

        return jax.lax.scan(body, state, jax.random.split(k_act, TASK_STEPS))

    final, (obs, reward) = jax.jit(run)(jax.random.PRNGKey(1))
    assert obs.shape == (TASK_STEPS, TASK_BATCH, env.observation_size)
    assert np.all(np.isfinite(np.asarray(obs))) and np.all(np.isfinite(np.asarray(reward)))
