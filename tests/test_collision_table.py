"""The shape-pair table: canonical order, names, symmetry, suggestions, and agreement with the kernels."""

from __future__ import annotations

import itertools
import subprocess
import sys

import jax
import numpy as np
import pytest

from collision_cases import all_pairs, example_pair
from scenec.runtime import collision
from scenec.runtime.collision_table import (MESH_EDGE_LIMIT, MESH_FACE_LIMIT, MESH_VERTEX_LIMIT, PAIRS,
                                            PairInfo, Shape, pair_info, round_budget, suggest)

# The pairs the contacts issue asks for, by name.
ISSUE_PAIRS = {
    "plane_sphere", "plane_capsule", "plane_box", "plane_mesh",
    "sphere_sphere", "sphere_capsule", "sphere_box", "sphere_mesh",
    "capsule_capsule", "capsule_box", "capsule_mesh",
    "box_box", "box_mesh", "mesh_mesh",
    "heightfield_sphere", "heightfield_capsule", "heightfield_box",
}


def test_shape_order_is_canonical():
    assert [s.name for s in sorted(Shape)] == ["PLANE", "HEIGHTFIELD", "SPHERE", "CAPSULE", "BOX", "MESH"]
    assert [int(s) for s in sorted(Shape)] == list(range(6))


def test_pairs_are_canonical_and_named_after_their_shapes():
    for (a, b), info in PAIRS.items():
        assert a <= b
        assert isinstance(info, PairInfo)
        assert info.kernel == f"{a.name.lower()}_{b.name.lower()}"
        assert info.ncon >= 1 and info.note
    assert {info.kernel for info in PAIRS.values()} == ISSUE_PAIRS


def test_pair_info_orders_its_arguments():
    for a, b in itertools.product(Shape, Shape):
        assert pair_info(a, b) == pair_info(b, a)
        assert pair_info(int(a), int(b)) == pair_info(a, b)
        assert (pair_info(a, b) is None) == ((min(a, b), max(a, b)) not in PAIRS)


def test_every_pair_without_kernel_has_a_suggestion():
    unsupported = [(a, b) for a, b in itertools.combinations_with_replacement(Shape, 2) if pair_info(a, b) is None]
    assert len(unsupported) + len(PAIRS) == 21
    for a, b in unsupported:
        assert suggest(a, b) and suggest(b, a) == suggest(a, b)
    for a, b in PAIRS:
        assert suggest(a, b) == "" and suggest(b, a) == ""


def test_budgets():
    assert [round_budget(n) for n in (0, 1, 8, 9, 17)] == [8, 8, 8, 16, 24]
    assert MESH_FACE_LIMIT == 2 * MESH_VERTEX_LIMIT - 4 and MESH_EDGE_LIMIT == 3 * MESH_VERTEX_LIMIT - 6


def test_table_imports_without_jax():
    # `scenec check` reads the table without jax: importing it (and the numpy data helpers) must not
    # import jax.
    code = ("import sys; import scenec.runtime.collision_table, scenec.runtime.collision_data; "
            "sys.exit(1 if 'jax' in sys.modules else 0)")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_kernels_agree_with_table():
    assert set(collision.KERNELS) == {info.kernel for info in PAIRS.values()}


@pytest.mark.parametrize("a,b,name,ncon", all_pairs(), ids=[p[2] for p in all_pairs()])
def test_kernel_returns_ncon_rows(a, b, name, ncon):
    g1, g2 = example_pair(a, b, np.random.default_rng(0))
    out = jax.eval_shape(collision.KERNELS[name], g1, g2)
    assert out.dist.shape == (ncon,) and out.active.shape == (ncon,)
    assert out.pos.shape == (ncon, 3) and out.normal.shape == (ncon, 3)
    assert out.active.dtype == np.bool_ and out.dist.dtype == g1.pos.dtype
