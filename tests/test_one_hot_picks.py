"""Each environment's own rows taken one-hot (constraints.ONE_HOT_PICKS, the TPU's way) or by gathers
(the CPU's and GPU's): the same rows, so the same step.

Independent references: numpy's fancy indexing for the picks themselves (exact: a one-hot sum adds
zeros to the one row kept), and the gather path for the step. The step's comparison is one control
step from a state with contacts and limits in play; the two programs group their float32 operations
differently where XLA fuses the sums, so they agree to rounding, not bit for bit: F64_TOL below."""

from __future__ import annotations

import pathlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from scenec.compiler import api
from scenec.runtime import constraints
from scenec.runtime import step as rstep

ROOT = pathlib.Path(__file__).resolve().parent.parent
# float64: the two programs fuse their sums differently, and a contact-rich step amplifies rounding
# (in float32, Humanoid's qd moved by 8e-5 one-hot against gathers, and by 2.6e-4 and 5.1e-4 when the
# gather path's own q or qd moved by one ulp); in float64 that is ~1e-12, while a wrong row changes
# a velocity by its whole impulse.
F64_TOL = 1e-9             # q, qd; contact forces relative to the largest


def test_one_hot_rows_are_numpys_rows():
    rng = np.random.default_rng(0)
    n, k, batch = 7, 3, 5
    idx = np.stack([rng.permutation(n)[:k] for _ in range(batch)], axis=1).astype(np.int32)   # (k, B)
    batched = rng.normal(size=(n, 2, 3, batch)).astype(np.float32)
    batched[1] = np.inf                                       # rows not taken must not leak into others
    batched[4, 0, 0] = np.nan
    expect = np.stack([batched[idx[:, b], ..., b] for b in range(batch)], axis=-1)
    got = np.asarray(constraints._one_hot_rows(jnp.asarray(batched), jnp.asarray(idx), batched=True))
    np.testing.assert_array_equal(got, expect)
    table = rng.integers(-5, 5, size=(n, 4)).astype(np.int32)
    got = np.asarray(constraints._one_hot_rows(table, jnp.asarray(idx), batched=False))
    np.testing.assert_array_equal(got, np.moveaxis(table[idx], 1, -1))           # (k, 4, B)
    flags = rng.random((n, batch)) < 0.5
    got = np.asarray(constraints._one_hot_rows(jnp.asarray(flags), jnp.asarray(idx), batched=True))
    np.testing.assert_array_equal(got, np.take_along_axis(flags, idx, axis=0))
    # the switch: both ways give the same picks through the step's own helpers
    for forced in (True, False):
        constraints.ONE_HOT_PICKS = forced
        try:
            assert constraints.one_hot_picks() is forced
            np.testing.assert_array_equal(np.asarray(constraints._take_rows(jnp.asarray(batched), jnp.asarray(idx))),
                                          expect)
            np.testing.assert_array_equal(np.asarray(constraints._table_rows(table[:, 0], jnp.asarray(idx))),
                                          table[:, 0][idx])
        finally:
            constraints.ONE_HOT_PICKS = None
    assert constraints.one_hot_picks() is (jax.default_backend() == "tpu")


def _scene_text(scene: str) -> str:
    """Humanoid (the grouped choice of 12 of 189 candidates), or the box stack with a contact budget
    and a limit budget below its candidates and limits (every other per-environment pick: the closest
    contacts, their bodies on two moving trees, the limit rows nearest their ends); in float64."""
    if scene == "humanoid":
        text = (ROOT / "scenes" / "humanoid.yaml").read_text()
        old = "  substeps: 5\n"
        new = old + "  precision: float64\n"
    else:
        text = (ROOT / "tests" / "contact_scenes" / "stack.yaml").read_text()
        old = "options: {timestep: 0.002}"
        new = "options: {timestep: 0.002, contact_budget: 6, limit_budget: 1, precision: float64}"
    assert old in text
    return text.replace(old, new)


def _both_ways(path: str, with_grad: bool) -> dict:
    """One control step from a state with contacts in play, picks by gathers and one-hot: the largest
    difference in q, qd, contact force and the gradient of |qd|² with respect to the actions, with the
    largest force and gradient entry (the gradient `with_grad` only; run in a float64 process)."""
    model = api.compile(path, measure_jit=False).model
    assert model.contact_budget > 0 and model.q0.dtype == np.float64
    rng = np.random.default_rng(5)
    batch = 8
    s0 = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape), rstep.init(model))
    s0 = s0.replace(qd=s0.qd + jnp.asarray(rng.normal(0, 0.5, s0.qd.shape), s0.qd.dtype))
    u = jnp.asarray(rng.uniform(-1, 1, (batch, model.nu)), s0.q.dtype)
    constraints.ONE_HOT_PICKS = False
    s0 = jax.jit(lambda s: jax.lax.fori_loop(0, 40, lambda i, s: rstep.step(model, s, u), s))(s0)
    # the step, and the gradient of its velocities with respect to the actions (what APG takes)
    def grad():
        if not with_grad:
            return jnp.zeros(())
        return jax.jit(jax.grad(lambda a: jnp.sum(rstep.step(model, s0, a).qd ** 2)))(u)

    gathered, g_gathered = jax.jit(lambda s: rstep.step(model, s, u))(s0), grad()
    constraints.ONE_HOT_PICKS = True
    one_hot, g_one_hot = jax.jit(lambda s: rstep.step(model, s, u))(s0), grad()
    diff = {name: float(jnp.abs(getattr(one_hot, name) - getattr(gathered, name)).max())
            for name in ("q", "qd", "contact_force")}
    return dict(diff, force=float(jnp.abs(gathered.contact_force).max()),
                grad=float(jnp.abs(g_one_hot - g_gathered).max()), grad_scale=float(jnp.abs(g_gathered).max()))


def _in_float64(tmp_path, scenes, with_grad: bool) -> list:
    """_both_ways for each scene in a process of its own with JAX's 64-bit mode (set before jax starts)."""
    import json
    import os
    import subprocess
    import sys

    paths = []
    for scene in scenes:
        paths.append(tmp_path / f"{scene}.yaml")
        paths[-1].write_text(_scene_text(scene))
    code = ("import sys, json; sys.path.insert(0, %r); import test_one_hot_picks as t; "
            "print(json.dumps([t._both_ways(p, %r) for p in sys.argv[1:]]))" % (os.path.dirname(__file__), with_grad))
    env = dict(os.environ, JAX_ENABLE_X64="1")
    out = subprocess.run([sys.executable, "-c", code, *map(str, paths)], env=env, capture_output=True,
                         text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_step_is_the_same_either_way(tmp_path):
    """In float64, so that the rounding of two differently fused programs stays far below what a wrong
    row would change."""
    for scene, r in zip(("humanoid", "stack"), _in_float64(tmp_path, ("humanoid", "stack"), False)):
        assert r["force"] > 0, f"{scene}: the state should have contacts in play"
        assert r["q"] <= F64_TOL and r["qd"] <= F64_TOL, (scene, r)
        assert r["contact_force"] <= F64_TOL * r["force"], (scene, r)


@pytest.mark.slow    # the stack's float64 gradient compiles for about 70 s on 2 cores
def test_the_gradient_is_the_same_either_way(tmp_path):
    """The gradient of |qd|² after one step with respect to the actions (what APG follows), one-hot
    against gathers, in float64."""
    (r,) = _in_float64(tmp_path, ("stack",), True)
    assert r["grad_scale"] > 0 and r["grad"] <= F64_TOL * r["grad_scale"], r
