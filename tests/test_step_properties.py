"""Properties of the compiled step on every small shipped scene and the Ant: branch-free jaxprs, no
retracing for new values, the batched fast path equal to vmap and to one-at-a-time stepping, and
finite gradients through a rollout (through contacts too)."""

from __future__ import annotations

import concurrent.futures
from types import SimpleNamespace
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from scenec.compiler import api
from scenec.runtime import constraints
from scenec.runtime import step as rstep
from scenec.runtime.types import JointKind

from conftest import SCENES_DIR
from jaxpr_util import data_dependent_branches, primitives

SCENES = ["pendulum", "double_pendulum", "ball", "box_on_plane", "ant"]


@pytest.fixture(scope="module")
def compiled():
    return {name: api.compile(SCENES_DIR / f"{name}.yaml", measure_jit=False) for name in SCENES}


# Ant's four jaxprs (17 s on a slow 2-core machine) with the slow checks: the ball and the box keep the
# vmapped and gradient jaxprs of a contact scene in the default run, and test_scenes checks Ant's single
# and batched step.
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n == "ant" else n for n in SCENES])
def test_step_is_branch_free(compiled, name):
    c = compiled[name]
    s = c.init()
    u = jnp.zeros(c.model.nu)
    single = jax.make_jaxpr(lambda s, a: rstep.step(c.model, s, a))(s, u)
    batch = jax.tree_util.tree_map(lambda x: jnp.stack([x, x]), s)
    batched = jax.make_jaxpr(lambda s, a: rstep.step(c.model, s, a))(batch, jnp.zeros((2, c.model.nu)))
    vmapped = jax.make_jaxpr(jax.vmap(lambda s, a: rstep.step(c.model, s, a)))(batch, jnp.zeros((2, c.model.nu)))
    grad = jax.make_jaxpr(jax.grad(lambda a: rstep.step(c.model, s, a).q.sum()))(u)
    for jaxpr in (single, batched, vmapped, grad):
        found = data_dependent_branches(jaxpr)
        assert not found, sorted(found)
    assert "scan" in primitives(single)   # substeps and solver iterations are fixed-length scans


def test_no_retrace_for_new_values(compiled):
    c = compiled["ant"]
    traces = []

    def counted(model, s, a):
        traces.append(1)
        return rstep.step(model, s, a)

    f = jax.jit(counted)
    s = c.init()
    s = f(c.model, s, jnp.zeros(c.model.nu))
    s = f(c.model, s, jnp.ones(c.model.nu) * 0.3)
    # New model values (a heavier torso, more friction) are leaves: no retrace either.
    heavier = c.model.__class__(**{**{k: getattr(c.model, k) for k in c.model.static_fields + c.model.leaf_fields},
                                   "body_mass": c.model.body_mass * 1.5, "pair_friction": c.model.pair_friction * 2})
    f(heavier, s, jnp.zeros(c.model.nu))
    assert len(traces) == 1


# Per-environment model values (domain randomisation): rounding of order 1e-7 grown over one control
# step with contacts (measured: 0 on the reacher, 6e-8 on Ant). The three models' body positions end
# 0.07 m (reacher) and 0.28 m (Ant) apart after that step, so the check tells a wrong model from the
# right one.
RANDOMISED_TOL = 1e-5


# Ant (9 s on 2 cores) with the slow checks; the reacher runs the same vmap over model values by default
@pytest.mark.parametrize("name", [pytest.param("ant", marks=pytest.mark.slow), "reacher"])
def test_step_vmapped_over_model_values(name):
    """Model values are leaves, so a batch of models (here masses, body offsets and joint anchors
    scaled per environment) steps in one vmapped call, each environment as its own model alone would.
    Ant's kinematics is the looped walk, the reacher's the unrolled one (kinematics.LOOP_FROM)."""
    import dataclasses

    m = api.compile(SCENES_DIR / f"{name}.yaml", measure_jit=False).model
    models = [dataclasses.replace(m, body_mass=m.body_mass * k, body_pos=m.body_pos * k,
                                  jnt_anchor=m.jnt_anchor * k) for k in (0.7, 1.0, 1.4)]
    batched = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *models)
    u = jnp.full((m.nu,), 0.3, m.body_mass.dtype)
    one = jax.jit(lambda mm: rstep.step(mm, rstep.init(mm), u))
    out = jax.jit(jax.vmap(one))(batched)
    for i, mm in enumerate(models):
        alone = one(mm)
        np.testing.assert_allclose(np.asarray(out.q[i]), np.asarray(alone.q), rtol=0, atol=RANDOMISED_TOL)
        np.testing.assert_allclose(np.asarray(out.xpos[i]), np.asarray(alone.xpos), rtol=0, atol=RANDOMISED_TOL)
    assert float(jnp.max(jnp.abs(out.xpos[0] - out.xpos[2]))) > 30 * RANDOMISED_TOL   # the models differ


