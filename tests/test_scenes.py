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
from jaxpr_util import data_dependent_branches

RANDOM_BATCH, RANDOM_STEPS = 16, 100          # default run
FULL_BATCH, FULL_STEPS = 256, 1000            # the check (slow)
TASK_BATCH, TASK_STEPS = 4, 20                # environment smoke run for scenes with a task

IDS = [p.stem for p in SCENE_PATHS]
# Scenes whose step takes XLA half a minute or more to compile on 2 cores (many collider pairs): their
# default-run smoke tests move to the slow run, which compiles and runs every scene anyway.
HEAVY = {"grasp", "humanoid", "fetch"}


def params(paths):
    return [pytest.param(p, id=p.stem, marks=[pytest.mark.slow] if p.stem in HEAVY else [])
            for p in paths]
SCENES_DIR_OF = {p.stem: p for p in SCENE_PATHS}
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
    """No data-dependent cond, switch or while anywhere in the step, for one environment and under
    vmap (the batched step takes its own path through the runtime)."""
    model = compiled(path).model
    state = rstep.init(model)
    single = jax.make_jaxpr(lambda s, a: rstep.step(model, s, a))(state, jnp.zeros((model.nu,), state.q.dtype))
    batched = traced_rollout(path, RANDOM_BATCH, RANDOM_STEPS).jaxpr
    for jaxpr in (single, batched):
        found = data_dependent_branches(jaxpr)
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


@pytest.mark.parametrize("path", params(SCENE_PATHS))
def test_scene_runs_random_actions(path):
    run_random(path, RANDOM_BATCH, RANDOM_STEPS)


@pytest.mark.slow
@pytest.mark.parametrize("path", SCENE_PATHS, ids=IDS)
def test_scene_runs_1000_steps_at_batch_256(path):
    run_random(path, FULL_BATCH, FULL_STEPS)


TASK_PATHS = [p for p in SCENE_PATHS if "\ntask:" in p.read_text(encoding="utf-8")]


@pytest.mark.parametrize("path", params(TASK_PATHS))
def test_scene_task_runs(path):
    from scenec.runtime.envs import load

    c = compiled(path)
    assert c.task is not None
    env = load(c, batch=TASK_BATCH, auto_reset=False)   # the wrappers are tested in test_envs.py
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


# --- the Brax-derived scenes equal the import of their Brax config ----------------------------------

BRAX_DIR = SCENE_PATHS[0].parent.parent.parent / "shared" / "data" / "brax-v1"
# Poses and sizes were rounded to the micrometre when the files were tidied; masses, inertias,
# gains and ranges were written exactly (or as exact expressions: 45 deg, 0.1 deg).
POSE_TOL = 2e-6


def _grasp_body(name: str) -> str:
    fixed = {"HandPalm": "palm", "Object": "object", "Ground": "ground"}
    if name in fixed:
        return fixed[name]
    for number, suffix in (("1", ""), ("2", "Two"), ("3", "Three"), ("4", "Four")):
        for part in ("Proximal", "Middle", "Distal"):
            if name == f"HandThumb{part}{suffix}":
                return f"finger{number}_{part.lower()}"
    return name


BRAX_SCENES = {
    # scene -> (Brax body name -> library body name, Brax bodies the library leaves out, extra joints)
    "fetch": (lambda n: n.lower().replace(" ", "_"), {"Target"}, set()),
    # the arm's base joint hangs from the world instead of Brax's frozen floor (a static body)
    "ur5e": (lambda n: "world" if n == "floor" else n, {"Target"}, set()),
    "grasp": (_grasp_body, {"Target"}, {("world", "palm", 0), ("world", "palm", 1), ("world", "palm", 2)}),
}


def _joint_keys(scene_ir, rename):
    """{(parent, child, k): joint} with k the joint's index among those of the same parent and child."""
    keys, count = {}, {}
    for j in scene_ir.joints:
        pc = (rename(j.parent), rename(j.child))
        k = count.get(pc, 0)
        count[pc] = k + 1
        keys[pc + (k,)] = j
    return keys


