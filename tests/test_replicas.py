"""runtime/replicas.py: one device's program compiled once and run as XLA replicas, against the same
function on the whole batch (a float64 NumPy reference, and the partitioned jitted step), and
`jit_step`'s use of it (placement of the action, one compile per signature, the fallback)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from scenec.compiler import api
from scenec.runtime import replicas
from scenec.runtime import step as rstep

from conftest import SCENES_DIR

needs_two = pytest.mark.skipif(len(jax.devices()) < 2 or jax.devices()[0].platform != "cpu",
                               reason="needs two XLA host devices (one core here, or SCENEC_HOST_DEVICES=1)")
pytestmark = needs_two

# float32 sin/cos against float64 NumPy, values of order 1–10: a few ulps.
TOL_F32 = 1e-5
# The step's arithmetic per environment is the same in both programs, but XLA compiles them separately
# and may fuse (round) differently: float32 rounding over one control step of sliding boxes.
TOL_STEP = 2e-5


def _over_two():
    r = replicas.Replicas(lambda w, x: (jnp.sin(x) * w[0] + jnp.cumsum(x, axis=1), jnp.cos(x).sum(axis=1)),
                          jax.devices()[:2])
    x = np.linspace(-3.0, 7.0, 8 * 3, dtype=np.float32).reshape(8, 3)
    w = np.asarray([2.5, -1.0], np.float32)
    return r, jax.device_put(w, r.whole), jax.device_put(x, r.split), w.astype(np.float64), x.astype(np.float64)


def test_replicas_equal_the_function_on_the_whole_batch():
    r, w, x, w64, x64 = _over_two()
    a, b = r(w, x)
    np.testing.assert_allclose(np.asarray(a), np.sin(x64) * w64[0] + np.cumsum(x64, axis=1), atol=TOL_F32)
    np.testing.assert_allclose(np.asarray(b), np.cos(x64).sum(axis=1), atol=TOL_F32)
    assert a.shape == (8, 3) and b.shape == (8,)
    assert a.sharding == r.split and b.sharding == r.split          # split as the inputs were
    program = r.program(w, x)
    assert "replica_count=2" in program.as_text().splitlines()[0]      # replicas, not partitions
    assert program.memory_analysis().argument_size_in_bytes == (2 + 4 * 3) * 4   # one device's share


def test_one_compile_per_signature():
    r, w, x, _, _ = _over_two()
    r(w, x), r(w, x)
    assert len(r._programs) == 1
    r(w, jax.device_put(np.zeros((4, 3), np.float32), r.split))      # another batch: another program
    assert len(r._programs) == 2


def test_arguments_that_are_not_placed_are_refused():
    r, w, x, _, _ = _over_two()
    with pytest.raises(ValueError, match="neither split nor replicated"):
        r(w, jax.device_put(np.zeros((8, 3), np.float32), jax.devices()[0]))
    scalar = replicas.Replicas(lambda x: x.sum(), jax.devices()[:2])
    with pytest.raises(replicas.Unavailable, match="no batch axis"):
        scalar(x)


@pytest.fixture(scope="module")
def box():
    return api.compile(SCENES_DIR / "box_on_plane.yaml", measure_jit=False)


@pytest.fixture
def split_any_batch(monkeypatch):
    # The box's batch is too light to pay for a split called from Python (step.SPLIT_FROM_US): a
    # threshold of 0 splits it; fresh tables, so that no earlier test's programs count here.
    monkeypatch.setitem(rstep.SPLIT_FROM_US, "call", 0.0)
    monkeypatch.setattr(rstep, "_REPLICAS", {})
    monkeypatch.setattr(rstep, "_STEP_PROGRAMS", {})


def _boxes(box, lead=(192,)):
    s0 = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, lead + x.shape), box.init())
    rng = np.random.default_rng(7)
    s0 = s0.replace(qd=s0.qd + jnp.asarray(rng.normal(0, 1.0, s0.qd.shape), s0.qd.dtype))
    u = rng.uniform(-1, 1, lead + (box.model.nu,)).astype(np.float32)
    return s0, u


def _partitioned(box, state, action):
    """The same control step as the jitted step split with shard_map (jit_step's other path)."""
    sharding = rstep.carry_sharding(box.model, state.q.shape[0], split=True)
    with rstep.calls_from_python():
        return rstep._jitted_step(sharding, True)(box.model, state, action)


@pytest.mark.parametrize("form", ["numpy", "on one device", "shared"])
def test_jit_step_runs_a_split_batch_as_replicas(box, split_any_batch, form):
    s0, u = _boxes(box)
    action = {"numpy": u, "on one device": jnp.asarray(u), "shared": u[0]}[form]
    got = rstep.jit_step(box.model, s0, action)
    assert len(rstep._STEP_PROGRAMS) == 1                               # it ran as replicas
    want = _partitioned(box, s0, np.broadcast_to(action, u.shape))
    assert got.q.sharding == want.q.sharding                            # split the way the jit splits
    for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=TOL_STEP)