# Ant (a free base, limits, 25 contact rows) runs in the slow set; the tiling test covers a large batch.
@pytest.mark.parametrize("name", ["double_pendulum", "box_on_plane",
                                  pytest.param("ant", marks=pytest.mark.slow)])
def test_batched_step_equals_vmap_and_single(compiled, name):
    # Same arithmetic on a batch laid out differently: agreement to float32 rounding.
    TOL = 2e-5
    c = compiled[name]
    rng = np.random.default_rng(0)
    s0 = c.init()
    batch = jax.tree_util.tree_map(lambda x: jnp.stack([x] * 4), s0)
    batch = batch.replace(qd=batch.qd + jnp.asarray(rng.normal(0, 0.3, batch.qd.shape), batch.qd.dtype))
    u = jnp.asarray(rng.uniform(-1, 1, (4, c.model.nu)), jnp.float32)
    direct = jax.jit(lambda s, a: rstep.step(c.model, s, a))(batch, u)
    mapped = jax.jit(jax.vmap(lambda s, a: rstep.step(c.model, s, a)))(batch, u)
    one = jax.jit(lambda s, a: rstep.step(c.model, s, a))(jax.tree_util.tree_map(lambda x: x[2], batch), u[2])
    np.testing.assert_allclose(np.asarray(direct.q), np.asarray(mapped.q), atol=TOL)
    np.testing.assert_allclose(np.asarray(direct.q[2]), np.asarray(one.q), atol=TOL)
    np.testing.assert_allclose(np.asarray(direct.xpos), np.asarray(mapped.xpos), atol=TOL)


def test_tile_sizes():
    # Batches above the cap run in tiles of the largest divisor not above it, unless that is too small.
    assert rstep._tile(1) == 1 and rstep._tile(100) == 100
    assert rstep._tile(4096) == 128 and rstep._tile(1000) == 125 and rstep._tile(320) == 80
    assert rstep._tile(1021) == 1021                       # prime: no tiling
    assert rstep._tile(4096, 82) == 64 and rstep._tile(100, 72) == 50


class _Scene(NamedTuple):
    """The fields `tile_cap` reads, without compiling a scene."""
    tree_dofs: int
    slots: int                       # contact slots after the budget
    limits: int                      # limited hinges
    nv: int


def _fake_model(s: _Scene, monkeypatch):
    class Group(NamedTuple):
        geom1: tuple
        ncon: int

    class Array(NamedTuple):
        array: np.ndarray

    m = SimpleNamespace(pair_groups=(Group((0,) * s.slots, 1),), contact_budget=0, limit_budget=0, nv=s.nv,
                        jnt_limited=Array(np.ones(s.limits, bool)),
                        jnt_kind=Array(np.full(s.limits, int(JointKind.HINGE))),
                        dof_parent_id=Array(np.arange(s.tree_dofs) - 1))     # a chain: eliminated whole
    monkeypatch.setattr(rstep.dynamics, "plan_of", lambda _m: SimpleNamespace(tree_blocks=((0, s.tree_dofs),)))
    return m


def test_tile_cap_follows_the_elimination_actually_run():
    # grasp's 39-dof hand goes branch by branch (a 3-dof chain, four 9-dof fingers side by side):
    # 4·9·13 = 468 floats, not the whole tree's 39·40 = 1560; its tile is then set by the solver's rows.
    from scenec.runtime import dynamics

    grasp = api.compile(SCENES_DIR / "grasp.yaml", measure_jit=False).model
    assert dynamics.elimination_floats(grasp) == 4 * 9 * (9 + 3 + 1)
    assert rstep.tile_cap(grasp) == (768 << 10) // (4 * constraints.solver_row_floats(grasp))


@pytest.mark.parametrize("scene, itemsize, cap", [
    # Humanoid: solver rows (2·3·16 + 8)·23 floats = 9.6 kB; 768 KiB / 9.6 kB = 82 (the elimination's
    # 23·24 floats alone would allow 128)
    (_Scene(23, 16, 8, 23), 4, 82),
    # grasp-like: a 39-dof tree's 39·40 floats = 6.2 kB → 105; 10 slots over 45 dofs, 10.8 kB → 72
    (_Scene(39, 10, 0, 45), 4, 72),
    (_Scene(39, 10, 0, 45), 8, 36),                    # float64 doubles the bytes
    (_Scene(14, 8, 8, 14), 4, 128),                    # Ant: 3.1 kB per environment fits at 128
    (_Scene(400, 0, 0, 400), 4, 32),                   # never under TILE/4
])
def test_tile_cap_follows_the_working_sets(scene, itemsize, cap, monkeypatch):
    assert rstep.tile_cap(_fake_model(scene, monkeypatch), itemsize) == cap


