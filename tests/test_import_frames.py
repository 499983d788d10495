"""compiler/importers/frames.py against MuJoCo's own rotation functions (mju_*) and textbook facts."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from scenec.compiler.importers import frames

mujoco = pytest.importorskip("mujoco")

# Exact float64 formulas on both sides; round-off is ~1e-16 per operation.
TOL = 1e-12

RNG = np.random.default_rng(7)
ANGLES = RNG.uniform(-math.pi, math.pi, size=(6, 3))
SEQUENCES = ["".join(p) for p in itertools.product("xyzXYZ", repeat=3)]


def same_rotation(a, b) -> bool:
    return 1.0 - abs(float(np.dot(a, b))) < TOL


@pytest.mark.parametrize("seq", SEQUENCES)
def test_euler_matches_mujoco_for_every_sequence(seq):
    for angles in ANGLES:
        want = np.zeros(4)
        mujoco.mju_euler2Quat(want, angles, seq)
        assert same_rotation(frames.euler(angles, seq), want), (seq, angles)


def test_axis_angle_quat_matrix_roundtrip():
    for _ in range(20):
        axis, angle = RNG.normal(size=3), RNG.uniform(-4, 4)
        want = np.zeros(4)
        mujoco.mju_axisAngle2Quat(want, axis / np.linalg.norm(axis), angle)
        q = frames.axis_angle(axis, angle)
        assert same_rotation(q, want)
        mat = np.zeros(9)
        mujoco.mju_quat2Mat(mat, q)
        np.testing.assert_allclose(frames.quat_to_mat(q), mat.reshape(3, 3), atol=TOL)
        assert same_rotation(frames.mat_to_quat(frames.quat_to_mat(q)), q)


def test_product_and_rotation_match_mujoco():
    for _ in range(20):
        a, b = frames.normalize(RNG.normal(size=4)), frames.normalize(RNG.normal(size=4))
        want = np.zeros(4)
        mujoco.mju_mulQuat(want, a, b)
        np.testing.assert_allclose(frames.quat_mul(a, b), want, atol=TOL)
        v = RNG.normal(size=3)
        rv = np.zeros(3)
        mujoco.mju_rotVecQuat(rv, v, a)
        np.testing.assert_allclose(frames.rotate(a, v), rv, atol=TOL)


def test_zaxis_is_the_smallest_rotation_and_handles_opposite():
    for v in [RNG.normal(size=3) for _ in range(10)] + [np.array([0, 0, 1.0]), np.array([0, 0, -2.0])]:
        q = frames.from_zaxis(v)
        np.testing.assert_allclose(frames.rotate(q, [0, 0, 1]), v / np.linalg.norm(v), atol=TOL)
        want = np.zeros(4)
        mujoco.mju_quatZ2Vec(want, v)
        assert same_rotation(q, want)


def test_xyaxes_orthogonalizes_y():
    q = frames.from_xyaxes([2, 0, 0, 1, 3, 0])
    np.testing.assert_allclose(frames.quat_to_mat(q), np.eye(3), atol=TOL)
    q = frames.from_xyaxes([0, 1, 0, -1, 0, 0])  # x -> y, y -> -x: a quarter turn about z
    assert same_rotation(q, frames.axis_angle([0, 0, 1], math.pi / 2))


def test_urdf_rpy_is_fixed_axis_roll_pitch_yaw():
    r, p, y = 0.3, -0.7, 1.9
    rx = frames.quat_to_mat(frames.axis_angle([1, 0, 0], r))
    ry = frames.quat_to_mat(frames.axis_angle([0, 1, 0], p))
    rz = frames.quat_to_mat(frames.axis_angle([0, 0, 1], y))
    np.testing.assert_allclose(frames.quat_to_mat(frames.rpy(r, p, y)), rz @ ry @ rx, atol=TOL)


def test_compose_and_relative_are_inverse():
    parent = (RNG.normal(size=3), frames.normalize(RNG.normal(size=4)))
    child = (RNG.normal(size=3), frames.normalize(RNG.normal(size=4)))
    world = frames.compose(parent, child)
    back = frames.relative(parent, world)
    np.testing.assert_allclose(back[0], child[0], atol=TOL)
    assert same_rotation(back[1], child[1])
