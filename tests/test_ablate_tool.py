"""tools/ablate.py's code edits (unroll=, tile=, limit_group=, inverse_unroll=, unrolled_up_to=,
iterations_unroll=, pairs=) change how the step is written, not what
it computes: a variant's rollout equals the base's up to float32 rounding, and the runtime's constants
are restored after the variant is traced."""

import pathlib

import numpy as np
import pytest

from scenec.compiler import api
from scenec.runtime import constraints, dynamics
from scenec.runtime import step as rstep

from conftest import load_tool

ROOT = pathlib.Path(__file__).resolve().parent.parent
# Unrolling regroups the same float32 operations inside XLA's fusions; over 3 control steps of a box
# resting on a plane the positions agree to well under a micrometre.
Q_TOL = 1e-5


def _ablate():
    return load_tool("ablate")


# The two rollouts of the code edits (11 s and 10 s) run with the slow checks; the choice and the
# stand-ins stay in the default run.
@pytest.mark.slow
def test_code_edits_keep_the_physics_and_restore_the_constants():
    ablate = _ablate()
    base = api.compile(ROOT / "scenes" / "box_on_plane.yaml", measure_jit=False).model
    # unrolled_up_to=1: the box's 4 contact blocks go through the loop (the base: straight-line code)
    # iterations_unroll=64: the solver's iterations without a loop; pairs=0: M as a masked product
    model, code = ablate.edited(base, "unroll=64,limit_group=2,unrolled_up_to=1,iterations_unroll=64,pairs=0")
    assert code == {("constraints", "_UNROLL"): 64, ("constraints", "UNROLL_FROM"): 1,
                    ("constraints", "_LIMIT_GROUP"): 2, ("constraints", "_UNROLLED_UP_TO"): 1,
                    ("constraints", "_ITERATIONS_UNROLL"): 64, ("dynamics", "PAIR_PRODUCTS"): False}
    modules = {"constraints": constraints, "dynamics": dynamics}
    constants = lambda: tuple(getattr(modules[mod], name) for mod, name in code)   # noqa: E731
    before = constants()
    q_base = np.asarray(ablate.rollout(base, 4, 3)()[0].q)
    q_edit = np.asarray(ablate.rollout(model, 4, 3, code)()[0].q)
    assert constants() == before
    np.testing.assert_allclose(q_edit, q_base, atol=Q_TOL)
    with pytest.raises(SystemExit, match="positive integer"):
        ablate.edited(base, "unroll=0")
    with pytest.raises(SystemExit, match="pairs= takes 0 or 1"):
        ablate.edited(base, "pairs=2")


@pytest.mark.slow
def test_tile_and_inverse_edits_keep_the_physics_and_restore_the_runtime():
    # tile=32 splits a batch of 64 into two tiles (one device per half on a 2-core host: 32 each, so
    # batch 128 to be sure of two tiles per device); inverse_unroll=2 takes two elimination steps per
    # loop iteration.
    ablate = _ablate()
    base = api.compile(ROOT / "scenes" / "box_on_plane.yaml", measure_jit=False).model
    model, code = ablate.edited(base, "tile=32,inverse_unroll=2")
    assert code[("dynamics", "INVERSE_UNROLL")] == 2 and code[("step", "tile_cap")](base) == 32
    before = (rstep.tile_cap, dynamics.INVERSE_UNROLL)
    q_base = np.asarray(ablate.rollout(base, 128, 3)()[0].q)
    q_edit = np.asarray(ablate.rollout(model, 128, 3, code)()[0].q)
    assert (rstep.tile_cap, dynamics.INVERSE_UNROLL) == before
    np.testing.assert_allclose(q_edit, q_base, atol=Q_TOL)


def test_choice_edits_solve_the_first_rows_the_same_way_traced_or_static():
    # With a budget of 2 of the box's candidate rows, choice=cheap (rows 0, 1 as traced per-environment
    # indices, through the budget's gathers) and choice=first (rows 0, 1 as static slots, the step's
    # path without a budget) solve the same two contacts: the same rollout up to float32 rounding.
    ablate = _ablate()
    base = api.compile(ROOT / "scenes" / "box_on_plane.yaml", measure_jit=False).model
    cheap, code_cheap = ablate.edited(base, "contact_budget=2,choice=cheap")
    first, code_first = ablate.edited(base, "contact_budget=2,choice=first")
    assert list(code_cheap) == [("constraints", "_smallest")] and list(code_first) == [("constraints", "_closest")]
    before = (constraints._smallest, constraints._closest)
    q_cheap = np.asarray(ablate.rollout(cheap, 4, 3, code_cheap)()[0].q)
    q_first = np.asarray(ablate.rollout(first, 4, 3, code_first)()[0].q)
    assert (constraints._smallest, constraints._closest) == before
    np.testing.assert_allclose(q_cheap, q_first, atol=Q_TOL)
    # The box rests on the plane (its bottom face's corners are the candidates): both stay up.
    assert np.all(q_first[:, 2] > 0.05)
    with pytest.raises(SystemExit, match="choice= takes"):
        ablate.edited(base, "choice=best")


def test_diagonal_stand_ins_replace_their_stage_and_are_restored():
    # On a diagonal SPD matrix the inverse's stand-in is the inverse itself (numpy's, float64); the
    # mass matrix's stand-in is a positive diagonal; a rollout with both runs and leaves the runtime
    # as it was.
    import jax.numpy as jnp

    ablate = _ablate()
    d = np.random.default_rng(3).uniform(0.5, 2.0, size=(5, 2))
    a = np.einsum("ij,jb->ijb", np.eye(5), d)
    b = np.random.default_rng(4).normal(size=(5, 2))
    inv, x = ablate._diagonal_inverse(jnp.asarray(a, jnp.float32), jnp.asarray(b, jnp.float32))
    ref = np.moveaxis(np.linalg.inv(np.moveaxis(a, -1, 0)), 0, -1)
    np.testing.assert_allclose(np.asarray(inv), ref, rtol=1e-6)          # float32 reciprocals
    np.testing.assert_allclose(np.asarray(x), np.einsum("ijb,jb->ib", ref, b), rtol=1e-6)

    base = api.compile(ROOT / "scenes" / "pendulum.yaml", measure_jit=False).model
    model, code = ablate.edited(base, "diagonal=inverse+mass")
    assert code == {("dynamics", "inverse_spd"): ablate._diagonal_inverse,
                    ("dynamics", "mass_matrix"): ablate._diagonal_mass}
    before = (dynamics.inverse_spd, dynamics.mass_matrix)
    q = np.asarray(ablate.rollout(model, 4, 3, code)()[0].q)
    assert (dynamics.inverse_spd, dynamics.mass_matrix) == before and np.all(np.isfinite(q))
    with pytest.raises(SystemExit, match="diagonal= takes"):
        ablate.edited(base, "diagonal=solver")
