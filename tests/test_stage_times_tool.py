"""tools/stage_times.py times the step's own stages: chained as a substep chains them (kinematics, M and
τ, the elimination, the constraints, then integrate_positions), the functions it times give the
substep `step._advance` computes, on Ant with its contact budget choosing per environment (the
select stage is timed) and on box_on_plane (static slots). A model of one substep is compared, so
the chain is exactly one substep of `_advance`."""

import pathlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from scenec.compiler import api
from scenec.runtime import step as rstep

from conftest import load_tool

ROOT = pathlib.Path(__file__).resolve().parent.parent
# The stages compiled one by one round differently from the fused step (float32); over one substep
# from a state with contacts the velocities agree to this (m/s or rad/s), the positions to a tenth.
QD_TOL = 1e-4
Q_TOL = 1e-5
# A kernel compiled alone may round its distances differently from the same kernel inside the collide
# stage (float32 at metre scale: a few ulps of 1 m).
KERNEL_TOL = 1e-6


@pytest.mark.parametrize("scene, budget", [("ant", True), ("box_on_plane", False)])
def test_the_timed_stages_chain_into_the_steps_substep(scene, budget):
    tool = load_tool("stage_times")
    base = api.compile(ROOT / "scenes" / f"{scene}.yaml", measure_jit=False).model
    m, _ = load_tool("ablate").edited(base, "substeps=1")
    batch = 8
    states, bad = load_tool("ablate").rollout(m, batch, 5)()
    assert int(bad) == 0
    q, qd = (jnp.asarray(np.asarray(x).T) for x in (states.q, states.qd))
    ctrl = jnp.zeros((m.nu, batch), q.dtype)
    stages = tool.stage_functions(m, q, qd, ctrl)
    assert ("  of it, select" in stages) == budget
    run = lambda name, *args: jax.jit(stages[name][0])(*args)        # noqa: E731
    f = run("kinematics", q)
    mass, tau = run("mass matrix and forces", f, q, qd, ctrl)
    minv, qacc = run("elimination", mass, tau)
    h = m.timestep / m.substeps
    qd_new, _ = run("constraints", qd + h * qacc, f, minv, q, qd)
    q_new = rstep.integrate_positions(m, q, qd_new, h)
    q_ref, qd_ref = jax.jit(lambda q, qd: rstep._advance(m, q, qd, ctrl)[:2])(q, qd)
    assert float(jnp.abs(qd_ref - qd).max()) > 100 * QD_TOL           # the substep does move it
    np.testing.assert_allclose(np.asarray(qd_new), np.asarray(qd_ref), atol=QD_TOL, rtol=0)
    np.testing.assert_allclose(np.asarray(q_new), np.asarray(q_ref), atol=Q_TOL, rtol=0)
    # the timed arguments are the chain's own inputs
    np.testing.assert_array_equal(np.asarray(stages["elimination"][1][0]), np.asarray(mass))
    # the pair groups' kernels, timed one by one, give the collide stage's rows in group order
    kernels = [name for name in stages if name.startswith("    ")]
    assert len(kernels) == len(m.pair_groups)
    rows = [run(name, *stages[name][1]).dist for name in kernels]
    slots = run("  of it, collide", f)
    np.testing.assert_allclose(np.concatenate([r.reshape((-1, batch)) for r in rows]), np.asarray(slots.dist),
                               atol=KERNEL_TOL, rtol=0)


def test_top_leaves_out_the_constraint_stages_parts():
    """`--top` (parts=False) times the substep's four stages and nothing inside the constraint stage,
    each stage with the same arguments as the full list (so its figures compare with a full run's)."""
    tool = load_tool("stage_times")
    m = api.compile(ROOT / "scenes" / "ant.yaml", measure_jit=False).model
    batch = 4
    q = jnp.tile(jnp.asarray(m.q0)[:, None], (1, batch))
    qd = jnp.zeros((m.nv, batch), q.dtype)
    ctrl = jnp.zeros((m.nu, batch), q.dtype)
    full = tool.stage_functions(m, q, qd, ctrl)
    top = tool.stage_functions(m, q, qd, ctrl, parts=False)
    assert list(top) == ["kinematics", "mass matrix and forces", "elimination", "constraints"]
    assert len(full) > len(top) and all(not name.startswith(" ") for name in top)
    for name in top:
        a, b = (jax.tree_util.tree_leaves(x[name][1]) for x in (top, full))
        assert len(a) == len(b)
        for x, y in zip(a, b):
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_stage_filter_times_only_the_named_stages():
    """`--stage TEXT` (measure's `only`) times the stages whose names contain a text and no other, with
    the reference substep still timed (the shares are of it)."""
    tool = load_tool("stage_times")
    r = tool.measure(str(ROOT / "scenes" / "ant.yaml"), batch=8, warmup=2, loops=1, repeats=1,
                     only=("select", "J·M"))
    assert set(r["stages"]) == {"  of it, select", "  of it, J·M⁻¹"} == set(r["floors"])
    assert r["substep_s"] > 0 and all(t > 0 for t in r["stages"].values())