def test_a_loop_of_replicated_steps_compiles_once(box, split_any_batch):
    s0, u = _boxes(box)
    s = s0
    for _ in range(3):
        s = rstep.jit_step(box.model, s, u)
    (run,) = (r for r in rstep._REPLICAS.values())
    assert len(run._programs) == 1 and len(rstep._STEP_PROGRAMS) == 1
    want = s0
    for _ in range(3):
        want = _partitioned(box, want, u)
    np.testing.assert_allclose(np.asarray(s.q), np.asarray(want.q), atol=3 * TOL_STEP)


def test_jit_step_falls_back_to_the_jit_without_replicas(box, split_any_batch, monkeypatch):
    def refuse(self, lowered):
        raise replicas.Unavailable("no replicas in this test")

    monkeypatch.setattr(replicas.Replicas, "compile", refuse)
    s0, u = _boxes(box)
    with pytest.warns(UserWarning, match="partitioned program instead of replicas.*no replicas in this test"):
        got = rstep.jit_step(box.model, s0, u)
    again = rstep.jit_step(box.model, got, u)                            # said once, then the jit
    want = _partitioned(box, s0, u)
    np.testing.assert_allclose(np.asarray(got.q), np.asarray(want.q), atol=TOL_STEP)
    assert again.q.shape == got.q.shape and not rstep._STEP_PROGRAMS


def test_lower_jit_step_is_what_the_first_call_compiles(box, split_any_batch):
    s0, u = _boxes(box)
    program = rstep.lower_jit_step(box.model, s0, u).compile()
    assert isinstance(program, replicas.Program)
    assert "replica_count=2" in program.as_text().splitlines()[0]
    single = rstep.lower_jit_step(box.model, jax.tree_util.tree_map(lambda x: x[:3], s0), u[:3]).compile()
    assert "replica_count" not in single.as_text().splitlines()[0]      # 3 boxes: one device, the jit


def test_scenec_runs_rollout_as_replicas(monkeypatch):
    # `scenec run`'s rollout split as replicas of one device's share against the jitted rollout (the
    # step split with shard_map inside it): the same controls per environment (the whole batch's drawn
    # on each device, its rows taken), the same arithmetic compiled separately (the model an argument
    # in one, constants in the other): float32 rounding over 5 steps of a smooth system.
    from scenec.compiler import cmd_run

    TOL = 1e-5
    monkeypatch.setitem(rstep.SPLIT_FROM_US, "scan", 0.0)
    model = api.compile(SCENES_DIR / "cartpole.yaml", measure_jit=False).model
    assert model.nu > 0
    key = jax.random.PRNGKey(5)
    fn = cmd_run.replicated_rollout(model, 64, 5)
    states, bad = fn.lower(key).compile()(key)
    assert isinstance(fn._program, replicas.Program)
    want, want_bad = cmd_run.rollout_fn(model, 64, 5).lower(key).compile()(key)
    assert int(bad) == int(want_bad) == 0
    assert float(jnp.std(want.q[:, 0])) > 1e-4          # the environments saw different controls
    np.testing.assert_allclose(np.asarray(states.q), np.asarray(want.q), atol=TOL)
    np.testing.assert_allclose(np.asarray(states.qd), np.asarray(want.qd), atol=TOL)


def test_scenec_replicas_0_keeps_the_partitioned_programs(box, split_any_batch, monkeypatch):
    from scenec.compiler import cmd_run

    monkeypatch.setenv("SCENEC_REPLICAS", "0")
    s0, u = _boxes(box)
    got = rstep.jit_step(box.model, s0, u)
    assert not rstep._STEP_PROGRAMS and not isinstance(rstep.lower_jit_step(box.model, s0, u), replicas.Lowered)
    want = _partitioned(box, s0, u)
    np.testing.assert_array_equal(np.asarray(got.q), np.asarray(want.q))    # the same program
    monkeypatch.setitem(rstep.SPLIT_FROM_US, "scan", 0.0)
    assert cmd_run.replicated_rollout(box.model, 64, 2) is None
    monkeypatch.delenv("SCENEC_REPLICAS")
    assert replicas.enabled()
    with jax.debug_nans(True):           # its checks run in the jit's dispatch: the jit then
        assert not replicas.enabled()


def test_scenec_run_falls_back_to_the_jitted_rollout(monkeypatch, capsys):
    import argparse

    from scenec.compiler import cmd_run

    def refuse(self, lowered):
        raise replicas.Unavailable("no replicas in this test")

    monkeypatch.setitem(rstep.SPLIT_FROM_US, "scan", 0.0)
    monkeypatch.setattr(replicas.Replicas, "compile", refuse)
    args = argparse.Namespace(scene=str(SCENES_DIR / "cartpole.yaml"), batch=8, steps=3, seed=0,
                              allow_outside=False)
    with pytest.warns(UserWarning, match="the rollout runs as one partitioned program.*no replicas"):
        assert cmd_run.run(args) == 0
    assert "non-finite environments: 0 of 8" in capsys.readouterr().out