def test_small_scenes_without_contacts_take_larger_cpu_tiles():
    # The rule step.SMALL_SCENE_US states, on the shipped scenes (estimates by step.env_cost_us): the
    # pendulum (0.23 µs), double pendulum (0.36), cartpole and reacher (0.72), none with a collider
    # pair, take tiles of 512; ball and box_on_plane are as small but have a pair group, ur5e has no
    # pair but 7.6 µs of work per environment: they keep 128, as the measurements there asked.
    assert (rstep.SMALL_TILE, rstep.TILE) == (512, 128)
    for name, cap in (("pendulum", 512), ("double_pendulum", 512), ("cartpole", 512), ("reacher", 512),
                      ("ball", 128), ("box_on_plane", 128), ("ur5e", 128)):
        m = api.compile(SCENES_DIR / f"{name}.yaml", measure_jit=False).model
        assert rstep.tile_cap(m) == cap, name
    assert rstep._tile(1024, 512) == 512 and rstep._tile(4096, 512) == 512 and rstep._tile(768, 512) == 384


def test_tiles_on_accelerators(monkeypatch):
    # On a GPU the whole batch is one program: a loop over 128-environment tiles would run each kernel
    # 32 times over a sliver of the device at batch 4096.
    hum = api.compile(SCENES_DIR / "humanoid.yaml", measure_jit=False).model
    ant = api.compile(SCENES_DIR / "ant.yaml", measure_jit=False).model
    monkeypatch.setattr(rstep.jax, "default_backend", lambda: "gpu")
    assert rstep.tile_cap(hum) is None and rstep._tile(4096, None) == 4096
    assert constraints.one_hot_floats(hum) == 0                     # gathers on a GPU
    # On a TPU, 64 MiB over the solver's rows and the one-hot table, counted by hand: Humanoid's
    # (2·3·12 slots + 17 limits)·23 dofs + 189 candidates × 12 slots = 4315 floats, 17,260 bytes →
    # 3888 environments: tiles of 2048 at 16,384, whole at 1024; Ant's (2·3·8 + 8)·14 + 25·8 = 984
    # floats → 17,050: 16,384 whole. (tools/results: those are the tiles that ran fastest there,
    # with Humanoid's earlier budget of 16: 5623 floats, 2983 environments, the same tiles.)
    monkeypatch.setattr(rstep.jax, "default_backend", lambda: "tpu")
    assert constraints.one_hot_floats(hum) == 189 * 12
    assert rstep.tile_cap(hum) == (64 << 20) // (4 * 4315) == 3888
    assert rstep._tile(16384, rstep.tile_cap(hum)) == 2048 and rstep._tile(1024, 3888) == 1024
    assert rstep.tile_cap(ant) == (64 << 20) // (4 * 984) and rstep._tile(16384, rstep.tile_cap(ant)) == 16384
    assert rstep._tile(3001, 3888) == 3001                          # 3001 is prime: whole, not tiles of 1


# The step's output poses are the frames at its new q, whichever way they are made: by one more turn of
# the substep loop that skips the rest of the substep (the CPU), or by a walk after the loop
# (`OUTPUTS_IN_LOOP` off, as on a GPU). POSE_TOL: the kinematics recomputed from the returned q by the
# same float32 arithmetic, fused differently (test_kinematics_walks: a few ulps along a chain). The
# two paths agree to PATH_TOL: the same substeps, float32 rounding grown over one control step (as
# test_batched_step_equals_vmap_and_single). Semi-implicit Euler and RK4 (the double pendulum's).
POSE_TOL, PATH_TOL = 2e-6, 2e-5


# Ant (11 s) and the double pendulum's Euler case (11 s) with the slow checks; the box keeps Euler and a
# scene with contacts in the default run, the double pendulum RK4
@pytest.mark.parametrize("name, integrator", [pytest.param("double_pendulum", "euler", marks=pytest.mark.slow),
                                              ("double_pendulum", "rk4"),
                                              ("box_on_plane", "euler"),
                                              pytest.param("ant", "euler", marks=pytest.mark.slow)])
