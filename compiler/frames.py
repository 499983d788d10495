"""Rotations and poses at compile time, in float64 NumPy.

Where it sits: shared by the compiler's front end and passes (Euler angles, relative poses of fused
bodies, inertia rotations) and by the importers (MJCF, URDF, Brax v1), which read orientations
written in many conventions (quaternions, Euler angles with any axis sequence, axis-angle, two axes,
one axis, roll-pitch-yaw) and compose frames down a tree to get the world poses a scene carries. Everything here is exact
float64 arithmetic with no iteration, so the importers' tests can compare with MuJoCo at 1e-9.

Conventions: quaternions are (4,) arrays w, x, y, z (Hamilton product, active rotations: a vector v
in the rotated frame is `rotate(q, v)` in the reference frame). A pose is `(pos (3,), quat (4,))`.
"""

from __future__ import annotations

import math

import numpy as np

IDENTITY = np.array([1.0, 0.0, 0.0, 0.0])

# Below this norm an axis is treated as degenerate (zero vector, or parallel vectors in a cross
# product). MuJoCo uses 1e-10 (mjMINVAL) for the same decisions; matching it keeps the
# degenerate-case branches identical.
EPS = 1e-10


def normalize(v) -> np.ndarray:
    v = np.asarray(v, dtype=float)
    n = np.linalg.norm(v)
    return v / n if n >= EPS else v


def quat_mul(a, b) -> np.ndarray:
    """Hamilton product a * b (apply b first, then a)."""
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return np.array([
        aw * bw - ax * bx - ay * by - az * bz,
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
    ])


def quat_conj(q) -> np.ndarray:
    return np.array([q[0], -q[1], -q[2], -q[3]], dtype=float)


def rotate(q, v) -> np.ndarray:
    """The vector v (3,) rotated by the unit quaternion q."""
    return quat_to_mat(q) @ np.asarray(v, dtype=float)


def quat_to_mat(q) -> np.ndarray:
    """(3, 3) rotation matrix of a unit quaternion; its columns are the rotated frame's axes."""
    w, x, y, z = q
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def mat_to_quat(m) -> np.ndarray:
    """Unit quaternion (w >= 0) of a rotation matrix, by the largest-diagonal branch (Shepperd)
    so that no branch divides by a small number."""
    m = np.asarray(m, dtype=float)
    tr = m[0, 0] + m[1, 1] + m[2, 2]
    if tr > 0:
        s = math.sqrt(tr + 1.0) * 2
        q = [0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s]
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = math.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2]) * 2
        q = [(m[2, 1] - m[1, 2]) / s, 0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s]
    elif m[1, 1] > m[2, 2]:
        s = math.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2]) * 2
        q = [(m[0, 2] - m[2, 0]) / s, (m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s]
    else:
        s = math.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1]) * 2
        q = [(m[1, 0] - m[0, 1]) / s, (m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s]
    q = np.array(q)
    if q[0] < 0:
        q = -q
    return q / np.linalg.norm(q)


def axis_angle(axis, angle: float) -> np.ndarray:
    """Rotation by `angle` radians about `axis` (normalized here)."""
    a = normalize(axis)
    s = math.sin(angle / 2)
    return np.array([math.cos(angle / 2), a[0] * s, a[1] * s, a[2] * s])


_UNIT = {"x": (1.0, 0.0, 0.0), "y": (0.0, 1.0, 0.0), "z": (0.0, 0.0, 1.0)}


def euler(angles, seq: str = "xyz") -> np.ndarray:
    """Quaternion of three successive rotations (radians) about the axes named by `seq`.

    A lowercase letter rotates about the axis of the frame as rotated so far (intrinsic, the
    quaternion multiplies on the right); an uppercase letter about the fixed axis (extrinsic, on
    the left). This is MJCF's `eulerseq` rule; "xyz" is intrinsic x-y'-z'' (Brax v1's convention).
    """
    q = IDENTITY.copy()
    for ch, ang in zip(seq, angles):
        r = axis_angle(_UNIT[ch.lower()], float(ang))
        q = quat_mul(q, r) if ch.islower() else quat_mul(r, q)
    return q


def rpy(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """URDF's roll-pitch-yaw: rotations about the fixed x, y, z axes, R = Rz(yaw) Ry(pitch) Rx(roll)."""
    return euler((roll, pitch, yaw), "XYZ")


def from_xyaxes(xyaxes) -> np.ndarray:
    """MJCF `xyaxes`: the frame's x axis, then a vector in its xy plane (made orthogonal to x)."""
    v = np.asarray(xyaxes, dtype=float)
    x = normalize(v[:3])
    y = v[3:6] - x * float(x @ v[3:6])
    y = normalize(y)
    z = normalize(np.cross(x, y))
    return mat_to_quat(np.column_stack([x, y, z]))


def from_zaxis(zaxis) -> np.ndarray:
    """The smallest rotation taking (0, 0, 1) onto `zaxis`; a half turn about x when opposite."""
    v = normalize(zaxis)
    axis = np.array([-v[1], v[0], 0.0])  # (0, 0, 1) x v
    s = float(np.linalg.norm(axis))
    if s < EPS:
        axis = np.array([1.0, 0.0, 0.0])
    else:
        axis = axis / s
    return axis_angle(axis, math.atan2(s, v[2]))


def compose(parent: tuple, child: tuple) -> tuple:
    """World pose of a frame whose pose relative to `parent` is `child`."""
    ppos, pquat = parent
    cpos, cquat = child
    return (np.asarray(ppos, float) + rotate(pquat, cpos), normalize(quat_mul(pquat, cquat)))


def relative(parent: tuple, child: tuple) -> tuple:
    """Pose of `child` in the frame of `parent` (both in the same reference frame)."""
    ppos, pquat = parent
    cpos, cquat = child
    inv = quat_conj(pquat)
    return (rotate(inv, np.asarray(cpos, float) - ppos), normalize(quat_mul(inv, cquat)))


def canonical(q) -> np.ndarray:
    """The same rotation with w >= 0 (q and -q are one rotation; the positive form reads better)."""
    q = np.asarray(q, dtype=float)
    return -q if q[0] < 0 else q


def is_identity(q, tol: float = 0.0) -> bool:
    return abs(abs(float(q[0])) - 1.0) <= tol and all(abs(float(c)) <= tol for c in q[1:])


def inertia_in_frame(diag, quat) -> np.ndarray:
    """(3, 3) inertia tensor R diag(d) R^T of principal moments `diag` whose principal axes are the
    columns of R = quat_to_mat(quat)."""
    r = quat_to_mat(quat)
    return r @ np.diag(np.asarray(diag, dtype=float)) @ r.T


def inertia_six(tensor) -> list[float]:
    """The 6 numbers xx yy zz xy xz yz of a symmetric (3, 3) tensor (scene.proto's order)."""
    t = np.asarray(tensor, dtype=float)
    return [float(t[0, 0]), float(t[1, 1]), float(t[2, 2]),
            float(t[0, 1]), float(t[0, 2]), float(t[1, 2])]


def clean(values, tol: float = 1e-15) -> list[float]:
    """Floats with round-off residue below `tol` (absolute) set to exactly 0.0, and -0.0 to 0.0.

    Why: composing a 90-degree rotation leaves 6e-17 where the answer is 0; writing that into
    a YAML file helps nobody. 1e-15 is ~5 ulp of 1.0, far below any physical length or angle."""
    return [0.0 if abs(float(v)) < tol else float(v) for v in values]
