"""The two forms of the forward-kinematics walk agree: unrolled level by level (`_walk`, shallow
trees) and a `lax.scan` over uniform steps (`_walk_steps`, deep trees and the step's output poses;
kinematics.LOOP_FROM). Every shipped scene, random joint positions (quaternion coordinates
unnormalised on purpose: both forms normalise them)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from scenec.compiler import api
from scenec.runtime import kinematics
from scenec.runtime.plan import plan_of

from conftest import SCENES_DIR

# The same float32 arithmetic in the same order; XLA may fuse the two forms differently (contracting
# a multiply and an add into one rounding or not), so entries of order 1 differ by a few ulps that
# accumulate along a chain of up to 12 steps (grasp): 2e-6 is about 17 ulps at 1.
TOL = 2e-6
SCENES = sorted(p.stem for p in SCENES_DIR.glob("*.yaml")) if SCENES_DIR.is_dir() else []


@pytest.mark.parametrize("name", SCENES)
def test_looped_walk_equals_unrolled_walk(name):
    m = api.compile(SCENES_DIR / f"{name}.yaml", measure_jit=False).model
    p = plan_of(m)
    q = np.asarray(m.q0)[:, None] + 0.5 * np.random.default_rng(7).standard_normal((m.nq, 16))
    q = jnp.asarray(q, m.q0.dtype)
    unrolled = jax.jit(lambda q: kinematics._walk(m, p, q))(q)
    looped = jax.jit(lambda q: kinematics._walk_steps(m, p, q, True))(q)
    poses = jax.jit(lambda q: kinematics.body_poses(m, q))(q)
    for a, b in zip(unrolled, looped):
        if a is None:
            assert m.njnt == 0
            continue
        assert a.shape == b.shape
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=0, atol=TOL)
    np.testing.assert_allclose(np.asarray(poses[0]), np.asarray(unrolled[0]), rtol=0, atol=TOL)
    np.testing.assert_allclose(np.asarray(poses[1]), np.asarray(unrolled[1]), rtol=0, atol=TOL)