def test_output_poses_are_the_frames_at_the_new_q(compiled, name, integrator, monkeypatch):
    import dataclasses

    from scenec.runtime import kinematics

    m = dataclasses.replace(compiled[name].model, integrator=integrator)
    rng = np.random.default_rng(3)
    s0 = jax.tree_util.tree_map(lambda x: jnp.stack([x] * 3), rstep.init(m))
    s0 = s0.replace(qd=s0.qd + jnp.asarray(rng.normal(0, 2.0, s0.qd.shape), s0.qd.dtype))
    u = jnp.asarray(rng.uniform(-1, 1, (3, m.nu)), s0.q.dtype)
    runs = {}
    for in_loop in (True, False):
        monkeypatch.setattr(rstep, "OUTPUTS_IN_LOOP", in_loop)
        assert rstep.outputs_in_loop() == in_loop
        s = jax.jit(lambda s, a: rstep.step(m, s, a))(s0, u)
        f = jax.jit(lambda q: kinematics.forward_kinematics(m, q))(s.q.T)
        np.testing.assert_allclose(np.asarray(s.xpos), np.moveaxis(np.asarray(f.xpos), -1, 0), rtol=0, atol=POSE_TOL)
        np.testing.assert_allclose(np.asarray(s.xquat), np.moveaxis(np.asarray(f.xquat), -1, 0), rtol=0, atol=POSE_TOL)
        runs[in_loop] = s
    assert float(jnp.max(jnp.abs(runs[True].q - s0.q))) > 30 * PATH_TOL      # the step moved the bodies
    for field in ("q", "qd", "xpos", "xquat"):
        np.testing.assert_allclose(np.asarray(getattr(runs[True], field)), np.asarray(getattr(runs[False], field)),
                                   rtol=0, atol=PATH_TOL, err_msg=field)


# A gradient traced under `for_gradients` against central differences of the step (float32, a step of
# FD_STEP in the initial velocities: truncation O(FD_STEP²) and rounding ~1e-7/FD_STEP, both far
# under FD_REL of the largest entry), and against the default form's gradient (the same arithmetic,
# float32 rounding: GRAD_REL).
FD_STEP, FD_REL, GRAD_REL = 1e-2, 1e-3, 1e-5


def test_gradients_trace_the_step_without_the_loops_cond(compiled):
    c = compiled["double_pendulum"]
    u = jnp.full((c.model.nu,), 0.3)

    def loss(qd0):
        s = rstep.step(c.model, c.init(qd=qd0), u)
        return jnp.sum(s.xpos) + jnp.sum(s.qd ** 2)

    qd0 = jnp.asarray(c.model.qd0) + jnp.asarray([0.5, -1.0], jnp.float32)
    default = jax.make_jaxpr(jax.grad(loss))(qd0)
    g_default = jax.jit(jax.grad(loss))(qd0)
    with rstep.for_gradients():
        assert not rstep.outputs_in_loop()
        fast = jax.make_jaxpr(jax.grad(loss))(qd0)
        g_fast = jax.jit(jax.grad(loss))(qd0)
    assert rstep.outputs_in_loop() == (jax.default_backend() == "cpu")     # the block ended
    if rstep.outputs_in_loop():
        assert "cond" in primitives(default)
    assert "cond" not in primitives(fast)
    f = jax.jit(loss)
    eye = np.eye(len(qd0), dtype=np.float32) * FD_STEP
    fd = np.array([(float(f(qd0 + e)) - float(f(qd0 - e))) / (2 * FD_STEP) for e in eye])
    scale = np.max(np.abs(fd))
    assert scale > 0.1
    np.testing.assert_allclose(np.asarray(g_fast), fd, rtol=0, atol=FD_REL * scale)
    np.testing.assert_allclose(np.asarray(g_fast), np.asarray(g_default), rtol=0, atol=GRAD_REL * scale)


def test_tiled_batch_equals_its_parts(compiled):
    # A (2, 160) batch runs as 4 tiles of 80; envs [1, 60:100] straddle the boundary of tiles 3 and 4.
    # Running those 40 envs alone (no tiling) must give the same numbers (float32 rounding).
    TOL = 2e-5
    c = compiled["box_on_plane"]
    rng = np.random.default_rng(1)
    s0 = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (2, 160) + x.shape), c.init())
    s0 = s0.replace(qd=s0.qd + jnp.asarray(rng.normal(0, 1.0, s0.qd.shape), s0.qd.dtype))
    u = jnp.zeros((2, 160, c.model.nu), jnp.float32)
    f = jax.jit(lambda s, a: rstep.step(c.model, s, a))
    whole = f(f(s0, u), u)
    part0 = jax.tree_util.tree_map(lambda x: x[1, 60:100], s0)
    part = f(f(part0, u[1, 60:100]), u[1, 60:100])
    for field in ("q", "qd", "xpos", "xquat", "contact_force"):
        np.testing.assert_allclose(np.asarray(getattr(whole, field))[1, 60:100], np.asarray(getattr(part, field)),
                                   atol=TOL, err_msg=field)
    assert whole.q.shape == (2, 160, c.model.nq) and whole.contact_force.shape == (2, 160, c.model.nbody, 3)


class _FakeDevice:
    def __init__(self, platform):
        self.platform = platform