def _world_points(body, collider):
    """A collider's defining points in the world: a capsule's segment ends, a sphere's centre, a box's
    corners (sorted), so that equal shapes compare equal whatever quaternion sign or axis sense."""
    from scenec.compiler import frames
    from scenec.runtime.collision_table import Shape

    rot_b = frames.quat_to_mat(np.array(body.quat))
    rot = rot_b @ frames.quat_to_mat(np.array(collider.quat))
    centre = np.array(body.pos) + rot_b @ np.array(collider.pos)
    if collider.shape == Shape.CAPSULE:
        half = rot @ np.array([0.0, 0.0, collider.size[1]])
        return np.array(sorted([tuple(centre - half), tuple(centre + half)]))
    if collider.shape == Shape.BOX:
        signs = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])
        return np.array(sorted(tuple(centre + rot @ (s * np.array(collider.size))) for s in signs))
    return centre[None]


@pytest.mark.parametrize("scene", sorted(BRAX_SCENES))
def test_brax_scene_equals_its_import(scene):
    """Tidying by hand (names, expressions, rounding, comments) changed none of the physics that
    `scenec import` reads from the Brax v1 config."""
    from scenec.compiler.importers import import_file

    rename, left_out, extra_joints = BRAX_SCENES[scene]
    result = import_file(BRAX_DIR / f"{scene}.pbtxt")
    assert not [d for d in result.diagnostics if d.is_error]
    imported = api.analyse(result.scene).ir
    library = compiled(SCENES_DIR_OF[scene]).ir

    for field in ("timestep", "substeps", "gravity", "friction", "contact_solref", "limit_solref"):
        assert getattr(library.options, field) == pytest.approx(getattr(imported.options, field)), field

    mine = {b.name: b for b in library.bodies}
    for body in imported.bodies:
        if body.name in left_out or rename(body.name) == "world" or not body.colliders:
            continue
        ours = mine[rename(body.name)]
        np.testing.assert_allclose(ours.pos, body.pos, atol=POSE_TOL, err_msg=body.name)
        assert abs(abs(np.dot(ours.quat, body.quat)) - 1) < POSE_TOL, body.name
        if body.props is not None and body.props.mass > 0:
            assert ours.props.mass == pytest.approx(body.props.mass), body.name
            np.testing.assert_allclose(ours.props.inertia, body.props.inertia, rtol=1e-9, err_msg=body.name)
        assert len(ours.colliders) == len(body.colliders), body.name
        for c_ours, c_brax in zip(ours.colliders, body.colliders):
            assert c_ours.shape == c_brax.shape, body.name
            np.testing.assert_allclose(c_ours.size, c_brax.size, atol=POSE_TOL, err_msg=body.name)
            np.testing.assert_allclose(_world_points(ours, c_ours), _world_points(body, c_brax),
                                       atol=POSE_TOL, err_msg=body.name)

    theirs = _joint_keys(imported, rename)
    ours = _joint_keys(library, lambda n: n)
    assert set(ours) - set(theirs) == extra_joints
    assert set(theirs) <= set(ours)
    by_joint = {a.joint: a for a in library.actuators}
    for key, jb in theirs.items():
        jo = ours[key]
        assert jo.kind == jb.kind, key
        np.testing.assert_allclose(jo.anchor, jb.anchor, atol=POSE_TOL, err_msg=str(key))
        np.testing.assert_allclose(jo.axis, jb.axis, atol=1e-12, err_msg=str(key))
        assert (jo.range is None) == (jb.range is None), key
        if jb.range is not None:
            np.testing.assert_allclose(jo.range, jb.range, rtol=1e-12, err_msg=str(key))
        assert (jo.damping, jo.stiffness, jo.armature) == (jb.damping, jb.stiffness, jb.armature), key
        assert jo.reference == pytest.approx(jb.reference, abs=1e-12), key
    for act in imported.actuators:
        joint = next(j for k, j in theirs.items() if j.name == act.joint)
        key = next(k for k, j in theirs.items() if j is joint)
        ours_act = by_joint[ours[key].name]
        assert ours_act.kind == act.kind and ours_act.gear == act.gear, act.name
        np.testing.assert_allclose(ours_act.gain, act.gain, rtol=1e-12, err_msg=act.name)
        np.testing.assert_allclose(ours_act.bias, act.bias, rtol=1e-12, err_msg=act.name)
        np.testing.assert_allclose(ours_act.ctrl_range, act.ctrl_range, rtol=1e-12, err_msg=act.name)
    assert [a.joint for a in library.actuators][:len(imported.actuators)] == [
        ours[next(k for k, j in theirs.items() if j.name == a.joint)].name for a in imported.actuators
    ], "the action layout follows Brax's actuator order"