def test_split_sizes(monkeypatch):
    # A batch is split over the most host CPU devices that divide it and leave each at least half of
    # SPLIT_FROM_US of work by the cost estimate: here 1 µs per environment, so 6 environments a
    # device in a jitted loop ("scan"), 500 for calls from Python.
    monkeypatch.setattr(jax, "devices", lambda *a: [_FakeDevice("cpu")] * 4)
    monkeypatch.setattr(rstep, "_env_cost", lambda m: 1.0)
    monkeypatch.setattr(rstep, "SPLIT_FROM_US", {"scan": 12.0, "call": 1000.0})
    sizes = {b: len(rstep.split_devices(b, None)) for b in (1024, 96, 63, 1021, 24, 18, 12, 10, 19, 1)}
    assert sizes == {1024: 4, 96: 4, 63: 3, 1021: 1, 24: 4, 18: 3, 12: 2, 10: 1, 19: 1, 1: 1}
    with rstep.calls_from_python():
        sizes = {b: len(rstep.split_devices(b, None)) for b in (4096, 2048, 1024, 999, 998)}
        with concurrent.futures.ThreadPoolExecutor(1) as pool:     # another thread: its own policy
            elsewhere = pool.submit(rstep.split_devices, 24, None).result()
    assert sizes == {4096: 4, 2048: 4, 1024: 2, 999: 1, 998: 1} and len(elsewhere) == 4
    assert len(rstep.split_devices(1024, None)) == 4                    # the policy is restored
    monkeypatch.setattr(jax, "devices", lambda *a: [_FakeDevice("gpu")] * 4)
    assert len(rstep.split_devices(1024, None)) == 1                     # other backends: the caller decides


# The split's cost estimate against the step's own arithmetic: floating-point operations in the jaxpr
# of one environment's control step (tools/flops_by_scope.py, which counts what the code asks for).
# Over the fourteen shipped scenes that count runs 10.4k–34.9k per estimated µs (the estimate was
# fitted to time, not to operations: the light scenes' time goes to overhead, the contact scenes'
# operations to cheap selects), so each scene here must fall within a factor of 2 of 20k.
FLOPS_PER_US, FACTOR = 20_000, 2.0


@pytest.mark.parametrize("name", [n for n in SCENES if n != "ant"])
def test_the_cost_estimate_follows_the_step_arithmetic(compiled, name):
    from conftest import load_tool

    m = compiled[name].model
    flops = sum(load_tool("flops_by_scope").step_flops(m, 1).values())
    ratio = flops / rstep.env_cost_us(m) / FLOPS_PER_US
    assert 1 / FACTOR <= ratio <= FACTOR, f"{name}: {flops:.0f} FLOPs, {rstep.env_cost_us(m):.2f} µs"


def test_a_light_batch_stays_on_one_device_and_a_heavy_one_splits(compiled):
    # Ant (20 µs per environment by the estimate) at 16 environments splits in a jitted loop, not
    # for calls from Python; the pendulum (0.2 µs) at 32 splits in neither. The box (0.6 µs) at 256
    # splits in the plain jitted step and not in `jit_step`, whichever is traced first.
    two = 2 if len(jax.devices()) > 1 and jax.devices()[0].platform == "cpu" else 1
    ant, pendulum, box = (compiled[n].model for n in ("ant", "pendulum", "box_on_plane"))
    assert len(rstep.split_devices(16, ant)) == two
    assert rstep.carry_sharding(pendulum, 32) is None
    with rstep.calls_from_python():
        assert rstep.carry_sharding(pendulum, 32) is None
        assert len(rstep.split_devices(16, ant)) == 1
        assert len(rstep.split_devices(1024, ant)) == two
    u = jnp.zeros((256, box.nu))
    s = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (256,) + x.shape), compiled["box_on_plane"].init())
    assert len(jax.jit(rstep.step)(box, s, u).q.sharding.device_set) == two
    assert len(rstep.jit_step(box, s, u).q.sharding.device_set) == 1


needs_two = pytest.mark.skipif(len(jax.devices()) < 2 or jax.devices()[0].platform != "cpu",
                               reason="needs two XLA host devices (one core here, or SCENEC_HOST_DEVICES=1)")


def _model_with(model, **values):
    return model.__class__(**{**{k: getattr(model, k) for k in model.static_fields + model.leaf_fields}, **values})


def _split_and_whole(c, seed):
    """256 boxes sliding in random directions; `step` (split over the host devices) and the same batch
    on one device (`rstep._advance_batch`), each as (model, state) → state."""
    rng = np.random.default_rng(seed)
    s0 = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (256,) + x.shape), c.init())
    s0 = s0.replace(qd=s0.qd + jnp.asarray(rng.normal(0, 1.0, s0.qd.shape), s0.qd.dtype))
    u = jnp.zeros((256, c.model.nu), jnp.float32)
    assert len(rstep.split_devices(256, c.model)) >= 2

    def split(m, s):
        return rstep.step(m, s, u)

    def whole(m, s):
        q, qd, *_ = rstep._advance_batch(m, s.q, s.qd, u)
        return s.replace(q=q, qd=qd)

    return s0, split, whole


@needs_two
def test_split_batch_equals_one_device(compiled):
    # The same arithmetic per environment in programs XLA compiles separately: float32 rounding.
    TOL = 2e-5
    c = compiled["box_on_plane"]
    s0, split, whole = _split_and_whole(c, 2)
    run = lambda advance: jax.jit(lambda s: jax.lax.scan(                  # noqa: E731
        lambda s, _: (advance(c.model, s), None), s, None, length=10)[0])(s0)
    a, b = run(split), run(whole)
    assert isinstance(a.q.sharding, jax.sharding.NamedSharding)            # it did run split
    np.testing.assert_allclose(np.asarray(a.q), np.asarray(b.q), atol=TOL)
    np.testing.assert_allclose(np.asarray(a.qd), np.asarray(b.qd), atol=TOL)


@needs_two
@pytest.mark.slow
def test_split_batch_gradients_sum_over_devices(compiled):
    # A model value goes to every device as a replicated argument; its gradient must be the sum of the
    # devices' parts, equal to the one-device gradient (float32 rounding over 10 steps: rtol 1e-4).
    c = compiled["box_on_plane"]
    s0, split, whole = _split_and_whole(c, 3)

    def loss(friction, advance):
        m = _model_with(c.model, pair_friction=friction)
        s, _ = jax.lax.scan(lambda s, _: (advance(m, s), None), s0, None, length=10)
        return jnp.sum(s.qd[:, :2] ** 2)

    g1 = jax.jit(jax.grad(lambda f: loss(f, split)))(c.model.pair_friction)
    g2 = jax.jit(jax.grad(lambda f: loss(f, whole)))(c.model.pair_friction)
    assert abs(float(g2[0])) > 1.0                                          # friction matters here
    np.testing.assert_allclose(np.asarray(g1), np.asarray(g2), rtol=1e-4)


@needs_two
@pytest.mark.parametrize("lead", [(192,), (3, 64)])
def test_a_loop_of_steps_compiles_once(compiled, lead, monkeypatch):
    # A fresh batch lies on one device, one that the split step returned lies across the devices, and
    # jax.jit specialises on that: a loop of the plain jitted step compiles twice (the control). The
    # compiled scene's step (`jit_step`, as the generated module's) puts the batch where the step
    # leaves it (split along a first axis that divides, else replicated) and the model's arrays on
    # the same devices, and compiles once. Both run
    # the same arithmetic in programs XLA compiles separately: float32 rounding (TOL as above).
    # (The box's 192 environments are too light to pay for a split called from Python,
    # step.SPLIT_FROM_US: a threshold of 0 splits them.) A batch split along its first axis runs as
    # replicas of one device's program (replicas.py), a replicated one (3, 64) through the jit.
    TOL = 2e-5
    monkeypatch.setitem(rstep.SPLIT_FROM_US, "call", 0.0)
    monkeypatch.setitem(rstep.SPLIT_FROM_US, "scan", 0.0)
    monkeypatch.setattr(rstep, "_REPLICAS", {})
    monkeypatch.setattr(rstep, "_STEP_PROGRAMS", {})
    c = compiled["box_on_plane"]
    s0 = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, lead + x.shape), c.init())
    s0 = s0.replace(qd=s0.qd + jnp.asarray(np.random.default_rng(4).normal(0, 1.0, s0.qd.shape), s0.qd.dtype))
    u = jnp.zeros(lead + (c.model.nu,), jnp.float32)
    plain, a, b = jax.jit(rstep.step), s0, s0
    placed = rstep._jitted_step(rstep.carry_sharding(c.model, 192, split=lead[0] % 2 == 0), True)
    before = plain._cache_size(), placed._cache_size()      # (jit objects of one function share it)
    for _ in range(3):
        a, b = plain(c.model, a, u), c.step(b, u)
    assert plain._cache_size() == before[0] + 2
    programs = sum(len(r._programs) for r in rstep._REPLICAS.values())
    assert (placed._cache_size() - before[1], programs) == ((0, 1) if lead[0] % 2 == 0 else (1, 0))
    # the model's arrays went to the devices once, replicated (not copied there on every call)
    whole = rstep.carry_sharding(c.model, 192)
    model = rstep._model_on(c.model, whole)
    assert model is rstep._model_on(c.model, whole)
    assert all(x.sharding == whole for x in jax.tree_util.tree_leaves(model))
    np.testing.assert_allclose(np.asarray(b.q), np.asarray(a.q), atol=TOL)
    np.testing.assert_allclose(np.asarray(b.qd), np.asarray(a.qd), atol=TOL)


@needs_two
def test_step_inside_the_callers_shard_map(compiled):
    # Inside the caller's own shard_map (or pmap) the step does not split again, and runs.
    c = compiled["box_on_plane"]
    mesh = jax.sharding.Mesh(np.asarray(jax.devices()[:2]), ("x",))
    spec = jax.sharding.PartitionSpec("x")
    s0 = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (256,) + x.shape), c.init())
    u = jnp.zeros((256, c.model.nu), jnp.float32)
    f = jax.jit(jax.shard_map(lambda s, a: rstep.step(c.model, s, a), mesh=mesh, in_specs=spec, out_specs=spec))
    g = jax.pmap(lambda s, a: rstep.step(c.model, s, a))
    ref = jax.jit(lambda s, a: rstep.step(c.model, s, a))(s0, u)
    np.testing.assert_allclose(np.asarray(f(s0, u).q), np.asarray(ref.q), atol=2e-5)
    paired = jax.tree_util.tree_map(lambda x: x.reshape((2, 128) + x.shape[1:]), s0)
    np.testing.assert_allclose(np.asarray(g(paired, u.reshape(2, 128, -1)).q).reshape(256, -1), np.asarray(ref.q),
                               atol=2e-5)


# With the slow checks (31 s for the double pendulum on a slow 2-core machine); the default run keeps a
# gradient through one step in contact (below). Gradients through contact also have their own test
# (test_contacts_physics, with the slow checks too).
@pytest.mark.slow
@pytest.mark.parametrize("name", ["double_pendulum", "box_on_plane"])
def test_gradients_through_a_rollout_are_finite(compiled, name):
    c = compiled[name]

    def loss(actions, qd0):
        s = c.init(qd=qd0)

        def body(s, a):
            s = rstep.step(c.model, s, a)
            return s, None

        s, _ = jax.lax.scan(body, s, actions)
        return jnp.sum(s.xpos[..., 2]) + jnp.sum(s.qd ** 2)

    actions = jnp.full((10, c.model.nu), 0.1)
    g_actions, g_qd = jax.jit(jax.grad(loss, argnums=(0, 1)))(actions, jnp.asarray(c.model.qd0) + 0.1)
    assert np.all(np.isfinite(np.asarray(g_qd))) and np.any(np.asarray(g_qd) != 0)
    assert np.all(np.isfinite(np.asarray(g_actions)))


def test_gradient_of_a_step_in_contact_is_finite(compiled):
    """One step of the ball sunk 1 mm into the plane, falling and sliding, its contact pushing it out
    with friction: the gradient of where it ends with respect to its initial velocity is finite and
    not zero. (The 500-step bounce of test_contacts_physics, the default run's gradient through
    contact until it went to the slow checks, compiles for 45 s; this in 10–16 s.)"""
    c = compiled["ball"]
    q0 = jnp.asarray(c.model.q0).at[2].set(0.099)                  # radius 0.1 m: 1 mm deep

    def end(qd0):
        s = rstep.step(c.model, rstep.init(c.model, q=q0, qd=qd0), jnp.zeros(c.model.nu))
        return jnp.sum(s.q[:3]) + jnp.sum(s.qd[:3]), s.contact_force

    qd0 = jnp.asarray([0.3, 0.0, -0.5, 0.0, 0.0, 0.0], jnp.float32)
    (_, force), g = jax.jit(jax.value_and_grad(end, has_aux=True))(qd0)
    assert float(jnp.abs(force).sum()) > 0, "the ball should be in contact"
    assert np.all(np.isfinite(np.asarray(g))) and np.any(np.asarray(g)[[0, 2]] != 0), g


# The straight-line sweep (constraints._UNROLLED_UP_TO) visits the same blocks in the same order as the
# loop; only XLA's grouping of the float32 operations differs. One control step from states with the
# contacts in play (some steps after a perturbed start), the two agree to float32 rounding: measured
# 0 on the box; on the hand 9e-8 in q, 7e-6 in qd, and 3e-3 N in contact forces of up to 310 N (impulses
# over a 1 ms substep). Over many steps a grasp amplifies rounding as any contact-rich rollout does
# (20 steps: 3e-3 in one joint of one of 8 environments), so the comparison is one step long.
SWEEP_TOL = 1e-4            # q, qd
SWEEP_FORCE_REL = 1e-4      # contact forces, relative to the largest


# grasp (41 s on 2 cores) runs with the slow checks; the box takes the same straight-line sweep by default
@pytest.mark.parametrize("name, settle", [("box_on_plane", 100), pytest.param("grasp", 10, marks=pytest.mark.slow)])
def test_straight_line_sweep_equals_the_loop(name, settle, monkeypatch):
    compiled = api.compile(SCENES_DIR / f"{name}.yaml", measure_jit=False)
    model = compiled.model
    assert 0 < compiled.report["contacts_solved"] <= constraints._UNROLLED_UP_TO   # the default: straight
    rng = np.random.default_rng(3)
    s0 = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (8,) + x.shape), rstep.init(model))
    s0 = s0.replace(qd=s0.qd + jnp.asarray(rng.normal(0, 0.5, s0.qd.shape), s0.qd.dtype))
    u = jnp.asarray(rng.uniform(-1, 1, (8, model.nu)), jnp.float32)
    s0 = jax.jit(lambda s: jax.lax.fori_loop(0, settle, lambda i, s: rstep.step(model, s, u), s))(s0)

    def one_step():
        return jax.jit(lambda s: rstep.step(model, s, u))(s0)

    straight = one_step()
    monkeypatch.setattr(constraints, "_UNROLLED_UP_TO", 0)
    looped = one_step()
    for field in ("q", "qd"):
        np.testing.assert_allclose(np.asarray(getattr(straight, field)), np.asarray(getattr(looped, field)),
                                   atol=SWEEP_TOL, err_msg=field)
    force, force_loop = np.asarray(straight.contact_force), np.asarray(looped.contact_force)
    np.testing.assert_allclose(force, force_loop, atol=SWEEP_FORCE_REL * np.max(np.abs(force_loop)))
    assert np.sum(np.any(force != 0, axis=(1, 2))) >= 4              # contacts in play in most envs


def test_by_halves_gives_the_one_piece_result():
    # math.by_halves computes rows_of(slice(0, n)) in two joined halves (so that XLA gives the result a
    # buffer of its own); the values are the one-piece ones exactly: the same operations on each row.
    from scenec.runtime import math as sm

    rng = np.random.default_rng(0)
    a, b = (jnp.asarray(rng.normal(size=(7, 16)), jnp.float32) for _ in range(2))
    one = lambda rows: (a[rows] * b[rows] + 1.0, jnp.sqrt(jnp.abs(a[rows])))      # noqa: E731
    for got, want in zip(jax.jit(lambda: sm.by_halves(one, 7))(), one(slice(0, 7))):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    single = sm.by_halves(lambda rows: a[rows], 1)                   # one row: nothing to split
    np.testing.assert_array_equal(np.asarray(single), np.asarray(a[:1]))


def test_the_collector_is_paused_only_while_the_step_runs(compiled, monkeypatch):
    # step and init pause Python's garbage collector while they run (a faster trace: runtime/step.py
    # `gc_paused`) and leave it as they found it: on, off, or after an error.
    import gc

    c = compiled["pendulum"]
    seen = []
    original = rstep.split_devices
    monkeypatch.setattr(rstep, "split_devices", lambda batch, m: (seen.append(gc.isenabled()), original(batch, m))[1])
    s = rstep.init(c.model)
    assert gc.isenabled()
    jax.jit(rstep.step)(c.model, s, jnp.zeros(c.model.nu))
    assert seen == [False] and gc.isenabled()
    gc.disable()
    try:
        rstep.step(c.model, s, jnp.zeros(c.model.nu))
        assert not gc.isenabled()                                    # the caller's choice is kept
    finally:
        gc.enable()
    with pytest.raises(ValueError):
        rstep.step(c.model, s, jnp.zeros((c.model.nu + 1, 2)))       # an action that cannot broadcast
    assert gc.isenabled()


def test_a_scene_with_nothing_to_move_steps(tmp_path):
    # A scene whose bodies have no joint (each fused into the world: nv = nq = 0) compiled and then
    # failed in the step (an empty q in the small-loop mark, M⁻¹ of no dofs). It steps now, alone
    # and batched in tiles: the clock advances by the timestep, and nothing moves, so no contact
    # force acts and the poses are the world's.
    path = tmp_path / "still.yaml"
    path.write_text("name: still\nbodies:\n  - name: block\n    pos: [0.0, 0.0, 0.5]\n"
                    "    colliders:\n      - {box: {half_size: [0.1, 0.1, 0.1]}}\n"
                    "  - name: ground\n    colliders:\n      - {plane: {}}\n")
    c = api.compile(path, measure_jit=False)
    assert (c.model.nq, c.model.nv, c.model.nu) == (0, 0, 0)
    batch = 2 * rstep.TILE + 8
    many = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape), c.init())
    for states, actions in ((c.init(), jnp.zeros(0)), (many, jnp.zeros((batch, 0)))):
        out = rstep.step(c.model, states, actions)
        np.testing.assert_allclose(np.asarray(out.time), np.asarray(states.time) + c.model.timestep, rtol=1e-6)
        assert out.q.shape == states.q.shape and out.qd.shape == states.qd.shape
        assert np.all(np.asarray(out.contact_force) == 0.0)
        np.testing.assert_array_equal(np.asarray(out.xpos), np.asarray(states.xpos))
        np.testing.assert_array_equal(np.asarray(out.xquat), np.asarray(states.xquat))
